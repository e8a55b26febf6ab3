"""A model that talks to an OpenAI-compatible chat-completions endpoint.

DeepSeek by default (``https://api.deepseek.com``, ``deepseek-chat``, key from
``DEEPSEEK_API_KEY``); OpenAI (key from ``OPENAI_API_KEY``) or a local server by ``base_url``.
It goes through the official ``openai`` SDK, an optional extra (``turnfork[openai]``): the SDK
is imported when a model is constructed, so importing this module (for
:func:`has_credentials`, say) does not need it.

History → chat messages:

* the system prompt → ``{"role": "system"}``;
* a user message → ``{"role": "user"}`` with its text blocks joined by blank lines; an image
  block is sent as the placeholder ``[image omitted]`` (this adapter does not upload images);
* an assistant message → ``{"role": "assistant"}`` with its text and its ``tool_calls``;
  reasoning blocks are not sent back;
* a tool result → ``{"role": "tool", "tool_call_id": …}`` with the result's text.

Stream → DSH stream chunks: blocks are numbered in first-seen order (reasoning, text, each
tool call), ``block-start`` when a block first appears, deltas as they stream, every
``block-end`` (with the assembled block) once the provider's stream is over, then ``usage``,
then one ``finish``. A provider failure (HTTP status, network, timeout, an error event
mid-stream) ends the stream with ``finish`` ``error`` carrying an ``LlmFailure``; chunks
already streamed stay streamed and no block-ends follow. Cancellation propagates and closes
the HTTP response.
"""

from __future__ import annotations

import email.utils
import math
import os
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import msgspec
from msgspec import UNSET

from ...core import (
    AssistantMessage,
    BlockEnd,
    BlockStart,
    ContentBlock,
    FinishChunk,
    FinishError,
    FinishMaxTokens,
    FinishReason,
    FinishStop,
    FinishToolCalls,
    ImageBlock,
    LlmFailure,
    Message,
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
)
from .base import ModelRequest

if TYPE_CHECKING:
    import openai
    from openai.types.chat import (
        ChatCompletionChunk,
        ChatCompletionMessageParam,
        ChatCompletionMessageToolCallParam,
        ChatCompletionToolParam,
    )
    from openai.types.completion_usage import CompletionUsage

__all__ = [
    "DEEPSEEK_BASE_URL",
    "MissingCredentialError",
    "OpenAIChatModel",
    "credential_env_var",
    "has_credentials",
]

DEEPSEEK_BASE_URL: Final = "https://api.deepseek.com"
_IMAGE_PLACEHOLDER: Final = "[image omitted]"


class MissingCredentialError(RuntimeError):
    """No API key was given and the environment variable that would hold one is unset."""

    code: Final = "MISSING_CREDENTIAL"

    def __init__(self, env_var: str, base_url: str) -> None:
        super().__init__(
            f"no API key for {base_url}: set {env_var} or pass api_key=… to OpenAIChatModel")
        self.env_var = env_var
        self.base_url = base_url


def credential_env_var(base_url: str) -> str:
    """The environment variable that holds the key for ``base_url``.

    >>> credential_env_var("https://api.openai.com/v1")
    'OPENAI_API_KEY'
    >>> credential_env_var("https://api.deepseek.com")
    'DEEPSEEK_API_KEY'
    """
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "openai.com" or host.endswith(".openai.com"):
        return "OPENAI_API_KEY"
    return "DEEPSEEK_API_KEY"


def _resolve_key(base_url: str, api_key: str | None, environ: Mapping[str, str]) -> str | None:
    if api_key:
        return api_key
    return environ.get(credential_env_var(base_url)) or None


def has_credentials(base_url: str = DEEPSEEK_BASE_URL, *, api_key: str | None = None,
                    environ: Mapping[str, str] | None = None) -> bool:
    """Whether an :class:`OpenAIChatModel` for ``base_url`` would find a key.

    Args:
        base_url: The endpoint; it decides which environment variable is read.
        api_key: An explicit key, which always counts.
        environ: The environment to read (default ``os.environ``).

    >>> has_credentials(environ={"DEEPSEEK_API_KEY": "sk-1"})
    True
    >>> has_credentials("https://api.openai.com/v1", environ={"DEEPSEEK_API_KEY": "sk-1"})
    False
    """
    return _resolve_key(base_url, api_key, os.environ if environ is None else environ) is not None


class OpenAIChatModel:
    """Streams chat completions from an OpenAI-compatible endpoint as DSH stream chunks.

    The model name sent is the request config's ``model`` (the constructor's ``model`` when
    the config's is empty); ``max_tokens``, ``temperature`` and ``stop`` are sent when the
    config sets them. Usage is requested with ``stream_options={"include_usage": true}``.

    Args:
        model: Default model name.
        base_url: Endpoint root (``…/v1`` for OpenAI and most local servers).
        api_key: The key; default ``DEEPSEEK_API_KEY``, or ``OPENAI_API_KEY`` for OpenAI's URL.
        provider_name: The provider name this model is registered under.
        max_retries: SDK-level retries (0: the agent loop decides about retries).
        timeout: Seconds for connecting and for each read.
        client: A ready ``openai.AsyncOpenAI``; then ``base_url``/``api_key`` are not used and
            :meth:`aclose` leaves the client open.

    Raises:
        MissingCredentialError: No client, no key, and the key's variable is unset.
        ImportError: The ``openai`` package is not installed.
    """

    def __init__(self, model: str = "deepseek-chat", *, base_url: str = DEEPSEEK_BASE_URL,
                 api_key: str | None = None, provider_name: str = "deepseek",
                 max_retries: int = 0, timeout: float = 60.0,
                 client: openai.AsyncOpenAI | None = None) -> None:
        self.model = model
        self.provider_name = provider_name
        self.base_url = base_url
        if client is not None:
            self._client = client
            self._owns_client = False
            return
        key = _resolve_key(base_url, api_key, os.environ)
        if key is None:
            raise MissingCredentialError(credential_env_var(base_url), base_url)
        try:
            import openai  # noqa: PLC0415 - an optional extra, needed only from here on
        except ImportError as err:
            raise ImportError(
                "OpenAIChatModel needs the openai package: pip install 'turnfork[openai]'"
            ) from err
        self._client = openai.AsyncOpenAI(api_key=key, base_url=base_url,
                                          max_retries=max_retries, timeout=timeout)
        self._owns_client = True

    async def aclose(self) -> None:
        """Close the HTTP client this model created (not one it was given). Idempotent."""
        if self._owns_client:
            await self._client.close()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream one chat completion for ``request``; see the module docstring."""
        config = request.config
        options: dict[str, Any] = {}
        if config.max_tokens is not UNSET:
            options["max_tokens"] = config.max_tokens
        if config.temperature is not UNSET:
            options["temperature"] = config.temperature
        if config.stop is not UNSET:
            options["stop"] = list(config.stop)
        tools = _chat_tools(request.tools)
        if tools:
            options["tools"] = tools
        messages = _chat_messages(request.system, request.messages)
        try:
            stream = await self._client.chat.completions.create(
                model=config.model or self.model,
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
                **options,
            )
        except Exception as err:  # the SDK's errors, httpx's, a bad body: all provider-side
            yield FinishChunk(reason=FinishError(failure=_failure(err)))
            return
        assembler = _Assembler()
        try:
            iterator = stream.__aiter__()
            while True:
                try:
                    chunk = await iterator.__anext__()
                except StopAsyncIteration:
                    break
                except Exception as err:
                    request_id = stream.response.headers.get("x-request-id")
                    yield FinishChunk(reason=FinishError(failure=_failure(err, request_id)))
                    return
                for out in assembler.feed(chunk):
                    yield out
        finally:
            await stream.close()
        for out in assembler.finish():
            yield out


# --------------------------------------------------------------------------- request mapping


def _text_of(blocks: tuple[ContentBlock, ...]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ImageBlock):
            parts.append(_IMAGE_PLACEHOLDER)
    return "\n\n".join(parts)


def _chat_messages(system: str | None,
                   history: tuple[Message, ...]) -> list[ChatCompletionMessageParam]:
    messages: list[ChatCompletionMessageParam] = []
    if system:
        messages.append({"role": "system", "content": system})
    for message in history:
        if isinstance(message, AssistantMessage):
            text = "\n\n".join(b.text for b in message.content if isinstance(b, TextBlock))
            calls: list[ChatCompletionMessageToolCallParam] = [
                {"id": b.id, "type": "function",
                 "function": {"name": b.name, "arguments": b.arguments}}
                for b in message.content if isinstance(b, ToolCallBlock)
            ]
            if calls:
                messages.append({"role": "assistant", "content": text or None,
                                 "tool_calls": calls})
            else:
                messages.append({"role": "assistant", "content": text})
        elif isinstance(message, ToolResultMessage):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    messages.append({"role": "tool", "tool_call_id": block.tool_call_id,
                                     "content": _text_of(block.content)})
        else:
            messages.append({"role": "user", "content": _text_of(message.content)})
    return messages


def _chat_tools(schemas: tuple[ToolSchema, ...]) -> list[ChatCompletionToolParam]:
    return [
        {"type": "function",
         "function": {"name": s.name, "description": s.description,
                      "parameters": msgspec.json.decode(s.parameters)}}
        for s in schemas
    ]


# --------------------------------------------------------------------------- stream mapping


class _ToolCall:
    __slots__ = ("arguments", "id", "index", "name")

    def __init__(self, index: int, call_id: str) -> None:
        self.index = index
        self.id = call_id
        self.name = ""
        self.arguments: list[str] = []


class _Assembler:
    """Turns ``ChatCompletionChunk``s into DSH stream chunks and assembles the blocks."""

    def __init__(self) -> None:
        self._count = 0
        self._reasoning: tuple[int, list[str]] | None = None
        self._text: tuple[int, list[str]] | None = None
        #: The provider's tool-call index → the call streaming under it now.
        self._calls: dict[int, _ToolCall] = {}
        self._all_calls: list[_ToolCall] = []
        self._usage: TokenUsage | None = None
        self._finish: str | None = None

    def _open(self) -> int:
        index = self._count
        self._count += 1
        return index

    def feed(self, chunk: ChatCompletionChunk) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        if chunk.usage is not None:
            self._usage = _token_usage(chunk.usage)
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            reasoning = getattr(delta, "reasoning_content", None)
            if isinstance(reasoning, str) and reasoning:
                if self._reasoning is None:
                    self._reasoning = (self._open(), [])
                    out.append(BlockStart(index=self._reasoning[0], block_type="reasoning"))
                self._reasoning[1].append(reasoning)
                out.append(ReasoningDelta(index=self._reasoning[0], text=reasoning))
            for text in (delta.content, delta.refusal):
                if text:
                    if self._text is None:
                        self._text = (self._open(), [])
                        out.append(BlockStart(index=self._text[0], block_type="text"))
                    self._text[1].append(text)
                    out.append(TextDelta(index=self._text[0], text=text))
            for piece in delta.tool_calls or ():
                function = piece.function
                name = function.name if function is not None else None
                arguments = (function.arguments if function is not None else None) or ""
                call = self._calls.get(piece.index)
                # Some servers reuse index 0 for parallel calls; a new id means a new call.
                if call is None or (piece.id and piece.id != call.id):
                    call = _ToolCall(self._open(), piece.id or f"call_{uuid.uuid4().hex[:24]}")
                    self._calls[piece.index] = call
                    self._all_calls.append(call)
                    out.append(BlockStart(index=call.index, block_type="tool-call"))
                first_name = bool(name) and not call.name
                if first_name:
                    call.name = name or ""
                if arguments or first_name:
                    call.arguments.append(arguments)
                    out.append(ToolCallDelta(index=call.index, id=call.id,
                                             name=call.name if first_name else UNSET,
                                             arguments_delta=arguments))
            if choice.finish_reason is not None:
                self._finish = choice.finish_reason
        return out

    def finish(self) -> list[StreamChunk]:
        ends: list[tuple[int, ContentBlock]] = []
        if self._reasoning is not None:
            ends.append((self._reasoning[0], ReasoningBlock(text="".join(self._reasoning[1]))))
        if self._text is not None:
            ends.append((self._text[0], TextBlock(text="".join(self._text[1]))))
        ends.extend((c.index, ToolCallBlock(id=c.id, name=c.name, arguments="".join(c.arguments)))
                    for c in self._all_calls)
        out: list[StreamChunk] = [BlockEnd(index=i, block=b) for i, b in sorted(ends,
                                                                               key=_first)]
        if self._usage is not None:
            out.append(UsageChunk(usage=self._usage))
        out.append(FinishChunk(reason=self._reason(bool(ends))))
        return out

    def _reason(self, produced: bool) -> FinishReason:
        match self._finish:
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
                    message="the provider ran out of resources mid-response",
                    code="UNAVAILABLE"))
            case None if not produced:
                return FinishError(failure=LlmFailure(
                    message="the provider's stream ended without any output or finish reason",
                    code="EMPTY_RESPONSE"))
            case None:
                # Some compatible servers omit finish_reason; judge by what was produced.
                return FinishToolCalls() if self._all_calls else FinishStop()
            case other:
                return FinishError(failure=LlmFailure(
                    message=f"unknown finish reason {other!r}", code="UNKNOWN"))


def _first(pair: tuple[int, ContentBlock]) -> int:
    return pair[0]


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None


def _token_usage(usage: CompletionUsage) -> TokenUsage:
    """OpenAI usage → DSH usage: ``input_tokens`` excludes cached input (counts are disjoint).

    Cached input is ``prompt_tokens_details.cached_tokens`` (OpenAI, newer DeepSeek) or
    ``prompt_cache_hit_tokens`` (DeepSeek).
    """
    prompt = usage.prompt_tokens
    details = usage.prompt_tokens_details
    cached = _count(details.cached_tokens) if details is not None else None
    if cached is None:
        cached = _count(getattr(usage, "prompt_cache_hit_tokens", None))
    written = _count(details.cache_write_tokens) if details is not None else None
    completion_details = usage.completion_tokens_details
    reasoning = (_count(completion_details.reasoning_tokens)
                 if completion_details is not None else None)
    return TokenUsage(
        input_tokens=max(prompt - (cached or 0) - (written or 0), 0),
        output_tokens=usage.completion_tokens,
        cache_read_tokens=UNSET if cached is None else cached,
        cache_write_tokens=UNSET if written is None else written,
        reasoning_tokens=UNSET if reasoning is None else reasoning,
    )


# --------------------------------------------------------------------------- failure mapping

_STATUS_CODES: Final[Mapping[int, str]] = {
    400: "INVALID_REQUEST",
    401: "AUTH",
    402: "QUOTA",
    403: "AUTH",
    404: "MODEL_NOT_FOUND",
    408: "TIMEOUT",
    422: "INVALID_REQUEST",
    429: "RATE_LIMIT",
    503: "UNAVAILABLE",
}


def _is_context_overflow(code: str | None, message: str) -> bool:
    text = message.lower()
    return code == "context_length_exceeded" or "maximum context length" in text \
        or "context window" in text


def _failure_code(status: int | None, code: str | None, message: str) -> str:
    if code == "insufficient_quota":  # OpenAI sends it with 429
        return "QUOTA"
    if status in (None, 400, 413, 422) and _is_context_overflow(code, message):
        return "CONTEXT_WINDOW_EXCEEDED"
    if status is None:
        return "UNKNOWN"
    if status in _STATUS_CODES:
        return _STATUS_CODES[status]
    return "SERVER_ERROR" if status >= 500 else "UNKNOWN"


def _retry_after_ms(headers: Mapping[str, str]) -> float | None:
    """``retry-after-ms`` (milliseconds), else ``retry-after`` (seconds or an HTTP date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            date = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        seconds = max(date.timestamp() - time.time(), 0.0)
    return seconds * 1000 if math.isfinite(seconds) and seconds >= 0 else None


def _failure(err: Exception, request_id: str | None = None) -> LlmFailure:
    import openai  # noqa: PLC0415 - loaded already: a model exists

    message = str(err) or type(err).__name__
    if isinstance(err, openai.APITimeoutError):
        return LlmFailure(message=message, code="TIMEOUT",
                          request_id=request_id if request_id else UNSET)
    if isinstance(err, openai.APIConnectionError):
        cause = err.__cause__
        detail = f"{message.rstrip('.')}: {cause}" if cause is not None and str(cause) else message
        return LlmFailure(message=detail, code="NETWORK",
                          request_id=request_id if request_id else UNSET)
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        retry_after = _retry_after_ms(err.response.headers)
        request_id = err.request_id or request_id
        return LlmFailure(
            message=message, code=_failure_code(status, err.code, message), status=status,
            provider_retry_after_ms=UNSET if retry_after is None else retry_after,
            request_id=request_id if request_id else UNSET)
    if isinstance(err, openai.APIError):  # an error event inside the stream
        return LlmFailure(message=message, code=_failure_code(None, err.code, message),
                          request_id=request_id if request_id else UNSET)
    return LlmFailure(message=f"{type(err).__name__}: {message}", code="UNKNOWN",
                      request_id=request_id if request_id else UNSET)

