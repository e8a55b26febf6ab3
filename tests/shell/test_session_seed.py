"""Seeded sessions: a fork child borrows its parent's log instead of copying or replaying it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import msgspec
import pytest
from returns.result import Success

from turnfork.core import (
    AssistantMessage,
    AssistantMessageData,
    AssistantMessageEvent,
    Event,
    MessageSource,
    SessionEndSeedEvent,
    SessionHeader,
    StepData,
    StepEndEvent,
    StepStartEvent,
    TextBlock,
    Trace,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    UserMessage,
    UserMessageEvent,
    check_balance,
    model_history,
    trace_log,
)
from turnfork.shell import ManualClock, Session
from turnfork.shell.session import SessionViolationError


def _turn_events(start: int, turn: int) -> list[Event]:
    """One completed six-event turn numbered from seq ``start``."""
    user = UserMessage(content=(TextBlock(text=f"q{turn}"),), source=MessageSource(kind="user"),
                       id=f"u{turn}")
    answer = AssistantMessage(content=(TextBlock(text=f"a{turn}"),), id=f"a{turn}",
                              source=MessageSource(kind="model", provider="p", model="m"))
    return [
        TurnStartEvent(seq=start, time=0, data=TurnStartData(turn=turn)),
        StepStartEvent(seq=start + 1, time=0, data=StepData(turn=turn, step=1)),
        UserMessageEvent(seq=start + 2, time=0, data=user, surface_op="append"),
        AssistantMessageEvent(seq=start + 3, time=0, surface_op="append",
                              data=AssistantMessageData(turn=turn, step=1, message=answer)),
        StepEndEvent(seq=start + 4, time=0, data=StepData(turn=turn, step=1)),
        TurnEndEvent(seq=start + 5, time=0, data=TurnEndData(turn=turn, reason=TurnCompleted())),
    ]


def _big_parent(count: int) -> Session:
    events: list[Event] = []
    turn = 1
    while len(events) < count:
        events.extend(_turn_events(len(events), turn))
        turn += 1
    parent = Session(SessionHeader(id="parent", created_at=0), seed=tuple(events),
                     clock=ManualClock(7))
    parent.append(TurnStartEvent, TurnStartData(turn=turn))  # the parent's in-flight turn
    return parent


class _CountingSeed(Sequence[Event]):
    """A seed that counts how often it is read."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = events
        self.reads = 0

    def __len__(self) -> int:
        return len(self.events)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Event]: ...

    def __getitem__(self, index: Any) -> Any:
        self.reads += 1
        return self.events[index]

    def __iter__(self) -> Iterator[Event]:
        self.reads += len(self.events)
        return iter(self.events)


def _same(left: Trace, right: Trace) -> bool:
    """Traces agree (surface nodes compare by identity, so compare the history they give)."""
    return (msgspec.structs.replace(left, surface=None)
            == msgspec.structs.replace(right, surface=None)
            and model_history(left) == model_history(right))


def _child(seed: Sequence[Event], seed_trace: Any = None) -> Session:
    return Session(SessionHeader(id="child", created_at=0, seed_length=len(seed)), seed=seed,
                   seed_trace=seed_trace, clock=ManualClock(9))


def test_fork_of_a_20000_event_parent_shares_its_events() -> None:
    """The child's seed events are the parent's objects, and its end-seed follows them."""
    parent = _big_parent(20_000)
    prefix, trace = parent.completed_prefix()
    child = _child(prefix, trace)
    assert len(child.events) == len(prefix) + 1
    for index in (0, 1, 4_567, 12_345, len(prefix) - 1):
        assert child.events[index] is parent.events[index]
    end_seed = child.events[-1]
    assert isinstance(end_seed, SessionEndSeedEvent) and end_seed.seq == len(prefix)
    assert child.trace.next_turn == parent.trace.next_turn
    assert isinstance(check_balance(child.events), Success)


def test_seeding_with_a_trace_reads_the_seed_in_constant_time() -> None:
    """Creating a child from a seed and its trace reads at most two seed events."""
    parent = _big_parent(20_000)
    prefix, trace = parent.completed_prefix()
    counted = _CountingSeed(prefix)
    child = _child(counted, trace)
    assert counted.reads <= 2
    child_prefix, child_trace = child.completed_prefix()
    assert len(child_prefix) == len(prefix) and child_trace is trace
    assert counted.reads <= 2


def test_grandchild_still_shares_the_original_events() -> None:
    """Forking a fork child keeps pointing at the first parent's event objects."""
    parent = _big_parent(600)
    prefix, trace = parent.completed_prefix()
    child = _child(prefix, trace)
    child.append(TurnStartEvent, TurnStartData(turn=child.trace.next_turn))
    child.append(TurnEndEvent, TurnEndData(turn=child.trace.open_turn or 0,
                                           reason=TurnCompleted()))
    child_prefix, child_trace = child.completed_prefix()
    grandchild = Session(SessionHeader(id="g", created_at=0), seed=child_prefix,
                         seed_trace=child_trace)
    assert grandchild.events[10] is parent.events[10]
    assert grandchild.events[len(prefix)] is child.events[len(prefix)]


def test_end_seed_rules() -> None:
    """Any seed (even empty) gets session/end-seed unless it ends with one; no seed gets none."""
    assert len(Session(SessionHeader(id="a", created_at=0)).events) == 0
    empty = Session(SessionHeader(id="b", created_at=0), seed=())
    assert [type(e) for e in empty.events] == [SessionEndSeedEvent]
    again = Session(SessionHeader(id="c", created_at=0), seed=empty.events)
    assert len(again.events) == 1


def test_seed_without_trace_is_traced_and_validated() -> None:
    """The slow path traces the seed once: a broken seed is refused, a good one is usable."""
    good = _turn_events(0, 1) + _turn_events(6, 2)
    child = _child(tuple(good))
    assert child.trace.next_turn == 3
    prefix, trace = child.completed_prefix()
    assert len(prefix) == 12 and _same(trace, trace_log(good).unwrap())
    broken = _turn_events(0, 1) + _turn_events(6, 3)
    with pytest.raises(SessionViolationError) as caught:
        _child(tuple(broken))
    assert caught.value.violation.seq == 6


def test_seed_trace_must_cover_the_seed() -> None:
    """A seed trace of another length is a programming error."""
    events = tuple(_turn_events(0, 1))
    with pytest.raises(ValueError, match="covers 6 events but the seed has 5"):
        _child(events[:5], trace_log(events).unwrap())


def test_trailing_between_turn_events_keep_the_cut() -> None:
    """A seed that continues past its last turn/end still reports the cut at that turn/end."""
    events = (*_turn_events(0, 1), SessionEndSeedEvent(seq=6, time=0))
    child = _child(events, trace_log(events).unwrap())
    prefix, trace = child.completed_prefix()
    assert len(prefix) == 6 and trace.length == 6
