"""``turnfork seed``: write the completed-turn prefix of a log or a wire history, the seed a
fork child gets."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from typing import TYPE_CHECKING

from returns.result import Failure

from ...core import Violation, check_balance, completed_turn_prefix, encode_log
from ..logfile import LoadedLog, LogReadError
from .app import EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE
from .assess import Tail, assess
from .inputs import STDIN, is_the_input, load_arguments
from .reports import (
    error_json,
    history_input_json,
    history_violation_json,
    input_json,
    violation_json,
    where,
)
from .terminal import counted, error, print_json, say

if TYPE_CHECKING:
    from .histories import LoadedHistory

__all__ = ["run", "write_atomically"]


def _tail_json(tail: Tail) -> dict[str, object]:
    return {"events": tail.events, "open_turn": tail.open_turn,
            "open_turn_seq": tail.open_turn_seq, "in_flight_events": tail.in_flight_events,
            "between_turn_events": tail.between_turn_events}


def _seed_json(path: str, log: LoadedLog | None) -> dict[str, object]:
    report: dict[str, object] = input_json(path, log)
    report.update({"output": None, "seed_length": None, "completed_turns": None,
                   "excluded": None, "violation": None, "tail_violation": None, "error": None})
    return report


def _output_error(output: str, problem: str) -> dict[str, object]:
    return {"file": output, "line": None, "seq": None, "event_type": None,
            "problem": problem, "message": f"{output}: {problem}"}


def write_atomically(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` whole, or leave it untouched (raises ``OSError``)."""
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a directory", path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle, temporary = tempfile.mkstemp(dir=directory,
                                         prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # durability of the rename; not every FS allows it
        directory_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(directory_fd)
        finally:
            os.close(directory_fd)


def _write(output: str | None, data: bytes, report: dict[str, object], json: bool) -> bool:
    """``data`` to ``output`` (atomically) or stdout; ``False`` (and the error said) when
    ``output`` cannot be written."""
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return True
    try:
        write_atomically(output, data)
    except OSError as exc:
        problem = f"cannot write: {exc.strerror or exc}"
        error(f"{output}: {problem}; nothing written")
        if json:
            report["error"] = _output_error(output, problem)
            print_json(report)
        return False
    return True


def _seed_history(args: argparse.Namespace, output: str | None, loaded: LoadedHistory) -> int:
    """Write a wire history's completed-turn prefix in its own layout. The core's cut stops
    before the first violation, so the prefix is balanced whatever follows it."""
    from .histories import encode_seed, excluded_words, span_words  # noqa: PLC0415

    history = loaded.history
    cut, total = history.completed_prefix_length, loaded.items
    report = history_input_json(args.path, loaded)
    report.update({"output": output, "seed_length": None, "excluded": None,
                   "tail_violation": None, "end_violation": None, "error": None})
    if not _write(output, encode_seed(loaded), report, args.json):
        return EXIT_UNREADABLE
    tail_violation = history.violation
    if args.json:
        report.update({
            "seed_length": cut,
            "excluded": {"items": total - cut, "first_index": cut if cut < total else None},
            "tail_violation": history_violation_json(tail_violation, loaded),
            "end_violation": history_violation_json(history.end_violation, loaded),
        })
        print_json(report)
        return EXIT_OK
    destination = "stdout" if output is None else output
    if cut:
        say(f"seed: {counted(cut, 'item')} ({span_words(0, cut)}) → {destination}",
            file=sys.stderr)
    else:
        say(f"seed: empty, no turn has completed (a fork child starts with no history, like a "
            f"spawn) → {destination}", file=sys.stderr)
    say(excluded_words(history), file=sys.stderr)
    if tail_violation is not None:
        say(f"warning: {loaded.where(tail_violation.index)}: the excluded part breaks a rule: "
            f"{tail_violation.message} (rule: {tail_violation.rule})", file=sys.stderr)
    elif history.end_violation is not None:
        end = history.end_violation
        say(f"the excluded turn is in flight: {end.message} (rule: {end.rule})",
            file=sys.stderr)
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    """Write the seed of ``args.path``; exit 0 written, 2 unreadable/unwritable, 3 invalid."""
    output = None if args.output in (None, STDIN) else args.output
    if args.json and output is None:
        error("seed --json needs -o OUT (stdout cannot carry both the seed and the report)")
        return EXIT_UNREADABLE
    loaded = load_arguments(args)
    if isinstance(loaded, LogReadError):
        if args.json:
            report = _seed_json(args.path, None)
            report["error"] = error_json(loaded)
            print_json(report)
        return EXIT_UNREADABLE
    if output is not None and is_the_input(output, args.path, loaded):
        what = "log" if isinstance(loaded, LoadedLog) else "history"
        problem = (f"is the input {what} ({loaded.file}): writing the seed over it would "
                   f"destroy the {what}; nothing written")
        error(f"{output}: {problem}")
        if args.json:
            report = (_seed_json(args.path, loaded) if isinstance(loaded, LoadedLog)
                      else history_input_json(args.path, loaded))
            report["error"] = _output_error(output, problem)
            print_json(report)
        return EXIT_UNREADABLE
    if not isinstance(loaded, LoadedLog):
        return _seed_history(args, output, loaded)
    log = loaded
    report = _seed_json(args.path, log)
    prefix = completed_turn_prefix(log.events)
    balanced = check_balance(prefix)
    if isinstance(balanced, Failure):
        violation: Violation = balanced.failure()
        line = log.line_of(violation.seq)
        error(f"{where(log, line)}: invalid: {violation.message} (rule: {violation.rule}); "
              "a seed must be valid, nothing written")
        if args.json:
            report["violation"] = violation_json(violation, line)
            print_json(report)
        return EXIT_INVALID
    assessment = assess(log)
    if not _write(output, encode_log(prefix), report, args.json):
        return EXIT_UNREADABLE
    tail_violation = assessment.violation  # only a violation after the cut can remain here
    if args.json:
        report.update({
            "output": output, "seed_length": len(prefix),
            "completed_turns": assessment.completed_turns,
            "excluded": _tail_json(assessment.tail),
            "tail_violation": None if tail_violation is None else violation_json(
                tail_violation, assessment.violation_line),
        })
        print_json(report)
        return EXIT_OK
    destination = "stdout" if output is None else output
    if len(prefix):
        say(f"seed: {counted(len(prefix), 'event')} (seq 0..{len(prefix) - 1}), "
            f"{counted(assessment.completed_turns, 'completed turn')} → {destination}",
            file=sys.stderr)
    else:
        say(f"seed: empty, no turn has completed (a fork child starts with no history, "
            f"like a spawn) → {destination}", file=sys.stderr)
    say(assessment.tail.words(), file=sys.stderr)
    if tail_violation is not None:
        say(f"warning: {where(log, assessment.violation_line)}: the excluded part breaks "
            f"a rule: {tail_violation.message} (rule: {tail_violation.rule})", file=sys.stderr)
    return EXIT_OK
