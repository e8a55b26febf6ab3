"""A demanding user's sessions: listeners that come and go while a batch is told."""

from __future__ import annotations

from collections.abc import Sequence

from turnfork.core import (
    Event,
    SessionHeader,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
)
from turnfork.shell import ManualClock, Session


def test_a_listener_that_removes_itself_does_not_hide_the_batch_from_the_next() -> None:
    """A one-shot listener removes itself when called: every other listener still sees that
    batch (before: the list shifted under the loop and the next listener missed it)."""
    session = Session(SessionHeader(id="s", created_at=0), clock=ManualClock(0))
    seen: list[list[str]] = []

    def once(batch: Sequence[Event]) -> None:
        session.listeners.remove(once)

    def watcher(batch: Sequence[Event]) -> None:
        seen.append([type(event).__name__ for event in batch])

    session.listeners.extend([once, watcher])
    session.append(TurnStartEvent, TurnStartData(turn=1))
    session.append(TurnEndEvent, TurnEndData(turn=1, reason=TurnCompleted()))
    assert seen == [["TurnStartEvent"], ["TurnEndEvent"]]
    assert session.listeners == [watcher]


def test_a_listener_added_while_a_batch_is_told_hears_from_the_next_batch() -> None:
    """A listener that adds another: the new one is told of the batches after it was added."""
    session = Session(SessionHeader(id="s", created_at=0), clock=ManualClock(0))
    late: list[int] = []

    def adder(batch: Sequence[Event]) -> None:
        if len(session.listeners) == 1:
            session.listeners.append(lambda later: late.extend(e.seq for e in later))

    session.listeners.append(adder)
    session.append(TurnStartEvent, TurnStartData(turn=1))
    session.append(TurnEndEvent, TurnEndData(turn=1, reason=TurnCompleted()))
    assert late == [1]


def test_a_raising_listener_hides_the_batch_from_no_other_and_the_batch_stays() -> None:
    """A listener that raises: every other listener is still told of the batch, the batch is
    in the session, and the append raises that listener's error (the others' as notes)."""
    session = Session(SessionHeader(id="s", created_at=0), clock=ManualClock(0))
    seen: list[int] = []

    def broken(batch: Sequence[Event]) -> None:
        raise RuntimeError("the first listener broke")

    def also_broken(batch: Sequence[Event]) -> None:
        raise ValueError("so did the third")

    session.listeners.extend([broken, lambda batch: seen.extend(e.seq for e in batch),
                              also_broken])
    try:
        session.append(TurnStartEvent, TurnStartData(turn=1))
    except RuntimeError as error:
        assert str(error) == "the first listener broke"
        assert error.__notes__ == ["a session listener raised too: ValueError: so did the third"]
    else:
        raise AssertionError("the append did not raise the listener's error")
    assert seen == [0]
    assert [event.seq for event in session.events] == [0]
