"""A lone surrogate from a provider (``"\\ud83d"`` alone in a delta) passes through the model,
is stored escaped, and the turn completes; what goes back to the provider is valid UTF-8."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fake_openai_server import FakeOpenAI, Recorded, Reply, chunk

from turnfork.core import (
    AssistantMessage,
    AssistantMessageEvent,
    BlockEnd,
    FinishChunk,
    FinishStop,
    LlmCallConfig,
    MessageSource,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
    TurnCompleted,
    TurnEndEvent,
    UserMessage,
)
from turnfork.shell import Host, JsonlSessionStore
from turnfork.shell.models.base import ModelRequest
from turnfork.shell.models.openai_chat import OpenAIChatModel

USER = MessageSource(kind="user")
MODEL = MessageSource(kind="model", provider="deepseek", model="m")
LONE = chunk({"content": "A\ud83dB"}, finish="stop")  # json.dumps escapes it: "A\\ud83dB"


def _stream(reply: Reply, request: ModelRequest) -> tuple[list[StreamChunk], Recorded]:
    async def main() -> tuple[list[StreamChunk], Recorded]:
        async with FakeOpenAI([reply]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            chunks = [c async for c in model.stream(request)]
        return chunks, server.requests[0]

    return asyncio.run(main())


def _request(*messages: Any) -> ModelRequest:
    return ModelRequest(config=LlmCallConfig(provider="deepseek", model="m"), system=None,
                        tools=(), messages=messages or (
                            UserMessage(content=(TextBlock(text="hi"),), source=USER, id="u"),))


def test_lone_surrogate_passes_through_the_model() -> None:
    """Ensures that a lone surrogate escape in a delta reaches the delta and the block as is."""
    chunks, _ = _stream(Reply(events=(LONE,)), _request())
    assert TextDelta(index=0, text="A\ud83dB") in chunks
    assert BlockEnd(index=0, block=TextBlock(text="A\ud83dB")) in chunks
    assert chunks[-1] == FinishChunk(reason=FinishStop())


def test_history_with_surrogates_is_sent_as_valid_utf8() -> None:
    """Ensures that lone surrogates in the history go out as U+FFFD and a pair split across
    deltas goes out as its character, in text, tool arguments and tool results alike."""
    history = (
        UserMessage(content=(TextBlock(text="u\udc00"),), source=USER, id="u1"),
        AssistantMessage(content=(TextBlock(text="\ud83d\ude00 and \ud83d"),
                                  ToolCallBlock(id="c1", name="t", arguments='{"x":"\udfff"}')),
                         source=MODEL, id="a1"),
        ToolResultMessage(source=MessageSource(kind="tool", call_id="c1"), id="t1", content=(
            ToolResultBlock(tool_call_id="c1", content=(TextBlock(text="r\ud800"),)),)),
    )
    _, sent = _stream(Reply(events=(chunk({"content": "ok"}, finish="stop"),)),
                      _request(*history))
    sent.raw.decode("utf-8")  # strict: the body is valid UTF-8
    messages = sent.body["messages"]
    assert messages[0]["content"] == "u\ufffd"
    assert messages[1]["content"] == "\U0001f600 and \ufffd"
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == '{"x":"\ufffd"}'
    assert messages[2]["content"] == "r\ufffd"


def test_lone_surrogate_is_stored_escaped_and_the_turn_completes(tmp_path: Path) -> None:
    """Ensures that a provider's lone surrogate ends in a completed turn, is stored as the
    escape ``\\ud83d`` on disk, reloads unchanged, and the next turn works."""
    replies = [Reply(events=(LONE,)), Reply(events=(chunk({"content": "ok"}, finish="stop"),))]

    async def main() -> tuple[str, list[Recorded]]:
        async with FakeOpenAI(replies) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            host = Host(store=JsonlSessionStore(tmp_path))
            host.models.register("deepseek", model)
            agent = host.create_agent(provider="deepseek", model="m")
            for text in ("one", "two"):
                agent.followup(text)
                await agent.when_idle()
            await agent.dispose()
        return agent.id, server.requests

    session_id, requests = asyncio.run(main())
    events = list(JsonlSessionStore(tmp_path).load(session_id).events)
    assert [e.data.reason for e in events if isinstance(e, TurnEndEvent)] == [
        TurnCompleted(), TurnCompleted()]
    stored = b"".join(p.read_bytes() for p in tmp_path.rglob("*.jsonl"))
    assert b"a\\ud83db" in stored.lower()
    texts = [b.text for e in events if isinstance(e, AssistantMessageEvent)
             for b in e.data.message.content if isinstance(b, TextBlock)]
    assert texts[0] == "A\ud83dB"
    assert requests[1].body["messages"][1] == {"role": "assistant", "content": "A\ufffdB"}
