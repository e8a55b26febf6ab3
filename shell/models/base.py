"""The model seam: what the agent loop asks of a model, and what a model streams back.

A model answers a :class:`ModelRequest` with DSH stream chunks ending in exactly one ``finish``;
a provider failure is a final ``FinishError`` with a DSH failure code, not an exception.
Cancellation is asyncio cancellation of the task iterating the stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ...core import LlmCallConfig, Message, StreamChunk, ToolSchema

__all__ = ["Model", "ModelRequest"]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    config: LlmCallConfig
    system: str | None
    tools: tuple[ToolSchema, ...]
    messages: Sequence[Message]


@runtime_checkable
class Model(Protocol):
    """Anything that can answer a request with a stream of DSH stream chunks."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream the chunks of one model call."""
        ...
