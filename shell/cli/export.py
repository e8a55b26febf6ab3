"""``turnfork export``: sessions as self-contained DSH session files, their fork seeds inline.

A fork child saved by :class:`~shell.jsonl_store.JsonlSessionStore` keeps its seed in its
parent's file (a ``turnfork/seed`` record after its header, and a ``seed-N.jsonl`` link beside
it). DSH does not know the record; the exported file holds the header line, then every event,
the seed's included, as :meth:`JsonlSessionStore.export` writes it
(:func:`~shell.jsonl_store.session_file_bytes`). Every input is read by the shared reader
(:func:`~shell.logfile.read_log`, through :mod:`.inputs`), so a seed is found, bounded and
checked as ``check`` and ``show`` find it.

The export is all or nothing up to the first write: every input is read and checked, and every
output planned, before anything is written. An unreadable input, an input without a session
header, an invalid log, two inputs that are the same session, an output that is an input (a
fork child's seed files included), an output in a session directory whose writer lock a live
store holds, a socket or a block device, ``--zstd`` with a file ``OUT`` not named ``*.zstd``,
or an output that exists (without ``--force``) refuses the whole export, each problem named on
its own line, and nothing is written. Each file is written by :mod:`.outputs`' rules: a
regular file atomically, under its directory's writer lock; a FIFO or a device written into,
never replaced.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..jsonl_store import JsonlSessionStore, check_session_id, session_file_bytes
from ..logfile import LoadedLog, LogReadError
from ..store import InvalidSessionIdError
from .app import EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE
from .assess import Assessment, assess
from .inputs import STDIN, is_the_input, read_input
from .outputs import OutputError, output_problem, write_file
from .reports import error_json, input_json, torn_json, violation_json, where
from .terminal import counted, error, print_json, say

__all__ = ["run"]

_ZSTD_SUFFIX = ".zstd"


@dataclass(frozen=True)
class _Export:
    """One input read and checked, and the file it is to be written to."""

    path: str
    log: LoadedLog
    assessment: Assessment
    target: Path
    compression: str
    #: OUT is ``-``: the file goes to stdout (and the report to stderr).
    to_stdout: bool


@dataclass(frozen=True)
class _Problem:
    """Why the export is refused, for one input or output, and the exit status it asks for."""

    message: str
    status: int
    json: dict[str, Any]


def _problem(file: str, problem: str, status: int = EXIT_UNREADABLE, *,
             line: int | None = None, seq: int | None = None) -> _Problem:
    read_error = LogReadError(file=file, problem=problem, line=line, seq=seq)
    return _Problem(read_error.message, status, error_json(read_error))


def _layout(output: str, headers: int, *, zstd: bool) -> tuple[str, bool, str]:
    """How ``-o OUT`` is read for ``headers`` inputs: ``(layout, zstd, problem)``.

    ``layout`` is ``"stdout"`` (OUT is ``-``, one input), ``"file"`` (one input, and OUT is
    not a directory: OUT is the file) or
    ``"root"`` (OUT a directory, or several inputs: a sessions root, each session at
    ``OUT/<project>/<session id>/session.jsonl[.zstd]``, DSH's layout); ``zstd`` whether the
    files are compressed (``--zstd``, or a file OUT named ``*.zstd``); ``problem`` is empty,
    or why OUT cannot be used.
    """
    if output == STDIN:
        return "stdout", zstd, "" if headers == 1 else (
            f"stdout holds one session, not {headers}: export them into a directory")
    if os.path.isdir(output):
        return "root", zstd, ""
    if headers == 1 and not output.endswith(os.sep):  # `out/` names a directory, made if need be
        if zstd and not output.endswith(_ZSTD_SUFFIX):
            return "file", zstd, (f"--zstd writes zstd, and a file whose name does not end in "
                                  f"{_ZSTD_SUFFIX} is read as plain text: name it "
                                  f"{os.path.basename(output)}{_ZSTD_SUFFIX}")
        return "file", zstd or output.endswith(_ZSTD_SUFFIX), ""
    if os.path.lexists(output):
        return "root", zstd, (f"is not a directory: {counted(headers, 'session')} are "
                              "exported into a directory (a sessions root)")
    return "root", zstd, ""


def _read(path: str) -> LoadedLog | _Problem:
    loaded = read_input(path, "dsh", progress=f"reading {os.path.basename(path)}")
    if isinstance(loaded, LogReadError):
        return _Problem(loaded.message, EXIT_UNREADABLE, error_json(loaded))
    assert isinstance(loaded, LoadedLog)  # --format dsh reads nothing else
    if loaded.header is None:
        return _problem(loaded.file, "has no session header (a JSONL event log): a DSH "
                                     "session file starts with one; export a session file "
                                     "or a session directory")
    return loaded


def _checked(log: LoadedLog) -> Assessment | _Problem:
    assessment = assess(log)
    violation = assessment.violation
    if violation is None:
        return assessment
    line = assessment.violation_line
    problem = (f"invalid: {violation.problem} (rule: {violation.rule}); a session that "
               "breaks a rule is not exported")
    return _Problem(f"{where(log, line)}: seq {violation.seq}: {problem}", EXIT_INVALID,
                    {"file": log.file, "line": line, "seq": violation.seq,
                     "event_type": None, "problem": problem,
                     "violation": violation_json(violation, line),
                     "message": f"{where(log, line)}: seq {violation.seq}: {problem}"})


def _target(log: LoadedLog, output: str, layout: str, zstd: bool) -> Path | _Problem:
    if layout != "root":
        return Path(output)
    assert log.header is not None
    try:
        check_session_id(log.header.id)
    except InvalidSessionIdError as exc:
        return _problem(log.file, f"session {log.header.id!r}: {exc}")
    store = JsonlSessionStore(output, compression="zstd" if zstd else "none")
    return store.path_for(log.header)


def _conflicts(exports: list[_Export], force: bool) -> list[_Problem]:
    """Outputs that are inputs, that two inputs share, or that exist (without ``--force``)."""
    problems: list[_Problem] = []
    seen: dict[str, _Export] = {}
    for export in exports:
        if export.to_stdout:
            continue
        target = str(export.target)
        key = os.path.normcase(os.path.abspath(target))
        if key in seen:
            problems.append(_problem(target, (
                f"{seen[key].path} and {export.path} would both be written here (the same "
                "session twice?)")))
            continue
        seen[key] = export
        inputs = [other for other in exports if is_the_input(target, other.path, other.log)]
        refused = output_problem(target, lock=True)
        if inputs:
            problems.append(_problem(target, (
                f"is where {inputs[0].path} was read from: exporting over it would "
                "replace that session (export to another file or directory); refused, "
                "--force or not")))
        elif refused is not None:
            problems.append(_problem(target, refused))
        elif os.path.lexists(target) and not force:
            problems.append(_problem(target, "exists (--force replaces it)"))
    return problems


def _summary(export: _Export, replaced: bool) -> dict[str, Any]:
    log = export.log
    assert log.header is not None
    report = input_json(export.path, log)
    report.update({
        "session_id": log.header.id, "state": export.assessment.state,
        "seed_events": None if log.seed is None else log.seed.events,
        "seed_file": None if log.seed is None else log.seed.file,
        "output": str(export.target), "compression": export.compression,
        "replaced": replaced, "left_out": torn_json(log.torn),
    })
    return report


def _words(export: _Export, replaced: bool) -> str:
    log = export.log
    assert log.header is not None
    what = f"session {log.header.id}, {counted(len(log.events), 'event')}"
    if log.seed is not None:
        what += (f" (the first {log.seed.events:,} its seed, written inline from "
                 f"{log.seed.file})")
    if export.assessment.state == "open":
        what += "; open: it ends inside a turn, as it was read"
    if log.torn is not None:
        what += f"; {log.torn.words}"
    destination = "stdout" if export.to_stdout else str(export.target)
    return (f"exported {export.path} → {destination}: {what}"
            + (("; replaced the file that was there" if export.target.is_file()
                else "; written into what was there (a FIFO or a device is never replaced)")
               if replaced else ""))


def _refuse(args: argparse.Namespace, problems: list[_Problem]) -> int:
    for problem in problems:
        error(problem.message)
    status = EXIT_UNREADABLE if any(p.status == EXIT_UNREADABLE for p in problems) \
        else EXIT_INVALID
    error(f"nothing exported ({counted(len(problems), 'problem')})")
    if args.json:
        print_json({"output": args.output, "exports": [],
                    "errors": [p.json for p in problems], "written": 0})
    return status


def run(args: argparse.Namespace) -> int:
    """Export every ``args.paths``; exit 0 all written, 2 unreadable input or unusable
    output (nothing written; or a write failed: what was written is said), 3 an invalid
    input (nothing written)."""
    paths: list[str] = args.paths
    output: str = args.output
    if args.json and output == STDIN:
        error("export --json needs -o OUT other than - (stdout cannot carry both the file "
              "and the report)")
        return EXIT_UNREADABLE
    if paths.count(STDIN) > 1:
        return _refuse(args, [_problem(STDIN, "stdin can be read once: give - once")])
    problems: list[_Problem] = []
    read: list[tuple[str, LoadedLog, Assessment]] = []
    for path in paths:
        log = _read(path)
        checked = log if isinstance(log, _Problem) else _checked(log)
        if isinstance(checked, _Problem):
            problems.append(checked)
        elif isinstance(log, LoadedLog):
            read.append((path, log, checked))
    layout, zstd, refused = _layout(output, len(paths), zstd=args.zstd)
    if refused:
        problems.append(_problem(output, refused))
    if problems:
        return _refuse(args, problems)
    exports: list[_Export] = []
    for path, log, assessment in read:
        target = _target(log, output, layout, zstd)
        if isinstance(target, _Problem):
            problems.append(target)
        else:
            exports.append(_Export(path, log, assessment, target, "zstd" if zstd else "none",
                                   to_stdout=layout == "stdout"))
    problems += _conflicts(exports, args.force)
    if problems:
        return _refuse(args, problems)

    written: list[dict[str, Any]] = []
    for export in exports:
        log = export.log
        assert log.header is not None
        replaced = not export.to_stdout and os.path.lexists(export.target)
        try:
            data = session_file_bytes(log.header, log.events, compression="zstd" if zstd
                                      else "none")
            if export.to_stdout:
                write_file(None, data)
            else:
                export.target.parent.mkdir(parents=True, exist_ok=True)
                write_file(str(export.target), data)
        except BrokenPipeError:
            if export.to_stdout:
                raise  # the reader of stdout went away: 141, and no claim of success
            problem = "cannot write: the pipe's reader went away"
        except (OSError, RuntimeError) as exc:  # RuntimeError: zstd without zstandard
            problem = (str(exc) if isinstance(exc, OutputError) else
                       f"cannot write: {getattr(exc, 'strerror', None) or exc}")
        else:
            problem = ""
        if problem:
            error(f"{export.target}: {problem}; it and the inputs after it were not exported")
            if args.json:
                print_json({"output": output, "exports": written,
                            "errors": [_problem(str(export.target), problem).json],
                            "written": len(written)})
            return EXIT_UNREADABLE
        written.append(_summary(export, replaced))
        if not args.json:
            say(_words(export, replaced), file=sys.stderr if export.to_stdout else None)
    if args.json:
        print_json({"output": output, "exports": written, "errors": [],
                    "written": len(written)})
    return EXIT_OK
