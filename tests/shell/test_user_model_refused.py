"""A connection that cannot be made names where it was going: the request's method and URL,
so a wrong port or host in the base URL is visible in the failure."""

from __future__ import annotations

import asyncio
import socket

from _openai_calls import error_end, stream_hello


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port  # closed again: nothing listens there


def test_a_refused_connection_names_the_url() -> None:
    port = _free_port()

    chunks = asyncio.run(asyncio.wait_for(stream_hello(f"http://127.0.0.1:{port}/v1"), 30))
    failure = error_end(chunks, alone=True).failure
    assert failure.code == "TRANSPORT"
    assert failure.message.endswith(f" (POST http://127.0.0.1:{port}/v1/chat/completions)")
