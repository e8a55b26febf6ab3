"""Model history from the surface, and its incremental snapshots."""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from turnfork.core import (
    EMPTY_TRACE,
    AssistantMessageEvent,
    Event,
    ToolResultEvent,
    UserMessageEvent,
    history_snapshot,
    model_history,
    trace_log,
)
from turnfork.core.strategies import session_logs

Log = tuple[Event, ...]


@settings(max_examples=examples(300), deadline=None)
@given(session_logs(), st.data())
def test_a_snapshot_continued_later_equals_a_full_walk(log: Log, data: st.DataObject) -> None:
    """history_snapshot(later, known=earlier) == model_history(later), replaces included."""
    cut = data.draw(st.integers(0, len(log)))
    earlier = history_snapshot(trace_log(log[:cut]).unwrap())
    later = trace_log(log[cut:], trace_log(log[:cut]).unwrap()).unwrap()
    assert history_snapshot(later, earlier).messages == model_history(later)
    assert history_snapshot(later, earlier).node is later.surface


@settings(max_examples=examples(200), deadline=None)
@given(session_logs())
def test_history_holds_surface_messages_in_log_order_without_empty_replies(log: Log) -> None:
    """Without replacements, the history is every surface message in order, minus empty
    assistant messages."""
    if any(not isinstance(getattr(e, "surface_op", "append"), str) for e in log):
        return  # replacements reorder the surface; the continuation property covers them
    expected = []
    for event in log:
        if isinstance(event, UserMessageEvent):
            expected.append(event.data)
        elif isinstance(event, ToolResultEvent) or (
                isinstance(event, AssistantMessageEvent) and event.data.message.content):
            expected.append(event.data.message)
    assert model_history(trace_log(log).unwrap()) == tuple(expected)


def test_an_unchanged_surface_returns_the_same_snapshot() -> None:
    """No new nodes: the known snapshot itself comes back."""
    known = history_snapshot(EMPTY_TRACE)
    assert history_snapshot(EMPTY_TRACE, known) is known
