"""ScriptedModel: deterministic replies streamed as DSH chunks, one script entry per call."""

from __future__ import annotations

import asyncio
import json

from _shell_helpers import run

from turnfork.core import (
    BlockEnd,
    BlockStart,
    FinishChunk,
    FinishError,
    FinishMaxTokens,
    FinishStop,
    FinishToolCalls,
    LlmCallConfig,
    MessageSource,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    ToolResultBlock,
    ToolResultMessage,
    UsageChunk,
)
from turnfork.shell import ModelRequest, Reply, ScriptedModel
from turnfork.shell.models.scripted import SCRIPT_EXHAUSTED


def _request(*messages: ToolResultMessage) -> ModelRequest:
    return ModelRequest(config=LlmCallConfig(provider="p", model="m"), system=None, tools=(),
                        messages=messages)


async def _collect(model: ScriptedModel, request: ModelRequest | None = None,
                   ) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(request or _request())]


def test_text_reply_streams_blocks_usage_and_finish() -> None:
    """Reasoning then text, each start/deltas/end, then usage, then finish stop."""
    model = ScriptedModel([Reply.text("Hello there", reasoning="hmm", usage=(5, 7))])
    chunks = run(lambda: _collect(model))
    assert isinstance(chunks[0], BlockStart) and chunks[0].block_type == "reasoning"
    text = "".join(c.text for c in chunks if isinstance(c, TextDelta))
    assert text == "Hello there"
    assert len([c for c in chunks if isinstance(c, TextDelta)]) > 1  # small pieces
    assert "".join(c.text for c in chunks if isinstance(c, ReasoningDelta)) == "hmm"
    ends = [c.block for c in chunks if isinstance(c, BlockEnd)]
    assert ends[1] == TextBlock(text="Hello there")
    assert isinstance(chunks[-2], UsageChunk) and chunks[-2].usage.output_tokens == 7
    assert isinstance(chunks[-1], FinishChunk) and chunks[-1].reason == FinishStop()


def test_parallel_tool_calls_get_deterministic_ids() -> None:
    """Tool calls stream as tool-call blocks with call_<n>_<i> ids and finish tool-calls."""
    model = ScriptedModel([Reply.text("x"), Reply.tool_calls(
        [("a", {"k": 1}), ("b", "not json"), ("c", {}, "given-id")])])
    run(lambda: _collect(model))
    chunks = run(lambda: _collect(model))
    calls = [c.block for c in chunks if isinstance(c, BlockEnd)]
    assert calls == [ToolCallBlock(id="call_2_0", name="a", arguments='{"k":1}'),
                     ToolCallBlock(id="call_2_1", name="b", arguments="not json"),
                     ToolCallBlock(id="given-id", name="c", arguments="{}")]
    deltas = [c for c in chunks if isinstance(c, ToolCallDelta)]
    assert {d.id for d in deltas} == {"call_2_0", "call_2_1", "given-id"}
    assert isinstance(chunks[-1], FinishChunk) and chunks[-1].reason == FinishToolCalls()


def test_max_tokens_and_error_finishes() -> None:
    """max_tokens() finishes max-tokens; error() finishes error with its code."""
    model = ScriptedModel([Reply.max_tokens("cut", tool_calls=[("a", {})]),
                           Reply.error("AUTH", "bad key")])
    first = run(lambda: _collect(model))
    second = run(lambda: _collect(model))
    assert isinstance(first[-1], FinishChunk) and first[-1].reason == FinishMaxTokens()
    assert len(second) == 1 and isinstance(second[0], FinishChunk)
    reason = second[0].reason
    assert isinstance(reason, FinishError)
    assert (reason.failure.code, reason.failure.message) == ("AUTH", "bad key")


def test_running_out_of_script_is_an_error_finish() -> None:
    """Call 2 of a one-entry script finishes SCRIPT_EXHAUSTED, naming the call."""
    model = ScriptedModel([Reply.text("only")])
    run(lambda: _collect(model))
    chunks = run(lambda: _collect(model))
    assert len(chunks) == 1 and isinstance(chunks[0], FinishChunk)
    reason = chunks[0].reason
    assert isinstance(reason, FinishError) and reason.failure.code == SCRIPT_EXHAUSTED
    assert "call 2" in reason.failure.message and "1 entries" in reason.failure.message
    assert model.calls == 2


def test_callable_entries_see_the_request() -> None:
    """A callable entry (sync or async) answers from the request it receives."""

    def echo_last(request: ModelRequest) -> Reply:
        block = request.messages[-1].content[0]
        assert isinstance(block, ToolResultBlock)
        inner = block.content[0]
        assert isinstance(inner, TextBlock)
        return Reply.text(f"saw {inner.text}")

    async def later(request: ModelRequest) -> Reply:
        await asyncio.sleep(0)
        return Reply.text(json.dumps(len(request.messages)))

    result = ToolResultMessage(
        source=MessageSource(kind="tool", call_id="c"), id="r",
        content=(ToolResultBlock(tool_call_id="c", content=(TextBlock(text="42"),),
                                 is_error=False),))
    model = ScriptedModel([echo_last, later])
    first = run(lambda: _collect(model, _request(result)))
    second = run(lambda: _collect(model, _request(result, result)))
    assert [c.block for c in first if isinstance(c, BlockEnd)] == [TextBlock(text="saw 42")]
    assert [c.block for c in second if isinstance(c, BlockEnd)] == [TextBlock(text="2")]
    assert model.requests[1].messages == (result, result)


def test_hang_streams_partial_text_then_waits_for_cancellation() -> None:
    """hang() leaves its text block open and never finishes until cancelled."""

    async def main() -> list[StreamChunk]:
        model = ScriptedModel([Reply.hang("partial")])
        seen: list[StreamChunk] = []

        async def consume() -> None:
            async for chunk in model.stream(_request()):
                seen.append(chunk)

        task = asyncio.create_task(consume())
        for _ in range(50):
            await asyncio.sleep(0)
        assert not task.done()
        task.cancel()
        await asyncio.wait([task])
        assert task.cancelled()
        return seen

    seen = run(main)
    assert "".join(c.text for c in seen if isinstance(c, TextDelta)) == "partial"
    assert not any(isinstance(c, BlockEnd | FinishChunk) for c in seen)


def test_requests_are_recorded_by_reference_or_not_at_all() -> None:
    """requests holds the very requests sent; record_requests=False keeps only the last one."""
    sent = [_request(), _request()]
    recording = ScriptedModel([Reply.text("a"), Reply.text("b")])
    lean = ScriptedModel([Reply.text("a"), Reply.text("b")], record_requests=False)
    for model in (recording, lean):
        assert model.last_request is None
        for request in sent:
            run(lambda model=model, request=request: _collect(model, request))
        assert model.calls == 2 and model.last_request is sent[-1]
    assert all(a is b for a, b in zip(recording.requests, sent, strict=True))
    assert lean.requests == []
