"""What a provider sends with an error status is read within a bound: a huge error body neither
fills memory nor the log: its first 64 KiB are read, and the failure's message quotes the
beginning."""

from __future__ import annotations

import asyncio

from _openai_calls import error_end, stream_hello
from fake_openai_server import FakeOpenAI, Reply

from turnfork.core import (
    FinishError,
    StreamChunk,
)


def _failure_of(reply: Reply) -> FinishError:
    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([reply]) as server:
            return await stream_hello(server.base_url, provider="deepseek", api_key="k")

    return error_end(asyncio.run(main()), alone=True)


def test_a_huge_error_body_is_cut_to_its_first_64_kib() -> None:
    """A 400 whose JSON body is 8 MiB: the failure is still the 400's, its message bounded."""
    reason = _failure_of(Reply(status=400, body={"error": {"message": "x" * (8 << 20)}}))
    assert (reason.failure.code, reason.failure.status) == ("INVALID_REQUEST", 400)
    assert reason.failure.message.startswith(
        'Error code: 400 (its body exceeded 65536 bytes and was not read on; it begins: '
        '{"error": {"message": "xxx')
    assert len(reason.failure.message) < 4096


def test_a_small_error_body_is_the_message_as_the_sdk_reads_it() -> None:
    reason = _failure_of(Reply(status=429, body={"error": {"message": "slow down"}}))
    assert reason.failure.code == "RATE_LIMIT"
    assert "slow down" in reason.failure.message
