"""Judging a log: valid or not, open or closed, the completed-turn cut and what lies after.

:class:`Assessor` folds the balance rules over a log a chunk at a time, as the shared reader
streams it (``core.trace_log`` from the trace so far), and :meth:`Assessor.result` holds
everything the commands report, so ``check``, ``seed``, ``show`` and the demo's picture say the
same thing about the same log. :func:`assess` is the same over a log held in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec
from returns.result import Failure

from ...core import (
    EMPTY_TRACE,
    Trace,
    TurnEndEvent,
    TurnStartEvent,
    Violation,
    trace_log,
)
from ..logfile import LoadedLog, LogChunk, LogReadError, LogStream, TornTail
from .terminal import Progress, counted

__all__ = ["Tail", "Assessment", "Assessor", "assess", "assess_stream", "END_REASONS",
           "ended_words"]

#: How a turn can end (``turn/end``'s reason), in the order reports list them.
END_REASONS = ("completed", "error", "aborted", "max-tokens", "blocked", "interrupted")


def ended_words(ended: dict[str, int]) -> str:
    """How many turns ended, and how: ``2 turns (1 completed, 1 error)``; ``0 turns``."""
    total = sum(ended.values())
    if not total:
        return counted(0, "turn")
    how = ", ".join(f"{ended[reason]:,} {reason}" for reason in END_REASONS if ended.get(reason))
    return f"{counted(total, 'turn')} ({how})"


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
    #: The log holds no events at all (so it ends with no ``turn/end`` either).
    empty: bool = False

    def words(self) -> str:
        """What the cut left out, in one sentence, e.g. ``excluded: 7 events after …``."""
        if not self.events:
            return ("excluded: nothing (the log holds no events)" if self.empty
                    else "excluded: nothing (the log ends with turn/end)")
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
    #: The trace of the events before the first rule broken: the whole log's when none is.
    traced: Trace
    violation: Violation | None
    #: The line holding the violating event, when there is one, and its file (a fork child's
    #: seed file, for an inherited event).
    violation_line: int | None
    #: Index just past the last ``turn/end`` (0 when no turn has completed).
    cut: int
    #: ``turn/end`` events before the cut: the turns that ended, however they did.
    completed_turns: int
    tail: Tail
    #: Events in the log, and its turns (a ``turn/start`` opens one).
    events: int = 0
    turns: int = 0
    #: How the turns before the cut ended: ``{"completed": 9, "error": 1}``.
    ended: dict[str, int] = msgspec.field(default_factory=dict)
    violation_file: str | None = None
    #: What the read left out, by the torn-tail rule.
    torn: TornTail | None = None
    #: Why the log holds no events, when it holds none (``a 0-byte file``, ``…``).
    empty_because: str | None = None

    @property
    def valid(self) -> bool:
        return self.violation is None

    @property
    def closed(self) -> bool:
        return self.trace is not None and self.trace.is_closed

    @property
    def state(self) -> Literal["closed", "open", "invalid", "empty"]:
        if self.violation is not None:
            return "invalid"
        if not self.events:
            return "empty"
        return "closed" if self.closed else "open"

    def verdict(self, total: int | None = None) -> str:
        """The state in one sentence, e.g. ``open: the log ends inside turn 11 (…)``."""
        total = self.events if total is None else total
        if self.violation is not None:
            return (f"invalid: seq {self.violation.seq}: {self.violation.problem} "
                    f"(rule: {self.violation.rule})")
        assert self.trace is not None
        if not total:
            return f"empty: no events ({self.empty_because or 'nothing to read'})"
        if self.trace.is_closed:
            words = f"valid and closed: {counted(total, 'event')}, {ended_words(self.ended)}"
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
        waiting = (f", with {len(pending):,} calls still waiting for their tool/results "
                   f"({', '.join(pending)})")
    after = (f"in-flight turn; {counted(total - cut, 'event')} after the last turn/end" if cut
             else f"in-flight turn; no turn has completed, {counted(total, 'event')}")
    return f"the log ends inside {where}{waiting} ({after})"


class Assessor:
    """The balance rules folded over a log chunk by chunk (the trace carried from one chunk
    to the next), the cut and what lies after it tracked as the events go by."""

    def __init__(self) -> None:
        self.trace: Trace | None = EMPTY_TRACE
        #: The trace up to the first broken rule (the log has none past it).
        self.traced = EMPTY_TRACE
        self.violation: Violation | None = None
        self.violation_line: int | None = None
        self.violation_file: str | None = None
        #: Events folded so far.
        self.events = 0
        self.cut = 0
        #: ``turn/start`` events so far.
        self.turns = 0
        self._ended: dict[str, int] = {}
        self._open: tuple[int, int] | None = None  # (position, turn) of the first turn/start
        #                                             after the last turn/end

    def feed(self, chunk: LogChunk) -> None:
        """Fold the events of ``chunk`` (the next ones of the log)."""
        events = chunk.events
        if self.trace is not None:
            traced = trace_log(events, self.trace)
            if isinstance(traced, Failure):
                violation: Violation = traced.failure()
                # The events before the broken one trace clean: the same fold, stopped there.
                self.traced = trace_log(events[:violation.seq - chunk.start],
                                        self.trace).unwrap()
                self.trace = None
                self.violation = violation
                self.violation_line = chunk.line_of(violation.seq)
                self.violation_file = chunk.file
            else:
                self.trace = self.traced = traced.unwrap()
        position = chunk.start
        ended = self._ended
        for event in events:
            kind = type(event)
            if kind is TurnEndEvent:
                assert isinstance(event, TurnEndEvent)
                reason = str(type(event.data.reason).__struct_config__.tag)
                ended[reason] = ended.get(reason, 0) + 1
                self.cut = position + 1
                self._open = None
            elif kind is TurnStartEvent:
                assert isinstance(event, TurnStartEvent)
                self.turns += 1
                if self._open is None:
                    self._open = (position, event.data.turn)
            position += 1
        self.events = position

    def result(self, *, torn: TornTail | None = None, header: bool = False,
               file_bytes: int | None = None) -> Assessment:
        """What the log folded so far says (``torn``, ``header`` and ``file_bytes``: what the
        reader says of it, for the words of an empty log)."""
        total, cut = self.events, self.cut
        if self._open is None:
            tail = Tail(events=total - cut, open_turn=None, open_turn_seq=None,
                        in_flight_events=0, between_turn_events=total - cut, empty=not total)
        else:
            start, turn = self._open
            tail = Tail(events=total - cut, open_turn=turn, open_turn_seq=start,
                        in_flight_events=total - start, between_turn_events=start - cut)
        empty = None
        if not total:
            if torn is not None:
                empty = f"its only line is left out: {torn.words}"
            elif header:
                empty = "a session header and nothing after it"
            elif file_bytes == 0:
                empty = "a 0-byte file"
            else:
                empty = "blank lines only"
        return Assessment(
            trace=self.trace, traced=self.traced, violation=self.violation,
            violation_line=self.violation_line, violation_file=self.violation_file, cut=cut,
            completed_turns=sum(self._ended.values()), tail=tail, events=total,
            turns=self.turns,
            ended=dict(self._ended), torn=torn, empty_because=empty)


def assess(log: LoadedLog) -> Assessment:
    """Fold the balance rules over ``log`` once and locate the completed-turn cut."""
    assessor = Assessor()
    assessor.feed(LogChunk(log.events, 0, log.file, 1, b""))
    assessment = assessor.result(torn=log.torn, header=log.header is not None,
                                 file_bytes=log.file_bytes)
    violation = assessment.violation
    if violation is None:
        return assessment
    return msgspec.structs.replace(assessment, violation_line=log.line_of(violation.seq),
                                   violation_file=log.file)


def assess_stream(stream: LogStream, *, what: str,
                  each: Callable[[LogChunk, Assessor], None] | None = None,
                  progress: bool = True) -> Assessment | LogReadError:
    """Read ``stream`` to its end, folding the rules chunk by chunk; ``each`` is called with
    every chunk once it is folded (the assessor then knows a violation in it). A progress bar
    says ``what`` is done when the read runs long (on a terminal, ``progress`` allowing)."""
    assessor = Assessor()
    with Progress(lambda: stream.progress, what, enabled=progress) as bar:
        for chunk in stream.chunks():
            if isinstance(chunk, LogReadError):
                return chunk
            assessor.feed(chunk)
            if each is not None:
                each(chunk, assessor)
            bar.tick()
    return assessor.result(torn=stream.torn, header=stream.header is not None,
                           file_bytes=stream.file_bytes)
