"""The model seam: what the agent loop asks of a model, and what a model streams back.

A model receives a :class:`ModelRequest` (call config, system prompt, tool schemas, the
model-visible history) and streams DSH stream chunks (``core.StreamChunk``): ``block-start``,
deltas, ``block-end`` carrying the assembled block, at most one ``usage``, then exactly one
``finish``. A provider failure is reported as a final ``FinishChunk`` whose reason is
``FinishError(failure=LlmFailure(...))`` with a DSH failure code (AUTH, RATE_LIMIT,
CONTEXT_WINDOW_EXCEEDED, …), not as an exception. Cancellation is asyncio cancellation of the
task iterating the stream.
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
