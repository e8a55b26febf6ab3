"""A provider response is capped: the whole streamed body and any one event or line; past a
cap the call ends RESPONSE_TOO_LARGE (the turn ends error, the log balanced), memory bounded."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from typing import Any

import pytest
from fake_openai_server import FakeOpenAI, Reply, chunk
from returns.result import Success

from turnfork.core import (
    BlockEnd,
    FinishChunk,
    FinishError,
    LlmCallConfig,
    MessageSource,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    TurnEndEvent,
    TurnError,
    UserMessage,
    check_balance,
)
from turnfork.shell import Host
from turnfork.shell.models.base import ModelRequest
from turnfork.shell.models.openai_chat import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    OpenAIChatModel,
)

REQUEST = ModelRequest(config=LlmCallConfig(provider="deepseek", model="m"), system=None,
                       tools=(), messages=(UserMessage(content=(TextBlock(text="hi"),),
                                                       source=MessageSource(kind="user"),
                                                       id="u1"),))
KIB = 1024


def _stream(reply: Reply, **caps: int) -> list[StreamChunk]:
    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([reply]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0, **caps) as model:
            return [c async for c in model.stream(REQUEST)]

    return asyncio.run(main())


def _too_large(chunks: list[StreamChunk]) -> str:
    last = chunks[-1]
    assert isinstance(last, FinishChunk) and isinstance(last.reason, FinishError)
    assert last.reason.failure.code == "RESPONSE_TOO_LARGE"
    assert not any(isinstance(c, BlockEnd) for c in chunks)
    return last.reason.failure.message


def test_defaults_are_generous() -> None:
    """Ensures that the default caps are far above any real response (256 MiB, 16 MiB)."""
    assert DEFAULT_MAX_RESPONSE_BYTES == 256 * 1024 * KIB
    assert DEFAULT_MAX_EVENT_BYTES == 16 * 1024 * KIB


def test_a_large_single_event_passes_by_default() -> None:
    """Ensures that a 4 MiB tool call sent in one event is an ordinary answer by default."""
    arguments = json.dumps({"content": "y" * (4 * 1024 * KIB)})
    piece = {"index": 0, "id": "call_w", "type": "function",
             "function": {"name": "write_file", "arguments": arguments}}
    chunks = _stream(Reply(events=(chunk({"tool_calls": [piece]}, finish="tool_calls"),)))
    assert BlockEnd(index=0, block=ToolCallBlock(id="call_w", name="write_file",
                                                 arguments=arguments)) in chunks


def test_body_over_the_response_cap_ends_the_call() -> None:
    """Ensures that many small events past max_response_bytes end RESPONSE_TOO_LARGE, after
    the deltas that fitted were streamed."""
    events = tuple(chunk({"content": f"part {i:04} "}) for i in range(200))
    chunks = _stream(Reply(events=events), max_response_bytes=8 * KIB)
    assert "exceeded 8192 bytes (max_response_bytes)" in _too_large(chunks)
    deltas = [c for c in chunks if isinstance(c, TextDelta)]
    assert 0 < len(deltas) < 200
    assert deltas[0].text == "part 0000 "


def test_event_over_the_event_cap_ends_the_call() -> None:
    """Ensures that one event of many data lines past max_event_bytes ends the call."""
    lines = b"".join(b"data: " + b" " * 100 + b"\n" for _ in range(50))
    chunks = _stream(Reply(events=(chunk({"content": "ok"}),), tail=(lines + b"\n",)),
                     max_event_bytes=2 * KIB)
    assert "exceeded 2048 bytes (max_event_bytes)" in _too_large(chunks)
    assert TextDelta(index=0, text="ok") in chunks


@pytest.mark.parametrize("flood", [b"x" * (64 * KIB), b"data: " + b"x" * (64 * KIB - 6)])
def test_an_endless_line_is_cut_at_the_cap_with_bounded_memory(flood: bytes) -> None:
    """Ensures that a server streaming one line forever is stopped at max_event_bytes, holding
    memory near the cap, and the connection is closed."""
    cap = 1024 * KIB

    async def main() -> tuple[list[StreamChunk], int]:
        async with FakeOpenAI([Reply(events=(chunk({"content": "a"}),), tail=(b"data: ",),
                                     end="flood", flood=flood)]) as server:
            async with OpenAIChatModel(base_url=server.base_url, api_key="k", timeout=5.0,
                                       max_event_bytes=cap) as model:
                tracemalloc.start()
                try:
                    chunks = [c async for c in model.stream(REQUEST)]
                    peak = tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()
            await asyncio.wait_for(server.disconnected.wait(), 5.0)
        return chunks, peak

    chunks, peak = asyncio.run(main())
    _too_large(chunks)
    assert peak < 8 * cap, peak


def test_an_endless_stream_of_events_is_cut_at_the_response_cap() -> None:
    """Ensures that a server sending valid events forever is stopped at max_response_bytes."""
    event = b"data: " + json.dumps(chunk({"content": "z"})).encode() + b"\n\n"

    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([Reply(end="flood", flood=event * 100)]) as server:
            async with OpenAIChatModel(base_url=server.base_url, api_key="k", timeout=5.0,
                                       max_response_bytes=512 * KIB) as model:
                chunks = [c async for c in model.stream(REQUEST)]
            await asyncio.wait_for(server.disconnected.wait(), 5.0)
        return chunks

    chunks = asyncio.run(main())
    assert "max_response_bytes" in _too_large(chunks)


@pytest.mark.parametrize("options", [{"max_response_bytes": 0}, {"max_event_bytes": -1},
                                     {"max_event_bytes": True}, {"max_response_bytes": 1.5}])
def test_a_cap_must_be_a_positive_byte_count(options: dict[str, Any]) -> None:
    """Ensures that a cap that is not a positive int is refused at construction, by name."""
    (name,) = options
    with pytest.raises(ValueError, match=name):
        OpenAIChatModel(base_url="http://127.0.0.1:1/v1", api_key="k", **options)


def test_capped_response_ends_the_turn_with_a_balanced_log() -> None:
    """Ensures that an agent whose model response breaks the cap ends the turn error, with the
    streamed chunks logged and the log balanced."""
    events = tuple(chunk({"content": "word "}) for i in range(500))

    async def main() -> list[Any]:
        async with FakeOpenAI([Reply(events=events)]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0,
                max_response_bytes=16 * KIB) as model:
            host = Host()
            host.models.register("deepseek", model)
            agent = host.create_agent(provider="deepseek", model="m")
            agent.followup("talk")
            await agent.when_idle()
            logged = list(agent.session.events)
            await agent.dispose()
        return logged

    logged = asyncio.run(main())
    (end,) = [e for e in logged if isinstance(e, TurnEndEvent)]
    assert isinstance(end.data.reason, TurnError)
    assert end.data.reason.error.code == "RESPONSE_TOO_LARGE"
    assert isinstance(check_balance(logged), Success)
