"""A live session: an append-only event log that never holds an invalid event (rules in
docs/api-shell-runtime.md, "Sessions").

Every append is folded into the core's incremental :class:`~core.Trace` and refused when it
breaks a rule. The log is *seed* + *own events*; a fork child's seed is a view of its parent's
log, so creating one copies and replays nothing. A batch goes to the :class:`SessionSink`
before it joins the log (a refused batch leaves the session as it was); it is *durable* once
:attr:`Session.durable_length` covers it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from returns.result import Failure, Result

from ..core import (
    EMPTY_TRACE,
    CompletedPrefix,
    Event,
    HistorySnapshot,
    Message,
    PrefixView,
    SeededLog,
    SessionEndSeedEvent,
    SessionHeader,
    Trace,
    TurnEndEvent,
    Violation,
    advance,
    completed_turn_cut,
    history_snapshot,
    trace_log,
)
from .clock import Clock, system_clock

__all__ = ["EventsView", "Draft", "draft", "Session", "SessionSink", "SessionViolationError"]

E = TypeVar("E", bound=Event)


class SessionViolationError(ValueError):
    """An append (or a seed) broke a rule of the log; nothing was appended."""

    def __init__(self, session_id: str, violation: Violation) -> None:
        super().__init__(f"session {session_id}: {violation.message}")
        self.session_id = session_id
        self.violation = violation


#: A session's events as an immutable snapshot: the first ``length`` events of its append-only
#: log, fixed when taken, O(1) to make (core's prefix view serves as is).
EventsView = PrefixView


class SessionSink(Protocol):
    """Where a session's batches go (a store's file writer)."""

    def write(self, header: SessionHeader, events: Sequence[Event]) -> None:
        """Write the next ``events`` at once, or raise leaving nothing of them written."""
        ...

    @property
    def durable_length(self) -> int:
        """How many leading events of the log are durable (committed)."""
        ...

    def commit(self) -> None:
        """Make every written event durable now (blocking), or raise."""
        ...

    async def wait_durable(self, length: int) -> None:
        """Return once the first ``length`` events are durable (committing now), or raise."""
        ...


#: An event still to be stamped: its class, its ``data`` and other envelope keys.
Draft = tuple[type[Event], Any, dict[str, Any]]


def draft(kind: type[Event], data: Any, **envelope: Any) -> Draft:
    """A :data:`Draft` for :meth:`Session.append_many`."""
    return (kind, data, envelope)


class Session:
    """An append-only, always-valid DSH session log. A ``seed`` (not copied; any seed is
    followed by ``session/end-seed``) with its ``seed_trace`` is not replayed; ``written``:
    how many leading seed events the ``sink`` already holds."""

    def __init__(self, header: SessionHeader, *, seed: Sequence[Event] | None = None,
                 seed_trace: Trace | None = None, clock: Clock = system_clock,
                 sink: SessionSink | None = None, written: int = 0) -> None:
        self.header = header
        self._clock = clock
        self._sink = sink
        self._written = written
        self.listeners: list[Callable[[Sequence[Event]], None]] = []
        base = () if seed is None else seed
        self._own: list[Event] = []
        self._log = SeededLog(base, self._own)
        self._trace, self._completed = self._trace_seed(base, seed_trace)
        self._history: HistorySnapshot | Callable[[], HistorySnapshot] | None = None
        self._prefix_history: HistorySnapshot | None = None
        # The last events view, with the count of own events then (a view is fixed for good,
        # so it is handed out again until the log grows).
        self._events: tuple[int, EventsView] | None = None
        if seed is not None and not (base and isinstance(base[-1], SessionEndSeedEvent)):
            self._commit([SessionEndSeedEvent(seq=len(base), time=clock())], flush=False)

    def _trace_seed(self, seed: Sequence[Event], seed_trace: Trace | None,
                    ) -> tuple[Trace, CompletedPrefix | None]:
        if seed_trace is not None:
            if seed_trace.length != len(seed):
                raise ValueError(f"seed_trace covers {seed_trace.length} events but the seed "
                                 f"has {len(seed)}")
            cut = seed_trace.completed_prefix_length
            if cut == len(seed):
                return seed_trace, self._completed_at(seed_trace)
            return seed_trace, (self._completed_at(EMPTY_TRACE) if cut == 0 else None)
        # Slow path (a loaded or hand-made seed): trace it once, snapshotting at the cut.
        cut = completed_turn_cut(seed)
        at_cut = self._checked(trace_log(PrefixView(seed, cut))) if cut else EMPTY_TRACE
        tail = (seed[index] for index in range(cut, len(seed)))
        return self._checked(trace_log(tail, at_cut)), self._completed_at(at_cut)

    def _completed_at(self, trace: Trace) -> CompletedPrefix:
        """The log's prefix that ``trace`` (of a completed-turn cut) covers, with it."""
        return CompletedPrefix(events=PrefixView(self._log, trace.length), trace=trace)

    def _checked(self, result: Result[Trace, Violation]) -> Trace:
        if isinstance(result, Failure):
            raise SessionViolationError(self.header.id, result.failure())
        return result.unwrap()

    # ------------------------------------------------------------------ reading

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def events(self) -> EventsView:
        """An immutable snapshot of the log as it is now (O(1))."""
        own = len(self._own)  # the seed never changes: the log grows only here
        kept = self._events
        if kept is not None and kept[0] == own:
            return kept[1]
        view = EventsView(self._log, len(self._log))
        self._events = (own, view)
        return view

    @property
    def trace(self) -> Trace:
        """The trace of :attr:`events`."""
        return self._trace

    @property
    def next_seq(self) -> int:
        return len(self._log)

    def __len__(self) -> int:
        return len(self._log)

    def completed_prefix(self) -> tuple[PrefixView, Trace]:
        """The log through its last ``turn/end`` and the trace there, in O(1)."""
        trace = self.completed().trace
        return PrefixView(self._log, trace.length), trace

    def completed(self) -> CompletedPrefix:
        """:meth:`completed_prefix` as one value, the same object until the cut moves."""
        if self._completed is None:  # only a seed whose last turn/end is not at its end
            cut = self._trace.completed_prefix_length
            self._completed = self._completed_at(
                self._checked(trace_log(PrefixView(self._log, cut))))
        return self._completed

    def history(self) -> Sequence[Message]:
        """The model-visible history now, as a view: O(messages added since the last call)."""
        self._history = history_snapshot(self._trace, self._known_history())
        return self._history.messages

    def completed_prefix_history(self) -> HistorySnapshot:
        """The model-visible history at the completed-turn cut, computed once per cut and
        shared by every fork child seeded there (see :meth:`adopt_history`)."""
        trace = self.completed().trace
        cached = self._prefix_history
        if cached is None or cached.node is not trace.surface:
            # Continued from (or cut from) the last history computed here.
            known = self._known_history()
            snapshot = history_snapshot(trace, known)
            if known is None or len(snapshot.messages) > len(known.messages):
                # The cut is ahead of the last model call: keep extending the same storage.
                self._history = snapshot
            cached = snapshot.frozen()
            self._prefix_history = cached
        return cached

    def adopt_history(self, source: HistorySnapshot | Callable[[], HistorySnapshot]) -> None:
        """Start the history cache from ``source``, a snapshot or a function making one (a
        fork child's model calls then cost O(own messages), not O(seed))."""
        self._history = source

    def _known_history(self) -> HistorySnapshot | None:
        known = self._history
        if callable(known):
            known = self._history = known()
        return known

    # ------------------------------------------------------------------ appending

    def append(self, kind: type[E], data: Any, **envelope: Any) -> E:
        """Stamp (seq, time), validate and append one event; returns it once it is written
        (a refused event, or one the store could not write, is not appended)."""
        event: E = kind(seq=len(self._log), time=self._clock(), data=data, **envelope)
        self._commit([event], flush=True)
        return event

    def append_many(self, drafts: Iterable[Draft]) -> tuple[Event, ...]:
        """Stamp and append several events as one batch (one write), all or none."""
        seq, now = len(self._log), self._clock()
        events = [kind(seq=seq + i, time=now, data=data, **envelope)
                  for i, (kind, data, envelope) in enumerate(drafts)]
        self._commit(events, flush=True)
        return tuple(events)

    def extend(self, events: Sequence[Event]) -> None:
        """Append already-stamped events (e.g. the core's turn closers) as one batch."""
        self._commit(list(events), flush=True)

    @property
    def durable_length(self) -> int:
        """How many leading events survive a crash of the machine (all, without a sink)."""
        if self._sink is None:
            return len(self._log)
        return min(self._sink.durable_length, len(self._log))

    def flush(self, upto: int | None = None) -> None:
        """Write the events through ``upto`` (default: all) and make everything written
        durable before returning (blocking: one fsync)."""
        stop = len(self._log) if upto is None else upto
        self._write(self._unwritten(stop))
        if self._sink is not None:
            self._sink.commit()

    async def wait_durable(self, length: int | None = None) -> None:
        """Return once the first ``length`` events (default: all now) are durable, asking the
        store to commit at once (the fsync runs in the store's committer thread)."""
        stop = len(self._log) if length is None else min(length, len(self._log))
        if self._sink is None or self.durable_length >= stop:
            return
        self._write(self._unwritten(stop))
        await self._sink.wait_durable(stop)

    def _commit(self, events: list[Event], *, flush: bool) -> None:
        trace = self._trace
        completed: Trace | None = None  # the trace at the batch's last turn/end
        for event in events:
            trace = self._checked(advance(trace, event))
            if isinstance(event, TurnEndEvent):
                completed = trace
        if flush and self._sink is not None:
            pending = self._unwritten(len(self._log))
            self._write(SeededLog(pending, events) if pending else events)
        self._own.extend(events)
        self._trace = trace
        if completed is not None:
            self._completed = self._completed_at(completed)
        # Every listener is told, whatever one raises: the batch is committed by now.
        raised: list[Exception] = []
        for listener in tuple(self.listeners):  # a listener may add or remove listeners
            try:
                listener(events)
            except Exception as error:
                raised.append(error)
        if raised:
            first, *others = raised
            for other in others:
                first.add_note(f"a session listener raised too: {type(other).__name__}: {other}")
            raise first

    def _unwritten(self, stop: int) -> Sequence[Event]:
        """The events before ``stop`` not handed to the sink yet, as a view (never copied)."""
        if self._written >= stop:
            return ()
        return EventsView(self._log, stop)[self._written:]

    def _write(self, events: Sequence[Event]) -> None:
        if self._sink is None or not events:
            return
        self._sink.write(self.header, events)
        self._written += len(events)

    def __repr__(self) -> str:
        return f"Session(id={self.header.id!r}, events={len(self._log)})"
