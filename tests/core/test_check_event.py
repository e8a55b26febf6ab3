"""Wire validation before persisting: `check_event` / `check_header` accept exactly what the
decoder reads back (issue 14, item 2)."""

from __future__ import annotations

from typing import Any

import pytest
from _budget import examples
from hypothesis import given, settings
from msgspec import Raw
from msgspec.structs import replace
from returns.result import Failure, Success

from turnfork.core import (
    MAX_SAFE_INTEGER,
    AssistantChunkData,
    AssistantChunkEvent,
    AssistantMessage,
    AssistantMessageData,
    AssistantMessageEvent,
    EpochHeader,
    Event,
    LlmCallConfig,
    LlmFailure,
    MessageSource,
    OpaqueEvent,
    RequestHeaderData,
    RequestHeaderEvent,
    SessionHeader,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolResultBlock,
    ToolResultData,
    ToolResultEvent,
    ToolResultMessage,
    TurnEndData,
    TurnEndEvent,
    TurnError,
    UsageChunk,
    decode_log,
    encode_log,
)
from turnfork.core.codec import MAX_JSON_DEPTH, WireError, check_event, check_header
from turnfork.core.strategies import session_logs


def _problem(event: Event) -> WireError:
    result = check_event(event)
    assert isinstance(result, Failure), result
    error: WireError = result.failure()
    return error


def _usage(**counts: Any) -> AssistantChunkEvent:
    usage = TokenUsage(**{"input_tokens": 1, "output_tokens": 1, **counts})
    return AssistantChunkEvent(seq=4, time=1, data=AssistantChunkData(
        turn=1, step=1, chunk=UsageChunk(usage=usage)))


def _header(**config: Any) -> RequestHeaderEvent:
    header = EpochHeader(config=LlmCallConfig(**{"provider": "p", "model": "m", **config}))
    return RequestHeaderEvent(seq=2, time=1, data=RequestHeaderData(reason="initial",
                                                                    header=header))


def _result(meta: bytes) -> ToolResultEvent:
    message = ToolResultMessage(source=MessageSource(kind="tool", call_id="c"), id="r",
                                content=(ToolResultBlock(tool_call_id="c", content=()),))
    return ToolResultEvent(seq=5, time=1, source_event_seqs=(4,), surface_op="append",
                           data=ToolResultData(turn=1, step=1, meta=Raw(meta), message=message))


@pytest.mark.parametrize(("counts", "path"), [
    ({"input_tokens": -1}, "data.chunk.usage.inputTokens"),
    ({"output_tokens": MAX_SAFE_INTEGER + 1}, "data.chunk.usage.outputTokens"),
    ({"cache_read_tokens": 2**64}, "data.chunk.usage.cacheReadTokens"),
    ({"reasoning_tokens": -(2**70)}, "data.chunk.usage.reasoningTokens"),
])
def test_token_counts_must_be_non_negative_safe_integers(counts: dict[str, int], path: str) -> None:
    """A provider's usage glitch is refused naming the field, before it can brick the log."""
    error = _problem(_usage(**counts))
    assert (error.seq, error.event_type) == (4, "assistant/chunk")
    assert error.problem.endswith(f"- at `{path}`")
    assert str(error).startswith("seq 4, assistant/chunk: ")


def test_largest_safe_token_count_is_accepted() -> None:
    """2^53-1 tokens is a valid count."""
    event = _usage(input_tokens=MAX_SAFE_INTEGER)
    assert check_event(event) == Success(event)


@pytest.mark.parametrize(("config", "path"), [
    ({"provider": ""}, "provider"), ({"model": ""}, "model"), ({"reasoning_effort": ""},
                                                                "reasoningEffort"),
    ({"max_tokens": -5}, "maxTokens"), ({"max_tokens": 2**60}, "maxTokens"),
    ({"temperature": float("nan")}, "temperature"), ({"temperature": float("inf")},
                                                      "temperature"),
    ({"temperature": -0.0}, None),
])
def test_request_header_config_must_be_writable(config: dict[str, Any], path: str | None) -> None:
    """Empty provider/model names, bad max_tokens, non-finite or -0 temperatures are refused."""
    error = _problem(_header(**config))
    assert (error.seq, error.event_type) == (2, "request/header")
    if path is not None:
        assert f"`data.header.config.{path}`" in error.problem
    else:
        assert "-0" in error.problem


@pytest.mark.parametrize(("meta", "problem"), [
    (b'{"n":9007199254740993}', "integer 9007199254740993 is beyond the safe-integer range"),
    (b'{"x":1e999}', "number is out of the double range (not finite)"),
    (b'{"x":-0}', "-0 is not lossless JSON (DSH refuses negative zero)"),
    (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), "JSON nested deeper than"),
    (b'{"a":', "malformed"),
])
def test_raw_payloads_must_be_lossless_json(meta: bytes, problem: str) -> None:
    """A tool's meta (kept as exact JSON text) is held to the decoder's rules."""
    error = _problem(_result(meta))
    assert (error.seq, error.event_type) == (5, "tool/result")
    assert problem in error.problem


def test_a_lone_surrogate_is_written_escaped_and_accepted() -> None:
    """Half of a surrogate pair in provider text can be written: it reads back the same."""
    event = AssistantChunkEvent(seq=7, time=1, data=AssistantChunkData(
        turn=1, step=1, chunk=TextDelta(index=0, text="split \ud83d")))
    assert check_event(event) == Success(event)


def test_opaque_events_need_known_types_or_ignorable() -> None:
    """An opaque event of a type DSH does not know must be marked ignorable to be written."""
    unknown = OpaqueEvent(type="acme/thing", seq=1, time=1, data=Raw(b"{}"))
    assert "not marked" in _problem(unknown).problem
    marked = replace(unknown, ignorable=True)
    assert check_event(marked) == Success(marked)


def test_message_ids_and_failures_follow_the_decoder() -> None:
    """An empty message id, a status beyond the safe range: refused as the decoder refuses them."""
    message = AssistantMessageEvent(seq=3, time=1, surface_op="append", data=AssistantMessageData(
        turn=1, step=1, message=AssistantMessage(content=(TextBlock(text="x"),), id="",
                                                 source=MessageSource(kind="model", provider="p",
                                                                      model="m"))))
    assert "`data.message.id`" in _problem(message).problem
    failed = TurnEndEvent(seq=9, time=1, data=TurnEndData(turn=1, reason=TurnError(
        error=LlmFailure(message="m", code="NETWORK", status=2**53))))
    assert "`data.reason.error.status`" in _problem(failed).problem


def test_a_value_of_the_wrong_type_is_refused_not_raised() -> None:
    """A field holding something JSON cannot carry gives a WireError, never an exception."""
    broken = AssistantChunkEvent(seq=1, time=1, data=AssistantChunkData(
        turn=1, step=1, chunk=TextDelta(index=0, text=object())))  # type: ignore[arg-type]
    error = _problem(broken)
    assert error.problem.startswith("cannot be written: ")


@settings(max_examples=examples(150), deadline=None)
@given(session_logs())
def test_every_generated_event_is_accepted_and_reads_back_equal(log: tuple[Event, ...]) -> None:
    """What the decoder reads from a log, check_event accepts, and returns as it reads back."""
    events = decode_log(encode_log(log)).unwrap()
    for event in events:
        assert check_event(event) == Success(event)


def test_check_header_follows_the_header_decoder() -> None:
    """A header with an empty id is writable (DSH allows it on the line), a negative
    createdAt or an unsafe seed length is not."""
    header = SessionHeader(id="s", created_at=1, delegation_depth=1, origin="subagent")
    assert check_header(header) == Success(header)
    error = check_header(replace(header, created_at=-1)).failure()
    assert isinstance(error, WireError) and "`createdAt`" in error.problem
    assert str(error).startswith("session header: ")
    assert "`seedLength`" in check_header(replace(header, seed_length=2**53)).failure().problem
