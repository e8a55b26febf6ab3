"""A failure names the provider's request id from ``x-request-id`` or, as DSH's adapter reads it,
DeepSeek's ``x-deepseek-request-id``: for an error status and for a stream that fails."""

from __future__ import annotations

import asyncio

import pytest
from _openai_calls import error_end, stream_hello
from fake_openai_server import FakeOpenAI, Reply

from turnfork.core import (
    LlmFailure,
    StreamChunk,
)


def _failure(reply: Reply) -> LlmFailure:
    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([reply]) as server:
            return await stream_hello(server.base_url, api_key="k")

    return error_end(asyncio.run(asyncio.wait_for(main(), 30))).failure


@pytest.mark.parametrize("header", ["x-request-id", "x-deepseek-request-id"])
def test_an_error_status_names_the_request_id(header: str) -> None:
    failure = _failure(Reply(status=500, body={"error": {"message": "boom"}},
                             headers=((header, "req-7"),)))
    assert (failure.code, failure.request_id) == ("SERVER", "req-7")


@pytest.mark.parametrize("header", ["x-request-id", "x-deepseek-request-id"])
def test_a_failed_stream_names_the_request_id(header: str) -> None:
    failure = _failure(Reply(events=("not json",), headers=((header, "req-8"),)))
    assert (failure.code, failure.request_id) == ("MALFORMED_RESPONSE", "req-8")
