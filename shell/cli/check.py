"""``turnfork check``: is the log valid, and is it closed?"""

from __future__ import annotations

import argparse

from ..logfile import LoadedLog, LogReadError
from .app import EXIT_INVALID, EXIT_OK, EXIT_OPEN, EXIT_UNREADABLE
from .assess import Assessment, assess
from .inputs import load
from .reports import error_json, input_json, violation_json, where
from .terminal import counted, print_json, say

__all__ = ["run", "check_json"]


def check_json(path: str, log: LoadedLog | None, assessment: Assessment | None,
               error: LogReadError | None) -> dict[str, object]:
    """The ``check --json`` report (see docs/cli.md)."""
    report: dict[str, object] = input_json(path, log)
    report.update({
        "valid": False, "closed": False, "state": "unreadable",
        "completed_prefix_length": None, "completed_turns": None, "open_turn": None,
        "open_step": None, "pending_calls": [], "events_after_cut": None,
        "violation": None, "verdict": None,
        "error": None if error is None else error_json(error),
    })
    if assessment is None or log is None:
        return report
    report.update({"valid": assessment.valid, "closed": assessment.closed,
                   "state": assessment.state, "verdict": assessment.verdict(len(log.events))})
    if assessment.violation is not None:
        report["violation"] = violation_json(assessment.violation, assessment.violation_line)
    trace = assessment.trace
    if trace is not None:  # figures past a violation would not be trustworthy
        report.update({
            "completed_prefix_length": assessment.cut,
            "completed_turns": assessment.completed_turns,
            "open_turn": trace.open_turn, "open_step": trace.open_step,
            "pending_calls": [call.call_id for call in trace.pending_calls],
            "events_after_cut": assessment.tail.events,
        })
    return report


def run(args: argparse.Namespace) -> int:
    """Check ``args.path``; exit 0 closed, 1 open, 2 unreadable, 3 invalid."""
    loaded = load(args.path)
    if isinstance(loaded, LogReadError):
        if args.json:
            print_json(check_json(args.path, None, None, loaded))
        return EXIT_UNREADABLE
    log = loaded
    assessment = assess(log)
    if args.json:
        print_json(check_json(args.path, log, assessment, None))
    else:
        say(f"{where(log, assessment.violation_line)}: {assessment.verdict(len(log.events))}")
        say(f"  input: {log.description}; {counted(len(log.events), 'event')}")
        if assessment.valid:
            say(f"  completed-turn prefix: {counted(assessment.cut, 'event')}, "
                f"{counted(assessment.completed_turns, 'turn')} "
                "(what a fork child is seeded with; `turnfork seed` writes it)")
    return {"closed": EXIT_OK, "open": EXIT_OPEN, "invalid": EXIT_INVALID}[assessment.state]
