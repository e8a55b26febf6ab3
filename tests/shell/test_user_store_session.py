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
