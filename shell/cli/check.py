"""``turnfork check``: is the log (or wire history) valid, and is it closed?"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from ..logfile import LogReadError, LogStream
from . import reports
from .app import EXIT_INVALID, EXIT_OK, EXIT_OPEN, EXIT_UNREADABLE
from .assess import Assessment, assess_stream, ended_words
from .inputs import opened_input
from .terminal import counted, error, print_json, say

if TYPE_CHECKING:
    from .histories import LoadedHistory

__all__ = ["run", "check_json", "history_check_json"]

_STATUS = {"closed": EXIT_OK, "empty": EXIT_OK, "open": EXIT_OPEN, "invalid": EXIT_INVALID}


def check_json(path: str, log: LogStream | None, assessment: Assessment | None,
               error: LogReadError | None) -> dict[str, object]:
    """The ``check --json`` report (see docs/cli.md)."""
    report: dict[str, object] = reports.input_json(
        path, log, None if assessment is None else assessment.events)
    report.update({
        "valid": False, "closed": False, "state": "unreadable",
        "completed_prefix_length": None, "completed_turns": None, "turns_ended": None,
        "open_turn": None, "open_step": None, "pending_calls": [], "events_after_cut": None,
        "left_out": None, "violation": None, "verdict": None,
        "error": None if error is None else reports.error_json(error),
    })
    if assessment is None or log is None:
        return report
    report.update({"valid": assessment.valid, "closed": assessment.closed,
                   "state": assessment.state, "verdict": assessment.verdict(),
                   "left_out": reports.torn_json(assessment.torn)})
    if assessment.violation is not None:
        report["violation"] = reports.violation_json(assessment.violation,
                                                     assessment.violation_line)
    trace = assessment.trace
    if trace is not None:  # figures past a violation would not be trustworthy
        report.update({
            "completed_prefix_length": assessment.cut,
            "completed_turns": assessment.completed_turns,
            "turns_ended": assessment.ended,
            "open_turn": trace.open_turn, "open_step": trace.open_step,
            "pending_calls": [call.call_id for call in trace.pending_calls],
            "events_after_cut": assessment.tail.events,
        })
    return report


def history_check_json(path: str, loaded: LoadedHistory) -> dict[str, object]:
    """The ``check --json`` report of a wire history (see docs/cli.md)."""
    from .histories import history_state, history_verdict  # noqa: PLC0415

    history = loaded.history
    state = history_state(history)
    report: dict[str, object] = reports.history_input_json(path, loaded)
    report.update({
        "valid": history.violation is None, "closed": state == "closed", "state": state,
        "verdict": history_verdict(history),
        # The core's cut stops before the first violation, so it holds even then.
        "completed_prefix_length": history.completed_prefix_length,
        "items_after_cut": loaded.items - history.completed_prefix_length,
        "violation": reports.history_violation_json(history.violation, loaded),
        "end_violation": reports.history_violation_json(history.end_violation, loaded),
        "error": None,
    })
    return report


def _check_history(args: argparse.Namespace, loaded: LoadedHistory) -> int:
    from .histories import history_state, history_verdict  # noqa: PLC0415

    history = loaded.history
    state = history_state(history)
    if args.json:
        print_json(history_check_json(args.path, loaded))
        return _STATUS[state]
    problem = history.violation or history.end_violation
    say(f"{loaded.where(None if problem is None else problem.index)}: "
        f"{history_verdict(history)}")
    say(f"  input: {loaded.description}; {counted(loaded.items, 'item')}")
    say(f"  completed-turn prefix: {counted(history.completed_prefix_length, 'item')} "
        "(what a fork child is seeded with; `turnfork seed` writes it)")
    return _STATUS[state]


def run(args: argparse.Namespace) -> int:
    """Check ``args.path``; exit 0 closed (or empty), 1 open, 2 unreadable, 3 invalid."""
    with opened_input(args) as read:
        if isinstance(read, LogReadError):
            if args.json:
                print_json(check_json(args.path, None, None, read))
            return EXIT_UNREADABLE
        if not isinstance(read.opened, LogStream):
            from .histories import strictly  # noqa: PLC0415

            return _check_history(args, strictly(read.opened) if args.strict else read.opened)
        if args.strict:
            refused = LogReadError(file=read.opened.path, problem=(
                "--strict checks a wire history's items against the provider's rules, and "
                "this is a DSH log"))
            error(refused.message)
            if args.json:
                print_json(check_json(args.path, None, None, refused))
            return EXIT_UNREADABLE
        return _check_log(args, read.opened)


def _check_log(args: argparse.Namespace, log: LogStream) -> int:
    assessment = assess_stream(log, what=f"checking {os.path.basename(log.file)}")
    if isinstance(assessment, LogReadError):
        error(assessment.message)
        if args.json:
            print_json(check_json(args.path, None, None, assessment))
        return EXIT_UNREADABLE
    if args.json:
        print_json(check_json(args.path, log, assessment, None))
        return _STATUS[assessment.state]
    say(f"{reports.where(log, assessment.violation_line, assessment.violation_file)}: "
        f"{assessment.verdict()}")
    say(f"  input: {log.description}; {counted(assessment.events, 'event')}")
    if assessment.torn is not None and assessment.events:
        say(f"  {assessment.torn.words}")
    if assessment.valid and assessment.events:
        say(f"  completed-turn prefix: {counted(assessment.cut, 'event')}, "
            f"{ended_words(assessment.ended)}: what a fork child is seeded with; "
            "`turnfork seed` writes it")
    return _STATUS[assessment.state]
