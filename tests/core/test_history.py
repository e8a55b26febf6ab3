"""Model history from the surface, its incremental snapshots and their shared storage."""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from turnfork.core import (
    EMPTY_HISTORY,
    EMPTY_TRACE,
    AssistantMessageEvent,
    Event,
    MessageSource,
    TextBlock,
    ToolResultEvent,
    Trace,
    UserMessage,
    UserMessageEvent,
    decode_log,
    encode_log,
    history_snapshot,
    model_history,
    trace_log,
)
from turnfork.core.history import HistorySnapshot, HistoryView
from turnfork.core.strategies import session_logs

Log = tuple[Event, ...]


def _traces(log: Log, cuts: list[int]) -> list[Trace]:
    """The traces of ``log`` at each cut (ascending), each folded on from the one before."""
    traces, trace, done = [], EMPTY_TRACE, 0
    for cut in cuts:
        trace = trace_log(log[done:cut], trace).unwrap()
        traces.append(trace)
        done = cut
    return traces


@settings(max_examples=examples(300), deadline=None)
@given(session_logs(), st.data())
def test_a_snapshot_continued_later_equals_a_full_walk(log: Log, data: st.DataObject) -> None:
    """history_snapshot(later, known=earlier) == model_history(later), replaces included."""
    cut = data.draw(st.integers(0, len(log)))
    earlier = history_snapshot(trace_log(log[:cut]).unwrap())
    later = trace_log(log[cut:], trace_log(log[:cut]).unwrap()).unwrap()
    assert history_snapshot(later, earlier).messages == model_history(later)
    assert history_snapshot(later, earlier).node is later.surface


@settings(max_examples=examples(300), deadline=None)
@given(session_logs(), st.data())
def test_every_snapshot_of_a_chain_stays_equal_to_a_full_walk(log: Log,
                                                              data: st.DataObject) -> None:
    """A session's chain of snapshots, each continued from the last (forwards, or back to an
    earlier cut), always equals a full walk, and no later step changes an earlier one."""
    cuts = sorted(data.draw(st.lists(st.integers(0, len(log)), max_size=8)))
    traces = _traces(log, cuts)
    order = data.draw(st.permutations(range(len(traces))))
    taken: list[tuple[Trace, HistorySnapshot]] = []
    known: HistorySnapshot | None = None
    for index in order:
        known = history_snapshot(traces[index], known)
        taken.append((traces[index], known))
        for trace, snapshot in taken:
            assert snapshot.messages == model_history(trace)
            assert list(snapshot.messages) == list(model_history(trace))
    for trace, snapshot in taken:
        expected = model_history(trace)
        assert tuple(snapshot.messages[i] for i in range(len(expected))) == expected
        assert snapshot.messages[:len(expected) // 2] == expected[:len(expected) // 2]


@settings(max_examples=examples(300), deadline=None)
@given(session_logs(), st.data())
def test_branches_of_one_snapshot_never_see_each_other(log: Log, data: st.DataObject) -> None:
    """Two continuations of one snapshot (fork children of one cut, shared or not) each hold
    exactly their own messages, whichever was made first."""
    cut = data.draw(st.integers(0, len(log)))
    stop = data.draw(st.integers(cut, len(log)))
    at_cut = trace_log(log[:cut]).unwrap()
    base = history_snapshot(at_cut)
    if data.draw(st.booleans()):
        base = base.frozen()
    # Branch b replays the same events as fresh objects: equal messages, distinct identities.
    copies = decode_log(encode_log(log[cut:stop])).unwrap() if stop > cut else ()
    branch_a = trace_log(log[cut:], at_cut).unwrap()
    branch_b = trace_log(copies, at_cut).unwrap()
    a = history_snapshot(branch_a, base)
    b = history_snapshot(branch_b, base)
    assert all(x is y for x, y in zip(a.messages, model_history(branch_a), strict=True))
    assert all(x is y for x, y in zip(b.messages, model_history(branch_b), strict=True))
    assert base.messages == model_history(at_cut)


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
    assert history_snapshot(EMPTY_TRACE, EMPTY_HISTORY) is EMPTY_HISTORY


def _user(seq: int) -> UserMessageEvent:
    message = UserMessage(content=(TextBlock(text=f"m{seq}"),), source=MessageSource(kind="user"),
                          id=f"u{seq}")
    return UserMessageEvent(seq=seq, time=0, data=message, surface_op="append")


def test_a_continuation_from_the_end_of_its_storage_appends_there() -> None:
    """Continuing the newest snapshot adds to its storage (one list however many calls); a
    shared snapshot's continuation gets storage of its own."""
    trace, snapshot = EMPTY_TRACE, EMPTY_HISTORY
    views: list[HistoryView] = []
    for seq in range(50):
        trace = trace_log((_user(seq),), trace).unwrap()
        snapshot = history_snapshot(trace, snapshot)
        views.append(snapshot.messages)
    storage = views[-1]._segment
    assert all(view._segment is storage for view in views)
    assert [len(view) for view in views] == list(range(1, 51))
    shared = snapshot.frozen()
    child = history_snapshot(trace_log((_user(50),), trace).unwrap(), shared)
    assert child.messages._segment is not storage and len(storage.items) == 50
    assert child.messages[:50] == views[-1] and child.messages[50].id == "u50"


def test_a_view_is_a_sequence_equal_to_its_tuple() -> None:
    """A history view indexes, slices, iterates, compares and prints like a tuple."""
    messages = tuple(_user(seq).data for seq in range(5))
    view = HistoryView(messages[:3]).extended(messages[3:])
    assert view == messages and messages == view and view != messages[:4]
    assert (len(view), view[-1], view[1:3], list(reversed(view))) == (
        5, messages[-1], messages[1:3], list(reversed(messages)))
    assert view.index(messages[2]) == 2 and messages[4] in view
    assert repr(view) == f"HistoryView({messages!r})"
    assert HistoryView() == () and len(EMPTY_HISTORY.messages) == 0
