"""Model-visible history: the surface walked in order and projected to messages (§1.1).

``user/message`` → its message; ``assistant/message`` → its message, skipped when its content
is empty (a usage-only record); ``tool/result`` → its message.

A :class:`HistorySnapshot` remembers the history at one surface node. Because the surface is a
persistent list, a later trace that still holds that node only needs the nodes added since:
``history_snapshot(trace, known)`` costs O(nodes after ``known``), and an earlier trace whose
node ``known``'s surface still holds costs O(nodes between them). That is what lets a
thousand fork children of one long parent share the parent's history instead of each
re-walking it, and what keeps a long session's model calls from growing with its length.

The messages themselves are a :class:`HistoryView`: a fixed-length view of append-only storage,
never a copy. A snapshot continued from the end of its storage appends there, so a session's
history is one list however many calls it makes; a continuation from anywhere else (a fork child
from its parent's history, or a second continuation of one snapshot) starts a segment of its own
on top of the shared one. Storage only grows, and a view reads only its first ``length``
messages, so no view ever sees a message appended after it was made.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TypeAlias

import msgspec

from .._checking import checked, unchecked
from .events import (
    AssistantMessage,
    AssistantMessageEvent,
    ToolResultEvent,
    ToolResultMessage,
    UserMessage,
    UserMessageEvent,
)
from .seed import _SameItems
from .trace import SurfaceNode, Trace

__all__ = [
    "Message",
    "HistoryView",
    "HistorySnapshot",
    "EMPTY_HISTORY",
    "history_snapshot",
    "model_history",
]

Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


@unchecked
class _Segment:
    """Append-only storage for the messages after ``base`` (``None``: from the start)."""

    __slots__ = ("base", "items", "offset")

    def __init__(self, base: HistoryView | None, items: list[Message]) -> None:
        self.base = base
        self.offset = 0 if base is None else len(base)
        self.items = items


@unchecked
class HistoryView(_SameItems[Message]):
    """The first ``len(view)`` messages of a history, read in place: O(1) to make and to keep.

    Indexing costs O(segments), one per fork level above the history's owner; iterating is one
    pass. Equal to any sequence holding the same messages in the same order (tuples included).
    """

    __slots__ = ("_length", "_segment", "_shared")
    _segment: _Segment
    _length: int
    #: Shared views (:meth:`HistorySnapshot.frozen`) are never extended in place.
    _shared: bool

    def __init__(self, messages: Sequence[Message] = ()) -> None:
        self._segment = _Segment(None, list(messages))
        self._length = len(self._segment.items)
        self._shared = False

    @classmethod
    def _owning(cls, items: list[Message]) -> HistoryView:
        """A view of a new storage list, which it takes over (no copy)."""
        return cls._of(_Segment(None, items), len(items))

    @classmethod
    def _of(cls, segment: _Segment, length: int, shared: bool = False) -> HistoryView:
        view = cls.__new__(cls)
        view._segment, view._length, view._shared = segment, length, shared
        return view

    _noun = "history"

    def __len__(self) -> int:
        return self._length

    def _item(self, index: int) -> Message:
        segment = self._segment
        while index < segment.offset:
            segment = segment.base._segment  # type: ignore[union-attr]  # offset > 0: a base
        return segment.items[index - segment.offset]

    def __iter__(self) -> Iterator[Message]:
        segment = self._segment
        own = itertools.islice(segment.items, self._length - segment.offset)
        return own if segment.base is None else itertools.chain(segment.base, own)

    def prefix(self, length: int) -> HistoryView:
        """The first ``length`` messages, sharing this view's storage: O(segments)."""
        if not 0 <= length <= self._length:
            raise ValueError(f"history prefix length {length} outside 0..{self._length}")
        view = self
        while length <= view._segment.offset and view._segment.base is not None:
            view = view._segment.base
        return HistoryView._of(view._segment, length, self._shared)

    _prefix = prefix

    def extended(self, messages: Sequence[Message]) -> HistoryView:
        """This history followed by ``messages``: O(len(messages)); this view is unchanged."""
        if not messages:
            return self
        if not self._length:
            return HistoryView._owning(list(messages))
        segment = self._segment
        if not self._shared and len(segment.items) == self._length - segment.offset:
            segment.items.extend(messages)  # the end of the storage: later views only
            return HistoryView._of(segment, self._length + len(messages))
        return HistoryView._of(_Segment(self, list(messages)), self._length + len(messages))

    def shared(self) -> HistoryView:
        """The same messages, in a view whose continuations never write into this storage
        (so many continuations of one history hold only their own messages)."""
        return self if self._shared else HistoryView._of(self._segment, self._length, True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HistoryView) and (other._segment, other._length) == (
                self._segment, self._length):
            return True
        return super().__eq__(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"HistoryView({tuple(self)!r})"


class HistorySnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The model-visible ``messages`` of a surface ending at ``node`` (``None``: empty)."""

    node: SurfaceNode | None
    messages: HistoryView

    def frozen(self) -> HistorySnapshot:
        """The same history in the form to share: continuing it (a fork child from its
        parent's history at the cut) never writes into the storage it shares."""
        shared = self.messages.shared()
        return self if shared is self.messages else HistorySnapshot(node=self.node,
                                                                    messages=shared)


EMPTY_HISTORY = HistorySnapshot(node=None, messages=HistoryView().shared())


@unchecked
def _project(node: SurfaceNode) -> Message | None:
    event = node.event
    if isinstance(event, UserMessageEvent):
        return event.data
    if isinstance(event, AssistantMessageEvent):
        return event.data.message if event.data.message.content else None
    if isinstance(event, ToolResultEvent):
        return event.data.message
    return None


@unchecked
def _projected(nodes: list[SurfaceNode]) -> list[Message]:
    """The messages of ``nodes`` (given newest first), oldest first."""
    projected = (_project(node) for node in reversed(nodes))
    return [message for message in projected if message is not None]


@checked
def history_snapshot(trace: Trace, known: HistorySnapshot | None = None) -> HistorySnapshot:
    """The history after the traced events, reusing ``known`` where the surfaces meet.

    ``known`` earlier on this surface (its node still on it): O(nodes added since). ``known``
    later (the trace's node is on ``known``'s surface, e.g. a fork's cut behind the parent's
    last model call): a prefix of ``known``'s messages, O(nodes between them). Otherwise (a
    surface ``replace`` rebuilt the nodes in between): a full walk, O(surface size). The answer
    is always that of :func:`model_history`.
    """
    target = trace.surface
    if known is None:
        return HistorySnapshot(node=target, messages=HistoryView._owning(_walk(target)))
    if target is known.node:
        return known
    # Walk back from both ends at once, so that the cost is the distance between the two
    # nodes whichever comes first, not the length of the surface behind them.
    added: list[SurfaceNode] = []
    dropped = 0
    forward: SurfaceNode | None = target
    backward = known.node
    while True:
        if forward is known.node:
            messages = known.messages.extended(_projected(added))
            return HistorySnapshot(node=target, messages=messages)
        if backward is target:
            messages = known.messages.prefix(len(known.messages) - dropped)
            return HistorySnapshot(node=target, messages=messages)
        if forward is None and backward is None:  # ``added`` holds the whole surface
            return HistorySnapshot(node=target, messages=HistoryView._owning(_projected(added)))
        if forward is not None:
            added.append(forward)
            forward = forward.previous
        if backward is not None:
            dropped += _project(backward) is not None
            backward = backward.previous


@unchecked
def _walk(node: SurfaceNode | None) -> list[Message]:
    nodes: list[SurfaceNode] = []
    while node is not None:
        nodes.append(node)
        node = node.previous
    return _projected(nodes)


@checked
def model_history(trace: Trace) -> tuple[Message, ...]:
    """The messages a model sees after the traced events, oldest first. O(surface size)."""
    return tuple(_walk(trace.surface))
