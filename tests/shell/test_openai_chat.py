"""OpenAIChatModel: the real openai SDK over real HTTP against a scripted loopback server."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import msgspec
import pytest
from fake_openai_server import (
    FakeOpenAI,
    Recorded,
    Reply,
    chunk,
    resolve_to_loopback,
    usage_chunk,
)
from msgspec import UNSET

from turnfork.core import (
    AssistantMessage,
    BlockEnd,
    BlockStart,
    FinishChunk,
    FinishError,
    FinishMaxTokens,
    FinishStop,
    FinishToolCalls,
    LlmCallConfig,
    LlmFailure,
    Message,
    MessageSource,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolResultBlock,
    ToolResultMessage,
    ToolSchema,
    UsageChunk,
    UserMessage,
)
from turnfork.shell.models.base import Model, ModelRequest
from turnfork.shell.models.openai_chat import (
    MissingCredentialError,
    OpenAIChatModel,
    has_credentials,
)

T = TypeVar("T")
USER = MessageSource(kind="user")
MODEL_SOURCE = MessageSource(kind="model", provider="deepseek", model="deepseek-chat")


def _request(*messages: Message, system: str | None = None,
             tools: tuple[ToolSchema, ...] = (), **config: Any) -> ModelRequest:
    return ModelRequest(
        config=LlmCallConfig(provider="deepseek", model=config.pop("model", "test-model"),
                             **config),
        system=system, tools=tools,
        messages=messages or (UserMessage(content=(TextBlock(text="hi"),), source=USER,
                                          id="u1"),))


def _serve(replies: list[Reply],
           body: Callable[[FakeOpenAI, OpenAIChatModel], Awaitable[T]],
           **model_options: Any) -> T:
    async def main() -> T:
        async with FakeOpenAI(replies) as server:
            options: dict[str, Any] = {"base_url": server.base_url, "api_key": "test-key",
                                       "max_retries": 0, "timeout": 5.0, **model_options}
            async with OpenAIChatModel("constructor-model", **options) as model:
                return await body(server, model)

    return asyncio.run(main())


def _stream(reply: Reply, request: ModelRequest | None = None,
            **model_options: Any) -> tuple[list[StreamChunk], list[Recorded]]:
    async def body(server: FakeOpenAI, model: OpenAIChatModel) -> list[StreamChunk]:
        return [c async for c in model.stream(request or _request())]

    holder: list[Recorded] = []

    async def recording(server: FakeOpenAI, model: OpenAIChatModel) -> list[StreamChunk]:
        try:
            return await body(server, model)
        finally:
            holder.extend(server.requests)

    chunks = _serve([reply], recording, **model_options)
    return chunks, holder


def _failure(chunks: list[StreamChunk]) -> LlmFailure:
    last = chunks[-1]
    assert isinstance(last, FinishChunk)
    assert isinstance(last.reason, FinishError)
    return last.reason.failure


# --------------------------------------------------------------------------- streaming


def test_text_answer_streams_one_text_block() -> None:
    """Ensures that content deltas become one text block, then usage, then a stop finish."""
    chunks, _ = _stream(Reply(events=(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hel"}),
        chunk({"content": "lo"}),
        chunk({}, finish="stop"),
        usage_chunk({"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}),
    )))
    assert chunks == [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="Hel"),
        TextDelta(index=0, text="lo"),
        BlockEnd(index=0, block=TextBlock(text="Hello")),
        UsageChunk(usage=TokenUsage(input_tokens=9, output_tokens=2)),
        FinishChunk(reason=FinishStop()),
    ]


def test_answer_ends_at_done_even_if_the_body_stays_open() -> None:
    """Ensures that the answer is complete at [DONE] though the server holds the body open
    (the 30 s read timeout never comes into it), and the connection is then closed."""
    async def body(server: FakeOpenAI, model: OpenAIChatModel) -> list[StreamChunk]:
        async with asyncio.timeout(5.0):
            chunks = [c async for c in model.stream(_request())]
            await server.disconnected.wait()
        return chunks

    chunks = _serve([Reply(events=(chunk({"content": "ok"}, finish="stop"),), end="linger")],
                    body, timeout=30.0)
    assert chunks[-2:] == [BlockEnd(index=0, block=TextBlock(text="ok")),
                           FinishChunk(reason=FinishStop())]


def test_reasoning_then_text_get_their_own_blocks() -> None:
    """Ensures that DeepSeek's reasoning_content streams as a reasoning block before the text."""
    chunks, _ = _stream(Reply(events=(
        chunk({"role": "assistant", "reasoning_content": "Think"}),
        chunk({"reasoning_content": "ing."}),
        chunk({"content": "Answer."}, finish="stop"),
    )))
    assert chunks == [
        BlockStart(index=0, block_type="reasoning"),
        ReasoningDelta(index=0, text="Think"),
        ReasoningDelta(index=0, text="ing."),
        BlockStart(index=1, block_type="text"),
        TextDelta(index=1, text="Answer."),
        BlockEnd(index=0, block=ReasoningBlock(text="Thinking.")),
        BlockEnd(index=1, block=TextBlock(text="Answer.")),
        FinishChunk(reason=FinishStop()),
    ]


def _call_piece(index: int, *, call_id: str | None = None, name: str | None = None,
                arguments: str = "") -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    piece: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        piece |= {"id": call_id, "type": "function"}
    return {"tool_calls": [piece]}


def test_tool_call_streamed_in_pieces() -> None:
    """Ensures that a tool call's argument pieces stream as deltas with the name only once."""
    chunks, _ = _stream(Reply(events=(
        chunk(_call_piece(0, call_id="call_a", name="read_file")),
        chunk(_call_piece(0, arguments='{"pa')),
        chunk(_call_piece(0, arguments='th": "x.py"}')),
        chunk({}, finish="tool_calls"),
    )))
    assert chunks == [
        BlockStart(index=0, block_type="tool-call"),
        ToolCallDelta(index=0, id="call_a", name="read_file", arguments_delta=""),
        ToolCallDelta(index=0, id="call_a", arguments_delta='{"pa'),
        ToolCallDelta(index=0, id="call_a", arguments_delta='th": "x.py"}'),
        BlockEnd(index=0, block=ToolCallBlock(id="call_a", name="read_file",
                                              arguments='{"path": "x.py"}')),
        FinishChunk(reason=FinishToolCalls()),
    ]


def test_parallel_tool_calls_after_text() -> None:
    """Ensures that interleaved parallel calls get their own blocks after the text block."""
    chunks, _ = _stream(Reply(events=(
        chunk({"content": "Reading both."}),
        chunk(_call_piece(0, call_id="call_a", name="read", arguments='{"p":')),
        chunk(_call_piece(1, call_id="call_b", name="grep", arguments='{"q":')),
        chunk(_call_piece(0, arguments='"a"}')),
        chunk(_call_piece(1, arguments='"b"}')),
        chunk({}, finish="tool_calls"),
    )))
    assert chunks == [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="Reading both."),
        BlockStart(index=1, block_type="tool-call"),
        ToolCallDelta(index=1, id="call_a", name="read", arguments_delta='{"p":'),
        BlockStart(index=2, block_type="tool-call"),
        ToolCallDelta(index=2, id="call_b", name="grep", arguments_delta='{"q":'),
        ToolCallDelta(index=1, id="call_a", arguments_delta='"a"}'),
        ToolCallDelta(index=2, id="call_b", arguments_delta='"b"}'),
        BlockEnd(index=0, block=TextBlock(text="Reading both.")),
        BlockEnd(index=1, block=ToolCallBlock(id="call_a", name="read", arguments='{"p":"a"}')),
        BlockEnd(index=2, block=ToolCallBlock(id="call_b", name="grep", arguments='{"q":"b"}')),
        FinishChunk(reason=FinishToolCalls()),
    ]


@pytest.mark.parametrize(("usage", "expected"), [
    ({"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
      "prompt_tokens_details": {"cached_tokens": 60},
      "completion_tokens_details": {"reasoning_tokens": 5}},
     TokenUsage(input_tokens=40, output_tokens=20, cache_read_tokens=60, reasoning_tokens=5)),
    ({"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107,
      "prompt_cache_hit_tokens": 30, "prompt_cache_miss_tokens": 70},
     TokenUsage(input_tokens=70, output_tokens=7, cache_read_tokens=30)),
])
def test_usage_excludes_cached_input(usage: dict[str, Any], expected: TokenUsage) -> None:
    """Ensures that OpenAI and DeepSeek cache counts map to disjoint DSH usage counts."""
    chunks, _ = _stream(Reply(events=(chunk({"content": "ok"}, finish="stop"),
                                      usage_chunk(usage))))
    assert chunks[-2:] == [UsageChunk(usage=expected), FinishChunk(reason=FinishStop())]


def test_calls_reusing_index_zero_are_told_apart_by_id() -> None:
    """Ensures that parallel calls a server streams all under index 0 get separate blocks."""
    chunks, _ = _stream(Reply(events=(
        chunk(_call_piece(0, call_id="call_a", name="read", arguments="{}")),
        chunk(_call_piece(0, call_id="call_b", name="grep", arguments="{}")),
        chunk({}, finish="tool_calls"),
    )))
    assert [c for c in chunks if isinstance(c, BlockEnd)] == [
        BlockEnd(index=0, block=ToolCallBlock(id="call_a", name="read", arguments="{}")),
        BlockEnd(index=1, block=ToolCallBlock(id="call_b", name="grep", arguments="{}")),
    ]


@pytest.mark.parametrize(("events", "reason"), [
    ((chunk({"content": "no finish reason"}),), FinishStop()),
    ((chunk(_call_piece(0, call_id="c", name="n", arguments="{}")),), FinishToolCalls()),
])
def test_missing_finish_reason_is_judged_by_output(events: tuple[dict[str, Any], ...],
                                                   reason: FinishStop | FinishToolCalls) -> None:
    """Ensures that a clean stream without finish_reason finishes by what it produced."""
    chunks, _ = _stream(Reply(events=events))
    assert chunks[-1] == FinishChunk(reason=reason)


def test_finish_length_is_max_tokens() -> None:
    """Ensures that finish_reason length becomes a max-tokens finish after the block-ends."""
    chunks, _ = _stream(Reply(events=(chunk({"content": "trunc"}, finish="length"),)))
    assert chunks[-2:] == [BlockEnd(index=0, block=TextBlock(text="trunc")),
                           FinishChunk(reason=FinishMaxTokens())]


def test_content_filter_is_an_error_finish() -> None:
    """Ensures that finish_reason content_filter becomes an error finish CONTENT_FILTER."""
    chunks, _ = _stream(Reply(events=(chunk({"content": "x"}, finish="content_filter"),)))
    assert _failure(chunks).code == "CONTENT_FILTER"


def test_empty_stream_is_empty_response() -> None:
    """Ensures that a stream with no output and no finish reason ends EMPTY_RESPONSE."""
    chunks, _ = _stream(Reply(events=()))
    assert len(chunks) == 1
    assert _failure(chunks).code == "EMPTY_RESPONSE"


# --------------------------------------------------------------------------- request body


def test_request_body_maps_history_tools_and_config() -> None:
    """Ensures that system, user, assistant tool calls, tool results and config reach the wire."""
    schema = ToolSchema(name="read_file", description="Read a file.",
                        parameters=msgspec.Raw(b'{"type":"object","properties":{"path":'
                                               b'{"type":"string"}},"required":["path"]}'))
    history: tuple[Message, ...] = (
        UserMessage(content=(TextBlock(text="Read a.py"), TextBlock(text="then b.py")),
                    source=USER, id="u1"),
        AssistantMessage(content=(ReasoningBlock(text="hidden"), TextBlock(text="Reading."),
                                  ToolCallBlock(id="c1", name="read_file",
                                                arguments='{"path":"a.py"}'),
                                  ToolCallBlock(id="c2", name="read_file",
                                                arguments='{"path":"b.py"}')),
                         source=MODEL_SOURCE, id="a1"),
        ToolResultMessage(source=MessageSource(kind="tool", call_id="c1"), id="t1", content=(
            ToolResultBlock(tool_call_id="c1", content=(TextBlock(text="A"),), is_error=False),)),
        ToolResultMessage(source=MessageSource(kind="tool", call_id="c2"), id="t2", content=(
            ToolResultBlock(tool_call_id="c2", content=(TextBlock(text="Error: gone"),),
                            is_error=True),)),
        AssistantMessage(content=(ToolCallBlock(id="c3", name="read_file", arguments="{}"),),
                         source=MODEL_SOURCE, id="a2"),
        ToolResultMessage(source=MessageSource(kind="tool", call_id="c3"), id="t3", content=(
            ToolResultBlock(tool_call_id="c3", content=(TextBlock(text="C"),)),)),
        AssistantMessage(content=(TextBlock(text="Done."),), source=MODEL_SOURCE, id="a3"),
        UserMessage(content=(TextBlock(text="Thanks"),), source=USER, id="u2"),
    )
    request = _request(*history, system="You are terse.", tools=(schema,),
                       model="deepseek-reasoner", max_tokens=512, temperature=0.5,
                       stop=("END",))
    _, recorded = _stream(Reply(events=(chunk({"content": "ok"}, finish="stop"),)), request)
    assert len(recorded) == 1
    sent = recorded[0]
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == "Bearer test-key"
    assert sent.body["model"] == "deepseek-reasoner"
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["max_tokens"] == 512
    assert sent.body["temperature"] == 0.5
    assert sent.body["stop"] == ["END"]
    assert sent.body["tools"] == [{"type": "function", "function": {
        "name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                       "required": ["path"]}}}]

    def call(call_id: str, arguments: str) -> dict[str, Any]:
        return {"id": call_id, "type": "function",
                "function": {"name": "read_file", "arguments": arguments}}

    assert sent.body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Read a.py\n\nthen b.py"},
        {"role": "assistant", "content": "Reading.",
         "tool_calls": [call("c1", '{"path":"a.py"}'), call("c2", '{"path":"b.py"}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "A"},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: gone"},
        {"role": "assistant", "content": None, "tool_calls": [call("c3", "{}")]},
        {"role": "tool", "tool_call_id": "c3", "content": "C"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Thanks"},
    ]


def test_unset_config_and_no_tools_are_not_sent() -> None:
    """Ensures that unset config fields, an absent system prompt and no tools stay off the wire."""
    _, recorded = _stream(Reply(events=(chunk({"content": "ok"}, finish="stop"),)))
    body = recorded[0].body
    assert not {"max_tokens", "temperature", "stop", "tools"} & body.keys()
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["model"] == "test-model"


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(("status", "body", "code"), [
    (401, {"error": {"message": "Authentication Fails", "type": "authentication_error"}},
     "AUTH"),
    (402, {"error": {"message": "Insufficient Balance"}}, "QUOTA"),
    (403, {"error": {"message": "Forbidden"}}, "AUTH"),
    (404, {"error": {"message": "Model Not Exist"}}, "MODEL_NOT_FOUND"),
    (400, {"error": {"message": "This model's maximum context length is 65536 tokens.",
                     "code": "invalid_request_error"}}, "CONTEXT_WINDOW_EXCEEDED"),
    (400, {"error": {"message": "too long", "code": "context_length_exceeded"}},
     "CONTEXT_WINDOW_EXCEEDED"),
    (400, {"error": {"message": "Invalid 'messages'"}}, "INVALID_REQUEST"),
    (422, {"error": {"message": "Unprocessable"}}, "INVALID_REQUEST"),
    (429, {"error": {"message": "quota", "code": "insufficient_quota"}}, "QUOTA"),
    (500, {"error": {"message": "boom"}}, "SERVER"),
    (503, {"error": {"message": "overloaded"}}, "SERVER"),
    (409, {"error": {"message": "conflict"}}, "UNKNOWN"),
])
def test_http_status_maps_to_failure_code(status: int, body: dict[str, Any], code: str) -> None:
    """Ensures that an HTTP error status ends the stream with the matching DSH failure code."""
    chunks, _ = _stream(Reply(status=status, body=body, headers=(("x-request-id", "req-7"),)))
    failure = _failure(chunks)
    assert len(chunks) == 1
    assert (failure.code, failure.status, failure.request_id) == (code, status, "req-7")
    assert body["error"]["message"] in failure.message


@pytest.mark.parametrize(("header", "expected_ms"), [
    (("retry-after", "7"), 7000.0),
    (("retry-after-ms", "1500"), 1500.0),
])
def test_rate_limit_carries_retry_after(header: tuple[str, str], expected_ms: float) -> None:
    """Ensures that a 429 is RATE_LIMIT with Retry-After / retry-after-ms in milliseconds."""
    chunks, _ = _stream(Reply(status=429, headers=(header,),
                              body={"error": {"message": "Rate limit reached"}}))
    failure = _failure(chunks)
    assert (failure.code, failure.provider_retry_after_ms) == ("RATE_LIMIT", expected_ms)


def test_retry_after_http_date_is_converted_to_a_delay() -> None:
    """Ensures that an HTTP-date Retry-After becomes the delay to that date; a date already
    past is no instruction at all (DSH's adapter: only a positive delay counts)."""
    soon = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    past = "Wed, 21 Oct 2015 07:28:00 GMT"
    delays = []
    for date in (soon, past):
        chunks, _ = _stream(Reply(status=429, headers=(("retry-after", date),),
                                  body={"error": {"message": "slow down"}}))
        delays.append(_failure(chunks).provider_retry_after_ms)
    assert isinstance(delays[0], float)
    assert 0 < delays[0] <= 120_000
    assert delays[1] is UNSET


@pytest.mark.parametrize(("header", "expected"), [
    (("retry-after", "0"), UNSET), (("retry-after-ms", "0"), UNSET),
    (("retry-after", "-3"), UNSET), (("retry-after", "soon"), UNSET),
    (("retry-after", "1e30"), float(2**53 - 1)),
])
def test_a_retry_after_that_is_no_positive_delay_is_left_out(header: tuple[str, str],
                                                             expected: object) -> None:
    """Zero, negative or unreadable: no providerRetryAfterMs (the failure stays one DSH's
    retry invariant accepts); a huge one is kept as the largest delay a log can hold."""
    chunks, _ = _stream(Reply(status=429, headers=(header,),
                              body={"error": {"message": "slow down"}}))
    assert _failure(chunks).provider_retry_after_ms == expected


def test_connection_dropped_mid_stream_is_a_transport_error() -> None:
    """Ensures that a dropped connection keeps streamed deltas, then ends TRANSPORT (DSH's code,
    which its default policy retries; no block-end)."""
    chunks, _ = _stream(Reply(events=(chunk({"content": "par"}), chunk({"content": "tial"})),
                              end="drop"))
    assert chunks[:3] == [BlockStart(index=0, block_type="text"),
                          TextDelta(index=0, text="par"), TextDelta(index=0, text="tial")]
    assert len(chunks) == 4
    assert _failure(chunks).code == "TRANSPORT"


def test_error_event_mid_stream_is_an_error_finish() -> None:
    """Ensures that an error object inside the event stream ends the stream with its failure."""
    chunks, _ = _stream(Reply(
        events=(chunk({"content": "a"}),
                {"error": {"message": "This model's maximum context length is 8 tokens"}}),
        headers=(("x-request-id", "req-9"),)))
    assert chunks[:2] == [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="a")]
    failure = _failure(chunks)
    assert (failure.code, failure.request_id) == ("CONTEXT_WINDOW_EXCEEDED", "req-9")


def test_connection_refused_is_a_transport_error() -> None:
    """Ensures that an endpoint nobody listens on ends the stream TRANSPORT."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> list[StreamChunk]:
        async with OpenAIChatModel(base_url=f"http://127.0.0.1:{port}/v1", api_key="k",
                                   max_retries=0, timeout=5.0) as model:
            return [c async for c in model.stream(_request())]

    chunks = asyncio.run(main())
    assert len(chunks) == 1
    assert _failure(chunks).code == "TRANSPORT"


def test_stalled_stream_times_out() -> None:
    """Ensures that a stream that stops sending ends TIMEOUT once the read timeout passes."""
    chunks, _ = _stream(Reply(events=(chunk({"content": "x"}),), end="hang"), timeout=0.3)
    assert chunks[:2] == [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="x")]
    assert _failure(chunks).code == "TIMEOUT"


@pytest.mark.parametrize(("reply", "expected"), [
    (Reply(events=(chunk({"content": "x"}),), end="hang"),
     [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="x")]),
    (Reply(end="stall"), []),
])
def test_cancellation_propagates_and_closes_the_connection(
        reply: Reply, expected: list[StreamChunk]) -> None:
    """Ensures that cancelling the consumer mid-stream or before the response raises
    CancelledError and closes the HTTP connection."""
    async def body(server: FakeOpenAI, model: OpenAIChatModel) -> list[StreamChunk]:
        received: list[StreamChunk] = []

        async def consume() -> None:
            async for piece in model.stream(_request()):
                received.append(piece)

        task = asyncio.create_task(consume())
        await asyncio.wait_for(server.hanging.wait(), 2.0)
        async with asyncio.timeout(2.0):
            while len(received) < len(expected):  # let the client read what was sent
                await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.disconnected.wait(), 2.0)
        return received

    assert _serve([reply], body) == expected


# --------------------------------------------------------------------------- construction


def test_missing_key_names_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ensures that no key raises MissingCredentialError naming the variable to set."""
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert not has_credentials()
    with pytest.raises(MissingCredentialError, match="DEEPSEEK_API_KEY") as caught:
        OpenAIChatModel()
    assert caught.value.env_var == "DEEPSEEK_API_KEY"
    with pytest.raises(MissingCredentialError, match="OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4o-mini", base_url="https://api.openai.com/v1")
    assert has_credentials(api_key="explicit")


def test_key_from_environment_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ensures that the key read from DEEPSEEK_API_KEY is the bearer token DeepSeek's host gets
    (the fake server answers under api.deepseek.com; a loopback URL reads no variable)."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    assert has_credentials()

    async def main() -> list[Recorded]:
        async with FakeOpenAI([Reply(events=(chunk({"content": "ok"}, finish="stop"),))]) as server:
            with resolve_to_loopback("api.deepseek.com"):
                async with OpenAIChatModel(base_url=server.url_for("api.deepseek.com"),
                                           max_retries=0, timeout=5.0) as model:
                    assert model.sends_key
                    chunks = [c async for c in model.stream(_request())]
            assert chunks[-1] == FinishChunk(reason=FinishStop())
            return server.requests

    recorded = asyncio.run(main())
    assert recorded[0].headers["authorization"] == "Bearer sk-from-env"
    assert recorded[0].headers["host"].startswith("api.deepseek.com:")


def test_model_satisfies_the_model_protocol() -> None:
    """Ensures that OpenAIChatModel is a Model in the sense of the shell's protocol."""
    model = OpenAIChatModel(api_key="k")
    assert isinstance(model, Model)
    asyncio.run(model.aclose())


def test_importing_shell_does_not_import_openai() -> None:
    """Ensures that importing shell and this module leaves the optional openai SDK unloaded."""
    code = ("import sys, turnfork.shell, turnfork.shell.models.openai_chat; "
            "sys.exit(1 if 'openai' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
