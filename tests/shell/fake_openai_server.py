"""A scripted loopback server speaking the OpenAI chat-completions streaming protocol.

Minimal HTTP/1.1 over ``asyncio.start_server`` on 127.0.0.1 with an ephemeral port: one request
per connection, each answered by the next :class:`Reply` of the script, either a JSON error
body or a ``text/event-stream`` of ``data: {...}`` events in a chunked body (or, for a server
that ignores ``"stream": true``, a ``200`` with a JSON body). It records every request it got
(path, headers, raw and decoded JSON body). A reply can end normally, end the body cleanly
without ``[DONE]``, drop the connection mid-body (no terminating chunk), flood the client with
bytes, trickle events forever, or hang until the client goes away. ``port`` set before entering
serves on that port (a test can start the server late, on a port a client already tried).

With ``prefix_cache=True`` the server does a provider's prompt-cache accounting and appends a
usage-only chunk to every streamed reply (see :func:`prompt_bytes`, :func:`cached_tokens`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, Literal

__all__ = ["TOKEN_BYTES", "FakeOpenAI", "Recorded", "Reply", "cached_tokens", "chunk",
           "prompt_bytes", "prompt_tokens", "resolve_to_loopback", "usage_chunk"]

#: The fake's tokenizer: one token per this many bytes of prompt (rounded up; cached: down).
TOKEN_BYTES = 4


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None,
          usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``chat.completion.chunk`` with one choice (index 0)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def usage_chunk(usage: dict[str, Any]) -> dict[str, Any]:
    """The final usage-only chunk that ``include_usage`` asks for (no choices)."""
    return {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
            "model": "test-model", "choices": [], "usage": usage}


@dataclass(frozen=True, kw_only=True)
class Reply:
    """One scripted answer."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    #: SSE payloads for a 200 reply: dicts are sent as JSON, strings verbatim.
    events: tuple[dict[str, Any] | str, ...] = ()
    #: The JSON body of an error reply (with ``status=200``: the whole answer, as JSON).
    body: dict[str, Any] | None = None
    #: Bytes sent verbatim after the events (each item in its own HTTP chunk), before the end.
    tail: tuple[bytes, ...] = ()
    #: ``done``: ``data: [DONE]`` and a clean end; ``eof``: a clean end of the body without
    #: ``[DONE]``; ``drop``: close the socket mid-body; ``hang``: send the events, then wait
    #: until the client closes the connection; ``stall``: send nothing at all (not even
    #: headers) until the client closes; ``flood``: send ``flood`` bytes over and over until
    #: the client closes; ``linger``: send ``data: [DONE]`` but hold the body open (no
    #: terminating chunk) until the client closes; ``trickle``: after the events, one more
    #: event every ``trickle_every`` seconds, never ending, until the client closes.
    end: Literal["done", "eof", "drop", "hang", "stall", "flood", "linger", "trickle"] = "done"
    #: What ``end="flood"`` repeats.
    flood: bytes = b"x" * 65536
    #: Seconds between two events of ``end="trickle"``.
    trickle_every: float = 0.02


@dataclass(frozen=True, kw_only=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    #: The body exactly as it arrived.
    raw: bytes = b""
    #: The server's prompt-cache accounting for it (``prefix_cache=True`` only).
    usage: dict[str, Any] | None = None


def prompt_bytes(body: Any) -> bytes:
    """The prompt of a chat-completions body in the order a provider renders it: the system
    message(s), the tool schemas, then the other messages; each item compact JSON as the SDK
    sends it (``ensure_ascii=False``, no spaces), items joined by a newline.

    Byte order in the HTTP body itself is the SDK's (``messages`` before ``tools``); a
    provider's prefix cache sees the rendered prompt, where the tools come first.
    """
    messages = body.get("messages") or []
    system = [m for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    items = [*system, *(body.get("tools") or []), *rest]
    return b"\n".join(json.dumps(item, ensure_ascii=False, separators=(",", ":"))
                      .encode("utf-8", "surrogatepass") for item in items)


def prompt_tokens(prompt: bytes) -> int:
    """The fake's token count of a prompt: ``ceil(bytes / TOKEN_BYTES)``."""
    return -(-len(prompt) // TOKEN_BYTES)


def _shared_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n  # binary search on the length of the equal prefix: slices compare in C
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def cached_tokens(prompt: bytes, earlier: list[bytes]) -> int:
    """The fake's prompt cache: the longest byte prefix ``prompt`` shares with any earlier
    prompt, in whole tokens (``floor(bytes / TOKEN_BYTES)``), as a provider's prefix cache
    bills a hit."""
    return max((_shared_prefix(prompt, other) for other in earlier), default=0) // TOKEN_BYTES


@contextlib.contextmanager
def resolve_to_loopback(*hosts: str) -> Iterator[None]:
    """While active, name resolution sends ``hosts`` to 127.0.0.1 (so a test can reach the
    fake server under a provider's real host name)."""
    original = socket.getaddrinfo
    names = {h.lower() for h in hosts}

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
        if isinstance(name, str) and name.lower() in names:
            host = "127.0.0.1"
        return original(host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo
    try:
        yield
    finally:
        socket.getaddrinfo = original


@dataclass
class FakeOpenAI:
    """Serve ``replies`` in order; use as ``async with FakeOpenAI([...]) as server``."""

    replies: list[Reply]
    requests: list[Recorded] = field(default_factory=list)
    #: Report a prompt cache in a usage chunk appended to every streamed reply.
    prefix_cache: bool = False
    #: Set when a ``hang`` reply has sent its events.
    hanging: asyncio.Event = field(default_factory=asyncio.Event)
    #: Set when the client closed a connection the server was holding open.
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    port: int = 0
    _script: deque[Reply] = field(default_factory=deque)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def url_for(self, host: str) -> str:
        """This server's base URL under another host name (see :func:`resolve_to_loopback`)."""
        return f"http://{host}:{self.port}/v1"

    async def __aenter__(self) -> FakeOpenAI:
        self._script = deque(self.replies)
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        # Cancelled on exit while it still serves (a trickle, say): that is its end, not an
        # error for asyncio's server callback to report.
        with contextlib.suppress(asyncio.CancelledError):
            await self._serve(reader, writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *header_lines = head.decode("latin-1").split("\r\n")
            method, path, _ = request_line.split(" ", 2)
            headers = {}
            for line in header_lines:
                if line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            raw = await reader.readexactly(int(headers.get("content-length", "0")))
            body = json.loads(raw) if raw else None
            usage = self._account(body) if self.prefix_cache and isinstance(body, dict) else None
            self.requests.append(Recorded(method=method, path=path, headers=headers,
                                          body=body, raw=raw, usage=usage))
            reply = self._script.popleft() if self._script else Reply(
                status=500, body={"error": {"message": "fake server: script exhausted"}})
            if usage is not None:
                reply = replace(reply, events=(*reply.events, usage_chunk(usage)))
            await self._answer(reply, reader, writer)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    def _account(self, body: dict[str, Any]) -> dict[str, Any]:
        """DeepSeek-shaped usage (both spellings of the cached count) for this prompt."""
        prompt = prompt_bytes(body)
        earlier = [prompt_bytes(r.body) for r in self.requests if isinstance(r.body, dict)]
        total = prompt_tokens(prompt)
        hit = min(cached_tokens(prompt, earlier), total)
        return {"prompt_tokens": total, "completion_tokens": 1, "total_tokens": total + 1,
                "prompt_cache_hit_tokens": hit, "prompt_cache_miss_tokens": total - hit,
                "prompt_tokens_details": {"cached_tokens": hit}}

    async def _answer(self, reply: Reply, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        if reply.end == "stall":
            await self._hold(reader)
            return
        extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers)
        if reply.status != 200 or reply.body is not None:
            payload = json.dumps(reply.body or {}).encode()
            writer.write(
                f"HTTP/1.1 {reply.status} Scripted\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n{extra}\r\n".encode()
                + payload)
            await writer.drain()
            return
        writer.write(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            f"Transfer-Encoding: chunked\r\nConnection: close\r\n{extra}\r\n".encode())
        for event in reply.events:
            data = event if isinstance(event, str) else json.dumps(event)
            self._write_chunk(writer, f"data: {data}\n\n".encode("utf-8", "surrogatepass"))
            await writer.drain()
        for piece in reply.tail:
            self._write_chunk(writer, piece)
            await writer.drain()
        if reply.end == "eof":
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return
        if reply.end == "flood":
            with contextlib.suppress(ConnectionError):
                while not writer.is_closing():
                    self._write_chunk(writer, reply.flood)
                    await writer.drain()
            self.disconnected.set()
            return
        if reply.end == "drop":
            writer.transport.abort()
            return
        if reply.end == "trickle":
            with contextlib.suppress(ConnectionError):
                while not writer.is_closing():
                    await asyncio.sleep(reply.trickle_every)
                    self._write_chunk(writer, f"data: {json.dumps(chunk({'content': '.'}))}\n\n"
                                      .encode())
                    await writer.drain()
            self.disconnected.set()
            return
        if reply.end == "hang":
            await self._hold(reader)
            return
        self._write_chunk(writer, b"data: [DONE]\n\n")
        if reply.end == "linger":
            await writer.drain()
            await self._hold(reader)
            return
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def _hold(self, reader: asyncio.StreamReader) -> None:
        self.hanging.set()
        await reader.read()  # EOF: the client closed its end
        self.disconnected.set()

    @staticmethod
    def _write_chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
