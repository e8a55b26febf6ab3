"""ScriptedModel: the embedded, deterministic default model (docs/api-shell-runtime.md). Each
call streams one script entry as a provider adapter would, each chunk an await point so
cancellation can land mid-stream."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from ...core import (
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
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from .base import ModelRequest

__all__ = ["Reply", "ScriptEntry", "ScriptedModel", "ToolCallSpec", "SCRIPT_EXHAUSTED"]

SCRIPT_EXHAUSTED = "SCRIPT_EXHAUSTED"
#: ``(name, args)`` or ``(name, args, call_id)``; args as a dict or raw JSON text.
ToolCallSpec: TypeAlias = (tuple[str, Mapping[str, Any] | str]
                           | tuple[str, Mapping[str, Any] | str, str])


def _arguments(args: Mapping[str, Any] | str) -> str:
    if isinstance(args, str):
        return args
    return json.dumps(dict(args), separators=(",", ":"), ensure_ascii=False)


def _reasoning(text: str | None) -> tuple[ContentBlock, ...]:
    return () if text is None else (ReasoningBlock(text=text),)


def _usage(usage: TokenUsage | tuple[int, int] | None) -> TokenUsage | None:
    if isinstance(usage, tuple):
        return TokenUsage(input_tokens=usage[0], output_tokens=usage[1])
    return usage


@dataclass(frozen=True)
class Reply:
    """One scripted model call (docs/api-shell-runtime.md lists the builders)."""

    blocks: tuple[ContentBlock, ...] = ()
    usage: TokenUsage | None = None
    finish: FinishReason | None = None
    hangs: bool = False
    chunk_size: int = 4

    @staticmethod
    def text(text: str, *, reasoning: str | None = None,
             usage: TokenUsage | tuple[int, int] | None = None) -> Reply:
        return Reply(blocks=(*_reasoning(reasoning), TextBlock(text=text)), usage=_usage(usage))

    @staticmethod
    def tool_call(name: str, args: Mapping[str, Any] | str, *, call_id: str = "",
                  text: str | None = None,
                  usage: TokenUsage | tuple[int, int] | None = None) -> Reply:
        return Reply.tool_calls([(name, args, call_id)], text=text, usage=usage)

    @staticmethod
    def tool_calls(calls: Iterable[ToolCallSpec], *, text: str | None = None,
                   usage: TokenUsage | tuple[int, int] | None = None) -> Reply:
        blocks: list[ContentBlock] = [] if text is None else [TextBlock(text=text)]
        for spec in calls:
            call_id = spec[2] if len(spec) == 3 else ""
            blocks.append(ToolCallBlock(id=call_id, name=spec[0], arguments=_arguments(spec[1])))
        return Reply(blocks=tuple(blocks), usage=_usage(usage))

    @staticmethod
    def max_tokens(text: str = "", *, tool_calls: Iterable[ToolCallSpec] = (),
                   usage: TokenUsage | tuple[int, int] | None = None) -> Reply:
        reply = Reply.tool_calls(tool_calls, text=text or None, usage=usage)
        return replace(reply, finish=FinishMaxTokens())

    @staticmethod
    def error(code: str, message: str, *, text: str | None = None) -> Reply:
        blocks = () if text is None else (TextBlock(text=text),)
        return Reply(blocks=blocks,
                     finish=FinishError(failure=LlmFailure(message=message, code=code)))

    @staticmethod
    def hang(text: str = "", *, reasoning: str | None = None) -> Reply:
        return Reply(blocks=(*_reasoning(reasoning), *((TextBlock(text=text),) if text else ())),
                     hangs=True)


ScriptEntry: TypeAlias = Reply | Callable[[ModelRequest], Reply | Awaitable[Reply]]


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _block_chunks(index: int, block: ContentBlock, size: int, close: bool) -> list[StreamChunk]:
    chunks: list[StreamChunk]
    if isinstance(block, TextBlock):
        chunks = [BlockStart(index=index, block_type="text"),
                  *(TextDelta(index=index, text=p) for p in _pieces(block.text, size))]
    elif isinstance(block, ReasoningBlock):
        chunks = [BlockStart(index=index, block_type="reasoning"),
                  *(ReasoningDelta(index=index, text=p) for p in _pieces(block.text, size))]
    elif isinstance(block, ToolCallBlock):
        chunks = [BlockStart(index=index, block_type="tool-call"),
                  *(ToolCallDelta(index=index, id=block.id, name=block.name, arguments_delta=p)
                    for p in _pieces(block.arguments, size * 4))]
    else:
        raise TypeError(f"a scripted reply cannot stream a {type(block).__name__}")
    return [*chunks, BlockEnd(index=index, block=block)] if close else chunks


def reply_chunks(reply: Reply, call_number: int) -> tuple[list[StreamChunk], bool]:
    """The chunks a reply streams, and whether it then hangs. Pure."""
    blocks = [_with_call_id(block, f"call_{call_number}_{index}")
              for index, block in enumerate(reply.blocks)]
    chunks: list[StreamChunk] = []
    for index, block in enumerate(blocks):
        last = index == len(blocks) - 1
        chunks.extend(_block_chunks(index, block, reply.chunk_size,
                                    close=not (reply.hangs and last)))
    if reply.hangs:
        return chunks, True
    if reply.usage is not None:
        chunks.append(UsageChunk(usage=reply.usage))
    finish = reply.finish
    if finish is None:
        calls = any(isinstance(block, ToolCallBlock) for block in blocks)
        finish = FinishToolCalls() if calls else FinishStop()
    chunks.append(FinishChunk(reason=finish))
    return chunks, False


def _with_call_id(block: ContentBlock, call_id: str) -> ContentBlock:
    if isinstance(block, ToolCallBlock) and not block.id:
        return ToolCallBlock(id=call_id, name=block.name, arguments=block.arguments)
    return block


class ScriptedModel:
    """A deterministic model that plays a script, one entry per call. ``requests`` keeps
    references (O(1) per call); ``record_requests=False`` keeps none, so that disposed fork
    children's messages are not kept alive."""

    def __init__(self, script: Iterable[ScriptEntry] = (), *,
                 record_requests: bool = True) -> None:
        self.script: list[ScriptEntry] = list(script)
        self.record_requests = record_requests
        self.requests: list[ModelRequest] = []
        self.last_request: ModelRequest | None = None
        self._calls = 0

    def add(self, *entries: ScriptEntry) -> None:
        self.script.extend(entries)

    @property
    def calls(self) -> int:
        return self._calls

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        self._calls += 1
        self.last_request = request
        if self.record_requests:
            self.requests.append(request)
        return self._play(request, self._calls)

    async def _play(self, request: ModelRequest, call_number: int,
                    ) -> AsyncIterator[StreamChunk]:
        if call_number > len(self.script):
            failure = LlmFailure(
                code=SCRIPT_EXHAUSTED,
                message=f"scripted model has no reply for call {call_number}: the script "
                        f"holds {len(self.script)} entries")
            yield FinishChunk(reason=FinishError(failure=failure))
            return
        entry = self.script[call_number - 1]
        reply: Any = entry if isinstance(entry, Reply) else entry(request)
        if inspect.isawaitable(reply):
            reply = await reply
        if not isinstance(reply, Reply):
            raise TypeError(f"script entry {call_number} returned {type(reply).__name__}, "
                            "not a Reply")
        chunks, hangs = reply_chunks(reply, call_number)
        for chunk in chunks:
            await asyncio.sleep(0)  # an await point per chunk, like a network stream
            yield chunk
        if hangs:
            await asyncio.get_running_loop().create_future()  # until cancelled
