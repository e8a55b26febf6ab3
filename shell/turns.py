"""Pure decisions of the agent loop: what a model call's chunks assemble into, what an
interrupted stream leaves, which tool calls start together, which ``request/header`` reason
applies, and how inputs and failures are shaped. No I/O, no asyncio: the loop in
:mod:`shell.agent` only carries these out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ..core import (
    BlockEnd,
    BlockStart,
    ContentBlock,
    FinishChunk,
    FinishReason,
    LlmFailure,
    MessageSource,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    UserMessage,
)

__all__ = [
    "StreamState",
    "Prompt",
    "assembled_content",
    "interrupted_content",
    "model_source",
    "start_groups",
    "parse_arguments",
    "header_reason",
    "user_message",
    "failure_of",
]

T = TypeVar("T")
Prompt = str | Sequence[ContentBlock] | UserMessage


@dataclass
class StreamState:
    """What one model call has streamed so far (the loop's only mutable turn state)."""

    turn: int
    step: int
    chunk_seqs: list[int] = field(default_factory=list)
    #: Block indices in first-seen order.
    order: list[int] = field(default_factory=list)
    #: Assembled blocks from ``block-end``.
    ended: dict[int, ContentBlock] = field(default_factory=dict)
    #: Text/reasoning deltas of blocks still open: index -> (kind, pieces).
    deltas: dict[int, tuple[str, list[str]]] = field(default_factory=dict)
    usage: TokenUsage | None = None
    finish: FinishChunk | None = None

    def add(self, seq: int, chunk: StreamChunk) -> None:
        self.chunk_seqs.append(seq)
        if isinstance(chunk, FinishChunk):
            self.finish = chunk
            return
        if isinstance(chunk, UsageChunk):
            self.usage = chunk.usage
            return
        index = chunk.index
        if index not in self.deltas and index not in self.ended:
            self.order.append(index)
            self.deltas[index] = ("", [])
        if isinstance(chunk, BlockStart):
            self.deltas[index] = (chunk.block_type, self.deltas[index][1])
        elif isinstance(chunk, TextDelta | ReasoningDelta):
            kind = "text" if isinstance(chunk, TextDelta) else "reasoning"
            self.deltas.setdefault(index, (kind, []))[1].append(chunk.text)
        elif isinstance(chunk, BlockEnd):
            self.ended[index] = chunk.block
        elif isinstance(chunk, ToolCallDelta):
            pass  # the assembled call arrives with block-end

    @property
    def finish_reason(self) -> FinishReason | None:
        return None if self.finish is None else self.finish.reason


def assembled_content(state: StreamState, *, drop_tool_calls: bool,
                      ) -> tuple[tuple[ContentBlock, ...], Raw | UnsetType]:
    """The blocks of a finished call in first-seen order (from ``block-end``), and its replay
    state; on max-tokens every tool call is dropped, with its ``replayState.blocks`` entry."""
    kept: list[ContentBlock] = []
    keep_flags: list[bool] = []
    for index in state.order:
        block = state.ended.get(index)
        if block is None:
            continue
        keep = not (drop_tool_calls and isinstance(block, ToolCallBlock))
        keep_flags.append(keep)
        if keep:
            kept.append(block)
    replay = UNSET if state.finish is None else state.finish.replay_state
    if isinstance(replay, Raw) and drop_tool_calls and not all(keep_flags):
        replay = _filter_replay_blocks(replay, keep_flags)
    return tuple(kept), replay


def _filter_replay_blocks(replay: Raw, keep_flags: list[bool]) -> Raw:
    envelope = msgspec.json.decode(replay)
    blocks = envelope.get("blocks") if isinstance(envelope, dict) else None
    if not isinstance(blocks, list) or len(blocks) != len(keep_flags):
        return replay  # adapter-private shape we cannot align: keep it verbatim
    envelope["blocks"] = [b for b, keep in zip(blocks, keep_flags, strict=True) if keep]
    return Raw(msgspec.json.encode(envelope))


def interrupted_content(state: StreamState) -> tuple[ContentBlock, ...]:
    """What a cancelled stream delivered (§2.6): text and reasoning blocks with non-whitespace
    text, in first-seen order; tool calls are left out."""
    blocks: list[ContentBlock] = []
    for index in state.order:
        block = state.ended.get(index)
        if block is None:
            kind, pieces = state.deltas.get(index, ("", []))
            text = "".join(pieces)
            if kind == "text":
                block = TextBlock(text=text)
            elif kind == "reasoning":
                block = ReasoningBlock(text=text)
        if isinstance(block, TextBlock | ReasoningBlock) and block.text.strip():
            blocks.append(block)
    return tuple(blocks)


def model_source(provider: str, model: str, replay_state: Raw | UnsetType = UNSET,
                 ) -> MessageSource:
    if isinstance(replay_state, Raw):
        return MessageSource(kind="model", provider=provider, model=model,
                             replay_state=replay_state)
    return MessageSource(kind="model", provider=provider, model=model)


def start_groups(calls: Sequence[T], concurrency_safe: Callable[[T], bool]) -> list[list[T]]:
    """Calls in model order, grouped into batches that start together: consecutive
    concurrency-safe calls share a batch; any other call runs alone.

    >>> start_groups(["a", "B", "c", "d"], str.islower)
    [['a'], ['B'], ['c', 'd']]
    """
    groups: list[list[T]] = []
    for call in calls:
        safe = concurrency_safe(call)
        if safe and groups and concurrency_safe(groups[-1][0]):
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups


def parse_arguments(text: str) -> dict[str, Any] | str:
    """A call's raw arguments as an object, or why they are not one (``""`` means ``{}``).

    >>> parse_arguments(""), parse_arguments('{"a": 1}'), parse_arguments("[1]")
    ({}, {'a': 1}, 'arguments must be a JSON object, got array')
    """
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"arguments are not valid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        kind = {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
            type(value), "number")
        return f"arguments must be a JSON object, got {kind}"
    return value


def header_reason(*, first_of_instance: bool, log_has_header: bool, changed: bool,
                  ) -> Literal["initial", "resume", "change"] | None:
    """Whether a request writes ``request/header``, and why (§2.9).

    >>> header_reason(first_of_instance=True, log_has_header=True, changed=False)
    'resume'
    >>> header_reason(first_of_instance=False, log_has_header=True, changed=False) is None
    True
    """
    if not log_has_header:
        return "initial"
    if first_of_instance:
        return "resume"
    return "change" if changed else None


def user_message(prompt: Prompt, message_id: str) -> UserMessage:
    """A follow-up as the user message it is queued and logged as."""
    if isinstance(prompt, UserMessage):
        return prompt
    content = (TextBlock(text=prompt),) if isinstance(prompt, str) else tuple(prompt)
    return UserMessage(content=content, source=MessageSource(kind="user"), id=message_id)


def failure_of(error: BaseException) -> LlmFailure:
    """A non-model failure as DSH flattens it: the error chain text, code ``UNKNOWN``."""
    parts: list[str] = []
    current: BaseException | None = error
    while current is not None and len(parts) < 8:
        parts.append(str(current) or type(current).__name__)
        current = current.__cause__ or (None if current.__suppress_context__
                                        else current.__context__)
    return LlmFailure(message=": ".join(parts), code="UNKNOWN")
