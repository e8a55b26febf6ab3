"""A line ended by a lone CR (the SSE spec allows it) is a line as soon as it arrives: an event
framed so is dispatched at once, so a server that holds its body open after ``data: [DONE]``
gives its answer instead of a timeout; a CRLF split across two reads is still one line end."""

from __future__ import annotations

import asyncio
import json

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

REQUEST = ModelRequest(config=LlmCallConfig(provider="p", model="m"), system=None, tools=(),
                       messages=(UserMessage(content=(TextBlock(text="hi"),),
                                             source=MessageSource(kind="user"), id="u1"),))


def test_an_event_ended_by_lone_crs_is_dispatched_in_its_read() -> None:
    reader = _EventReader(1 << 20, 1 << 16)
    assert reader.feed(b"data: [DONE]\r\r") == ["[DONE]"]


def test_a_crlf_split_across_reads_ends_one_line() -> None:
    reader = _EventReader(1 << 20, 1 << 16)
    assert reader.feed(b"data: a\r") == []
    assert reader.feed(b"\ndata: b\r") == []
    assert reader.feed(b"\n\r") == ["a\nb"]
    assert reader.feed(b"\n") == []


def test_a_cr_framed_answer_held_open_after_done_is_complete() -> None:
    answer = json.dumps(chunk({"content": "Hello"}, finish="stop"))
    reply = Reply(tail=(f"data: {answer}\r\r".encode(), b"data: [DONE]\r\r"), end="hang")

    async def main() -> list[StreamChunk]:
        async with FakeOpenAI([reply]) as server, OpenAIChatModel(
                base_url=server.base_url, api_key="k", timeout=2.0) as model:
            return [c async for c in model.stream(REQUEST)]

    chunks = asyncio.run(asyncio.wait_for(main(), 30))
    assert chunks[-2:] == [BlockEnd(index=0, block=TextBlock(text="Hello")),
                           FinishChunk(reason=FinishStop())]
