"""Baseline A: the DSH event model in pydantic v2, decoded line by line, checked in plain Python.

This is what a Python user would write without turnfork's core: frozen pydantic models with
camelCase aliases and the same nested shapes (messages, content blocks, stream chunks, turn-end
reasons), a discriminated union on ``type`` (``Field(discriminator="type")``) read with one
``TypeAdapter``, then a loop over the objects that checks the same relational rules as
``core.trace_log``: ``seq == index``, turn and step numbering and enclosure, tool call/result
pairing, message shapes and surface citations. The checker is written out here on purpose; it
does not use the core.

Differences from the core, stated so the comparison is read fairly:

* optional keys are ``X | None = None``, so an explicit ``null`` is accepted (the core refuses
  it); ``extra="forbid"`` refuses unknown keys, like the core;
* ``request/context`` (opaque in the core) is a model with a free-form ``data`` object;
* a surface ``replace`` is checked for its range and citations, but a ``tool/result``
  replacement is not compared field by field (the workloads contain no replacement).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

from .checks import TOOL_NOT_STARTED, Outcome, surface_problem

__all__ = ["Event", "check", "decode", "decode_and_check"]

_MAX_SAFE = 2**53 - 1
SafeInt = Annotated[int, Field(ge=-_MAX_SAFE, le=_MAX_SAFE)]
NonNegInt = Annotated[int, Field(ge=0, le=_MAX_SAFE)]
PositiveInt = Annotated[int, Field(ge=1, le=_MAX_SAFE)]


class _Wire(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel,
                              populate_by_name=True)


# --------------------------------------------------------------------------- content blocks


class TextBlock(_Wire):
    type: Literal["text"]
    text: str


class ReasoningBlock(_Wire):
    type: Literal["reasoning"]
    text: str


class ImageDimensions(_Wire):
    width: NonNegInt
    height: NonNegInt


class ImageAttachment(_Wire):
    attachment_id: str
    media_type: Literal["image/png", "image/jpeg", "image/webp", "image/gif"]
    bytes: NonNegInt
    width: NonNegInt
    height: NonNegInt
    name: str | None = None
    original_dimensions: ImageDimensions | None = None


class ImageBlock(_Wire):
    type: Literal["image"]
    attachment: ImageAttachment


class ToolCallBlock(_Wire):
    type: Literal["tool-call"]
    id: str
    name: str
    arguments: str


class ToolResultBlock(_Wire):
    type: Literal["tool-result"]
    tool_call_id: str
    content: tuple[ContentBlock, ...]
    is_error: bool | None = None


ContentBlock: TypeAlias = Annotated[
    TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock,
    Field(discriminator="type")]
ToolResultBlock.model_rebuild()

# --------------------------------------------------------------------------- messages


class MessageSource(_Wire):
    """``kind`` plus kind-specific keys (an open set, so extra keys are allowed here)."""

    model_config = ConfigDict(frozen=True, extra="allow", alias_generator=to_camel,
                              populate_by_name=True)
    kind: Annotated[str, Field(min_length=1)]
    provider: str | None = None
    model: str | None = None
    call_id: str | None = None


class UserMessage(_Wire):
    content: tuple[ContentBlock, ...]
    source: MessageSource
    role: Literal["user"] = "user"
    id: Annotated[str, Field(min_length=1)]


class AssistantMessage(_Wire):
    role: Literal["assistant"] = "assistant"
    content: tuple[ContentBlock, ...]
    source: MessageSource
    id: Annotated[str, Field(min_length=1)]


class ToolResultMessage(_Wire):
    source: MessageSource
    content: tuple[ContentBlock, ...]
    role: Literal["user"] = "user"
    id: Annotated[str, Field(min_length=1)]


class TokenUsage(_Wire):
    input_tokens: NonNegInt
    output_tokens: NonNegInt
    cache_read_tokens: NonNegInt | None = None
    cache_write_tokens: NonNegInt | None = None
    reasoning_tokens: NonNegInt | None = None


# --------------------------------------------------------------------------- failures, reasons


class LlmFailure(_Wire):
    message: str
    code: str
    status: SafeInt | None = None
    provider_retry_after_ms: float | None = None
    request_id: str | None = None


class CancelUser(_Wire):
    kind: Literal["user"]


class CancelParent(_Wire):
    kind: Literal["parent"]


class CancelHook(_Wire):
    kind: Literal["hook"]
    reason: str


class CancelDisposed(_Wire):
    kind: Literal["disposed"]


class CancelLegacy(_Wire):
    kind: Literal["legacy"]


CancelCause: TypeAlias = Annotated[
    CancelUser | CancelParent | CancelHook | CancelDisposed | CancelLegacy,
    Field(discriminator="kind")]


class TurnCompleted(_Wire):
    kind: Literal["completed"]


class TurnAborted(_Wire):
    kind: Literal["aborted"]
    reason: CancelCause


class TurnBlocked(_Wire):
    kind: Literal["blocked"]


class TurnError(_Wire):
    kind: Literal["error"]
    error: LlmFailure


class TurnMaxTokens(_Wire):
    kind: Literal["max-tokens"]


class TurnInterrupted(_Wire):
    kind: Literal["interrupted"]


TurnEndReason: TypeAlias = Annotated[
    TurnCompleted | TurnAborted | TurnBlocked | TurnError | TurnMaxTokens | TurnInterrupted,
    Field(discriminator="kind")]

# --------------------------------------------------------------------------- stream chunks


class BlockStart(_Wire):
    type: Literal["block-start"]
    index: NonNegInt
    block_type: Literal["text", "reasoning", "image", "tool-call", "tool-result"]


class TextDelta(_Wire):
    type: Literal["text-delta"]
    index: NonNegInt
    text: str


class ReasoningDelta(_Wire):
    type: Literal["reasoning-delta"]
    index: NonNegInt
    text: str


class ToolCallDelta(_Wire):
    type: Literal["tool-call-delta"]
    index: NonNegInt
    id: str
    name: str | None = None
    arguments_delta: str


class BlockEnd(_Wire):
    type: Literal["block-end"]
    index: NonNegInt
    block: ContentBlock


class UsageChunk(_Wire):
    type: Literal["usage"]
    usage: TokenUsage


class FinishStop(_Wire):
    kind: Literal["stop"]


class FinishToolCalls(_Wire):
    kind: Literal["tool-calls"]


class FinishMaxTokens(_Wire):
    kind: Literal["max-tokens"]


class FinishAborted(_Wire):
    kind: Literal["aborted"]
    failure: LlmFailure


class FinishError(_Wire):
    kind: Literal["error"]
    failure: LlmFailure


FinishReason: TypeAlias = Annotated[
    FinishStop | FinishToolCalls | FinishMaxTokens | FinishAborted | FinishError,
    Field(discriminator="kind")]


class FinishChunk(_Wire):
    type: Literal["finish"]
    reason: FinishReason
    replay_state: Any = None


StreamChunk: TypeAlias = Annotated[
    BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk
    | FinishChunk,
    Field(discriminator="type")]

# --------------------------------------------------------------------------- request header


class AdapterDefaults(_Wire):
    reasoning_effort: Literal[True] | None = None
    max_tokens: Literal[True] | None = None


class LlmCallConfig(_Wire):
    provider: Annotated[str, Field(min_length=1)]
    model: Annotated[str, Field(min_length=1)]
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: NonNegInt | None = None
    stop: tuple[str, ...] | None = None


class ToolSchema(_Wire):
    name: str
    description: str
    parameters: dict[str, Any]


class EpochHeader(_Wire):
    config: LlmCallConfig
    adapter_defaults: AdapterDefaults | None = None
    system: str | None = None
    tools: tuple[ToolSchema, ...] | str | None = None


class ToolRestriction(_Wire):
    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] | None = None


class ToolErrorInfo(_Wire):
    name: str
    code: str


class SurfaceReplace(_Wire):
    op: Literal["replace"]
    start: NonNegInt
    end: NonNegInt


SurfaceOp: TypeAlias = Literal["append"] | SurfaceReplace

# --------------------------------------------------------------------------- payloads


class TurnStartData(_Wire):
    turn: PositiveInt


class TurnEndData(_Wire):
    turn: PositiveInt
    reason: TurnEndReason


class StepData(_Wire):
    turn: PositiveInt
    step: PositiveInt


class AssistantChunkData(_Wire):
    turn: PositiveInt
    step: PositiveInt
    chunk: StreamChunk


class AssistantMessageData(_Wire):
    turn: PositiveInt
    step: PositiveInt
    message: AssistantMessage
    usage: TokenUsage | None = None
    interrupted: Literal[True] | None = None


class ToolCallData(_Wire):
    turn: PositiveInt
    step: PositiveInt
    call_id: str
    name: str
    arguments: str


class ToolResultData(_Wire):
    turn: PositiveInt
    step: PositiveInt
    message: ToolResultMessage
    error: ToolErrorInfo | None = None
    meta: Any = None


class RequestHeaderData(_Wire):
    header: EpochHeader
    reason: Literal["initial", "resume", "change"]


class SessionEndSeedData(_Wire):
    pass


class SubagentDescriptorData(_Wire):
    version: NonNegInt
    mode: Literal["one-shot", "continuable"]
    provider: str
    label: str | None = None
    agent_provider: str | None = None
    agent_model: str | None = None
    persona: str | None = None
    tool_filter: ToolRestriction | None = None


class SandboxModeData(_Wire):
    mode: Literal["read-only", "workspace-write", "danger-full-access"]
    source: Literal["delegation"] | None = None


class ApprovalPolicyData(_Wire):
    policy: Literal["ask", "never"]
    source: Literal["delegation"] | None = None


class InboxSplicedData(_Wire):
    target: Literal["next-turn", "next-step"]
    start: NonNegInt
    removed_count: NonNegInt | None = None
    inserted: tuple[UserMessage, ...]
    outcome: Literal["canceled"] | None = None


# --------------------------------------------------------------------------- events


class _Envelope(_Wire):
    seq: NonNegInt
    time: SafeInt
    ignorable: Literal[True] | None = None


class _SurfaceEnvelope(_Envelope):
    source_event_seqs: tuple[NonNegInt, ...] | None = None
    surface_op: SurfaceOp


class TurnStartEvent(_Envelope):
    type: Literal["turn/start"]
    data: TurnStartData


class TurnEndEvent(_Envelope):
    type: Literal["turn/end"]
    data: TurnEndData


class StepStartEvent(_Envelope):
    type: Literal["step/start"]
    data: StepData


class StepEndEvent(_Envelope):
    type: Literal["step/end"]
    data: StepData


class UserMessageEvent(_SurfaceEnvelope):
    type: Literal["user/message"]
    data: UserMessage


class AssistantChunkEvent(_Envelope):
    type: Literal["assistant/chunk"]
    data: AssistantChunkData


class AssistantMessageEvent(_SurfaceEnvelope):
    type: Literal["assistant/message"]
    data: AssistantMessageData


class ToolCallEvent(_Envelope):
    type: Literal["tool/call"]
    data: ToolCallData


class ToolResultEvent(_SurfaceEnvelope):
    type: Literal["tool/result"]
    data: ToolResultData


class RequestHeaderEvent(_Envelope):
    type: Literal["request/header"]
    data: RequestHeaderData


class RequestContextEvent(_Envelope):
    type: Literal["request/context"]
    data: dict[str, Any]


class SessionEndSeedEvent(_Envelope):
    type: Literal["session/end-seed"]
    data: SessionEndSeedData


class SubagentDescriptorEvent(_Envelope):
    type: Literal["subagent/descriptor"]
    data: SubagentDescriptorData


class SandboxModeEvent(_Envelope):
    type: Literal["sandbox/mode"]
    data: SandboxModeData


class ApprovalPolicyEvent(_Envelope):
    type: Literal["approval/policy"]
    data: ApprovalPolicyData


class InboxSplicedEvent(_Envelope):
    type: Literal["agent/inbox/spliced"]
    data: InboxSplicedData


Event: TypeAlias = Annotated[
    TurnStartEvent | TurnEndEvent | StepStartEvent | StepEndEvent | UserMessageEvent
    | AssistantChunkEvent | AssistantMessageEvent | ToolCallEvent | ToolResultEvent
    | RequestHeaderEvent | RequestContextEvent | SessionEndSeedEvent | SubagentDescriptorEvent
    | SandboxModeEvent | ApprovalPolicyEvent | InboxSplicedEvent,
    Field(discriminator="type")]

_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def decode(data: bytes) -> list[Event]:
    """Validate each JSONL line into an event model (raises pydantic's ValidationError)."""
    validate = _ADAPTER.validate_json
    return [validate(line) for line in data.splitlines() if line]


# --------------------------------------------------------------------------- checks


def _surface_problem(event: UserMessageEvent | AssistantMessageEvent | ToolResultEvent,
                     seq: int, surface: list[int]) -> str | None:
    op = event.surface_op
    replaced = None if isinstance(op, str) else (op.start, op.end)
    return surface_problem(seq, surface, event.type, event.source_event_seqs, replaced)


def check(events: Sequence[Event]) -> Outcome:
    """The core's balance rules over pydantic events; the first problem ends the check."""
    open_turn: int | None = None
    open_step: int | None = None
    next_turn = 1
    next_step = 1
    pending: dict[str, bool] = {}  # call id -> its tool/call has been seen
    answered: set[str] = set()
    completed = 0
    surface: list[int] = []
    for seq, event in enumerate(events):
        if event.seq != seq:
            return Outcome.failed(seq, f"seq {event.seq} at position {seq}")
        if isinstance(event, AssistantChunkEvent):
            if (event.data.turn, event.data.step) != (open_turn, open_step):
                return Outcome.failed(seq, "assistant/chunk outside the open step")
        elif isinstance(event, TurnStartEvent):
            if open_turn is not None or event.data.turn != next_turn:
                return Outcome.failed(seq, "turn/start out of order")
            open_turn, next_step = event.data.turn, 1
            pending, answered = {}, set()
        elif isinstance(event, TurnEndEvent):
            if open_turn is None or event.data.turn != open_turn or open_step is not None:
                return Outcome.failed(seq, "turn/end out of order")
            open_turn, next_turn, completed = None, event.data.turn + 1, seq + 1
        elif isinstance(event, StepStartEvent):
            if (event.data.turn != open_turn or open_step is not None
                    or event.data.step != next_step):
                return Outcome.failed(seq, "step/start out of order")
            open_step = event.data.step
        elif isinstance(event, StepEndEvent):
            if (event.data.turn, event.data.step) != (open_turn, open_step) or pending:
                return Outcome.failed(seq, "step/end out of order or with calls pending")
            open_step, next_step, answered = None, event.data.step + 1, set()
        elif isinstance(event, AssistantMessageEvent):
            data = event.data
            source = data.message.source
            if (data.turn, data.step) != (open_turn, open_step):
                return Outcome.failed(seq, "assistant/message outside the open step")
            if source.kind != "model" or not source.provider or not source.model:
                return Outcome.failed(seq, "assistant/message source is not a model")
            problem = _surface_problem(event, seq, surface)
            if problem is not None:
                return Outcome.failed(seq, problem)
            for block in data.message.content:
                if isinstance(block, ToolCallBlock):
                    if block.id in pending or block.id in answered:
                        return Outcome.failed(seq, "assistant/message repeats a tool call")
                    pending[block.id] = False
        elif isinstance(event, ToolCallEvent):
            call = event.data
            if (call.turn, call.step) != (open_turn, open_step):
                return Outcome.failed(seq, "tool/call outside the open step")
            if pending.get(call.call_id) or call.call_id in answered:
                return Outcome.failed(seq, "tool/call started twice")
            pending[call.call_id] = True
        elif isinstance(event, ToolResultEvent):
            result = event.data
            call_id = result.message.source.call_id
            blocks = result.message.content
            if (result.message.source.kind != "tool" or not call_id or len(blocks) != 1
                    or not isinstance(blocks[0], ToolResultBlock)
                    or blocks[0].tool_call_id != call_id):
                return Outcome.failed(seq, "tool/result message has the wrong shape")
            if not isinstance(event.surface_op, str):
                if open_turn is None:
                    return Outcome.failed(seq, "tool/result replacement outside a turn")
                problem = _surface_problem(event, seq, surface)
                if problem is not None:
                    return Outcome.failed(seq, problem)
                continue
            if (result.turn, result.step) != (open_turn, open_step):
                return Outcome.failed(seq, "tool/result outside the open step")
            repair = (blocks[0].is_error is True and result.error is not None
                      and result.error.code == TOOL_NOT_STARTED)
            if call_id in answered or (not pending.get(call_id) and not repair):
                return Outcome.failed(seq, "tool/result without its tool/call")
            problem = _surface_problem(event, seq, surface)
            if problem is not None:
                return Outcome.failed(seq, problem)
            pending.pop(call_id, None)
            answered.add(call_id)
        elif isinstance(event, UserMessageEvent):
            problem = _surface_problem(event, seq, surface)
            if problem is not None:
                return Outcome.failed(seq, problem)
        elif (isinstance(event, RequestHeaderEvent | RequestContextEvent)
              and open_turn is None):
            return Outcome.failed(seq, f"{event.type} outside a turn")
    return Outcome(length=len(events), open_turn=open_turn, open_step=open_step,
                   completed_prefix_length=completed)


def decode_and_check(data: bytes) -> Outcome:
    """Baseline A in one call: validate every line, then check the rules."""
    return check(decode(data))
