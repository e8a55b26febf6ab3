"""A provider stream cut before ``data: [DONE]`` is a NETWORK model error, never an answer
(DSH: llm-deepseek sse.spec / translate.spec "ends without DONE", llm-retry
transport-recovery.spec "clean partial EOF"), through the model, an agent and a subagent."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAI, Reply, chunk, usage_chunk
from returns.result import Success

from turnfork.core import (
    AssistantMessageEvent,
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
    TokenUsage,
    ToolResultBlock,
    ToolResultEvent,
    TurnCompleted,
    TurnEndEvent,
    TurnError,
    UsageChunk,
    UserMessage,
    check_balance,
)
from turnfork.shell import ForkProvider, Host, JsonlSessionStore, SubagentRuntime, SubagentTool
from turnfork.shell.models.base import ModelRequest
from turnfork.shell.models.openai_chat import OpenAIChatModel

TRUNCATED = "SSE stream ended without [DONE]"
USAGE = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
REQUEST = ModelRequest(config=LlmCallConfig(provider="deepseek", model="m"), system=None,
                       tools=(), messages=(UserMessage(content=(TextBlock(text="hi"),),
                                                       source=MessageSource(kind="user"),
                                                       id="u1"),))


def _call_piece(call_id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    piece: dict[str, Any] = {"index": 0, "function": function}
    if call_id is not None:
        piece |= {"id": call_id, "type": "function"}
    return {"tool_calls": [piece]}


TEXT = (chunk({"role": "assistant", "content": "The ans"}), chunk({"content": "wer is"}))
TOOL = (chunk(_call_piece("call_a", "read_file", '{"pa')), chunk(_call_piece(None, None, 'th"')))
FINISHED = (*TEXT, chunk({"content": " 42."}, finish="stop"))

#: Where the body ends cleanly (chunked terminator, no socket error) before [DONE].
CUTS: dict[str, Reply] = {
    "before any event": Reply(end="eof"),
    "mid-text": Reply(events=TEXT, end="eof"),
    "mid-tool-call": Reply(events=TOOL, end="eof"),
    "after the finish reason": Reply(events=FINISHED, end="eof"),
    "after finish and usage": Reply(events=(*FINISHED, usage_chunk(USAGE)), end="eof"),
    "mid-event": Reply(events=TEXT, tail=(b'data: {"choices": [{"index": 0, "delta": {"con',),
                       end="eof"),
    "[DONE] without its blank line": Reply(events=FINISHED, tail=(b"data: [DONE]\n",),
                                           end="eof"),
}


def _stream(reply: Reply) -> list[StreamChunk]:
    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([reply]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            return [c async for c in model.stream(REQUEST)]

    return asyncio.run(main())


@pytest.mark.parametrize("cut", list(CUTS))
def test_stream_cut_before_done_is_a_network_error(cut: str) -> None:
    """Ensures that a body ending before [DONE] ends NETWORK with DSH's text: deltas already
    streamed stay, no block-end, no usage, no success finish."""
    chunks = _stream(CUTS[cut])
    assert chunks[-1] == FinishChunk(reason=FinishError(failure=LlmFailure(
        message=TRUNCATED, code="NETWORK")))
    assert not any(isinstance(c, BlockEnd | FinishChunk) for c in chunks[:-1])
    assert not any(isinstance(c, UsageChunk) for c in chunks)


def test_dropped_connection_after_the_finish_reason_is_a_transport_error() -> None:
    """Ensures that a socket dropped after finish_reason (no terminating chunk) is no answer
    either: TRANSPORT, a broken connection (a clean end of the body is NETWORK)."""
    chunks = _stream(Reply(events=FINISHED, end="drop"))
    last = chunks[-1]
    assert isinstance(last, FinishChunk) and isinstance(last.reason, FinishError)
    assert last.reason.failure.code == "TRANSPORT"
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["The ans", "wer is", " 42."]


def test_the_same_stream_with_done_is_an_answer() -> None:
    """Ensures that the events of the cut cases, followed by [DONE], make a complete answer."""
    chunks = _stream(Reply(events=(*FINISHED, usage_chunk(USAGE))))
    assert BlockEnd(index=0, block=TextBlock(text="The answer is 42.")) in chunks
    assert chunks[-2:] == [UsageChunk(usage=TokenUsage(input_tokens=5, output_tokens=2)),
                           FinishChunk(reason=FinishStop())]


def test_truncated_stream_ends_the_turn_with_an_error_and_the_next_turn_works() -> None:
    """Ensures that an agent's turn whose stream was cut ends error (no assistant/message), the
    log stays balanced, and the next turn completes."""

    async def main() -> list[Any]:
        async with FakeOpenAI([CUTS["after the finish reason"],
                               Reply(events=FINISHED)]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            host = Host()
            host.models.register("deepseek", model)
            agent = host.create_agent(provider="deepseek", model="m")
            agent.followup("first")
            await agent.when_idle()
            agent.followup("second")
            await agent.when_idle()
            events = list(agent.session.events)
            await agent.dispose()
        return events

    events = asyncio.run(main())
    ends = [e.data.reason for e in events if isinstance(e, TurnEndEvent)]
    assert ends == [TurnError(error=LlmFailure(message=TRUNCATED, code="NETWORK")),
                    TurnCompleted()]
    messages = [e for e in events if isinstance(e, AssistantMessageEvent)]
    assert [m.data.turn for m in messages] == [2]
    assert isinstance(check_balance(events), Success)


def test_truncated_child_stream_gives_the_parent_an_error_result(tmp_path: Path) -> None:
    """Ensures that a fork child whose stream is cut mid-answer ends in error and the parent's
    subagent tool result is an error naming it; the parent's turn completes."""
    call = Reply(events=(
        chunk(_call_piece("call_sub", "subagent", "")),
        chunk(_call_piece(None, None, '{"description": "look", "prompt": "Find it."}')),
        chunk({}, finish="tool_calls")))
    script = [Reply(events=(chunk({"content": "Noted."}, finish="stop"),)),  # parent, turn 1
              call,                                                           # parent, turn 2
              Reply(events=TEXT, end="eof"),                                  # the child, cut
              Reply(events=(chunk({"content": "The child failed."}, finish="stop"),))]

    async def main() -> tuple[list[Any], list[Any], list[dict[str, Any]]]:
        async with FakeOpenAI(script) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            host = Host(store=JsonlSessionStore(tmp_path))
            host.models.register("deepseek", model)
            SubagentRuntime(host).register_provider(ForkProvider())
            SubagentTool(provider="fork").install(host)
            parent = host.create_agent(provider="deepseek", model="m")
            parent.followup("Remember: the key is under the mat.")
            await parent.when_idle()
            parent.followup("Ask a fork where the key is.")
            await parent.when_idle()
            events = list(parent.session.events)
            await parent.dispose()
            (child_id,) = [i for i in host.sessions.list() if i != parent.id]
            child = host.sessions.load(child_id)
            assert child.header.parent_session == parent.id
            child_events = list(child.events)
        return events, child_events, [r.body for r in server.requests]

    events, child_events, bodies = asyncio.run(main())
    assert len(bodies) == 4  # parent, parent, child, parent: every scripted reply was used
    (result,) = [e for e in events if isinstance(e, ToolResultEvent)]
    block = result.data.message.content[0]
    assert isinstance(block, ToolResultBlock) and block.is_error
    text = "".join(b.text for b in block.content if isinstance(b, TextBlock))
    assert text == ("Error: subagent run failed\n"
                    f"Diagnostic: NETWORK: {TRUNCATED}\n"
                    "Partial output before the run ended:\nThe answer is")
    child_ends = [e.data.reason for e in child_events if isinstance(e, TurnEndEvent)]
    assert child_ends[-1] == TurnError(error=LlmFailure(message=TRUNCATED, code="NETWORK"))
    assert isinstance(check_balance(child_events), Success)
    ends = [e.data.reason for e in events if isinstance(e, TurnEndEvent)]
    assert ends == [TurnCompleted(), TurnCompleted()]
    assert isinstance(check_balance(events), Success)
