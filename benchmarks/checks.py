"""What every decode-and-check contender reports, so their answers can be compared."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from turnfork import core

__all__ = ["TOOL_NOT_STARTED", "Outcome", "outcome_of_trace", "surface_problem"]

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


def surface_problem(seq: int, surface: list[int], kind: str, cited: Sequence[int] | None,
                    replaced: tuple[int, int] | None) -> str | None:
    """The surface rules for event ``seq`` of type ``kind`` (``replaced``: the ``start`` and
    ``end`` it shadows, or None to append), over the surface so far, which it updates."""
    cited_set: set[int] = set()
    if cited is not None:
        cited_set = set(cited)
        if len(cited_set) != len(cited):
            return "sourceEventSeqs lists a seq twice"
        if cited and max(cited) >= seq:
            return "sourceEventSeqs cites a seq that is not earlier"
        if not cited and kind != "assistant/message":
            return "sourceEventSeqs is empty"
    if replaced is None:
        surface.append(seq)
        return None
    start, end = replaced
    if start not in surface or end not in surface:
        return "surface replace names a seq that is not on the surface"
    first, last = surface.index(start), surface.index(end)
    if first > last:
        return "surface replace: start comes after end"
    if any(s not in cited_set for s in surface[first:last + 1]):
        return "surface replace shadows a seq it does not cite"
    if kind == "tool/result" and first != last:
        return "a tool/result replacement must shadow exactly one event"
    surface[first:last + 1] = [seq]
    return None
