"""A 200 that is not a stream of server-sent events says what it is: an HTML page or a text
error from the wrong server names its content type and quotes its beginning, and a JSON
completion after a byte-order mark is still told apart; an empty event stream stays DSH's
truncated stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from _openai_calls import error_end, stream_hello

from turnfork.core import (
    LlmFailure,
    StreamChunk,
)


@asynccontextmanager
async def _server(content_type: str, body: bytes) -> AsyncIterator[str]:
    """A loopback server that answers every request 200 with ``body``, then closes."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        await reader.readexactly(length)
        writer.write(f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: "
                     f"{len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.close()
        await server.wait_closed()


def _failure(content_type: str, body: bytes) -> LlmFailure:
    async def main() -> list[StreamChunk]:
        async with _server(content_type, body) as base_url:
            return await stream_hello(base_url)

    return error_end(asyncio.run(asyncio.wait_for(main(), 30)), alone=True).failure


def test_an_html_page_names_its_content_type_and_begins() -> None:
    failure = _failure("text/html; charset=utf-8", b"<!doctype html><title>Sign in</title>")
    assert failure.code == "MALFORMED_RESPONSE"
    assert "answered with text/html; charset=utf-8, not a stream of server-sent events" \
        in failure.message
    assert failure.message.endswith("The body begins: '<!doctype html><title>Sign in</title>'")


def test_a_text_error_names_its_content_type_and_begins() -> None:
    failure = _failure("text/plain", b"model not loaded\n")
    assert failure.code == "MALFORMED_RESPONSE"
    assert failure.message.endswith("The body begins: 'model not loaded\\n'")


def test_a_json_completion_after_a_byte_order_mark_is_still_one() -> None:
    failure = _failure("application/json",
                       b'\xef\xbb\xbf{"object": "chat.completion", "choices": []}')
    assert failure.code == "MALFORMED_RESPONSE"
    assert "answered with one JSON chat.completion object" in failure.message


def test_an_empty_event_stream_is_a_truncated_stream() -> None:
    failure = _failure("text/event-stream", b"")
    assert (failure.code, failure.message) == ("NETWORK", "SSE stream ended without [DONE]")
