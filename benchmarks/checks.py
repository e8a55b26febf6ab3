"""What every decode-and-check contender reports, so their answers can be compared."""

from __future__ import annotations

from dataclasses import dataclass

from turnfork import core

__all__ = ["TOOL_NOT_STARTED", "Outcome", "outcome_of_trace"]

#: DSH's repair code: a result that answers a call which never got a ``tool/call``.
TOOL_NOT_STARTED = "TOOL_NOT_STARTED"


@dataclass(frozen=True)
class Outcome:
    """Where a checked log stands, or the first problem found (``length`` = its position)."""

    length: int
    open_turn: int | None = None
    open_step: int | None = None
    completed_prefix_length: int = 0
    problem: str | None = None

    @classmethod
    def failed(cls, seq: int, problem: str) -> Outcome:
        return cls(length=seq, problem=problem)


def outcome_of_trace(trace: core.Trace) -> Outcome:
    """The same summary, read off the core's trace."""
    return Outcome(length=trace.length, open_turn=trace.open_turn, open_step=trace.open_step,
                   completed_prefix_length=trace.completed_prefix_length)
