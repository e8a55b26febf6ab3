"""A model for an OpenAI-compatible chat-completions endpoint (contract: docs/api-shell-runtime.md).

The body and the events are the core's (``wire_seed.chat_request``, ``machine.chat_stream``);
this is the transport. The SDK's own reader is not used: it has no size limit and cannot tell a
truncated stream from a finished one.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import ipaddress
import os
import sys
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, aclosing
from dataclasses import KW_ONLY, dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import urlsplit

import msgspec
from msgspec import UNSET
from returns.result import Failure

from ...core import FinishChunk, FinishError, LlmFailure, StreamChunk
from ...core.machine import (
    TRUNCATED_STREAM_TEXT,
    chat_body_failure,
    chat_failure_code,
    chat_status_failure,
    chat_stream,
    chat_stream_end,
    chat_stream_event,
)
from ...core.wire_seed import chat_request
from .base import ModelRequest

if TYPE_CHECKING:
    import openai

__all__ = ["DEEPSEEK_BASE_URL", "DEFAULT_MAX_EVENT_BYTES", "DEFAULT_MAX_RESPONSE_BYTES",
           "DEFAULT_STREAM_DEADLINE", "KEYLESS_PLACEHOLDER", "MissingCredentialError",
           "OpenAIChatModel", "chat_request_body", "credential_env_var", "has_credentials",
           "is_local_endpoint"]

DEEPSEEK_BASE_URL: Final = "https://api.deepseek.com"
#: A 256k-token answer streamed one token per event is about 64 MiB of SSE; four times that.
DEFAULT_MAX_RESPONSE_BYTES: Final = 256 * 1024 * 1024
#: A whole tool call's arguments may come in one event.
DEFAULT_MAX_EVENT_BYTES: Final = 16 * 1024 * 1024
KEYLESS_PLACEHOLDER: Final = "turnfork-keyless-placeholder-never-sent"
#: 64k reasoning tokens at 20 a second take under an hour.
DEFAULT_STREAM_DEADLINE: Final = 3600.0

T = TypeVar("T")

_DRAIN_BYTES: Final = 64 * 1024
_DRAIN_SECONDS: Final = 0.1
#: What is read of the body of an error status (the SDK would read it whole, into the message).
_ERROR_BODY_BYTES: Final = 64 * 1024
#: What of an error body cut at ``_ERROR_BODY_BYTES`` the failure's message quotes.
_ERROR_EXCERPT_CHARS: Final = 2000
_CUT: Final = "turnfork.error_body_cut"
#: What of a body that is no event stream is kept to name it (bytes, then characters).
_HEAD_BYTES: Final = 1024
_HEAD_CHARS: Final = 200


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
    """Whether ``base_url`` is on this machine's loopback interface (no key needed).

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
    """Whether an :class:`OpenAIChatModel` for ``base_url`` can be built (an explicit
    ``api_key``, ``""`` included, always counts).

    >>> has_credentials(environ={"DEEPSEEK_API_KEY": "sk-1"})
    True
    >>> has_credentials("https://api.openai.com/v1", environ={"DEEPSEEK_API_KEY": "sk-1"})
    False
    >>> has_credentials("http://127.0.0.1:11434/v1", environ={})
    True
    """
    return _resolve_key(base_url, api_key, os.environ if environ is None else environ) is not None


@dataclass(eq=False, repr=False)
class OpenAIChatModel(AbstractAsyncContextManager["OpenAIChatModel"]):
    """Streams chat completions as DSH stream chunks (arguments and errors:
    docs/api-shell-runtime.md). ``max_retries`` stays 0: SDK retries are invisible to the
    route's logged policy and multiply its budget. A given ``client`` decides its own key."""

    model: str = "deepseek-chat"
    _: KW_ONLY
    base_url: str = DEEPSEEK_BASE_URL
    #: The key (``""``: none): the one given, else the environment's (unused with a ``client``).
    api_key: str | None = None
    provider_name: str = "deepseek"
    max_retries: int = 0
    #: Seconds for connecting and for each read (``None``: no bound).
    timeout: float | None = 60.0
    #: The SDK client: the one given, else the one built on the first call.
    client: openai.AsyncOpenAI | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    stream_deadline: float | None = DEFAULT_STREAM_DEADLINE

    def __post_init__(self) -> None:
        for name in ("max_response_bytes", "max_event_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive number of bytes, not {value!r}")
        timeout = self.timeout
        if timeout is not None and (isinstance(timeout, bool)
                                    or not isinstance(timeout, int | float) or not timeout > 0):
            raise ValueError("timeout must be a positive number of seconds or None, "
                             f"not {timeout!r}")
        deadline = self.stream_deadline
        if deadline is not None and (isinstance(deadline, bool)
                                     or not isinstance(deadline, int | float) or not deadline > 0):
            raise ValueError("stream_deadline must be a positive number of seconds or None, "
                             f"not {deadline!r}")
        self.sends_key = True
        self._owns_client = self.client is None
        self._headers: dict[str, Any] = {}
        self._building = asyncio.Lock()
        if self.client is not None:
            return
        problem = _base_url_problem(self.base_url)
        if problem is not None:
            raise ValueError(problem)
        self.api_key = _resolve_key(self.base_url, self.api_key, os.environ)
        if self.api_key is None:
            raise MissingCredentialError(credential_env_var(self.base_url), self.base_url)
        if importlib.util.find_spec("openai") is None:
            raise ImportError(
                "OpenAIChatModel needs the openai package: pip install 'turnfork[openai]'")
        self.sends_key = bool(self.api_key)

    def _build_client(self) -> tuple[openai.AsyncOpenAI, dict[str, Any]]:
        """The SDK client and every request's headers; in a worker thread (a slow import)."""
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
        http_client = openai.DefaultAsyncHttpxClient(
            follow_redirects=False, event_hooks={"response": [_bound_error_body]})
        client = openai.AsyncOpenAI(api_key=self.api_key or KEYLESS_PLACEHOLDER,
                                    base_url=self.base_url, max_retries=self.max_retries,
                                    timeout=self.timeout, http_client=http_client)
        return client, headers

    async def _ready_client(self) -> openai.AsyncOpenAI:
        if self.client is None:
            async with self._building:  # two first calls at once build one client
                if self.client is None:
                    client, self._headers = await asyncio.to_thread(self._build_client)
                    self.client = client
        return self.client

    async def aclose(self) -> None:
        """Close the HTTP client this model created (not one it was given). Idempotent."""
        if self._owns_client and self.client is not None:
            await self.client.close()

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        options = chat_request_body(request, self.model)
        del options["stream"]  # passed as a literal: it picks the SDK's streaming overload
        try:
            client = await self._ready_client()
        except Exception as err:  # an SDK that does not load: say why, end the call
            yield _finish(LlmFailure(
                message=f"the openai SDK could not be loaded: {type(err).__name__}: {err}",
                code="UNKNOWN"))
            return
        # The deadline is the provider's: it starts with the request, not with the SDK's load.
        loop = asyncio.get_running_loop()
        deadline = None if self.stream_deadline is None else loop.time() + self.stream_deadline
        if self._headers:
            options["extra_headers"] = self._headers
        async with AsyncExitStack() as stack:
            try:
                response = await self._bounded(stack.enter_async_context(
                    client.chat.completions.with_streaming_response.create(
                        stream=True, **options)), deadline)
            except Exception as err:  # the SDK's errors, httpx's, a bad body: all provider-side
                yield _finish(_failure(err, self.base_url, timeout=self.timeout))
                return
            async with aclosing(self._translate(response.http_response, deadline)) as chunks:
                async for out in chunks:
                    yield out

    async def _bounded(self, awaitable: Awaitable[T], deadline: float | None) -> T:
        """``awaitable``'s result, ending the call once past ``deadline``."""
        bound = asyncio.timeout_at(deadline)
        try:
            async with bound:
                return await awaitable
        except TimeoutError:
            if bound.expired():
                raise _Ended(LlmFailure(
                    message=f"the provider's response took longer than "
                            f"{self.stream_deadline:g} s (stream_deadline)",
                    code="TIMEOUT")) from None
            raise

    async def _translate(self, http_response: Any,
                         deadline: float | None) -> AsyncGenerator[StreamChunk, None]:
        state = chat_stream(uuid.uuid4().hex[:20])
        # Closed with the call, a failed one too: not left to the garbage collector.
        async with aclosing(http_response.aiter_bytes()) as body:
            failure: LlmFailure | None = None
            try:
                async with aclosing(self._payloads(
                        body, deadline, str(http_response.url),
                        http_response.headers.get("content-type", ""))) as payloads:
                    async for payload in payloads:
                        if payload.startswith("[DONE]"):
                            break
                        fed = chat_stream_event(state, payload)
                        if isinstance(fed, Failure):
                            failure = fed.failure()
                            break
                        state, chunks = fed.unwrap()
                        for out in chunks:
                            yield out
                    else:
                        failure = LlmFailure(message=TRUNCATED_STREAM_TEXT, code="NETWORK")
            except Exception as err:  # the body broke off, or cannot be read on
                failure = _failure(err, self.base_url, http_response, timeout=self.timeout)
            if failure is not None:
                request_id = _request_id(http_response.headers) or UNSET
                yield _finish(msgspec.structs.replace(failure, request_id=request_id))
                return
            await _drain(body)
            for out in chat_stream_end(state):
                yield out

    async def _payloads(self, body: AsyncIterator[bytes], deadline: float | None, url: str,
                        content_type: str) -> AsyncGenerator[str, None]:
        """The body's events' data; a body that is JSON (a server that ignored ``"stream":
        true``) ends the call, named by its first 64 KiB; one of no event whose content type
        is not an event stream's (a web page, a text error) ends it, named by its type and
        its beginning."""
        events = _EventReader(self.max_response_bytes, self.max_event_bytes)
        head = b""
        streamed = False
        while (data := await self._bounded(anext(body, None), deadline)) is not None:
            if not head.strip():
                head += data[:_HEAD_BYTES]
                # An event stream never starts with JSON (a byte-order mark may precede it).
                if head.lstrip().removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{"):
                    whole = bytearray(data)
                    while len(whole) < _DRAIN_BYTES and (
                            more := await self._bounded(anext(body, None), deadline)) is not None:
                        whole += more
                    raise _Ended(chat_body_failure(bytes(whole[:_DRAIN_BYTES]), url))
            for payload in events.feed(data):
                streamed = True
                yield payload
        for payload in events.finish():
            streamed = True
            yield payload
        if not streamed and head.strip() and "event-stream" not in content_type.lower():
            begins = head.decode("utf-8", "replace")[:_HEAD_CHARS]
            raise _Ended(LlmFailure(
                message=f"the server at {url} answered with {content_type or 'no content type'}"
                        ", not a stream of server-sent events: is the base URL an "
                        f"OpenAI-compatible endpoint? The body begins: {begins!r}",
                code="MALFORMED_RESPONSE"))


@functools.cache
def _bounded_stream_type(library: Any) -> type:
    """An ``AsyncByteStream`` of ``library`` (the SDK's HTTP library) that ends after
    ``_ERROR_BODY_BYTES``, noting a cut in its response's extensions (the library replaces a
    read response's stream)."""

    class BoundedBody(library.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, stream: Any, extensions: dict[str, Any]) -> None:
            self.stream = stream
            self.extensions = extensions

        async def __aiter__(self) -> AsyncIterator[bytes]:
            left = _ERROR_BODY_BYTES
            async for data in self.stream:
                piece = data[:left]
                left -= len(piece)
                if piece:
                    yield piece
                if len(piece) < len(data):
                    self.extensions[_CUT] = True
                    return

        async def aclose(self) -> None:
            await self.stream.aclose()

    return BoundedBody


async def _bound_error_body(response: Any) -> None:
    """The response hook: an error status's body, which the SDK reads whole into its message,
    is read to ``_ERROR_BODY_BYTES`` at most (a hostile server could send gigabytes)."""
    if response.status_code >= 300:
        library = sys.modules[type(response).__module__.partition(".")[0]]
        response.stream = _bounded_stream_type(library)(response.stream, response.extensions)


def _error_body_cut(err: Any) -> str | None:
    """The excerpt of the error body ``_bound_error_body`` cut, if it cut one."""
    response = err.response
    if not response.extensions.get(_CUT):
        return None
    body: bytes = response.content
    return body.decode("utf-8", "replace")[:_ERROR_EXCERPT_CHARS]


def _request_id(headers: Mapping[str, str]) -> str | None:
    """The provider's id of a request, as DSH's adapter reads it (DeepSeek names its own)."""
    return headers.get("x-request-id") or headers.get("x-deepseek-request-id") or None


def _finish(failure: LlmFailure) -> FinishChunk:
    return FinishChunk(reason=FinishError(failure=failure))


class _Ended(Exception):
    """The body cannot be read on: ``failure`` ends the call."""

    def __init__(self, failure: LlmFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


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


def chat_request_body(request: ModelRequest, model: str) -> dict[str, Any]:
    """The body :class:`OpenAIChatModel` sends for ``request`` (``wire_seed.chat_request``'s)."""
    return chat_request(request.config, request.system, request.tools, request.messages, model)


class _EventReader:
    """Server-sent events' ``data``, in memory within ``max_event_bytes`` plus one read (a line
    is buffered only up to the cap); an event still open at EOF is dropped (no ``[DONE]``)."""

    __slots__ = ("_after_cr", "_data", "_event_bytes", "_line", "_max_event", "_max_total",
                 "_started", "_total")

    def __init__(self, max_total: int, max_event: int) -> None:
        self._max_total = max_total
        self._max_event = max_event
        self._total = 0
        self._line = bytearray()
        self._data: list[bytes] = []
        self._event_bytes = 0
        self._started = False
        #: The last read ended in a CR: a LF first in the next one completes its CRLF.
        self._after_cr = False

    def feed(self, data: bytes) -> list[str]:
        self._total += len(data)
        if self._total > self._max_total:
            raise _Ended(LlmFailure(message=f"the provider's response exceeded "
                                            f"{self._max_total} bytes (max_response_bytes)",
                                    code="RESPONSE_TOO_LARGE"))
        if self._after_cr and data:
            self._after_cr = False
            data = data.removeprefix(b"\n")
        if b"\n" not in data and b"\r" not in data:  # the common case of a long line
            self._line += data
            self._check_event()
            return []
        lines = (bytes(self._line) + data).splitlines(keepends=True)
        last = lines[-1]
        # A line ended by a lone CR is a line now (a server may send nothing more for long).
        pending = b""
        if not last.endswith((b"\n", b"\r")):
            pending = lines.pop()
        self._after_cr = last.endswith(b"\r")
        out: list[str] = []
        for line in lines:
            self._field(line.rstrip(b"\r\n"), out)
        self._line = bytearray(pending)
        self._check_event()
        return out

    def finish(self) -> list[str]:
        """At the end of the body: nothing more (every ended line was read as it came; an
        unterminated one belongs to an event still open)."""
        return []

    def _check_event(self) -> None:
        if self._event_bytes + len(self._line) > self._max_event:
            raise _Ended(LlmFailure(message=f"an event in the provider's response exceeded "
                                            f"{self._max_event} bytes (max_event_bytes)",
                                    code="RESPONSE_TOO_LARGE"))

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


def _failure(err: Exception, base_url: str, http_response: Any = None, *,
             timeout: float | None = None) -> LlmFailure:
    """The failure that ``err`` ends the call with: the SDK's errors while the request opens,
    then, with ``http_response``, its body's own HTTP library's (``httpx`` for the SDK's 1.x
    line, ``httpx2`` later) while the body streams."""
    import openai  # noqa: PLC0415 - loaded already: a model exists

    if isinstance(err, _Ended):
        return err.failure
    message = str(err) or type(err).__name__
    waited = "" if timeout is None else f"nothing within {timeout:g} s (timeout)"
    if isinstance(err, openai.APITimeoutError):
        return LlmFailure(message=f"{message.rstrip('.')}: {waited}" if waited else message,
                          code="TIMEOUT")
    if isinstance(err, openai.APIConnectionError):
        cause = err.__cause__
        detail = f"{message.rstrip('.')}: {cause}" if cause is not None and str(cause) else message
        # Where it was going: a wrong host or port in the base URL shows here.
        detail += f" ({err.request.method} {err.request.url})"
        return LlmFailure(message=detail, code="TRANSPORT")
    if isinstance(err, openai.APIStatusError):
        excerpt = _error_body_cut(err)
        if excerpt is not None:
            message = (f"{message} (its body exceeded {_ERROR_BODY_BYTES} bytes and was not "
                       f"read on; it begins: {excerpt})")
        return chat_status_failure(
            err.status_code, err.code, message, method=err.request.method,
            url=str(err.request.url), headers=err.response.headers, base_url=base_url,
            now=time.time(), request_id=err.request_id or _request_id(err.response.headers))
    if isinstance(err, openai.APIError):
        return LlmFailure(message=message, code=chat_failure_code(None, err.code, message))
    if http_response is not None:
        library = sys.modules.get(type(http_response).__module__.partition(".")[0])
        timeouts = getattr(library, "TimeoutException", TimeoutError)
        transport = getattr(library, "TransportError", OSError)
        if isinstance(err, timeouts | TimeoutError):
            return LlmFailure(message=f"the provider stopped sending: {waited or message}",
                              code="TIMEOUT")
        if isinstance(err, transport | OSError) or type(err).__name__ == "EndOfStream":
            return LlmFailure(message=f"the connection broke mid-response: {message}",
                              code="TRANSPORT")
    return LlmFailure(message=f"{type(err).__name__}: {message}", code="UNKNOWN")
