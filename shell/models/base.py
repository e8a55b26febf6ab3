"""The model seam. A model answers a :class:`ModelRequest` with DSH stream chunks ending in
exactly one ``finish``; a provider failure is a final ``FinishError``, not an exception."""

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
        ...
