"""The seed views read exactly like the sequences they stand for (issue 29).

``SequencePrefix(source, n)`` must read as ``tuple(source[:n])`` and ``SeededLog(seed, tail)``
as ``[*seed, *tail]``: every index (``IndexError`` outside), every slice, iteration, length
and equality both ways, for random sources, lengths, indices and slices. These views are what
make a fork O(1); nothing here checks how they are built, only what they read as.
"""

from __future__ import annotations

from typing import Any

import pytest
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from turnfork.core import (
    Event,
    SessionEndSeedEvent,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
)
from turnfork.core.seed import (
    PrefixView,
    SeededLog,
    SequencePrefix,
    completed_turn_cut,
    completed_turn_prefix,
)
from turnfork.core.strategies import session_logs

ITEMS = st.lists(st.integers(-5, 5), max_size=12)
BOUND = st.none() | st.integers(-15, 15)
SLICES = st.builds(slice, BOUND, BOUND, st.none() | st.integers(-4, 4).filter(bool))


@st.composite
def _prefixes(draw: st.DrawFn) -> tuple[list[int], int]:
    source = draw(ITEMS)
    return source, draw(st.integers(0, len(source)))


@settings(max_examples=examples(300), deadline=None)
@given(_prefixes(), st.lists(st.integers(-16, 16), max_size=8), st.lists(SLICES, max_size=6))
def test_a_prefix_reads_as_the_tuple_of_its_items(
        drawn: tuple[list[int], int], indices: list[int], slices: list[slice]) -> None:
    """len, every index (IndexError outside), every slice, iteration, equality both ways."""
    source, length = drawn
    view = SequencePrefix(source, length)
    expected = tuple(source[:length])
    assert len(view) == length
    assert list(view) == list(expected)
    assert tuple(view) == expected
    for index in indices:
        if -length <= index < length:
            assert view[index] == expected[index]
        else:
            with pytest.raises(IndexError):
                view[index]
    for cut in slices:
        part = view[cut]
        assert list(part) == list(expected[cut]), cut
        start, _, step = cut.indices(length)
        if step == 1 and start == 0:  # a prefix from the start: a view of the same kind
            assert type(part) is SequencePrefix and len(part) == len(expected[cut])
        else:
            assert type(part) is tuple
    assert view == expected and expected == view
    assert view == list(expected) and list(expected) == view
    assert view == SequencePrefix(source, length)


@settings(max_examples=examples(300), deadline=None)
@given(_prefixes(), ITEMS)
def test_a_prefix_equals_exactly_the_sequences_with_its_items(
        drawn: tuple[list[int], int], other: list[int]) -> None:
    """Equality is item by item, both ways, and a string or a non-sequence is never equal."""
    source, length = drawn
    view = SequencePrefix(source, length)
    same = other == source[:length]
    assert (view == other) is same and (other == view) is same
    assert (view != other) is not same and (other != view) is not same
    assert (view == tuple(other)) is same
    assert view != "".join(map(str, source[:length]))
    assert (view == 5) is False and (view != None) is True  # noqa: E711


def test_a_prefix_is_not_equal_to_text_or_bytes() -> None:
    """str and bytes are sequences, but a prefix never equals one (not even an empty one)."""
    empty = SequencePrefix("", 0)
    assert empty != "" and "" != empty  # noqa: SIM300
    assert SequencePrefix(b"ab", 2) != b"ab"
    assert SequencePrefix(["a", "b"], 2) != "ab"
    assert SequencePrefix((), 0) == [] and SequencePrefix((), 0) == ()


def test_a_prefix_is_unhashable() -> None:
    """Like a list: equal to lists, so it cannot hash as a tuple would."""
    with pytest.raises(TypeError):
        hash(SequencePrefix([1], 1))


@settings(max_examples=examples(200), deadline=None)
@given(ITEMS, st.integers(-3, 20))
def test_a_prefix_length_must_lie_within_its_source(source: list[int], length: int) -> None:
    """0..len(source) inclusive is accepted; anything else is a ValueError naming the range."""
    if 0 <= length <= len(source):
        assert len(SequencePrefix(source, length)) == length
        assert len(PrefixView(source, length)) == length  # type: ignore[arg-type]
    else:
        with pytest.raises(ValueError, match=rf"prefix length {length} outside 0\.\."
                                             rf"{len(source)}"):
            SequencePrefix(source, length)


@settings(max_examples=examples(200), deadline=None)
@given(_prefixes(), st.data())
def test_a_prefix_of_a_prefix_reads_its_source(drawn: tuple[list[int], int],
                                               data: st.DataObject) -> None:
    """A view of a view is the shorter prefix of the same source (its repr names the source's
    full length: no chain of views); slicing from the start gives the same."""
    source, length = drawn
    outer = SequencePrefix(source, length)
    inner_length = data.draw(st.integers(0, length))
    inner = SequencePrefix(outer, inner_length)
    assert list(inner) == source[:inner_length]
    assert repr(inner) == f"SequencePrefix(<{inner_length} of {len(source)} items>)"
    assert repr(outer[:inner_length]) == repr(inner)
    with pytest.raises(ValueError, match="outside"):
        SequencePrefix(outer, length + 1)


def test_a_prefix_does_not_see_items_appended_to_its_source() -> None:
    """An append-only source grows; the prefix keeps its length and items."""
    source = [1, 2, 3]
    view = SequencePrefix(source, 2)
    source.append(4)
    assert len(view) == 2 and list(view) == [1, 2] and view[-1] == 2
    with pytest.raises(IndexError):
        view[2]
    assert view[:5] == [1, 2] and type(view[:5]) is SequencePrefix
    assert view[:-1] == [1] and view[1:] == (2,)


def test_a_slice_from_the_start_keeps_the_kind_of_view() -> None:
    """PrefixView slices to a PrefixView; slices that do not start at 0 are tuples."""
    events = tuple(SessionEndSeedEvent(seq=i, time=0) for i in range(5))
    view = PrefixView(events, 4)
    assert type(view[:2]) is PrefixView and type(view[0:3:1]) is PrefixView
    assert type(view[::2]) is tuple and type(view[1:3]) is tuple
    assert type(view[-4:]) is PrefixView and view[-4:] == events[:4]
    assert type(view[:0]) is PrefixView and len(view[:0]) == 0
    assert view[4:] == () and type(view[4:]) is tuple
    assert view[1:3] == events[1:3] and view[0:4:2] == events[0:4:2]
    assert view[::-1] == events[3::-1]


# ------------------------------------------------------------------ SeededLog

def _events(count: int, start: int = 0) -> list[Event]:
    return [SessionEndSeedEvent(seq=start + i, time=i) for i in range(count)]


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(0, 6), st.integers(0, 6), st.lists(st.integers(-14, 14), max_size=8),
       st.lists(SLICES, max_size=6))
def test_a_seeded_log_reads_as_its_seed_then_its_tail(
        seeded: int, tailed: int, indices: list[int], slices: list[slice]) -> None:
    """len, every index (IndexError outside), every slice, iteration."""
    seed, tail = _events(seeded), _events(tailed, seeded)
    log = SeededLog(tuple(seed), tuple(tail))
    expected = [*seed, *tail]
    assert len(log) == len(expected)
    assert list(log) == expected
    for index in indices:
        if -len(expected) <= index < len(expected):
            assert log[index] is expected[index]
        else:
            with pytest.raises(IndexError):
                log[index]
    for cut in slices:
        part = log[cut]
        assert list(part) == expected[cut], cut
        start, _, step = cut.indices(len(expected))
        assert type(part) is (PrefixView if step == 1 and start == 0 else tuple)


def test_a_seeded_log_grows_with_its_tail() -> None:
    """The tail is the session's own list: what is appended to it is read through the log."""
    tail: list[Event] = []
    log = SeededLog(tuple(_events(2)), tail)
    assert len(log) == 2 and repr(log) == "SeededLog(<2 seed + 0 events>)"
    tail.extend(_events(3, 2))
    assert len(log) == 5 and log[4] is tail[2] and log[-5].seq == 0
    assert [event.seq for event in log] == [0, 1, 2, 3, 4]
    assert repr(log) == "SeededLog(<2 seed + 3 events>)"
    with pytest.raises(IndexError):
        log[-6]
    with pytest.raises(IndexError):
        log[5]
    assert list(SeededLog(())) == [] and len(SeededLog(())) == 0


def test_a_seeded_log_over_an_empty_seed_is_its_tail() -> None:
    """Negative indices reach into the tail when the seed is empty."""
    tail = _events(3)
    log = SeededLog((), tail)
    assert log[-1] is tail[-1] and log[0] is tail[0] and log[-3] is tail[0]
    with pytest.raises(IndexError):
        log[-4]


# ------------------------------------------------------------------ the cut

def _end(seq: int) -> Event:
    return TurnEndEvent(seq=seq, time=0, data=TurnEndData(turn=1, reason=TurnCompleted()))


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.booleans(), max_size=10))
def test_the_cut_is_just_past_the_last_turn_end_whatever_the_sequence(ends: list[bool]) -> None:
    """Over any sequence of events (valid logs or not): one past the last turn/end, else 0;
    the prefix is that long, the sequence itself when nothing follows its last turn/end."""
    events: list[Any] = [_end(i) if end else SessionEndSeedEvent(seq=i, time=0)
                         for i, end in enumerate(ends)]
    expected = max((i + 1 for i, end in enumerate(ends) if end), default=0)
    assert completed_turn_cut(events) == expected
    assert completed_turn_cut(tuple(events)) == expected
    prefix = completed_turn_prefix(events)
    assert list(prefix) == events[:expected]
    if expected == len(events):  # the empty sequence too: nothing to cut off
        assert prefix is events
    else:
        assert type(prefix) is PrefixView


def test_a_turn_end_at_index_0_is_found() -> None:
    """The scan runs down to the first event: a sequence whose only turn/end is its first."""
    events = [_end(0), SessionEndSeedEvent(seq=1, time=0)]
    assert completed_turn_cut(events) == 1
    assert completed_turn_cut([_end(0)]) == 1
    assert list(completed_turn_prefix(events)) == events[:1]


@settings(max_examples=examples(100), deadline=None)
@given(session_logs())
def test_a_logs_prefix_is_a_prefix_view_or_the_log(log: tuple[Event, ...]) -> None:
    """completed_turn_prefix of a real log: the log itself when it ends a turn (or is empty),
    else a view."""
    prefix = completed_turn_prefix(log)
    if not log or isinstance(log[-1], TurnEndEvent):
        assert prefix is log
    else:
        assert type(prefix) is PrefixView
        assert type(prefix[:]) is PrefixView and prefix[:] == prefix
