"""An answer that opens more blocks than any model's parallel tool calls ends as too large,
naming the cap, instead of costing time quadratic in its calls (8,000 calls took 20 s of the
event loop, 80,000 half an hour); one at the cap is an answer."""

from __future__ import annotations

import json

from returns.result import Failure, Success

from turnfork.core.machine import ChatStream, chat_stream, chat_stream_event
from turnfork.core.machine.chat_stream import MAX_STREAM_BLOCKS


def _open_calls(count: int) -> ChatStream | str:
    stream = chat_stream("0" * 20)
    for index in range(count):
        payload = json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "id": f"c{index}", "function": {"name": "t", "arguments": "{}"}}]}}]})
        fed = chat_stream_event(stream, payload)
        if isinstance(fed, Failure):
            failure = fed.failure()
            return f"{failure.code}: {failure.message}"
        assert isinstance(fed, Success)
        stream, _ = fed.unwrap()
    return stream


def test_an_answer_at_the_cap_is_an_answer() -> None:
    stream = _open_calls(MAX_STREAM_BLOCKS)
    assert isinstance(stream, ChatStream) and len(stream.calls) == MAX_STREAM_BLOCKS == 1024


def test_one_block_past_the_cap_ends_the_answer() -> None:
    assert _open_calls(MAX_STREAM_BLOCKS + 1) == (
        "RESPONSE_TOO_LARGE: the provider's answer opened more than 1024 blocks (tool calls)")
