"""Judging a loaded log: valid or not, open or closed, the completed-turn cut and what lies after.

:func:`assess` folds the balance rules over a :class:`~shell.logfile.LoadedLog` once and holds
everything the commands report, so ``check``, ``seed``, ``show`` and the demo's picture say the
same thing about the same log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec
from returns.result import Failure, Success

from ...core import (
    Event,
    Trace,
    TurnEndEvent,
    TurnStartEvent,
    Violation,
    completed_turn_cut,
    trace_log,
)
from ..logfile import LoadedLog
from .terminal import counted

__all__ = ["Tail", "Assessment", "assess"]



class Tail(msgspec.Struct, frozen=True, kw_only=True):
    """What lies after the completed-turn cut: never part of a seed."""

    #: Events after the last ``turn/end`` (all events when no turn has completed).
    events: int
    #: The in-flight turn's number, when a turn was started after the cut.
    open_turn: int | None
    #: Seq of that turn's ``turn/start``.
    open_turn_seq: int | None
    #: Events of the in-flight turn, from its ``turn/start`` to the end of the log.
    in_flight_events: int
    #: Events after the cut that sit between turns (before the in-flight turn, or trailing).
    between_turn_events: int

    def words(self) -> str:
        """What the cut left out, in one sentence, e.g. ``excluded: 7 events after …``."""
        if not self.events:
            return "excluded: nothing (the log ends with turn/end)"
        parts = []
        if self.between_turn_events:
            parts.append(counted(self.between_turn_events, "between-turn event"))
        if self.open_turn is not None:
            parts.append(f"in-flight turn {self.open_turn} "
                         f"({counted(self.in_flight_events, 'event')} from seq "
                         f"{self.open_turn_seq})")
        return (f"excluded: {counted(self.events, 'event')} after the last turn/end: "
                + ", then ".join(parts))


class Assessment(msgspec.Struct, frozen=True, kw_only=True):
    """The balance rules folded over a whole log, and the completed-turn cut."""

    #: The trace of the whole log; ``None`` when a rule broke.
    trace: Trace | None
    violation: Violation | None
    #: The line holding the violating event, when there is one.
    violation_line: int | None
    #: Index just past the last ``turn/end`` (0 when no turn has completed).
    cut: int
    #: ``turn/end`` events before the cut.
    completed_turns: int
    tail: Tail

    @property
    def valid(self) -> bool:
        return self.violation is None

    @property
    def closed(self) -> bool:
        return self.trace is not None and self.trace.is_closed

    @property
    def state(self) -> Literal["closed", "open", "invalid"]:
        if self.violation is not None:
            return "invalid"
        return "closed" if self.closed else "open"

    def verdict(self, total: int) -> str:
        """The state in one sentence, e.g. ``open: the log ends inside turn 11 (…)``."""
        if self.violation is not None:
            return (f"invalid: seq {self.violation.seq}: {self.violation.problem} "
                    f"(rule: {self.violation.rule})")
        assert self.trace is not None
        if self.trace.is_closed:
            words = (f"valid and closed: {counted(total, 'event')}, "
                     f"{counted(self.completed_turns, 'completed turn')}")
            if self.tail.between_turn_events:
                words += (f"; {counted(self.tail.between_turn_events, 'between-turn event')} "
                          "after the last turn/end")
            return words
        return f"open: {_open_words(self.trace, self.cut, total)}"


def _open_words(trace: Trace, cut: int, total: int) -> str:
    where = f"turn {trace.open_turn}"
    if trace.open_step is not None:
        where += f" step {trace.open_step}"
    pending = [call.call_id for call in trace.pending_calls]
    waiting = ""
    if len(pending) == 1:
        waiting = f", with {pending[0]} still waiting for its tool/result"
    elif pending:
        waiting = (f", with {len(pending)} calls still waiting for their tool/results "
                   f"({', '.join(pending)})")
    after = (f"in-flight turn; {counted(total - cut, 'event')} after the last turn/end" if cut
             else f"in-flight turn; no turn has completed, {counted(total, 'event')}")
    return f"the log ends inside {where}{waiting} ({after})"


def _tail(events: Sequence[Event], cut: int) -> Tail:
    for index in range(cut, len(events)):
        event = events[index]
        if isinstance(event, TurnStartEvent):
            return Tail(events=len(events) - cut, open_turn=event.data.turn,
                        open_turn_seq=index, in_flight_events=len(events) - index,
                        between_turn_events=index - cut)
    return Tail(events=len(events) - cut, open_turn=None, open_turn_seq=None,
                in_flight_events=0, between_turn_events=len(events) - cut)


def assess(log: LoadedLog) -> Assessment:
    """Fold the balance rules over ``log`` once and locate the completed-turn cut."""
    events = log.events
    cut = completed_turn_cut(events)
    traced = trace_log(events)
    trace = traced.unwrap() if isinstance(traced, Success) else None
    violation = traced.failure() if isinstance(traced, Failure) else None
    completed = sum(1 for index in range(cut) if isinstance(events[index], TurnEndEvent))
    return Assessment(
        trace=trace, violation=violation,
        violation_line=None if violation is None else log.line_of(violation.seq),
        cut=cut, completed_turns=completed, tail=_tail(events, cut))
