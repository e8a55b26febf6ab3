"""Cached tokens a provider reports reach the usage we log as DSH's adapter maps them
(DSH: llm-deepseek translate.ts mapUsage, translate.spec usage cases): disjoint counts,
``inputTokens = prompt_tokens - cached``, ``cacheReadTokens`` on the wire."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fake_openai_server import FakeOpenAI, Reply, chunk, usage_chunk
from msgspec import UNSET

from turnfork.core import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    FinishChunk,
    FinishStop,
    LlmCallConfig,
    MessageSource,
    StreamChunk,
    TextBlock,
    TokenUsage,
    UsageChunk,
    UserMessage,
    encode_log,
)
from turnfork.shell import Host
from turnfork.shell.models.base import ModelRequest
from turnfork.shell.models.openai_chat import OpenAIChatModel

REQUEST = ModelRequest(config=LlmCallConfig(provider="deepseek", model="m"), system=None,
                       tools=(), messages=(UserMessage(content=(TextBlock(text="hi"),),
                                                       source=MessageSource(kind="user"),
                                                       id="u1"),))
ANSWER = chunk({"content": "ok"}, finish="stop")


def _stream(*events: dict[str, Any]) -> list[StreamChunk]:
    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([Reply(events=events)]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            return [c async for c in model.stream(REQUEST)]

    return asyncio.run(main())


def _base(prompt: int, completion: int, **extra: Any) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion, **extra}


SHAPES: dict[str, tuple[dict[str, Any], TokenUsage]] = {
    "no cache reported": (_base(50, 5), TokenUsage(input_tokens=50, output_tokens=5)),
    "OpenAI cached_tokens": (
        _base(2048, 10, prompt_tokens_details={"cached_tokens": 1920, "audio_tokens": 0}),
        TokenUsage(input_tokens=128, output_tokens=10, cache_read_tokens=1920)),
    "DeepSeek hit and miss": (
        _base(900, 12, prompt_cache_hit_tokens=640, prompt_cache_miss_tokens=260),
        TokenUsage(input_tokens=260, output_tokens=12, cache_read_tokens=640)),
    "DeepSeek both spellings": (
        _base(900, 12, prompt_cache_hit_tokens=640, prompt_cache_miss_tokens=260,
              prompt_tokens_details={"cached_tokens": 640}),
        TokenUsage(input_tokens=260, output_tokens=12, cache_read_tokens=640)),
    "cached_tokens null falls back to the hit count": (
        _base(900, 12, prompt_cache_hit_tokens=640, prompt_tokens_details={"cached_tokens": None}),
        TokenUsage(input_tokens=260, output_tokens=12, cache_read_tokens=640)),
    "a cold call reports zero hits": (
        _base(300, 3, prompt_cache_hit_tokens=0, prompt_cache_miss_tokens=300),
        TokenUsage(input_tokens=300, output_tokens=3, cache_read_tokens=0)),
    "cache writes are their own bucket": (
        _base(1000, 4, prompt_tokens_details={"cached_tokens": 600, "cache_write_tokens": 300}),
        TokenUsage(input_tokens=100, output_tokens=4, cache_read_tokens=600,
                   cache_write_tokens=300)),
    "reasoning tokens": (
        _base(10, 40, completion_tokens_details={"reasoning_tokens": 30}),
        TokenUsage(input_tokens=10, output_tokens=40, reasoning_tokens=30)),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_usage_shape_maps_to_disjoint_counts(shape: str) -> None:
    """Ensures that each provider usage shape maps to DSH's disjoint counts."""
    usage, expected = SHAPES[shape]
    chunks = _stream(ANSWER, usage_chunk(usage))
    assert chunks[-2:] == [UsageChunk(usage=expected), FinishChunk(reason=FinishStop())]


def test_usage_on_the_finish_chunk_counts_too() -> None:
    """Ensures that usage attached to the finish chunk (not a trailing chunk) is reported."""
    chunks = _stream(chunk({"content": "ok"}, finish="stop",
                           usage=_base(9, 1, prompt_cache_hit_tokens=8)))
    assert UsageChunk(usage=TokenUsage(input_tokens=1, output_tokens=1,
                                       cache_read_tokens=8)) in chunks


def test_the_latest_usage_wins_and_only_one_is_streamed() -> None:
    """Ensures that of several usage reports only the last is streamed, once, before finish."""
    chunks = _stream(chunk({"content": "ok"}, finish="stop", usage=_base(9, 1)),
                     usage_chunk(_base(9, 2, prompt_cache_hit_tokens=4)))
    usages = [c for c in chunks if isinstance(c, UsageChunk)]
    assert usages == [UsageChunk(usage=TokenUsage(input_tokens=5, output_tokens=2,
                                                  cache_read_tokens=4))]
    assert chunks[-2] == usages[0]


def test_cached_tokens_reach_the_log_as_cache_read_tokens() -> None:
    """Ensures that the provider's cache hits are written as cacheReadTokens in the session log,
    on the usage chunk and on the assistant message, with inputTokens the uncached rest."""
    usage = _base(2000, 7, prompt_cache_hit_tokens=1536, prompt_cache_miss_tokens=464,
                  prompt_tokens_details={"cached_tokens": 1536})

    async def main() -> bytes:
        async with FakeOpenAI([Reply(events=(ANSWER, usage_chunk(usage)))]) as server, \
                OpenAIChatModel(base_url=server.base_url, api_key="k", timeout=5.0) as model:
            host = Host()
            host.models.register("deepseek", model)
            agent = host.create_agent(provider="deepseek", model="m")
            agent.followup("hi")
            await agent.when_idle()
            events = list(agent.session.events)
            await agent.dispose()
        (message,) = [e for e in events if isinstance(e, AssistantMessageEvent)]
        assert message.data.usage is not UNSET
        assert any(isinstance(e, AssistantChunkEvent) and isinstance(e.data.chunk, UsageChunk)
                   for e in events)
        return encode_log(events)

    records = [json.loads(line) for line in asyncio.run(main()).splitlines()]
    expected = {"inputTokens": 464, "outputTokens": 7, "cacheReadTokens": 1536}
    logged = [r["data"]["chunk"]["usage"] for r in records
              if r["type"] == "assistant/chunk" and r["data"]["chunk"]["type"] == "usage"]
    assert logged == [expected]
    (message,) = [r for r in records if r["type"] == "assistant/message"]
    assert message["data"]["usage"] == expected
