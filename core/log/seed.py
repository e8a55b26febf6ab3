"""The completed-turn prefix: what a fork child is seeded with.

A parent that delegates is in the middle of a turn: its last assistant message has tool calls
without results. Copying its log as it stands would hand the child an unbalanced history. The
seed is therefore the contiguous prefix of the log through the last ``turn/end`` (inclusive);
trailing between-turn events and the in-flight turn are left out (wire-format §6.6, fork
provider). No completed turn: the seed is empty and the child starts like a spawn.

Rules: the prefix is a *view* over the caller's sequence. Nothing is copied, and finding the cut
costs O(events after it), scanning backwards from the end. The views a seed lives in are here
too: :class:`SequencePrefix` (a prefix of any sequence; :class:`PrefixView` is one of events)
and :class:`SeededLog` (a borrowed seed and the events after it, read as one log).
"""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import TypeVar, overload

from .._checking import checked, plain
from .events import Event, TurnEndEvent

__all__ = [
    "SequencePrefix",
    "PrefixView",
    "SeededLog",
    "completed_turn_prefix",
    "completed_turn_cut",
]

T = TypeVar("T")


class _PrefixSliced(Sequence[T]):
    """Indexing for the views here: a slice from the start is :meth:`_prefix` (no copy), any
    other slice a tuple; an index is checked (``_noun`` names it) before :meth:`_item` reads it."""

    __slots__ = ()
    _noun = "item"

    @abstractmethod
    def _item(self, index: int) -> T: ...

    @abstractmethod
    def _prefix(self, length: int) -> Sequence[T]: ...

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        length = len(self)
        if isinstance(index, slice):
            start, stop, step = index.indices(length)
            if step == 1 and start == 0:
                return self._prefix(max(stop, 0))
            return tuple(self._item(i) for i in range(start, stop, step))
        if index < 0:
            index += length
        if not 0 <= index < length:
            raise IndexError(f"{self._noun} index out of range")
        return self._item(index)


class _SameItems(_PrefixSliced[T]):
    """A view equal to any sequence holding the same items in the same order (tuples too)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]


class SequencePrefix(_SameItems[T]):
    """The first ``length`` items of ``source``, without copying them.

    The source must not change in its first ``length`` positions (session logs are
    append-only, so a prefix of one is fixed for good). Slicing a prefix from its start gives
    a prefix of the same kind; any other slice is a tuple.
    """

    __slots__ = ("_length", "_source")
    _source: Sequence[T]
    _length: int

    def __init__(self, source: Sequence[T], length: int) -> None:
        if not 0 <= length <= len(source):
            raise ValueError(f"prefix length {length} outside 0..{len(source)}")
        # A view of a view reads the underlying source directly: no chains of views.
        while isinstance(source, SequencePrefix):
            source = source._source
        self._source = source
        self._length = length

    _noun = "prefix"

    def __len__(self) -> int:
        return self._length

    def _item(self, index: int) -> T:
        return self._source[index]

    def _prefix(self, length: int) -> SequencePrefix[T]:
        return type(self)(self._source, length)

    def __iter__(self) -> Iterator[T]:
        return itertools.islice(iter(self._source), self._length)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(<{self._length} of {len(self._source)} items>)"


class PrefixView(SequencePrefix[Event]):
    """The first ``length`` events of ``source``, without copying them (a fork seed)."""

    __slots__ = ()


class SeededLog(_PrefixSliced[Event]):
    """A seed followed by the events placed after it, read as one log, copying neither.

    The seed is borrowed and must not change; ``tail`` may grow at its end (a session's own
    events are appended to it), and this log grows with it. Slicing from the start gives a
    :class:`PrefixView` of this log; any other slice is a tuple.
    """

    __slots__ = ("_seed", "_seed_length", "_tail")

    def __init__(self, seed: Sequence[Event], tail: Sequence[Event] = ()) -> None:
        self._seed = seed
        self._seed_length = len(seed)
        self._tail = tail

    def __len__(self) -> int:
        return self._seed_length + len(self._tail)

    _noun = "event"

    def _item(self, index: int) -> Event:
        if index < self._seed_length:
            return self._seed[index]
        return self._tail[index - self._seed_length]

    def _prefix(self, length: int) -> PrefixView:
        return PrefixView(self, length)

    def __iter__(self) -> Iterator[Event]:
        yield from self._seed
        yield from self._tail

    def __repr__(self) -> str:
        return f"SeededLog(<{self._seed_length} seed + {len(self._tail)} events>)"


@checked
def completed_turn_cut(events: Sequence[Event]) -> int:
    """Index just past the last ``turn/end`` (0 when no turn has completed).

    >>> completed_turn_cut(())
    0
    """
    for index in range(len(events) - 1, -1, -1):
        if isinstance(events[index], TurnEndEvent):
            return index + 1
    return 0


@checked
def completed_turn_prefix(events: Sequence[Event]) -> Sequence[Event]:
    """The contiguous prefix of ``events`` through the last ``turn/end``, inclusive.

    Returns ``events`` itself when it already ends with ``turn/end`` (so applying it twice
    gives the same object), an empty view when no turn has completed, and otherwise a
    :class:`PrefixView`. Cost: O(events after the cut).
    """
    cut = plain(completed_turn_cut)(events)  # the entry point checked ``events`` already
    if cut == len(events):
        return events
    return PrefixView(events, cut)
