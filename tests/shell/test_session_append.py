"""Session appends: stamped, validated in O(1), refused whole when they break a rule."""

from __future__ import annotations

import pytest
from returns.result import Success

from turnfork.core import (
    SessionHeader,
    StepData,
    StepStartEvent,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    trace_log,
)
from turnfork.shell import ManualClock, Session
from turnfork.shell.session import EventsView, SessionViolationError, draft


def _session() -> Session:
    return Session(SessionHeader(id="s", created_at=0), clock=ManualClock(500, step=10))


def _turn(session: Session, turn: int) -> None:
    session.append(TurnStartEvent, TurnStartData(turn=turn))
    session.append(TurnEndEvent, TurnEndData(turn=turn, reason=TurnCompleted()))


def test_append_stamps_seq_and_time() -> None:
    """An append gets seq = log length and time from the session's clock."""
    session = _session()
    first = session.append(TurnStartEvent, TurnStartData(turn=1))
    second = session.append(TurnEndEvent, TurnEndData(turn=1, reason=TurnCompleted()))
    assert (first.seq, first.time, second.seq, second.time) == (0, 500, 1, 510)
    assert list(session.events) == [first, second]
    assert session.trace.length == 2 and session.trace.open_turn is None


def test_breaking_append_is_refused_and_leaves_log_unchanged() -> None:
    """An event that breaks a rule raises with the core Violation; nothing changes."""
    session = _session()
    _turn(session, 1)
    before_events, before_trace = list(session.events), session.trace
    with pytest.raises(SessionViolationError) as caught:
        session.append(TurnStartEvent, TurnStartData(turn=5))
    assert caught.value.violation.seq == 2
    assert caught.value.violation.rule == "turn"
    assert "expected turn 2" in str(caught.value)
    assert list(session.events) == before_events
    assert session.trace is before_trace


def test_append_many_is_all_or_nothing() -> None:
    """A batch whose second event is invalid appends none of its events."""
    session = _session()
    with pytest.raises(SessionViolationError):
        session.append_many([draft(TurnStartEvent, TurnStartData(turn=1)),
                             draft(StepStartEvent, StepData(turn=1, step=2))])
    assert len(session.events) == 0
    batch = session.append_many([draft(TurnStartEvent, TurnStartData(turn=1)),
                                 draft(StepStartEvent, StepData(turn=1, step=1))])
    assert [event.seq for event in batch] == [0, 1]
    assert batch[0].time == batch[1].time


def test_extend_refuses_misnumbered_events() -> None:
    """Pre-stamped events must continue the log's numbering."""
    session = _session()
    with pytest.raises(SessionViolationError) as caught:
        session.extend([TurnStartEvent(seq=3, time=0, data=TurnStartData(turn=1))])
    assert caught.value.violation.rule == "seq"
    assert len(session) == 0


def test_events_is_a_fixed_immutable_snapshot() -> None:
    """A view taken earlier never shows later appends and cannot be written to."""
    session = _session()
    _turn(session, 1)
    snapshot = session.events
    _turn(session, 2)
    assert isinstance(snapshot, EventsView)
    assert len(snapshot) == 2 and len(session.events) == 4
    assert list(snapshot) == list(session.events)[:2]
    assert snapshot[-1] is session.events[1]
    with pytest.raises(IndexError):
        snapshot[2]
    with pytest.raises(TypeError):
        snapshot[0] = snapshot[1]  # type: ignore[index]


def test_completed_prefix_is_through_the_last_turn_end() -> None:
    """completed_prefix() returns a view through the last turn/end and the trace there."""
    session = _session()
    _turn(session, 1)
    _turn(session, 2)
    session.append(TurnStartEvent, TurnStartData(turn=3))
    prefix, trace = session.completed_prefix()
    assert len(prefix) == 4
    assert prefix[3] is session.events[3]
    assert trace == trace_log(prefix).unwrap()
    assert trace.length == 4 and trace.open_turn is None


def test_listeners_see_each_committed_batch() -> None:
    """Listeners are called after a batch commits, never for a refused one."""
    session = _session()
    seen: list[list[str]] = []
    session.listeners.append(lambda batch: seen.append([type(e).__name__ for e in batch]))
    _turn(session, 1)
    with pytest.raises(SessionViolationError):
        session.append(TurnEndEvent, TurnEndData(turn=1, reason=TurnCompleted()))
    assert seen == [["TurnStartEvent"], ["TurnEndEvent"]]


def test_trace_stays_equal_to_a_full_retrace() -> None:
    """The incrementally kept trace equals tracing the whole log again."""
    session = _session()
    for turn in range(1, 6):
        _turn(session, turn)
    assert Success(session.trace) == trace_log(session.events)
