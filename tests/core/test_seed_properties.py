"""Properties of the completed-turn prefix over generated DSH logs (issue 2, item 6)."""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Success

from turnfork.core import (
    EMPTY_TRACE,
    Event,
    TurnEndEvent,
    TurnStartEvent,
    check_balance,
    completed_turn_prefix,
    trace_log,
)
from turnfork.core.strategies import (
    closed_logs,
    events_without_turn_end,
    in_flight_logs,
    renumber,
    session_logs,
)

Log = tuple[Event, ...]


@settings(max_examples=examples(500), deadline=None)
@given(session_logs())
def test_prefix_is_the_longest_balanced_prefix_ending_in_turn_end(log: Log) -> None:
    """P is a prefix of L, empty or ending in turn/end, balanced, and no longer one ends so."""
    prefix = completed_turn_prefix(log)
    assert len(prefix) <= len(log)
    assert list(prefix) == list(log[:len(prefix)])
    assert all(a is b for a, b in zip(prefix, log, strict=False))  # a view, never copies
    assert len(prefix) == 0 or isinstance(prefix[-1], TurnEndEvent)
    assert isinstance(check_balance(prefix), Success)
    assert not any(isinstance(event, TurnEndEvent) for event in log[len(prefix):])
    assert completed_turn_prefix(prefix) is prefix


@settings(max_examples=examples(300), deadline=None)
@given(session_logs(), st.data())
def test_appending_events_without_turn_end_leaves_the_prefix_unchanged(
        log: Log, data: st.DataObject) -> None:
    """Events appended without a turn/end do not move the cut or change P's content."""
    suffix = data.draw(events_without_turn_end(first_seq=len(log)))
    assert [event.seq for event in suffix] == list(range(len(log), len(log) + len(suffix)))
    before = completed_turn_prefix(log)
    after = completed_turn_prefix(log + suffix)
    assert len(after) == len(before)
    assert list(after) == list(before)


@settings(max_examples=examples(300), deadline=None)
@given(in_flight_logs())
def test_in_flight_logs_end_inside_an_open_turn(log: Log) -> None:
    """An in-flight log traces cleanly, is not closed, and its prefix stops before the turn."""
    trace = trace_log(log).unwrap()
    assert trace.open_turn is not None and trace.open_turn_seq is not None
    assert not isinstance(check_balance(log), Success)
    prefix = completed_turn_prefix(log)
    assert len(prefix) == trace.completed_prefix_length
    assert len(prefix) <= trace.open_turn_seq
    assert isinstance(log[trace.open_turn_seq], TurnStartEvent)


@settings(max_examples=examples(300), deadline=None)
@given(closed_logs())
def test_closed_logs_are_balanced(log: Log) -> None:
    """A closed log passes check_balance; its prefix drops only trailing between-turn events."""
    trace = check_balance(log).unwrap()
    prefix = completed_turn_prefix(log)
    assert len(prefix) == trace.completed_prefix_length
    assert not any(isinstance(e, TurnStartEvent) for e in log[len(prefix):])


@settings(max_examples=examples(200), deadline=None)
@given(session_logs(), st.integers(0, 5))
def test_renumber_follows_any_start(log: Log, first: int) -> None:
    """renumber changes seqs only."""
    moved = renumber(log, first)
    assert [event.seq for event in moved] == list(range(first, first + len(log)))
    assert renumber(moved, 0) == log


def test_empty_log_has_empty_prefix() -> None:
    """No events: the prefix is empty and balanced."""
    prefix = completed_turn_prefix(())
    assert len(prefix) == 0
    assert check_balance(prefix) == Success(EMPTY_TRACE)
