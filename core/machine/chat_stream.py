"""An OpenAI Chat Completions stream as the assembler's inputs, and its failures as DSH codes.

What a transport hands over is the text of each server-sent event; this module decides what
DSH stream chunks it stands for, what ends the stream, and which DSH failure an HTTP status,
an error body or a finish reason is. Rules (DSH's adapter's, where it has one):

* Blocks are numbered in first-seen order (reasoning, text, each tool call): ``block-start``
  when a block first appears, deltas as they stream; the block-ends (assembled by
  :mod:`.assembly` from those deltas), ``usage`` and one ``finish`` only at ``[DONE]``.
* A tool call without an id gets ``call_`` + the stream's 20-hex prefix + its block index in
  4 hex (the caller draws the prefix: the core has no randomness); a new id under a provider
  index already seen is a new call (some servers reuse index 0 for parallel calls).
* Usage counts are disjoint as DSH's are: ``input_tokens`` is ``prompt_tokens`` less the cached
  input (``prompt_tokens_details.cached_tokens``, else DeepSeek's ``prompt_cache_hit_tokens``)
  and less ``cache_write_tokens``.
* ``[DONE]`` after a ``stop`` (or no) finish and no output is ``EMPTY_RESPONSE``; an event that
  is not JSON or not a chunk (token counts outside 0..2^53-1 included) is ``MALFORMED_RESPONSE``.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
from collections.abc import Mapping
from typing import Annotated, Final
from urllib.parse import urlsplit

import msgspec
from msgspec import UNSET
from returns.result import Failure, Result, Success

from .._checking import checked, plain, plain_forms
from ..log import (
    BlockEnd,
    BlockStart,
    FinishChunk,
    FinishError,
    FinishMaxTokens,
    FinishReason,
    FinishStop,
    FinishToolCalls,
    LlmFailure,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    UsageChunk,
)
from .assembly import EMPTY_ASSEMBLY, StreamAssembly, assemble_chunk, assembled_blocks

__all__ = ["ChatStream", "TRUNCATED_STREAM_TEXT", "chat_stream", "chat_stream_event",
           "chat_stream_end", "chat_failure_code", "chat_error_failure", "chat_body_failure",
           "chat_status_failure", "retry_after_ms"]

#: DSH's text for a stream that ends before ``[DONE]``.
TRUNCATED_STREAM_TEXT: Final = "SSE stream ended without [DONE]"
_EMPTY: Final = "model returned a completed response with no content"
_MAX_SAFE_INT: Final = 2**53 - 1
#: The most blocks one answer may open: far past any model's parallel tool calls, and short of
#: the thousands that would make folding each event (linear in the blocks) quadratic.
MAX_STREAM_BLOCKS: Final = 1024
_Count = Annotated[int, msgspec.Meta(ge=0, le=_MAX_SAFE_INT)]
_assemble_chunk, _assembled_blocks = plain_forms(assemble_chunk, assembled_blocks)


class _Function(msgspec.Struct, frozen=True):
    name: str | None = None
    arguments: str | None = None


class _ToolCall(msgspec.Struct, frozen=True):
    index: int = 0
    id: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct, frozen=True):
    content: str | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    #: vLLM, Ollama and OpenRouter name the reasoning text this way.
    reasoning: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(msgspec.Struct, frozen=True):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct, frozen=True):
    cached_tokens: _Count | None = None
    cache_write_tokens: _Count | None = None


class _CompletionDetails(msgspec.Struct, frozen=True):
    reasoning_tokens: _Count | None = None


class _Usage(msgspec.Struct, frozen=True):
    prompt_tokens: _Count = 0
    completion_tokens: _Count = 0
    prompt_cache_hit_tokens: _Count | None = None
    prompt_cache_miss_tokens: _Count | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None


class _Chunk(msgspec.Struct, frozen=True):
    choices: list[_Choice] | None = None
    usage: _Usage | None = None


_NO_DELTA: Final = _Delta()


class ChatStream(msgspec.Struct, frozen=True, kw_only=True):
    """One chat-completions stream so far (immutable: each event gives a new one)."""

    call_id_prefix: str
    assembly: StreamAssembly = EMPTY_ASSEMBLY
    blocks: int = 0
    reasoning: int = -1
    text: int = -1
    #: ``(provider index, block index, call id)``, the latest call per provider index last.
    calls: tuple[tuple[int, int, str], ...] = ()
    usage: TokenUsage | None = None
    finish_reason: str | None = None


@checked
def chat_stream(call_id_prefix: str) -> ChatStream:
    """A stream before its first event; ``call_id_prefix``: 20 random hex digits."""
    return ChatStream(call_id_prefix=call_id_prefix)


def _failure(message: str, code: str, request_id: str | None) -> LlmFailure:
    return LlmFailure(message=message, code=code, request_id=request_id or UNSET)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


@checked
def chat_stream_event(stream: ChatStream, payload: str, request_id: str | None = None,
                      ) -> Result[tuple[ChatStream, tuple[StreamChunk, ...]], LlmFailure]:
    """One event's ``data`` (not ``[DONE]``): the stream after it and the chunks it streams,
    or the failure it is or reports."""
    try:
        # The standard parser keeps a lone surrogate escape as text: passed on as it came.
        value = json.loads(payload, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return Failure(_failure(f"malformed SSE payload: {payload[:120]}", "MALFORMED_RESPONSE",
                                request_id))
    error = _error_of(value)
    if error is not None:
        return Failure(plain(chat_error_failure)(error, request_id))
    try:
        chunk = msgspec.convert(value, _Chunk)
    except msgspec.ValidationError as err:
        return Failure(_failure(f"malformed SSE payload ({err}): {payload[:120]}",
                                "MALFORMED_RESPONSE", request_id))
    fed = _feed(stream, chunk, request_id)
    return Failure(fed) if isinstance(fed, LlmFailure) else Success(fed)


def _feed(stream: ChatStream, chunk: _Chunk, request_id: str | None,
          ) -> tuple[ChatStream, tuple[StreamChunk, ...]] | LlmFailure:
    """The stream after ``chunk`` and what it streams, or what makes it malformed."""
    out: list[StreamChunk] = []
    blocks, reasoning, text = stream.blocks, stream.reasoning, stream.text
    calls = list(stream.calls)
    finish = stream.finish_reason
    usage = stream.usage if chunk.usage is None else _token_usage(chunk.usage)
    for choice in chunk.choices or ():
        if choice.index != 0:
            continue
        delta = choice.delta or _NO_DELTA
        thought = delta.reasoning_content or delta.reasoning
        if thought:
            if reasoning < 0:
                reasoning, blocks = blocks, blocks + 1
                out.append(BlockStart(index=reasoning, block_type="reasoning"))
            out.append(ReasoningDelta(index=reasoning, text=thought))
        for piece in (delta.content, delta.refusal):
            if piece:
                if text < 0:
                    text, blocks = blocks, blocks + 1
                    out.append(BlockStart(index=text, block_type="text"))
                out.append(TextDelta(index=text, text=piece))
        for call in delta.tool_calls or ():
            function = call.function or _Function()
            known = next((c for c in reversed(calls) if c[0] == call.index), None)
            if known is None or (call.id and call.id != known[2]):
                taken = next((c for c in calls if call.id and c[2] == call.id), None)
                if taken is not None:  # its results could not be told apart
                    return _failure(f"the provider streamed two tool calls with the id "
                                    f"{call.id!r} (indexes {taken[0]} and {call.index})",
                                    "MALFORMED_RESPONSE", request_id)
                if blocks >= MAX_STREAM_BLOCKS:
                    return _failure(f"the provider's answer opened more than "
                                    f"{MAX_STREAM_BLOCKS} blocks (tool calls)",
                                    "RESPONSE_TOO_LARGE", request_id)
                known = (call.index, blocks,
                         call.id or f"call_{stream.call_id_prefix}{blocks:04x}")
                blocks += 1
                calls.append(known)
                out.append(BlockStart(index=known[1], block_type="tool-call"))
            name = function.name if function.name and not _named(stream.assembly, out,
                                                                 known[1]) else UNSET
            if function.arguments or name:
                out.append(ToolCallDelta(index=known[1], id=known[2], name=name,
                                         arguments_delta=function.arguments or ""))
        if choice.finish_reason is not None:
            finish = choice.finish_reason
    assembly = stream.assembly
    for item in out:
        assembly = _assemble_chunk(assembly, 0, item)
    for _, index, call_id in calls[len(stream.calls):]:
        # The id of a call that never streams a delta, for its block-end.
        assembly = _assemble_chunk(assembly, 0, ToolCallDelta(index=index, id=call_id,
                                                              arguments_delta=""))
    return msgspec.structs.replace(stream, assembly=assembly, blocks=blocks,
                                   reasoning=reasoning, text=text, calls=tuple(calls),
                                   usage=usage, finish_reason=finish), tuple(out)


def _named(assembly: StreamAssembly, pending: list[StreamChunk], index: int) -> bool:
    """Whether the call at ``index`` has had its name streamed (before or in this event)."""
    if any(isinstance(c, ToolCallDelta) and c.index == index and c.name for c in pending):
        return True
    return any(p.index == index and p.call_name for p in assembly.partials)


@checked
def chat_stream_end(stream: ChatStream) -> tuple[StreamChunk, ...]:
    """What ``[DONE]`` streams: every block-end, the usage, then the finish."""
    blocks, _ = _assembled_blocks(stream.assembly)
    out: list[StreamChunk] = [BlockEnd(index=p.index, block=b)
                              for p, b in zip(stream.assembly.partials, blocks, strict=True)]
    if stream.usage is not None:
        out.append(UsageChunk(usage=stream.usage))
    out.append(FinishChunk(reason=_reason(stream.finish_reason, bool(blocks),
                                          bool(stream.calls))))
    return tuple(out)


def _reason(finish: str | None, produced: bool, called: bool) -> FinishReason:
    match finish:
        case "stop" | None if not produced:
            return FinishError(failure=LlmFailure(message=_EMPTY, code="EMPTY_RESPONSE"))
        case "stop":
            return FinishStop()
        case "tool_calls" | "function_call":
            return FinishToolCalls()
        case "length":
            return FinishMaxTokens()
        case "content_filter":
            return FinishError(failure=LlmFailure(
                message="the provider's content filter stopped the response",
                code="CONTENT_FILTER"))
        case "insufficient_system_resource":  # DeepSeek: the server ran out of capacity
            return FinishError(failure=LlmFailure(
                message="the provider ran out of resources mid-response", code="UNAVAILABLE"))
        case None:  # some compatible servers omit it: judged by what was produced
            return FinishToolCalls() if called else FinishStop()
        case other:
            return FinishError(failure=LlmFailure(message=f"unknown finish reason {other!r}",
                                                  code="UNKNOWN"))


def _token_usage(usage: _Usage) -> TokenUsage:
    details = usage.prompt_tokens_details
    cached = details.cached_tokens if details is not None else None
    if cached is None:
        cached = usage.prompt_cache_hit_tokens
    written = details.cache_write_tokens if details is not None else None
    completion = usage.completion_tokens_details
    reasoning = completion.reasoning_tokens if completion is not None else None
    return TokenUsage(
        input_tokens=max(usage.prompt_tokens - (cached or 0) - (written or 0), 0),
        output_tokens=usage.completion_tokens,
        cache_read_tokens=UNSET if cached is None else cached,
        cache_write_tokens=UNSET if written is None else written,
        reasoning_tokens=UNSET if reasoning is None else reasoning,
    )


_STATUS_CODES: Final[Mapping[int, str]] = {
    400: "INVALID_REQUEST", 401: "AUTH", 402: "QUOTA", 403: "AUTH", 404: "MODEL_NOT_FOUND",
    408: "TIMEOUT", 413: "INVALID_REQUEST", 422: "INVALID_REQUEST", 429: "RATE_LIMIT",
}

#: DSH's words for an exhausted quota, balance or budget (``isQuotaExceededError``): terminal,
#: unlike a rate limit.
_QUOTA_WORDS: Final = re.compile(
    r"\binsufficient[\s_-]+(?:quota|balance|credits?)\b"
    r"|\b(?:quota|usage[\s_-]+limit)[\s_-]+(?:exceeded|exhausted|reached)\b"
    r"|\bexceed(?:ed|s)?[\s_-]+(?:(?:your|the)[\s_-]+)?(?:current[\s_-]+)?quota\b"
    r"|\b(?:balance|credits?)[\s_-]+(?:exhausted|depleted)\b"
    r"|\bout[\s_-]+of[\s_-]+(?:credits?|budget)\b", re.IGNORECASE)
#: DSH's words for a request beyond the model's context (``isContextWindowExceededError``).
_CONTEXT_WORDS: Final = re.compile(
    r"(?:^|[^a-z0-9])context[\s_-](?:length|window)[\s_-]"
    r"(?:exceed(?:ed|s)?|overflow(?:ed)?|limit[\s_-]exceeded)(?:$|[^a-z0-9])"
    r"|\b(?:maximum|max)(?:\s+(?:allowed|supported))?\s+context\s+(?:length|window)\b"
    r"|\b(?:request|prompt|input|messages?)\s+(?:is\s+|are\s+)?too\s+(?:large|long)\s+for\s+"
    r"(?:(?:this|the)\s+)?(?:model(?:'s)?\s+)?context(?:\s+window)?\b"
    r"|\b(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the)\s+"
    r"model\b"
    r"|\b(?:input|prompt|request|messages?)\b.{0,40}"
    r"\b(?:exceed(?:s|ed)?|overflows?|is\s+larger\s+than)\b.{0,40}"
    r"\b(?:the\s+)?(?:model(?:'s)?\s+)?context(?:\s+(?:length|window))?\b", re.IGNORECASE)


@checked
def chat_failure_code(status: int | None, code: str | None, message: str) -> str:
    """The DSH failure code of an HTTP status (``None``: an error inside a stream), the
    provider's error ``code`` and its message (whose words name a spent quota or a context
    bound as DSH's adapter reads them)."""
    text = message.lower()
    detail = f"{code or ''} {message}"
    if code == "insufficient_quota" or (  # OpenAI sends it with 429
            status not in (401, 403) and _QUOTA_WORDS.search(detail)):
        return "QUOTA"
    if status in (None, 400, 413, 422) and (
            code == "context_length_exceeded" or "maximum context length" in text
            or "context window" in text or _CONTEXT_WORDS.search(detail)):
        return "CONTEXT_WINDOW_EXCEEDED"
    if status is None:
        return "UNKNOWN"
    if status in _STATUS_CODES:
        return _STATUS_CODES[status]
    if 300 <= status < 400:
        return f"HTTP_{status}"
    return "SERVER" if status >= 500 else "UNKNOWN"


#: A delay in ASCII digits (a fraction or an exponent tolerated), nothing that only Python's
#: ``float`` reads (``1_000``, other scripts' digits).
_DELAY: Final = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


@checked
def retry_after_ms(headers: Mapping[str, str], now: float) -> float | None:
    """``retry-after-ms``, else ``retry-after`` (seconds, or an HTTP date read against ``now``,
    seconds since the epoch), as a positive delay: DSH takes a zero, negative, past or
    unreadable one for no instruction. One beyond what a log holds is kept at its largest safe
    integer."""
    raw_ms = (headers.get("retry-after-ms") or "").strip()
    if _DELAY.fullmatch(raw_ms):
        value = float(raw_ms)
        if math.isfinite(value) and value > 0:
            return min(value, float(_MAX_SAFE_INT))
    raw = headers.get("retry-after")
    if raw is None:
        return None
    if _DELAY.fullmatch(raw.strip()):
        seconds = float(raw)
    else:
        try:
            seconds = email.utils.parsedate_to_datetime(raw).timestamp() - now
        except (TypeError, ValueError):
            return None
    if not (math.isfinite(seconds) and seconds > 0):
        return None
    return min(seconds * 1000, float(_MAX_SAFE_INT))


def _error_of(value: object) -> object | None:
    """The error an event or a body stands for: its ``error`` (an object, or TGI's text), or
    the value itself when it is a bare error object (vLLM's ``"object": "error"``)."""
    if not isinstance(value, dict):
        return None
    inner: object = value.get("error")
    if inner:
        return inner
    return value if value.get("object") == "error" else None


@checked
def chat_error_failure(error: object, request_id: str | None = None) -> LlmFailure:
    """An ``{"error": …}`` object the provider sent in place of a chunk, read as the SDK does
    (and an error given as text is its message)."""
    fields = error if isinstance(error, dict) else {}
    message = error if isinstance(error, str) else fields.get("message")
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    code = fields.get("code")
    return _failure(message, plain(chat_failure_code)(
        None, code if isinstance(code, str) else None, message), request_id)


@checked
def chat_body_failure(body: bytes, url: str, request_id: str | None = None) -> LlmFailure:
    """A ``200`` whose body is one JSON value: an error object sent that way, else a server
    that ignores ``"stream": true``."""
    try:
        value = json.loads(body)
    except ValueError:
        value = None
    error = _error_of(value)
    if error is not None:
        return plain(chat_error_failure)(error, request_id)
    kind = value.get("object") if isinstance(value, dict) else None
    what = f"one JSON {kind} object" if isinstance(kind, str) and kind else "a JSON body"
    return _failure(f"the server at {url} answered with {what}, not a stream of server-sent "
                    'events: it ignores "stream": true; turnfork needs a server that streams '
                    "chat completions", "MALFORMED_RESPONSE", request_id)


@checked
def chat_status_failure(status: int, code: str | None, message: str, *, method: str, url: str,
                        headers: Mapping[str, str], base_url: str, now: float,
                        request_id: str | None = None) -> LlmFailure:
    """An HTTP error status as a failure; the message points at the fix: where a 404 came from
    (and ``/v1`` when the base URL lacks it), where a redirect would have gone."""
    text = message
    if 300 <= status < 400:
        location = headers.get("location") or "(no Location header)"
        text = (f"HTTP {status} redirect from {url} to {location}: redirects are not followed "
                "(the conversation would be sent to another URL); use the final URL as the "
                "base URL")
    elif status == 404:
        text = f"{message} (HTTP 404 from {method} {url}"
        path = urlsplit(base_url).path.rstrip("/")
        if not path.endswith("/v1") and "/v1/" not in path + "/":
            text += ("; most OpenAI-compatible servers serve under /v1: try base URL "
                     f"{base_url.rstrip('/')}/v1")
        text += ")"
    delay = plain(retry_after_ms)(headers, now)
    return LlmFailure(message=text, code=plain(chat_failure_code)(status, code, message),
                      status=status, provider_retry_after_ms=UNSET if delay is None else delay,
                      request_id=request_id or UNSET)
