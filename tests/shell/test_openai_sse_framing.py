"""The model's own server-sent-event reader frames events as the SSE spec says (DSH: llm-deepseek
sse.spec: chunk reassembly, CRLF, BOM, comments, multi-line data, unterminated tail)."""

from __future__ import annotations

import asyncio
import json

import pytest
from fake_openai_server import FakeOpenAI, Reply, chunk

from turnfork.core import (
    BlockEnd,
    FinishChunk,
    FinishStop,
    LlmCallConfig,
    MessageSource,
    StreamChunk,
    TextBlock,
    UserMessage,
)
from turnfork.shell.models.base import ModelRequest
from turnfork.shell.models.openai_chat import OpenAIChatModel, _EventReader

REQUEST = ModelRequest(config=LlmCallConfig(provider="deepseek", model="m"), system=None,
                       tools=(), messages=(UserMessage(content=(TextBlock(text="hi"),),
                                                       source=MessageSource(kind="user"),
                                                       id="u1"),))
HELLO = json.dumps(chunk({"content": "Hello"}))
STOP = json.dumps(chunk({"content": " world"}, finish="stop"))

#: One body, many framings: the same two events and [DONE].
FRAMINGS: dict[str, bytes] = {
    "LF": f"data: {HELLO}\n\ndata: {STOP}\n\ndata: [DONE]\n\n".encode(),
    "CRLF": f"data: {HELLO}\r\n\r\ndata: {STOP}\r\n\r\ndata: [DONE]\r\n\r\n".encode(),
    "CR": f"data: {HELLO}\r\rdata: {STOP}\r\rdata: [DONE]\r\r".encode(),
    "BOM, comments, other fields": (
        f"\ufeff: keep-alive\n\nid: 1\nevent: message\nretry: 10\ndata: {HELLO}\n\n"
        f":ping\ndata:{STOP}\n\ndata: [DONE]\n\n").encode(),
    "data over several lines": (
        "data: " + HELLO.replace(", ", ",\ndata: ") + "\n\n"
        f"data: {STOP}\n\ndata: [DONE]\n\n").encode(),
}


def _read(body: bytes, pieces: list[int]) -> list[str]:
    reader = _EventReader(1 << 20, 1 << 16)
    out: list[str] = []
    start = 0
    for end in [*pieces, len(body)]:
        out.extend(reader.feed(body[start:end]))
        start = end
    return [*out, *reader.finish()]


@pytest.mark.parametrize("name", list(FRAMINGS))
def test_every_split_of_the_body_gives_the_same_events(name: str) -> None:
    """Ensures that the events are the same wherever the reads split the bytes."""
    body = FRAMINGS[name]
    expected = [json.loads(HELLO), json.loads(STOP), "[DONE]"]
    for cut in range(len(body) + 1):
        events = _read(body, [cut])
        assert [e if e == "[DONE]" else json.loads(e) for e in events] == expected, cut
    assert len(_read(body, list(range(1, len(body))))) == 3  # one byte per read


def test_an_event_without_its_blank_line_is_not_dispatched() -> None:
    """Ensures that a data line not yet ended by a blank line stays pending."""
    reader = _EventReader(1 << 20, 1 << 16)
    assert reader.feed(b"data: [DONE]\n") == []
    assert reader.feed(b"\n") == ["[DONE]"]


@pytest.mark.parametrize("name", list(FRAMINGS))
def test_framings_on_the_wire_give_one_answer(name: str) -> None:
    """Ensures that each framing, sent one HTTP chunk per byte run, is a complete answer."""
    body = FRAMINGS[name]
    pieces = tuple(body[i:i + 7] for i in range(0, len(body), 7))

    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([Reply(tail=pieces, end="eof")]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            return [c async for c in model.stream(REQUEST)]

    chunks = asyncio.run(main())
    assert chunks[-2:] == [BlockEnd(index=0, block=TextBlock(text="Hello world")),
                           FinishChunk(reason=FinishStop())]


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    """Ensures that invalid UTF-8 in an event becomes U+FFFD, as a TextDecoder does in DSH."""
    event = b'data: {"choices": [{"index": 0, "delta": {"content": "a\xffb"}, ' \
            b'"finish_reason": "stop"}]}\n\n'

    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([Reply(tail=(event,))]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=5.0) as model:
            return [c async for c in model.stream(REQUEST)]

    chunks = asyncio.run(main())
    assert BlockEnd(index=0, block=TextBlock(text="a\ufffdb")) in chunks
