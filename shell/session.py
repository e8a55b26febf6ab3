"""A live session: an append-only event log that never holds an invalid event.

Rules:

* Every append is folded into the core's incremental :class:`~core.Trace` (O(1) per event) and
  refused with :class:`SessionViolationError` when it breaks a rule; a refused batch leaves the
  log, the trace and the file untouched.
* The log is stored as *seed* + *own events*. A fork child's seed is a view of its parent's log
  (typically the parent's :meth:`Session.completed_prefix`), so creating a child copies nothing
  and, given the parent's trace at the cut, replays nothing: O(1) whatever the parent's size.
* ``session.events`` is an immutable, fixed-length view: later appends never show through it.
* Persistence is a :class:`SessionSink`. Each batch is handed to it before the batch joins the
  log, and an append returns once its batch is *written* (with the disk store: in the file,
  which a crash of the process no longer loses); a sink that refuses the batch (a full disk, an
  event the store cannot persist) leaves the session exactly as it was. A batch is *durable*
  (it survives a crash of the machine) once :attr:`Session.durable_length` covers it: the disk
  store commits (fsyncs) written batches in groups, within a short window, and at once for
  :meth:`Session.flush` and :meth:`Session.wait_durable`. A new session's seed and
  ``session/end-seed`` are written with its first append, so a session that never appended
  has no file, as in DSH.
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

__all__ = [
    "EventsView",
    "Draft",
    "draft",
    "Session",
    "SessionSink",
    "SessionViolationError",
]

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
        """Write ``events`` (the next ones after everything written so far) at once, or raise
        leaving nothing of them written."""
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
    """An append-only, always-valid DSH session log.

    Args:
        header: the session's header.
        seed: events this session starts from (e.g. a parent's completed-turn prefix). They are
            not copied. ``None`` means no seed; any seed, even an empty one, is followed by
            ``session/end-seed`` unless it already ends with one.
        seed_trace: the trace of ``seed`` (e.g. from the parent's ``completed_prefix()``), so
            the seed is not replayed. ``None`` traces the seed once (validating it).
        clock: epoch-millisecond clock for appended events.
        sink: persistence for append batches; ``None`` keeps the session in memory.
        written: how many leading seed events the sink already holds (a loaded log).

    Raises:
        SessionViolationError: the seed breaks a rule.
        ValueError: ``seed_trace`` does not cover exactly the seed.
    """

    def __init__(self, header: SessionHeader, *, seed: Sequence[Event] | None = None,
                 seed_trace: Trace | None = None, clock: Clock = system_clock,
                 sink: SessionSink | None = None, written: int = 0) -> None:
        self.header = header
        self._clock = clock
        self._sink = sink
        self._written = written
        #: Callbacks run after every committed batch, with the new events.
        self.listeners: list[Callable[[Sequence[Event]], None]] = []
        base = () if seed is None else seed
        self._own: list[Event] = []
        self._log = SeededLog(base, self._own)
        self._trace, self._completed = self._trace_seed(base, seed_trace)
        self._history: HistorySnapshot | Callable[[], HistorySnapshot] | None = None
        self._prefix_history: HistorySnapshot | None = None
        #: The last :attr:`events` view made, with the count of own events then (a view is
        #: fixed for good, so it is handed out again until the log grows).
        self._events: tuple[int, EventsView] | None = None
        #: The last :meth:`completed` value (checked against the cut's trace when asked).
        self._completed_value: CompletedPrefix | None = None
        if seed is not None and not (base and isinstance(base[-1], SessionEndSeedEvent)):
            self._commit([SessionEndSeedEvent(seq=len(base), time=clock())], flush=False)

    def _trace_seed(self, seed: Sequence[Event], seed_trace: Trace | None,
                    ) -> tuple[Trace, tuple[int, Trace] | None]:
        if seed_trace is not None:
            if seed_trace.length != len(seed):
                raise ValueError(f"seed_trace covers {seed_trace.length} events but the seed "
                                 f"has {len(seed)}")
            cut = seed_trace.completed_prefix_length
            if cut == len(seed):
                return seed_trace, (cut, seed_trace)
            return seed_trace, ((0, EMPTY_TRACE) if cut == 0 else None)
        # Slow path (a loaded or hand-made seed): trace it once, snapshotting at the cut.
        cut = completed_turn_cut(seed)
        at_cut = self._checked(trace_log(PrefixView(seed, cut))) if cut else EMPTY_TRACE
        tail = (seed[index] for index in range(cut, len(seed)))
        return self._checked(trace_log(tail, at_cut)), (cut, at_cut)

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
        """The log through its last ``turn/end`` and the trace there, without copying: O(1)
        (a fork's seed and seed trace)."""
        if self._completed is None:  # only a seed whose last turn/end is not at its end
            cut = self._trace.completed_prefix_length
            self._completed = (cut, self._checked(trace_log(PrefixView(self._log, cut))))
        cut, trace = self._completed
        return PrefixView(self._log, cut), trace

    def completed(self) -> CompletedPrefix:
        """:meth:`completed_prefix` as one value (what a fork reads of its parent), the same
        object until the cut moves: siblings forked at one cut share it."""
        kept = self._completed_value
        if kept is not None and self._completed is not None and kept.trace is self._completed[1]:
            return kept
        prefix, trace = self.completed_prefix()
        kept = self._completed_value = CompletedPrefix(events=prefix, trace=trace)
        return kept

    def history(self) -> Sequence[Message]:
        """The model-visible history now, as a view (a ``core.history.HistoryView``, never a
        copy): O(messages added since the last call), so a model call costs the same at turn
        10,000 as at turn 10."""
        self._history = history_snapshot(self._trace, self._known_history())
        return self._history.messages

    def completed_prefix_history(self) -> HistorySnapshot:
        """The model-visible history at the completed-turn cut, computed once per cut and
        shared by every fork child seeded there (see :meth:`adopt_history`): O(messages
        between the cut and this session's last model call)."""
        _, trace = self.completed_prefix()
        cached = self._prefix_history
        if cached is None or cached.node is not trace.surface:
            cached = self._history_at(trace).frozen()
            self._prefix_history = cached
        return cached

    def adopt_history(self, source: HistorySnapshot | Callable[[], HistorySnapshot]) -> None:
        """Start this session's history cache from ``source``, a snapshot or a function that
        makes one when first needed (a fork child takes its parent's at the cut, so its model
        calls cost O(own messages), not O(seed))."""
        self._history = source

    def _known_history(self) -> HistorySnapshot | None:
        known = self._history
        if callable(known):
            known = self._history = known()
        return known

    def _history_at(self, trace: Trace) -> HistorySnapshot:
        """The history at ``trace``, continued from (or cut from) the last one computed here."""
        known = self._known_history()
        snapshot = history_snapshot(trace, known)
        if known is None or len(snapshot.messages) > len(known.messages):
            # The cut is ahead of the last model call: keep extending the same storage.
            self._history = snapshot
        return snapshot

    # ------------------------------------------------------------------ appending

    def append(self, kind: type[E], data: Any, **envelope: Any) -> E:
        """Stamp (seq, time), validate and append one event; returns it once it is written.

        Raises:
            SessionViolationError: the event breaks a rule; nothing was appended.
            OSError: the store could not write it (e.g. the disk is full); nothing was
                appended, and a later append may succeed.
            ValueError: the store cannot persist the event (a value its reader would refuse).
        """
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
        """How many leading events are durable: they survive a crash of the machine (every
        event of a session without a sink counts as durable, there being nothing to wait for).
        Appends return once written; this is what has been committed since."""
        if self._sink is None:
            return len(self._log)
        return min(self._sink.durable_length, len(self._log))

    def flush(self, upto: int | None = None) -> None:
        """Write the events not yet written through position ``upto`` (default: all) and make
        everything written durable before returning (blocking: one fsync); a no-op without a
        sink.

        Raises:
            OSError: the write or the commit failed (nothing more is durable than before).
        """
        stop = len(self._log) if upto is None else upto
        self._write(self._unwritten(stop))
        if self._sink is not None:
            self._sink.commit()

    async def wait_durable(self, length: int | None = None) -> None:
        """Return once the first ``length`` events (default: all now) are durable, asking the
        store to commit at once; the event loop runs on meanwhile (the fsync happens in the
        store's committer thread). Immediate without a sink or when already durable.

        Raises:
            OSError: the write or the commit failed.
        """
        stop = len(self._log) if length is None else min(length, len(self._log))
        if self._sink is None or self.durable_length >= stop:
            return
        self._write(self._unwritten(stop))
        await self._sink.wait_durable(stop)

    def _commit(self, events: list[Event], *, flush: bool) -> None:
        trace = self._trace
        completed: tuple[int, Trace] | None = None
        for event in events:
            result = advance(trace, event)
            if isinstance(result, Failure):
                raise SessionViolationError(self.header.id, result.failure())
            trace = result.unwrap()
            if isinstance(event, TurnEndEvent):
                completed = (trace.length, trace)
        if flush and self._sink is not None:
            pending = self._unwritten(len(self._log))
            self._write(SeededLog(pending, events) if pending else events)
        self._own.extend(events)
        self._trace = trace
        if completed is not None:
            self._completed = completed
        for listener in self.listeners:
            listener(events)

    def _unwritten(self, stop: int) -> Sequence[Event]:
        """The events before ``stop`` not handed to the sink yet, as a view: a new session's
        seed (perhaps a parent's whole prefix) is never copied to be written."""
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
