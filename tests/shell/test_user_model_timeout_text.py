"""A call ended by the read timeout says how long it waited and which argument bounds it, for a
server that never answers and for one that stops mid-answer."""

from __future__ import annotations

import asyncio

from fake_openai_server import FakeOpenAI, Reply, chunk

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


def _failure(reply: Reply) -> LlmFailure:
    async def main() -> LlmFailure:
        async with FakeOpenAI([reply]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=0.3) as model:
            chunks = [c async for c in model.stream(REQUEST)]
        last = chunks[-1]
        assert isinstance(last, FinishChunk) and isinstance(last.reason, FinishError)
        return last.reason.failure

    return asyncio.run(asyncio.wait_for(main(), 30))


def test_a_server_that_never_answers_names_the_timeout() -> None:
    failure = _failure(Reply(end="stall"))
    assert (failure.code, failure.message) == (
        "TIMEOUT", "Request timed out: nothing within 0.3 s (timeout)")


def test_a_server_that_stops_mid_answer_names_the_timeout() -> None:
    failure = _failure(Reply(events=(chunk({"content": "half"}),), end="hang"))
    assert (failure.code, failure.message) == (
        "TIMEOUT", "the provider stopped sending: nothing within 0.3 s (timeout)")
