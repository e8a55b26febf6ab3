"""An event that is not JSON, or not a chat-completion chunk, ends the call MALFORMED_RESPONSE
(DSH: llm-deepseek translate "malformed SSE payload"); bad token counts never reach the log."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAI, Reply, chunk, usage_chunk
from returns.result import Success

from turnfork.core import (
    BlockEnd,
    FinishChunk,
    FinishError,
    FinishStop,
    LlmCallConfig,
    LlmFailure,
    MessageSource,
    StreamChunk,
    TextBlock,
    TextDelta,
    TurnCompleted,
    TurnEndEvent,
    TurnError,
    UserMessage,
    check_balance,
)
from turnfork.shell import Host, JsonlSessionStore
from turnfork.shell.models.base import ModelRequest
from turnfork.shell.models.openai_chat import OpenAIChatModel

REQUEST = ModelRequest(config=LlmCallConfig(provider="deepseek", model="m"), system=None,
                       tools=(), messages=(UserMessage(content=(TextBlock(text="hi"),),
                                                       source=MessageSource(kind="user"),
                                                       id="u1"),))
START = chunk({"content": "so far"})


def _usage(**counts: Any) -> dict[str, Any]:
    return usage_chunk({"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12,
                        **counts})


def _stream(reply: Reply) -> list[StreamChunk]:
    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([reply]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            return [c async for c in model.stream(REQUEST)]

    return asyncio.run(main())


BAD: dict[str, tuple[dict[str, Any] | str, str]] = {
    "not JSON": ("{not json", "malformed SSE payload: {not json"),
    "NaN": ('{"choices": [], "usage": {"prompt_tokens": NaN}}', "malformed SSE payload: "),
    "deep nesting": ("[" * 100_000 + "]" * 100_000, "malformed SSE payload: [[["),
    "huge integer": ('{"choices": [{"index": ' + "9" * 5000 + "}]}", "malformed SSE payload: "),
    "content not a string": (chunk({"content": 5}), "Expected `str | null`, got `int`"),
    "choices not a list": ({"choices": {"index": 0}}, "at `$.choices`"),
    "negative prompt tokens": (_usage(prompt_tokens=-3), "at `$.usage.prompt_tokens`"),
    "token count over 2^53": (_usage(completion_tokens=2**53), "`$.usage.completion_tokens`"),
    "negative cached tokens": (_usage(prompt_cache_hit_tokens=-1),
                               "at `$.usage.prompt_cache_hit_tokens`"),
    "boolean count": (_usage(prompt_tokens=True), "at `$.usage.prompt_tokens`"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_event_ends_the_call(case: str) -> None:
    """Ensures that a bad event ends MALFORMED_RESPONSE naming what is wrong, after the deltas
    that came before it, with no block-end."""
    event, expected = BAD[case]
    chunks = _stream(Reply(events=(START, event)))
    assert chunks[:2] == [chunks[0], TextDelta(index=0, text="so far")]
    last = chunks[-1]
    assert isinstance(last, FinishChunk) and isinstance(last.reason, FinishError)
    assert last.reason.failure.code == "MALFORMED_RESPONSE"
    assert expected in last.reason.failure.message
    assert len(last.reason.failure.message) < 400
    assert not any(isinstance(c, BlockEnd) for c in chunks)


def test_unknown_fields_and_nulls_are_tolerated() -> None:
    """Ensures that extra keys and explicit nulls, as compatible servers send them, are fine."""
    chunks = _stream(Reply(events=(
        {"id": "x", "choices": [{"index": 0, "delta": {"content": "hi", "role": "assistant",
                                                        "tool_calls": None, "extra": [1]},
                                 "finish_reason": None, "logprobs": None}],
         "usage": None, "system_fingerprint": "fp"},
        {"choices": [{"index": 0, "delta": None, "finish_reason": "stop"}]},
    )))
    assert chunks[-2:] == [BlockEnd(index=0, block=TextBlock(text="hi")),
                           FinishChunk(reason=FinishStop())]


def test_a_bad_token_count_ends_the_turn_and_the_log_reloads(tmp_path: Path) -> None:
    """Ensures that a provider's negative token count ends the turn as a model error, the log
    stays balanced and loads again, and the next turn works."""
    replies = [Reply(events=(chunk({"content": "ok"}, finish="stop"),
                             _usage(prompt_tokens=-5))),
               Reply(events=(chunk({"content": "fine"}, finish="stop"), _usage()))]

    async def main() -> str:
        async with FakeOpenAI(replies) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            host = Host(store=JsonlSessionStore(tmp_path))
            host.models.register("deepseek", model)
            agent = host.create_agent(provider="deepseek", model="m")
            for text in ("one", "two"):
                agent.followup(text)
                await agent.when_idle()
            await agent.dispose()
            return agent.id

    session_id = asyncio.run(main())
    events = list(JsonlSessionStore(tmp_path).load(session_id).events)
    ends = [e.data.reason for e in events if isinstance(e, TurnEndEvent)]
    assert isinstance(ends[0], TurnError)
    assert ends[0].error == LlmFailure(
        message=ends[0].error.message, code="MALFORMED_RESPONSE")
    assert "$.usage.prompt_tokens" in ends[0].error.message
    assert ends[1] == TurnCompleted()
    assert isinstance(check_balance(events), Success)
