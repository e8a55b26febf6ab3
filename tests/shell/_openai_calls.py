"""One user message streamed through ``OpenAIChatModel`` to a local server, and the error a
failed call ends with: what the tests of the model's failures share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnfork.core import (
    FinishChunk,
    FinishError,
    LlmCallConfig,
    MessageSource,
    StreamChunk,
    TextBlock,
    UserMessage,
)
from turnfork.shell.models.base import ModelRequest
from turnfork.shell.models.openai_chat import OpenAIChatModel


def hello(provider: str = "p") -> ModelRequest:
    """A request of one user message, ``hi``, to model ``m`` of ``provider``."""
    return ModelRequest(config=LlmCallConfig(provider=provider, model="m"), system=None,
                        tools=(), messages=(UserMessage(content=(TextBlock(text="hi"),),
                                                        source=MessageSource(kind="user"),
                                                        id="u1"),))


async def stream_hello(base_url: str, *, provider: str = "p", timeout: float = 5.0,
                       **options: Any) -> list[StreamChunk]:
    """Every chunk of :func:`hello` streamed from ``base_url``."""
    async with OpenAIChatModel(base_url=base_url, timeout=timeout, **options) as model:
        return [chunk async for chunk in model.stream(hello(provider))]


def error_end(chunks: Sequence[StreamChunk], *, alone: bool = False) -> FinishError:
    """The error finish the chunks end with (``alone``: and nothing streamed before it)."""
    if alone:
        assert len(chunks) == 1, chunks
    last = chunks[-1]
    assert isinstance(last, FinishChunk) and isinstance(last.reason, FinishError), last
    return last.reason
