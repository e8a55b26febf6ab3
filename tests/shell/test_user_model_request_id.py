"""A failure names the provider's request id from ``x-request-id`` or, as DSH's adapter reads it,
DeepSeek's ``x-deepseek-request-id``: for an error status and for a stream that fails."""

from __future__ import annotations

import asyncio

import pytest
from fake_openai_server import FakeOpenAI, Reply

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
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            chunks = [c async for c in model.stream(REQUEST)]
        last = chunks[-1]
        assert isinstance(last, FinishChunk) and isinstance(last.reason, FinishError)
        return last.reason.failure

    return asyncio.run(asyncio.wait_for(main(), 30))


@pytest.mark.parametrize("header", ["x-request-id", "x-deepseek-request-id"])
def test_an_error_status_names_the_request_id(header: str) -> None:
    failure = _failure(Reply(status=500, body={"error": {"message": "boom"}},
                             headers=((header, "req-7"),)))
    assert (failure.code, failure.request_id) == ("SERVER", "req-7")


@pytest.mark.parametrize("header", ["x-request-id", "x-deepseek-request-id"])
def test_a_failed_stream_names_the_request_id(header: str) -> None:
    failure = _failure(Reply(events=("not json",), headers=((header, "req-8"),)))
    assert (failure.code, failure.request_id) == ("MALFORMED_RESPONSE", "req-8")
