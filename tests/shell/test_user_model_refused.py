"""A connection that cannot be made names where it was going: the request's method and URL,
so a wrong port or host in the base URL is visible in the failure."""

from __future__ import annotations

import asyncio
import socket

from turnfork.core import (
    FinishChunk,
    FinishError,
    LlmCallConfig,
    LlmFailure,
    MessageSource,
    TextBlock,
    UserMessage,
)
from turnfork.shell.models.base import ModelRequest
from turnfork.shell.models.openai_chat import OpenAIChatModel

REQUEST = ModelRequest(config=LlmCallConfig(provider="p", model="m"), system=None, tools=(),
                       messages=(UserMessage(content=(TextBlock(text="hi"),),
                                             source=MessageSource(kind="user"), id="u1"),))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # closed again: nothing listens there


def test_a_refused_connection_names_the_url() -> None:
    port = _free_port()

    async def main() -> LlmFailure:
        async with OpenAIChatModel(base_url=f"http://127.0.0.1:{port}/v1", timeout=5.0) as model:
            (last,) = [c async for c in model.stream(REQUEST)]
        assert isinstance(last, FinishChunk) and isinstance(last.reason, FinishError)
        return last.reason.failure

    failure = asyncio.run(asyncio.wait_for(main(), 30))
    assert failure.code == "TRANSPORT"
    assert failure.message.endswith(f" (POST http://127.0.0.1:{port}/v1/chat/completions)")
