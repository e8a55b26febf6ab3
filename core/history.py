"""Model-visible history: the surface walked in order and projected to messages (§1.1).

``user/message`` → its message; ``assistant/message`` → its message, skipped when its content
is empty (a usage-only record); ``tool/result`` → its message.

A :class:`HistorySnapshot` remembers the history at one surface node. Because the surface is a
persistent list, a later trace that still holds that node only needs the nodes added since:
``history_snapshot(trace, known)`` costs O(nodes after ``known``), which is what lets a
thousand fork children of one long parent share the parent's history instead of each
re-walking it.
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec

from .events import (
    AssistantMessage,
    AssistantMessageEvent,
    ToolResultEvent,
    ToolResultMessage,
    UserMessage,
    UserMessageEvent,
)
from .trace import SurfaceNode, Trace

__all__ = ["Message", "HistorySnapshot", "EMPTY_HISTORY", "history_snapshot", "model_history"]

Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


class HistorySnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The model-visible messages of a surface ending at ``node`` (``None``: empty).

    Held as a ``base`` shared with the snapshot it was continued from, plus the messages
    ``added`` since, so that many continuations of one snapshot (fork children of one parent)
    share its messages instead of each holding a copy.
    """

    node: SurfaceNode | None
    base: tuple[Message, ...] = ()
    added: tuple[Message, ...] = ()

    @property
    def messages(self) -> tuple[Message, ...]:
        """All the messages, oldest first."""
        if not self.added:
            return self.base
        return self.base + self.added if self.base else self.added

    def frozen(self) -> HistorySnapshot:
        """The same history with every message in ``base``: the form to share."""
        return self if not self.added else HistorySnapshot(node=self.node, base=self.messages)


EMPTY_HISTORY = HistorySnapshot(node=None)


def _project(node: SurfaceNode) -> Message | None:
    event = node.event
    if isinstance(event, UserMessageEvent):
        return event.data
    if isinstance(event, AssistantMessageEvent):
        return event.data.message if event.data.message.content else None
    if isinstance(event, ToolResultEvent):
        return event.data.message
    return None


def history_snapshot(trace: Trace, known: HistorySnapshot | None = None) -> HistorySnapshot:
    """The history after the traced events, reusing ``known`` when the surface still holds its
    node (then O(nodes added since)); otherwise a full walk, O(surface size)."""
    stop = known.node if known is not None else None
    added: list[SurfaceNode] = []
    node = trace.surface
    while node is not None and node is not stop:
        added.append(node)
        node = node.previous
    projected = (_project(n) for n in reversed(added))
    new = tuple(m for m in projected if m is not None)
    if known is not None and node is stop:
        if not added:
            return known
        return HistorySnapshot(node=trace.surface, base=known.base, added=known.added + new)
    # Not meeting the known node means a replace shadowed it: the walk covered everything.
    return HistorySnapshot(node=trace.surface, base=new)


def model_history(trace: Trace) -> tuple[Message, ...]:
    """The messages a model sees after the traced events, oldest first. O(surface size)."""
    return history_snapshot(trace).messages
