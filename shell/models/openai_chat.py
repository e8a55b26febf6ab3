"""A model that talks to an OpenAI-compatible chat-completions endpoint.

DeepSeek by default (``https://api.deepseek.com``, ``deepseek-chat``, key from
``DEEPSEEK_API_KEY``); OpenAI (key from ``OPENAI_API_KEY``) or a local server by ``base_url``.
It goes through the official ``openai`` SDK, an optional extra (``turnfork[openai]``): the SDK
is imported, in a worker thread so that a running event loop is not held up, when the model
first streams; importing this module or constructing a model does not load it.

Credentials:

* an explicit non-empty ``api_key`` is sent as ``Authorization: Bearer <key>``, to any host;
* ``api_key=""`` means *no key*: no ``Authorization`` header is sent, to any host;
* no ``api_key``: a loopback endpoint (``localhost``, ``*.localhost``, ``127.0.0.0/8``,
  ``::1`` — Ollama, llama.cpp, vLLM on this machine) gets no key and no environment variable
  is read for it; any other endpoint gets the key from :func:`credential_env_var`, and
  :class:`MissingCredentialError` names that variable when it is unset.

Without a key the SDK (which refuses to be built without one) is given the placeholder
:data:`KEYLESS_PLACEHOLDER`, and every request removes the ``Authorization`` header the SDK
would build from it: the placeholder never leaves the process. Endpoints that are not
OpenAI's never get the ``OpenAI-Organization`` / ``OpenAI-Project`` headers the SDK would
fill from ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID``.

History → chat messages:

* the system prompt → ``{"role": "system"}``;
* a user message → ``{"role": "user"}`` with its text blocks joined by blank lines; an image
  block is sent as the placeholder ``[image omitted]`` (this adapter does not upload images);
* an assistant message → ``{"role": "assistant"}`` with its text and its ``tool_calls``;
  reasoning blocks are not sent back;
* a tool result → ``{"role": "tool", "tool_call_id": …}`` with the result's text.

Text that cannot be sent as UTF-8 (a lone surrogate a provider streamed earlier) is sent with
each lone surrogate replaced by U+FFFD; a surrogate pair split across deltas is joined.

Stream → DSH stream chunks: the response body is read as server-sent events by this module,
bounded: the whole body by ``max_response_bytes``, any one event (or line) by
``max_event_bytes``, the whole call (from the request to the last byte) by
``stream_deadline`` seconds. Blocks are numbered in first-seen order (reasoning, text, each tool
call), ``block-start`` when a block first appears, deltas as they stream, every ``block-end``
(with the assembled block) once the provider sent ``data: [DONE]``, then ``usage``, then one
``finish``. A provider failure ends the stream with ``finish`` ``error`` carrying an
``LlmFailure``; chunks already streamed stay streamed and no block-ends follow:

* HTTP status → its code (``AUTH``, ``RATE_LIMIT``, ``SERVER`` for 5xx,
  ``CONTEXT_WINDOW_EXCEEDED``, …); a 404 names the URL it hit (and suggests ``/v1`` when the
  path lacks it); a redirect (3xx) is never followed — the conversation would go to another
  URL — and is reported with its status and ``Location``, ``HTTP_<status>``;
* connection refused or broken → ``TRANSPORT``; no byte within ``timeout`` → ``TIMEOUT``;
  the call still running after ``stream_deadline`` → ``TIMEOUT``;
* a ``200`` whose body is JSON, not an event stream (a server that ignores ``"stream": true``)
  → ``MALFORMED_RESPONSE``, saying so;
* a stream that ends before ``data: [DONE]`` — even after a finish reason, since the usage
  the request asks for follows it — → ``NETWORK``, DSH's text ``SSE stream ended without
  [DONE]``: a truncated answer is never taken for a complete one;
* more than ``max_response_bytes`` / ``max_event_bytes`` → ``RESPONSE_TOO_LARGE``;
* an event that is not JSON or not a chat-completion chunk (wrong types, negative or
  > 2^53 token counts) → ``MALFORMED_RESPONSE``, ``malformed SSE payload: …`` as DSH says;
* an ``error`` object inside the stream → its code, as for an HTTP status;
* ``[DONE]`` after a ``stop`` (or no) finish reason and no output at all → ``EMPTY_RESPONSE``,
  DSH's text ``model returned a completed response with no content``.

Usage: DSH's counts are disjoint, so ``input_tokens`` is ``prompt_tokens`` less the cached
input (``prompt_tokens_details.cached_tokens`` — OpenAI, newer DeepSeek — else DeepSeek's
``prompt_cache_hit_tokens``; DeepSeek's ``prompt_tokens`` is hit + miss) and less
``prompt_tokens_details.cache_write_tokens``; the cached input is ``cache_read_tokens``
(``cacheReadTokens`` on the wire). Cancellation propagates and closes the HTTP response.
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib
import importlib.util
import ipaddress
import json
import math
import os
import sys
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, aclosing
from types import TracebackType
from typing import TYPE_CHECKING, Annotated, Any, Final
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
from ...core.wire_seed import plain_text
from .base import ModelRequest

if TYPE_CHECKING:
    import openai
    from openai.types.chat import (
        ChatCompletionMessageParam,
        ChatCompletionMessageToolCallParam,
        ChatCompletionToolParam,
    )

__all__ = [
    "DEEPSEEK_BASE_URL",
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "DEFAULT_STREAM_DEADLINE",
    "KEYLESS_PLACEHOLDER",
    "MissingCredentialError",
    "OpenAIChatModel",
    "chat_request_body",
    "credential_env_var",
    "has_credentials",
    "is_local_endpoint",
]

DEEPSEEK_BASE_URL: Final = "https://api.deepseek.com"
#: The whole streamed body of one response. A 256k-token answer streamed one token per
#: event is about 64 MiB of SSE; four times that is still a bound.
DEFAULT_MAX_RESPONSE_BYTES: Final = 256 * 1024 * 1024
#: One server-sent event (or one line of it): a whole tool call's arguments may come at once.
DEFAULT_MAX_EVENT_BYTES: Final = 16 * 1024 * 1024
#: What the SDK is built with when no key is sent; it never reaches the wire.
KEYLESS_PLACEHOLDER: Final = "turnfork-keyless-placeholder-never-sent"
#: Seconds one call may take from its request to its last byte: an hour, past the longest
#: answer a model streams (64k reasoning tokens at 20 a second is under an hour), short of a
#: stream that trickles forever.
DEFAULT_STREAM_DEADLINE: Final = 3600.0

_TRUNCATED: Final = "SSE stream ended without [DONE]"
_EMPTY: Final = "model returned a completed response with no content"
_MAX_SAFE_INT: Final = 2**53 - 1
_DRAIN_BYTES: Final = 64 * 1024
_DRAIN_SECONDS: Final = 0.1


class MissingCredentialError(RuntimeError):
    """No API key was given and the environment variable that would hold one is unset."""

    code: Final = "MISSING_CREDENTIAL"

    def __init__(self, env_var: str, base_url: str) -> None:
        super().__init__(
            f"no API key for {base_url}: set {env_var} or pass api_key=… to OpenAIChatModel "
            "(api_key=\"\" for a server that needs none)")
        self.env_var = env_var
        self.base_url = base_url


def _host(base_url: str) -> str:
    return (urlsplit(base_url).hostname or "").lower()


def _is_openai(base_url: str) -> bool:
    host = _host(base_url)
    return host == "openai.com" or host.endswith(".openai.com")


def is_local_endpoint(base_url: str) -> bool:
    """Whether ``base_url`` is on this machine's loopback interface (then no key is needed).

    >>> is_local_endpoint("http://127.0.0.1:11434/v1"), is_local_endpoint("http://localhost:8080/v1")
    (True, True)
    >>> is_local_endpoint("http://[::1]:8000/v1"), is_local_endpoint("https://api.deepseek.com")
    (True, False)
    """
    host = _host(base_url)
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def credential_env_var(base_url: str) -> str:
    """The environment variable that holds the key for ``base_url``.

    >>> credential_env_var("https://api.openai.com/v1")
    'OPENAI_API_KEY'
    >>> credential_env_var("https://api.deepseek.com")
    'DEEPSEEK_API_KEY'
    """
    return "OPENAI_API_KEY" if _is_openai(base_url) else "DEEPSEEK_API_KEY"


def _base_url_problem(base_url: str) -> str | None:
    """Why ``base_url`` is not an endpoint this model can call, if it is not."""
    parts = urlsplit(base_url)
    if parts.scheme in ("http", "https") and parts.hostname:
        return None
    if "://" not in base_url:
        return (f"base_url {base_url!r} has no scheme: write it as http://{base_url} (a local "
                f"server) or https://{base_url}")
    return f"base_url {base_url!r} is not an http:// or https:// URL"


def _resolve_key(base_url: str, api_key: str | None, environ: Mapping[str, str]) -> str | None:
    """The key to send (``""``: none), or ``None`` when one is needed and missing."""
    if api_key is not None:
        return api_key
    if is_local_endpoint(base_url):
        return ""
    return environ.get(credential_env_var(base_url)) or None


def has_credentials(base_url: str = DEEPSEEK_BASE_URL, *, api_key: str | None = None,
                    environ: Mapping[str, str] | None = None) -> bool:
    """Whether an :class:`OpenAIChatModel` for ``base_url`` can be built (a key, or none needed).

    Args:
        base_url: The endpoint; it decides which environment variable is read, if any.
        api_key: An explicit key (``""``: none), which always counts.
        environ: The environment to read (default ``os.environ``).

    >>> has_credentials(environ={"DEEPSEEK_API_KEY": "sk-1"})
    True
    >>> has_credentials("https://api.openai.com/v1", environ={"DEEPSEEK_API_KEY": "sk-1"})
    False
    >>> has_credentials("http://127.0.0.1:11434/v1", environ={})
    True
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
        api_key: The key; ``""`` sends none; default: none for a loopback ``base_url``,
            else ``DEEPSEEK_API_KEY``, or ``OPENAI_API_KEY`` for OpenAI's URL.
        provider_name: The provider name this model is registered under.
        max_retries: SDK-level retries (0: the agent's route policy retries, and records each
            retry in the log; SDK retries are invisible there and multiply its budget).
        timeout: Seconds for connecting and for each read.
        client: A ready ``openai.AsyncOpenAI``; then ``base_url``/``api_key`` are not used,
            the client keeps its own redirect setting, and :meth:`aclose` leaves it open.
        max_response_bytes: Cap on one response's streamed body.
        max_event_bytes: Cap on one server-sent event (and on one line of it).
        stream_deadline: Seconds one call may take from its request to its last byte
            (``None``: no bound); past it the call ends ``TIMEOUT``.

    Attributes:
        sends_key: Whether requests carry an ``Authorization`` header built from a key
            (always ``True`` for a given ``client``, which decides that itself).

    Raises:
        MissingCredentialError: No client, no key, and the key's variable is unset.
        ImportError: The ``openai`` package is not installed.
        ValueError: A cap that is not a positive number of bytes or seconds, or a
            ``base_url`` that is not an ``http://`` or ``https://`` URL (the message says
            which, e.g. that it has no scheme).
    """

    def __init__(self, model: str = "deepseek-chat", *, base_url: str = DEEPSEEK_BASE_URL,
                 api_key: str | None = None, provider_name: str = "deepseek",
                 max_retries: int = 0, timeout: float = 60.0,
                 client: openai.AsyncOpenAI | None = None,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
                 stream_deadline: float | None = DEFAULT_STREAM_DEADLINE) -> None:
        for name, value in (("max_response_bytes", max_response_bytes),
                            ("max_event_bytes", max_event_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive number of bytes, not {value!r}")
        if stream_deadline is not None and (
                isinstance(stream_deadline, bool) or not isinstance(stream_deadline, int | float)
                or not stream_deadline > 0):
            raise ValueError("stream_deadline must be a positive number of seconds or None, "
                             f"not {stream_deadline!r}")
        self.model = model
        self.provider_name = provider_name
        self.base_url = base_url
        self.max_response_bytes = max_response_bytes
        self.max_event_bytes = max_event_bytes
        self.stream_deadline = stream_deadline
        self.sends_key = True
        self._client: openai.AsyncOpenAI | None = client
        self._owns_client = client is None
        self._headers: dict[str, Any] = {}
        self._building = asyncio.Lock()
        self._key = ""
        self._max_retries = max_retries
        self._timeout = timeout
        if client is not None:
            return
        problem = _base_url_problem(base_url)
        if problem is not None:
            raise ValueError(problem)
        key = _resolve_key(base_url, api_key, os.environ)
        if key is None:
            raise MissingCredentialError(credential_env_var(base_url), base_url)
        if importlib.util.find_spec("openai") is None:
            raise ImportError(
                "OpenAIChatModel needs the openai package: pip install 'turnfork[openai]'")
        self.sends_key = bool(key)
        self._key = key

    def _build_client(self) -> tuple[openai.AsyncOpenAI, dict[str, Any]]:
        """The SDK client and the headers every request carries; runs in a worker thread (the
        SDK takes seconds to import)."""
        import openai  # noqa: PLC0415 - an optional extra, loaded on first use

        # A compressed event stream could inflate many-fold inside one read, before the caps
        # see it; asking for none keeps what is counted what arrived.
        headers: dict[str, Any] = {"Accept-Encoding": "identity"}
        if not self.sends_key:
            headers["Authorization"] = openai.Omit()
        if not _is_openai(self.base_url):
            headers["OpenAI-Organization"] = openai.Omit()
            headers["OpenAI-Project"] = openai.Omit()
        # A redirect would re-send the whole conversation to another URL (the SDK strips
        # only the key): none is followed, and the call fails naming it.
        http_client = openai.DefaultAsyncHttpxClient(follow_redirects=False)
        client = openai.AsyncOpenAI(api_key=self._key or KEYLESS_PLACEHOLDER,
                                    base_url=self.base_url, max_retries=self._max_retries,
                                    timeout=self._timeout, http_client=http_client)
        return client, headers

    async def _ready_client(self) -> openai.AsyncOpenAI:
        if self._client is not None:
            return self._client
        async with self._building:  # two first calls at once build one client
            if self._client is None:
                client, self._headers = await asyncio.to_thread(self._build_client)
                self._client = client
                return client
            return self._client

    async def aclose(self) -> None:
        """Close the HTTP client this model created (not one it was given). Idempotent."""
        if self._owns_client and self._client is not None:
            await self._client.close()

    async def __aenter__(self) -> OpenAIChatModel:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        """Stream one chat completion for ``request``; see the module docstring."""
        body = chat_request_body(request, self.model)
        options = {key: value for key, value in body.items()
                   if key not in ("model", "messages", "stream", "stream_options")}
        try:
            client = await self._ready_client()
        except Exception as err:  # an SDK that does not load: say why, end the call
            yield FinishChunk(reason=FinishError(failure=LlmFailure(
                message=f"the openai SDK could not be loaded: {type(err).__name__}: {err}",
                code="UNKNOWN")))
            return
        # The deadline is the provider's: it starts with the request, not with the SDK's load.
        loop = asyncio.get_running_loop()
        deadline = None if self.stream_deadline is None else loop.time() + self.stream_deadline
        if self._headers:
            options["extra_headers"] = self._headers
        async with AsyncExitStack() as stack:
            bound = asyncio.timeout_at(deadline)
            try:
                async with bound:
                    response = await stack.enter_async_context(
                        client.chat.completions.with_streaming_response.create(
                            model=body["model"],
                            messages=body["messages"],
                            stream=True,
                            stream_options={"include_usage": True},
                            **options,
                        ))
            except TimeoutError:
                if not bound.expired():
                    raise
                yield FinishChunk(reason=FinishError(failure=self._late()))
                return
            except Exception as err:  # the SDK's errors, httpx's, a bad body: all provider-side
                yield FinishChunk(reason=FinishError(failure=_failure(err, self.base_url)))
                return
            async for out in self._translate(response.http_response, deadline):
                yield out

    def _late(self, request_id: str | None = None) -> LlmFailure:
        return LlmFailure(message=f"the provider's response took longer than "
                                  f"{self.stream_deadline:g} s (stream_deadline)",
                          code="TIMEOUT", request_id=request_id or UNSET)

    async def _translate(self, http_response: Any,
                         deadline: float | None) -> AsyncIterator[StreamChunk]:
        request_id = http_response.headers.get("x-request-id") or None
        events = _EventReader(self.max_response_bytes, self.max_event_bytes)
        assembler = _Assembler()
        body = http_response.aiter_bytes()
        failure: LlmFailure | None = None
        done = False
        try:
            async with aclosing(_payloads(body, events, deadline)) as payloads:
                async for payload in payloads:
                    if payload.startswith("[DONE]"):
                        done = True
                        break
                    chunk = _decode_chunk(payload, request_id)
                    if isinstance(chunk, LlmFailure):
                        failure = chunk
                        break
                    for out in assembler.feed(chunk):
                        yield out
        except _TooLarge as err:
            failure = LlmFailure(message=str(err), code="RESPONSE_TOO_LARGE",
                                 request_id=request_id or UNSET)
        except _PastDeadline:
            failure = self._late(request_id)
        except _NotAStream as err:
            failure = _not_a_stream(err.body, str(http_response.url), request_id)
        except Exception as err:  # the body broke off: the transport's errors
            failure = _read_failure(err, http_response, request_id)
        if failure is None and not done:
            failure = LlmFailure(message=_TRUNCATED, code="NETWORK",
                                 request_id=request_id or UNSET)
        if failure is not None:
            yield FinishChunk(reason=FinishError(failure=failure))
            return
        await _drain(body)
        for out in assembler.finish():
            yield out


class _PastDeadline(Exception):
    """The call ran past its ``stream_deadline``."""


class _NotAStream(Exception):
    """The body is JSON, not server-sent events (the server ignored ``"stream": true``)."""

    def __init__(self, body: bytes) -> None:
        super().__init__("not an event stream")
        self.body = body


async def _read(body: AsyncIterator[bytes], deadline: float | None) -> bytes | None:
    """The next piece of the body (``None``: it ended), within the call's deadline."""
    bound = asyncio.timeout_at(deadline)
    try:
        async with bound:
            return await anext(body)
    except StopAsyncIteration:
        return None
    except TimeoutError:
        if bound.expired():
            raise _PastDeadline from None
        raise


async def _payloads(body: AsyncIterator[bytes], events: _EventReader, deadline: float | None,
                    ) -> AsyncGenerator[str, None]:
    first = True
    while (data := await _read(body, deadline)) is not None:
        if first and data.strip():
            first = False
            if data.lstrip().startswith(b"{"):  # an event stream never starts with JSON
                raise _NotAStream(await _rest(data, body, deadline))
        for payload in events.feed(data):
            yield payload
    for payload in events.finish():
        yield payload


async def _rest(start: bytes, body: AsyncIterator[bytes], deadline: float | None) -> bytes:
    """A JSON body read to its end or to 64 KiB, for the message that names it."""
    parts = [start]
    size = len(start)
    while size < _DRAIN_BYTES and (data := await _read(body, deadline)) is not None:
        parts.append(data)
        size += len(data)
    return b"".join(parts)[:_DRAIN_BYTES]


def _not_a_stream(body: bytes, url: str, request_id: str | None) -> LlmFailure:
    """A 200 whose body is one JSON value: an error object the provider sent that way, else a
    server that does not stream."""
    try:
        value = json.loads(body)
    except ValueError:
        value = None
    if isinstance(value, dict) and value.get("error"):
        return _stream_error(value["error"], request_id)
    kind = value.get("object") if isinstance(value, dict) else None
    what = f"one JSON {kind} object" if isinstance(kind, str) and kind else "a JSON body"
    return LlmFailure(
        message=f"the server at {url} answered with {what}, not a stream of server-sent "
                'events: it ignores "stream": true; turnfork needs a server that streams '
                "chat completions",
        code="MALFORMED_RESPONSE", request_id=request_id or UNSET)


async def _drain(body: AsyncIterator[bytes]) -> None:
    """Read the little that follows ``[DONE]`` so an HTTP/1.1 connection can be reused; a server
    that sends more, or holds the body open, only loses the reuse (the SDK's own rule: 0.1 s)."""
    drained = 0
    try:
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for data in body:
                drained += len(data)
                if drained > _DRAIN_BYTES:
                    return
    except Exception:  # the answer is complete; the connection just closes
        pass


# --------------------------------------------------------------------------- request mapping


def chat_request_body(request: ModelRequest, model: str) -> dict[str, Any]:
    """The chat-completions body :class:`OpenAIChatModel` sends for ``request``, as a dict
    (pure: no SDK, no network; the SDK serialises it): ``model`` (the config's, else
    ``model``), ``messages`` (the system prompt, then the history as the module docstring
    maps it), ``stream``, ``stream_options``, then ``max_tokens``, ``temperature`` and
    ``stop`` when the config sets them, and ``tools`` when there are any.
    """
    config = request.config
    body: dict[str, Any] = {
        "model": config.model or model,
        "messages": _chat_messages(request.system, request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if config.max_tokens is not UNSET:
        body["max_tokens"] = config.max_tokens
    if config.temperature is not UNSET:
        body["temperature"] = config.temperature
    if config.stop is not UNSET:
        body["stop"] = [_sendable(s) for s in config.stop]
    tools = _chat_tools(request.tools)
    if tools:
        body["tools"] = tools
    return body


def _sendable(text: str) -> str:
    """``text`` as UTF-8 can carry it: lone surrogates → U+FFFD, split pairs joined."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _text_of(blocks: tuple[ContentBlock, ...]) -> str:
    return _sendable(plain_text(blocks))


def _chat_messages(system: str | None,
                   history: Sequence[Message]) -> list[ChatCompletionMessageParam]:
    messages: list[ChatCompletionMessageParam] = []
    if system:
        messages.append({"role": "system", "content": _sendable(system)})
    for message in history:
        if isinstance(message, AssistantMessage):
            text = _sendable("\n\n".join(b.text for b in message.content
                                         if isinstance(b, TextBlock)))
            calls: list[ChatCompletionMessageToolCallParam] = [
                {"id": b.id, "type": "function",
                 "function": {"name": _sendable(b.name), "arguments": _sendable(b.arguments)}}
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


# --------------------------------------------------------------------------- event framing


class _TooLarge(Exception):
    """The response broke one of the caps."""


class _EventReader:
    """Server-sent events, framed as the spec says, within byte caps.

    Memory stays within ``max_event_bytes`` plus one network read: a line is buffered only up
    to the cap, and the whole body is counted as it arrives. An event's fields other than
    ``data`` are not needed and are skipped; an event still open at EOF is dropped (the
    caller sees no ``[DONE]``).
    """

    __slots__ = ("_data", "_event_bytes", "_line", "_max_event", "_max_total", "_started",
                 "_total")

    def __init__(self, max_total: int, max_event: int) -> None:
        self._max_total = max_total
        self._max_event = max_event
        self._total = 0
        self._line = bytearray()
        self._data: list[bytes] = []
        self._event_bytes = 0
        self._started = False

    def feed(self, data: bytes) -> list[str]:
        """The ``data`` of every event ``data`` completes."""
        self._total += len(data)
        if self._total > self._max_total:
            raise _TooLarge(f"the provider's response exceeded {self._max_total} bytes "
                            "(max_response_bytes)")
        if b"\n" not in data and b"\r" not in data:  # the common case of a long line
            self._line += data
            self._check_event()
            return []
        lines = (bytes(self._line) + data).splitlines(keepends=True)
        last = lines[-1]
        # Unterminated, or ending in a \r that a \n may follow in the next read: keep it.
        pending = b""
        if not last.endswith(b"\n"):
            pending = lines.pop()
        out: list[str] = []
        for line in lines:
            self._field(line.rstrip(b"\r\n"), out)
        self._line = bytearray(pending)
        self._check_event()
        return out

    def finish(self) -> list[str]:
        """At the end of the body: a last line ended by a lone CR is a line after all."""
        if not self._line.endswith(b"\r"):
            return []
        out: list[str] = []
        self._field(bytes(self._line).rstrip(b"\r"), out)
        self._line = bytearray()
        return out

    def _check_event(self) -> None:
        if self._event_bytes + len(self._line) > self._max_event:
            raise _TooLarge(f"an event in the provider's response exceeded {self._max_event} "
                            "bytes (max_event_bytes)")

    def _field(self, line: bytes, out: list[str]) -> None:
        if not self._started:
            self._started = True
            line = line.removeprefix(b"\xef\xbb\xbf")
        if not line:
            if self._data:
                out.append(b"\n".join(self._data).decode("utf-8", "replace"))
            self._data = []
            self._event_bytes = 0
            return
        self._event_bytes += len(line) + 1
        self._check_event()
        name, _, value = line.partition(b":")
        if name == b"data":
            self._data.append(value.removeprefix(b" "))


# --------------------------------------------------------------------------- stream mapping

_Count = Annotated[int, msgspec.Meta(ge=0, le=_MAX_SAFE_INT)]


class _WireFunction(msgspec.Struct, frozen=True):
    name: str | None = None
    arguments: str | None = None


class _WireToolCall(msgspec.Struct, frozen=True):
    index: int = 0
    id: str | None = None
    function: _WireFunction | None = None


class _WireDelta(msgspec.Struct, frozen=True):
    content: str | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    #: vLLM, Ollama and OpenRouter name the reasoning text this way.
    reasoning: str | None = None
    tool_calls: list[_WireToolCall] | None = None


class _WireChoice(msgspec.Struct, frozen=True):
    index: int = 0
    delta: _WireDelta | None = None
    finish_reason: str | None = None


class _WirePromptDetails(msgspec.Struct, frozen=True):
    cached_tokens: _Count | None = None
    cache_write_tokens: _Count | None = None


class _WireCompletionDetails(msgspec.Struct, frozen=True):
    reasoning_tokens: _Count | None = None


class _WireUsage(msgspec.Struct, frozen=True):
    prompt_tokens: _Count = 0
    completion_tokens: _Count = 0
    prompt_cache_hit_tokens: _Count | None = None
    prompt_cache_miss_tokens: _Count | None = None
    prompt_tokens_details: _WirePromptDetails | None = None
    completion_tokens_details: _WireCompletionDetails | None = None


class _WireChunk(msgspec.Struct, frozen=True):
    choices: list[_WireChoice] | None = None
    usage: _WireUsage | None = None


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _decode_chunk(payload: str, request_id: str | None) -> _WireChunk | LlmFailure:
    """One event's JSON as a chunk, or the failure it reports or is."""
    try:
        # The standard parser keeps a lone surrogate escape (``"\\ud83d"``) as text; the
        # provider's text is passed on as it came.
        value = json.loads(payload, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return LlmFailure(message=f"malformed SSE payload: {payload[:120]}",
                          code="MALFORMED_RESPONSE", request_id=request_id or UNSET)
    if isinstance(value, dict) and value.get("error"):
        return _stream_error(value["error"], request_id)
    try:
        return msgspec.convert(value, _WireChunk)
    except msgspec.ValidationError as err:
        return LlmFailure(message=f"malformed SSE payload ({err}): {payload[:120]}",
                          code="MALFORMED_RESPONSE", request_id=request_id or UNSET)


class _ToolCall:
    __slots__ = ("arguments", "id", "index", "name")

    def __init__(self, index: int, call_id: str) -> None:
        self.index = index
        self.id = call_id
        self.name = ""
        self.arguments: list[str] = []


class _Assembler:
    """Turns wire chunks into DSH stream chunks and assembles the blocks."""

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

    def feed(self, chunk: _WireChunk) -> list[StreamChunk]:
        out: list[StreamChunk] = []
        if chunk.usage is not None:
            self._usage = _token_usage(chunk.usage)
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            delta = choice.delta or _NO_DELTA
            reasoning = delta.reasoning_content or delta.reasoning
            if reasoning:
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
                    message="the provider ran out of resources mid-response",
                    code="UNAVAILABLE"))
            case None:
                # Some compatible servers omit finish_reason; judge by what was produced.
                return FinishToolCalls() if self._all_calls else FinishStop()
            case other:
                return FinishError(failure=LlmFailure(
                    message=f"unknown finish reason {other!r}", code="UNKNOWN"))


_NO_DELTA: Final = _WireDelta()


def _first(pair: tuple[int, ContentBlock]) -> int:
    return pair[0]


def _token_usage(usage: _WireUsage) -> TokenUsage:
    """Provider usage → DSH usage: ``input_tokens`` excludes cached input (counts are disjoint).

    Cached input is ``prompt_tokens_details.cached_tokens`` (OpenAI, newer DeepSeek) or
    ``prompt_cache_hit_tokens`` (DeepSeek), as DSH's adapter reads it.
    """
    details = usage.prompt_tokens_details
    cached = details.cached_tokens if details is not None else None
    if cached is None:
        cached = usage.prompt_cache_hit_tokens
    written = details.cache_write_tokens if details is not None else None
    completion_details = usage.completion_tokens_details
    reasoning = completion_details.reasoning_tokens if completion_details is not None else None
    return TokenUsage(
        input_tokens=max(usage.prompt_tokens - (cached or 0) - (written or 0), 0),
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
    if 300 <= status < 400:
        return f"HTTP_{status}"
    return "SERVER" if status >= 500 else "UNKNOWN"


def _retry_after_ms(headers: Mapping[str, str]) -> float | None:
    """``retry-after-ms`` (milliseconds), else ``retry-after`` (seconds or an HTTP date), as a
    positive delay (DSH's rule: a zero, negative or past one is no instruction); one beyond
    what a log holds is kept at its largest safe integer, still far over any cap."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value > 0:
            return min(value, float(_MAX_SAFE_INT))
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
        seconds = date.timestamp() - time.time()
    if not (math.isfinite(seconds) and seconds > 0):
        return None
    return min(seconds * 1000, float(_MAX_SAFE_INT))


def _stream_error(error: object, request_id: str | None) -> LlmFailure:
    """An ``{"error": …}`` event inside the stream, mapped as the SDK reads one."""
    fields = error if isinstance(error, dict) else {}
    message = fields.get("message")
    if not isinstance(message, str) or not message:
        message = "An error occurred during streaming"
    code = fields.get("code")
    return LlmFailure(message=message,
                      code=_failure_code(None, code if isinstance(code, str) else None, message),
                      request_id=request_id or UNSET)


def _read_failure(err: Exception, http_response: Any, request_id: str | None) -> LlmFailure:
    """A failure while the body streamed: the HTTP library's timeout or transport errors.

    The library is the response's own (``httpx`` for the SDK's 1.x line, ``httpx2`` later), so
    its error classes are taken from there.
    """
    library = sys.modules.get(type(http_response).__module__.partition(".")[0])
    timeouts = getattr(library, "TimeoutException", TimeoutError)
    transport = getattr(library, "TransportError", OSError)
    detail = str(err) or type(err).__name__
    if isinstance(err, timeouts | TimeoutError):
        return LlmFailure(message=f"the provider stopped sending: {detail}", code="TIMEOUT",
                          request_id=request_id or UNSET)
    if isinstance(err, transport | OSError) or type(err).__name__ == "EndOfStream":
        return LlmFailure(message=f"the connection broke mid-response: {detail}",
                          code="TRANSPORT", request_id=request_id or UNSET)
    return LlmFailure(message=f"{type(err).__name__}: {detail}", code="UNKNOWN",
                      request_id=request_id or UNSET)


def _status_message(err: Any, message: str, base_url: str) -> str:
    """The SDK's message, with what points at the fix: where a 404 came from, and where a
    redirect would have gone."""
    status = err.status_code
    url = str(err.request.url)
    if 300 <= status < 400:
        location = err.response.headers.get("location") or "(no Location header)"
        return (f"HTTP {status} redirect from {url} to {location}: redirects are not followed "
                "(the conversation would be sent to another URL); use the final URL as the "
                "base URL")
    if status == 404:
        where = f"{message} (HTTP 404 from {err.request.method} {url}"
        path = urlsplit(base_url).path.rstrip("/")
        if not path.endswith("/v1") and "/v1/" not in path + "/":
            where += f"; most OpenAI-compatible servers serve under /v1: try base URL " \
                     f"{base_url.rstrip('/')}/v1"
        return where + ")"
    return message


def _failure(err: Exception, base_url: str, request_id: str | None = None) -> LlmFailure:
    import openai  # noqa: PLC0415 - loaded already: a model exists

    message = str(err) or type(err).__name__
    if isinstance(err, openai.APITimeoutError):
        return LlmFailure(message=message, code="TIMEOUT",
                          request_id=request_id if request_id else UNSET)
    if isinstance(err, openai.APIConnectionError):
        cause = err.__cause__
        detail = f"{message.rstrip('.')}: {cause}" if cause is not None and str(cause) else message
        return LlmFailure(message=detail, code="TRANSPORT",
                          request_id=request_id if request_id else UNSET)
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        retry_after = _retry_after_ms(err.response.headers)
        request_id = err.request_id or request_id
        return LlmFailure(
            message=_status_message(err, message, base_url),
            code=_failure_code(status, err.code, message), status=status,
            provider_retry_after_ms=UNSET if retry_after is None else retry_after,
            request_id=request_id if request_id else UNSET)
    if isinstance(err, openai.APIError):
        return LlmFailure(message=message, code=_failure_code(None, err.code, message),
                          request_id=request_id if request_id else UNSET)
    return LlmFailure(message=f"{type(err).__name__}: {message}", code="UNKNOWN",
                      request_id=request_id if request_id else UNSET)
