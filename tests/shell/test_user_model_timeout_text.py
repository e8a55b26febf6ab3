"""A call ended by the read timeout says how long it waited and which argument bounds it, for a
server that never answers and for one that stops mid-answer."""

from __future__ import annotations

import asyncio

from _openai_calls import error_end, stream_hello
from fake_openai_server import FakeOpenAI, Reply, chunk

from turnfork.core import (
    LlmFailure,
    StreamChunk,
)


def _failure(reply: Reply) -> LlmFailure:
    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([reply]) as server:
            return await stream_hello(server.base_url, api_key="k", timeout=0.3)

    return error_end(asyncio.run(asyncio.wait_for(main(), 30))).failure


def test_a_server_that_never_answers_names_the_timeout() -> None:
    failure = _failure(Reply(end="stall"))
    assert (failure.code, failure.message) == (
        "TIMEOUT", "Request timed out: nothing within 0.3 s (timeout)")


def test_a_server_that_stops_mid_answer_names_the_timeout() -> None:
    failure = _failure(Reply(events=(chunk({"content": "half"}),), end="hang"))
    assert (failure.code, failure.message) == (
        "TIMEOUT", "the provider stopped sending: nothing within 0.3 s (timeout)")
