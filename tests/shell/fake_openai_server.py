"""A scripted loopback server speaking the OpenAI chat-completions streaming protocol.

Minimal HTTP/1.1 over ``asyncio.start_server`` on 127.0.0.1 with an ephemeral port: one request
per connection, each answered by the next :class:`Reply` of the script, either a JSON error
body or a ``text/event-stream`` of ``data: {...}`` events in a chunked body. It records every
request it got (path, headers, decoded JSON body). A reply can end normally, drop the
connection mid-body (no terminating chunk), or hang until the client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

__all__ = ["FakeOpenAI", "Recorded", "Reply", "chunk", "usage_chunk"]


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
    #: The JSON body of an error reply.
    body: dict[str, Any] | None = None
    #: ``done``: ``data: [DONE]`` and a clean end; ``drop``: close the socket mid-body;
    #: ``hang``: send the events, then wait until the client closes the connection;
    #: ``stall``: send nothing at all (not even headers) until the client closes.
    end: Literal["done", "drop", "hang", "stall"] = "done"


@dataclass(frozen=True, kw_only=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeOpenAI:
    """Serve ``replies`` in order; use as ``async with FakeOpenAI([...]) as server``."""

    replies: list[Reply]
    requests: list[Recorded] = field(default_factory=list)
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

    async def __aenter__(self) -> FakeOpenAI:
        self._script = deque(self.replies)
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
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
            self.requests.append(Recorded(method=method, path=path, headers=headers,
                                          body=json.loads(raw) if raw else None))
            reply = self._script.popleft() if self._script else Reply(
                status=500, body={"error": {"message": "fake server: script exhausted"}})
            await self._answer(reply, reader, writer)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _answer(self, reply: Reply, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        if reply.end == "stall":
            await self._hold(reader)
            return
        extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers)
        if reply.status != 200:
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
            self._write_chunk(writer, f"data: {data}\n\n".encode())
            await writer.drain()
        if reply.end == "drop":
            writer.transport.abort()
            return
        if reply.end == "hang":
            await self._hold(reader)
            return
        self._write_chunk(writer, b"data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def _hold(self, reader: asyncio.StreamReader) -> None:
        self.hanging.set()
        await reader.read()  # EOF: the client closed its end
        self.disconnected.set()

    @staticmethod
    def _write_chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
