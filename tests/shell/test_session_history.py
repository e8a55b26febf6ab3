"""A session's model history, kept incrementally, always equals a full walk of its surface."""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from turnfork.core import Event, SessionHeader, model_history
from turnfork.core.strategies import session_logs
from turnfork.shell import Session

Log = tuple[Event, ...]


@settings(max_examples=examples(200), deadline=None)
@given(session_logs(), st.data())
def test_history_and_prefix_history_equal_full_walks_at_every_call(
        log: Log, data: st.DataObject) -> None:
    """Appending a log in batches, history() and completed_prefix_history() asked at any
    points (in any order) equal model_history of the trace they stand for, and a fork child
    adopting the prefix history sees exactly its seed's history."""
    parent = Session(SessionHeader(id="parent", created_at=0))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(log)), max_size=6)))
    done = 0
    for cut in [*cuts, len(log)]:
        parent.extend(log[done:cut])
        done = cut
        asks = data.draw(st.lists(st.sampled_from(["history", "prefix"]), max_size=3))
        for ask in asks:
            if ask == "history":
                assert parent.history() == model_history(parent.trace)
            else:
                _, at_cut = parent.completed_prefix()
                assert parent.completed_prefix_history().messages == model_history(at_cut)
                assert parent.completed_prefix_history().node is at_cut.surface
    prefix, at_cut = parent.completed_prefix()
    child = Session(SessionHeader(id="child", created_at=0), seed=prefix, seed_trace=at_cut)
    child.adopt_history(parent.completed_prefix_history)
    assert child.history() == model_history(child.trace) == model_history(at_cut)
    assert parent.history() == model_history(parent.trace)
