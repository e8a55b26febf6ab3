"""Model-visible history: the surface walked in order and projected to messages (§1.1).

``user/message`` → its message; ``assistant/message`` → its message, skipped when its content
is empty (a usage-only record); ``tool/result`` → its message.
"""

from __future__ import annotations

from typing import TypeAlias

from .events import (
    AssistantMessage,
    AssistantMessageEvent,
    ToolResultEvent,
    ToolResultMessage,
    UserMessage,
    UserMessageEvent,
)
from .trace import SurfaceNode, Trace

__all__ = ["Message", "model_history"]

Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


def model_history(trace: Trace) -> tuple[Message, ...]:
    """The messages a model sees after the traced events, oldest first. O(surface size)."""
    nodes: list[SurfaceNode] = []
    node = trace.surface
    while node is not None:
        nodes.append(node)
        node = node.previous
    messages: list[Message] = []
    for node in reversed(nodes):
        event = node.event
        if isinstance(event, UserMessageEvent):
            messages.append(event.data)
        elif isinstance(event, AssistantMessageEvent):
            if event.data.message.content:
                messages.append(event.data.message)
        elif isinstance(event, ToolResultEvent):
            messages.append(event.data.message)
    return tuple(messages)
