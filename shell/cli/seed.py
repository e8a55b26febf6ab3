"""``turnfork seed``: write the completed-turn prefix of a log or a wire history, the seed a
fork child gets.

A log's seed is written as it is read: each chunk's events are encoded and written to the
output's sink (:mod:`.outputs`) as they are folded, and what follows the last ``turn/end``
is cut off the sink before it is committed; nothing is committed when the prefix breaks a
rule or the log cannot be read to its end.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from ...core import TurnEndEvent, encode_log
from ..logfile import LogChunk, LogReadError, LogStream
from .app import EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE
from .assess import Assessor, Tail, assess_stream, ended_words
from .inputs import STDIN, Opened, is_the_input, opened_input
from .outputs import OutputError, Sink, open_sink, write_file
from .reports import (
    error_json,
    history_input_json,
    history_violation_json,
    input_json,
    torn_json,
    violation_json,
    where,
)
from .terminal import counted, error, print_json, say

if TYPE_CHECKING:
    from .histories import LoadedHistory

__all__ = ["run"]


def _tail_json(tail: Tail) -> dict[str, object]:
    return {"events": tail.events, "open_turn": tail.open_turn,
            "open_turn_seq": tail.open_turn_seq, "in_flight_events": tail.in_flight_events,
            "between_turn_events": tail.between_turn_events}


def _seed_json(path: str, log: LogStream | None, events: int | None = None) -> dict[str, object]:
    report: dict[str, object] = input_json(path, log, events)
    report.update({"output": None, "seed_length": None, "completed_turns": None,
                   "turns_ended": None, "excluded": None, "left_out": None, "violation": None,
                   "tail_violation": None, "error": None})
    return report


def _output_error(output: str, problem: str) -> dict[str, object]:
    return {"file": output, "line": None, "seq": None, "event_type": None,
            "problem": problem, "message": f"{output}: {problem}"}


def _cannot_write(output: str | None, exc: OSError, report: dict[str, object],
                  json: bool) -> int:
    """``OUT`` could not be opened or written: the error said, nothing written (a closed
    stdout is not said here: its reader left, which :func:`.app.main` answers)."""
    if output is None and isinstance(exc, BrokenPipeError):
        raise exc
    where_to = "stdout" if output is None else output
    problem = str(exc) if isinstance(exc, OutputError) else (
        f"cannot write: {exc.strerror or exc}")
    error(f"{where_to}: {problem}; nothing written")
    if json:
        report["error"] = _output_error(where_to, problem)
        print_json(report)
    return EXIT_UNREADABLE


def _seed_history(args: argparse.Namespace, output: str | None, loaded: LoadedHistory) -> int:
    """Write a wire history's completed-turn prefix in its own layout. The core's cut stops
    before the first violation, so the prefix is balanced whatever follows it."""
    from .histories import encode_seed, excluded_words, span_words  # noqa: PLC0415

    history = loaded.history
    cut, total = history.completed_prefix_length, loaded.items
    report = history_input_json(args.path, loaded)
    report.update({"output": output, "seed_length": None, "excluded": None,
                   "tail_violation": None, "end_violation": None, "error": None})
    try:
        write_file(output, encode_seed(loaded))
    except OSError as exc:
        return _cannot_write(output, exc, report, args.json)
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


class _PrefixWriter:
    """Writes each chunk's events as they come, and knows where the completed-turn prefix
    ends in what it wrote (just past the last ``turn/end``)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        #: Bytes written through the last ``turn/end``.
        self.cut_bytes = 0
        #: The prefix breaks a rule: nothing more is written, nothing will be committed.
        self.refused = False

    def __call__(self, chunk: LogChunk, assessor: Assessor) -> None:
        violation = assessor.violation
        if violation is not None and violation.seq < assessor.cut:
            self.refused = True
        if self.refused:
            return
        events = chunk.events
        last_end = next((index for index in range(len(events) - 1, -1, -1)
                         if type(events[index]) is TurnEndEvent), None)
        if last_end is None:
            self.sink.write(encode_log(events))
            return
        self.sink.write(encode_log(events[:last_end + 1]))
        self.cut_bytes = self.sink.written
        self.sink.write(encode_log(events[last_end + 1:]))


def _refuse_onto_input(args: argparse.Namespace, output: str, opened: Opened) -> int:
    what = "log" if isinstance(opened, LogStream) else "history"
    problem = (f"is the input {what} ({opened.file}): writing the seed over it would "
               f"destroy the {what}; nothing written")
    error(f"{output}: {problem}")
    if args.json:
        report = (_seed_json(args.path, opened) if isinstance(opened, LogStream)
                  else history_input_json(args.path, opened))
        report["error"] = _output_error(output, problem)
        print_json(report)
    return EXIT_UNREADABLE


def run(args: argparse.Namespace) -> int:
    """Write the seed of ``args.path``; exit 0 written, 2 unreadable/unwritable, 3 invalid."""
    output = None if args.output in (None, STDIN) else args.output
    if args.json and output is None:
        error("seed --json needs -o OUT (stdout cannot carry both the seed and the report)")
        return EXIT_UNREADABLE
    if output is not None and output.endswith((".zstd", ".zst")):
        error(f"{output}: seed writes plain JSONL, and a name ending in .zstd is read as zstd: "
              "name it without .zstd (and compress it afterwards, if need be); nothing written")
        return EXIT_UNREADABLE
    with opened_input(args) as read:
        if isinstance(read, LogReadError):
            if args.json:
                report = _seed_json(args.path, None)
                report["error"] = error_json(read)
                print_json(report)
            return EXIT_UNREADABLE
        opened = read.opened
        if output is not None and is_the_input(output, args.path, opened):
            return _refuse_onto_input(args, output, opened)
        if not isinstance(opened, LogStream):
            return _seed_history(args, output, opened)
        return _seed_log(args, output, opened)


def _seed_log(args: argparse.Namespace, output: str | None, log: LogStream) -> int:
    report = _seed_json(args.path, log)
    try:
        sink = open_sink(output)
    except OSError as exc:
        return _cannot_write(output, exc, report, args.json)
    writer = _PrefixWriter(sink)
    try:
        assessment = assess_stream(log, what=f"seeding from {os.path.basename(log.file)}",
                                   each=writer)
    except BaseException:
        sink.abort()
        raise
    if isinstance(assessment, LogReadError):
        sink.abort()
        error(assessment.message)
        if args.json:
            report = _seed_json(args.path, None)
            report["error"] = error_json(assessment)
            print_json(report)
        return EXIT_UNREADABLE
    report = _seed_json(args.path, log, assessment.events)
    violation = assessment.violation
    if violation is not None and violation.seq < assessment.cut:
        sink.abort()
        line = assessment.violation_line
        error(f"{where(log, line, assessment.violation_file)}: invalid: {violation.message} "
              f"(rule: {violation.rule}); a seed must be valid, nothing written")
        if args.json:
            report["violation"] = violation_json(violation, line)
            print_json(report)
        return EXIT_INVALID
    try:
        sink.keep(writer.cut_bytes)
        sink.commit()
    except OSError as exc:
        sink.abort()
        return _cannot_write(output, exc, report, args.json)
    cut = assessment.cut
    if args.json:
        report.update({
            "output": output, "seed_length": cut,
            "completed_turns": assessment.completed_turns,
            "turns_ended": assessment.ended,
            "excluded": _tail_json(assessment.tail),
            "left_out": torn_json(assessment.torn),
            "tail_violation": None if violation is None else violation_json(
                violation, assessment.violation_line),
        })
        print_json(report)
        return EXIT_OK
    destination = "stdout" if output is None else output
    if cut:
        say(f"seed: {counted(cut, 'event')} (seq 0..{cut - 1}), "
            f"{ended_words(assessment.ended)} → {destination}", file=sys.stderr)
    else:
        say(f"seed: empty, no turn has completed (a fork child starts with no history, "
            f"like a spawn) → {destination}", file=sys.stderr)
    say(assessment.tail.words(), file=sys.stderr)
    if assessment.torn is not None:
        say(assessment.torn.words, file=sys.stderr)
    if violation is not None:
        say(f"warning: {where(log, assessment.violation_line, assessment.violation_file)}: "
            f"the excluded part breaks a rule: {violation.message} (rule: {violation.rule})",
            file=sys.stderr)
    return EXIT_OK
