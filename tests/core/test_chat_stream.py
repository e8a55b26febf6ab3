"""core.machine.chat_stream: OpenAI Chat events as the assembler's inputs, without a server
(tests/shell/test_openai_*.py drive the same rules through the model and local servers)."""

from __future__ import annotations

import json

import pytest
from msgspec import UNSET

from turnfork.core import (
    BlockEnd,
    BlockStart,
    FinishChunk,
    FinishError,
    FinishToolCalls,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    chat_body_failure,
    chat_failure_code,
    chat_status_failure,
    chat_stream,
    chat_stream_end,
    chat_stream_event,
    retry_after_ms,
)

PREFIX = "0123456789abcdef0123"


def _play(*deltas: dict[str, object], usage: dict[str, object] | None = None,
          finish: str | None = None) -> list[object]:
    state = chat_stream(PREFIX)
    out: list[object] = []
    events = [{"choices": [{"index": 0, "delta": d}]} for d in deltas]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                   "usage": usage})
    for event in events:
        state, chunks = chat_stream_event(state, json.dumps(event)).unwrap()
        out.extend(chunks)
    return [*out, *chat_stream_end(state)]


def test_blocks_are_numbered_first_seen_and_closed_at_done() -> None:
    """Reasoning, text and each call get the next index; [DONE] closes them in that order."""
    out = _play({"reasoning_content": "hm"}, {"content": "a"}, {"refusal": "b"},
                {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{"}}]},
                {"tool_calls": [{"index": 0, "function": {"name": "g", "arguments": "}"}}]},
                {"tool_calls": [{"index": 0, "id": "call_x", "function": {"name": "h"}}]})
    starts = [(c.index, c.block_type) for c in out if isinstance(c, BlockStart)]
    assert starts == [(0, "reasoning"), (1, "text"), (2, "tool-call"), (3, "tool-call")]
    ends = [c.block for c in out if isinstance(c, BlockEnd)]
    generated = f"call_{PREFIX}0002"
    assert ends == [ReasoningBlock(text="hm"), TextBlock(text="ab"),
                    ToolCallBlock(id=generated, name="f", arguments="{}"),
                    ToolCallBlock(id="call_x", name="h", arguments="")]
    named = [c.name for c in out if isinstance(c, ToolCallDelta)]
    assert named == ["f", UNSET, "h"]
    assert out[-1] == FinishChunk(reason=FinishToolCalls())


def test_usage_is_disjoint_and_an_empty_answer_is_an_error() -> None:
    out = _play(usage={"prompt_tokens": 10, "completion_tokens": 2,
                       "prompt_cache_hit_tokens": 4}, finish="stop")
    usage = next(c.usage for c in out if isinstance(c, UsageChunk))
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (6, 4, 2)
    finish = out[-1]
    assert isinstance(finish, FinishChunk) and isinstance(finish.reason, FinishError)
    assert finish.reason.failure.code == "EMPTY_RESPONSE"


@pytest.mark.parametrize(("payload", "code"), [
    ("NaN", "MALFORMED_RESPONSE"), ('{"choices": "x"}', "MALFORMED_RESPONSE"),
    ('{"usage": {"prompt_tokens": -1}}', "MALFORMED_RESPONSE"),
    ('{"error": {"message": "maximum context length is 8k"}}', "CONTEXT_WINDOW_EXCEEDED"),
])
def test_an_event_that_is_no_chunk_is_its_failure(payload: str, code: str) -> None:
    failed = chat_stream_event(chat_stream(PREFIX), payload, "req-1").failure()
    assert (failed.code, failed.request_id) == (code, "req-1")


def test_status_codes_and_messages() -> None:
    assert [chat_failure_code(s, None, "x") for s in (401, 402, 404, 429, 503, 307, 418)] == [
        "AUTH", "QUOTA", "MODEL_NOT_FOUND", "RATE_LIMIT", "SERVER", "HTTP_307", "UNKNOWN"]
    assert chat_failure_code(429, "insufficient_quota", "x") == "QUOTA"
    missing = chat_status_failure(404, None, "Not Found", method="POST",
                                  url="http://h/chat/completions", headers={},
                                  base_url="http://h", now=0.0)
    assert missing.message.endswith("try base URL http://h/v1)")
    limited = chat_status_failure(429, None, "slow", method="POST", url="u",
                                  headers={"retry-after": "2"}, base_url="http://h/v1", now=0.0)
    assert (limited.code, limited.status, limited.provider_retry_after_ms) == (
        "RATE_LIMIT", 429, 2000.0)
    assert retry_after_ms({"retry-after": "Thu, 01 Jan 1970 00:00:10 GMT"}, 4.0) == 6000.0
    assert retry_after_ms({"retry-after-ms": "0", "retry-after": "-1"}, 0.0) is None
    assert chat_body_failure(b'{"object": "chat.completion"}', "u").code == "MALFORMED_RESPONSE"
