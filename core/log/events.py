"""The DSH session-event model as immutable msgspec Structs.

Rules of this module:

* Every Struct is frozen and keyword-only; sequences are tuples, never lists.
* Python field names are snake_case; on the wire they are DSH's camelCase (``rename="camel"``).
* An optional wire key is ``T | UnsetType = UNSET``: absent stays absent and is never written
  as ``null``; an explicit ``null`` in input is refused because DSH never writes it.
* Unknown keys are refused (``forbid_unknown_fields``), so a decoded event re-encodes to the same
  JSON object. Payload parts that DSH keeps adapter-private or open-ended (``replayState``,
  ``meta``, tool parameter schemas) are held as ``msgspec.Raw``: their exact JSON text.
* Field order is DSH's key order, so what we encode is what DSH writes.

Event types that turnfork does not interpret (the rest of DSH's vocabulary, and unknown types
marked ``"ignorable": true``) are kept as :class:`OpaqueEvent` with their exact ``data`` JSON.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeAlias, TypeVar, cast

import msgspec
from msgspec import UNSET, Meta, Raw, UnsetType

from .._checking import unchecked
from .._json import MAX_SAFE_INTEGER, lossless_problem

__all__ = [
    "MAX_SAFE_INTEGER",
    "SESSION_FORMAT_VERSION",
    "SUBAGENT_DESCRIPTOR_VERSION",
    "KNOWN_EVENT_TYPES",
    "SURFACE_EVENT_TYPES",
    "SafeInt",
    "NonNegInt",
    "PositiveInt",
    # content blocks
    "TextBlock",
    "ReasoningBlock",
    "ImageDimensions",
    "ImageAttachment",
    "ImageBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "ContentBlock",
    # messages
    "MessageSource",
    "dec_hook",
    "enc_hook",
    "UserMessage",
    "AssistantMessage",
    "ToolResultMessage",
    "TokenUsage",
    # failures and reasons
    "LlmFailure",
    "CancelCause",
    "CancelUser",
    "CancelParent",
    "CancelHook",
    "CancelDisposed",
    "CancelLegacy",
    "TurnEndReason",
    "TurnCompleted",
    "TurnAborted",
    "TurnBlocked",
    "TurnError",
    "TurnMaxTokens",
    "TurnInterrupted",
    # stream chunks
    "BlockType",
    "BlockStart",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallDelta",
    "BlockEnd",
    "UsageChunk",
    "FinishReason",
    "FinishStop",
    "FinishToolCalls",
    "FinishMaxTokens",
    "FinishAborted",
    "FinishError",
    "FinishChunk",
    "StreamChunk",
    # request header
    "AdapterDefaults",
    "LlmCallConfig",
    "ToolSchema",
    "EpochHeader",
    "ToolRestriction",
    "ToolErrorInfo",
    "SurfaceReplace",
    "SurfaceOp",
    # payloads
    "TurnStartData",
    "TurnEndData",
    "StepData",
    "AssistantChunkData",
    "AssistantMessageData",
    "ToolCallData",
    "ToolResultData",
    "RequestHeaderData",
    "SessionEndSeedData",
    "SubagentDescriptorData",
    "SandboxModeData",
    "ApprovalPolicyData",
    "InboxSplicedData",
    "LlmRetryData",
    "LlmRetryStartedData",
    # events
    "TurnStartEvent",
    "TurnEndEvent",
    "StepStartEvent",
    "StepEndEvent",
    "UserMessageEvent",
    "AssistantChunkEvent",
    "AssistantMessageEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "RequestHeaderEvent",
    "SessionEndSeedEvent",
    "SubagentDescriptorEvent",
    "SandboxModeEvent",
    "ApprovalPolicyEvent",
    "InboxSplicedEvent",
    "LlmRetryEvent",
    "LlmRetryStartedEvent",
    "OpaqueEvent",
    "TypedEvent",
    "Event",
    "TYPED_EVENT_CLASSES",
    "event_type",
    # header
    "SessionHeader",
]

SESSION_FORMAT_VERSION = 0
SUBAGENT_DESCRIPTOR_VERSION = 2

SafeInt = Annotated[int, Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]
NonNegInt = Annotated[int, Meta(ge=0, le=MAX_SAFE_INTEGER)]
PositiveInt = Annotated[int, Meta(ge=1, le=MAX_SAFE_INTEGER)]
NonEmptyStr = Annotated[str, Meta(min_length=1)]
# A float field read from an integer literal beyond the safe range would not read back the
# same in JavaScript either; real values (temperatures, delays) are far inside it.
_SafeFloat = Annotated[float, Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]


class _Wire(msgspec.Struct, frozen=True, kw_only=True, rename="camel",
            forbid_unknown_fields=True, gc=False):
    """Base of every wire Struct: immutable, camelCase, strict about keys."""


class _Block(_Wire, frozen=True, kw_only=True, tag_field="type"):
    """Base of the content-block union (tag ``type``)."""


# --------------------------------------------------------------------------- content blocks


class TextBlock(_Block, frozen=True, kw_only=True, tag="text"):
    text: str


class ReasoningBlock(_Block, frozen=True, kw_only=True, tag="reasoning"):
    """A thinking block; DSH calls it ``reasoning``."""

    text: str


class ImageDimensions(_Wire, frozen=True, kw_only=True):
    width: NonNegInt
    height: NonNegInt


class ImageAttachment(_Wire, frozen=True, kw_only=True):
    attachment_id: str
    media_type: Literal["image/png", "image/jpeg", "image/webp", "image/gif"]
    bytes: NonNegInt
    width: NonNegInt
    height: NonNegInt
    name: str | UnsetType = UNSET
    original_dimensions: ImageDimensions | UnsetType = UNSET


class ImageBlock(_Block, frozen=True, kw_only=True, tag="image"):
    attachment: ImageAttachment


class ToolCallBlock(_Block, frozen=True, kw_only=True, tag="tool-call"):
    id: str
    name: str
    #: The raw JSON text exactly as the model produced it (may be invalid JSON).
    arguments: str


class ToolResultBlock(_Block, frozen=True, kw_only=True, tag="tool-result"):
    tool_call_id: str
    content: tuple[ContentBlock, ...]
    is_error: bool | UnsetType = UNSET


ContentBlock: TypeAlias = (
    TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock
)

# --------------------------------------------------------------------------- messages


_SOURCE_KEYS = {
    "kind": "kind", "plugin": "plugin", "form": "form", "summary": "summary",
    "provider": "provider", "model": "model", "call_id": "callId",
    "sender_session_id": "senderSessionId", "replay_state": "replayState",
}
_RAW_ENCODER = msgspec.json.Encoder()
_new = object.__new__

SourceValue: TypeAlias = str | int | float | bool | Raw | None


@unchecked
class MessageSource:
    """Where a message came from: ``{"kind": …, …}``.

    ``kind`` is an open set and each kind carries keys of its own (``callId`` for tools,
    ``provider``/``model`` for models, ``plugin``/``form``/``sections`` for plugins,
    ``goalId``, ``rpcId``, … for others), so the object is kept whole, in its key order:
    known keys are readable as attributes, every key round-trips, nested values are kept as
    their exact JSON text. Immutable and hashable.

    >>> MessageSource(kind="tool", call_id="c1").call_id
    'c1'
    >>> MessageSource(kind="model", provider="p", model="m").items
    (('kind', 'model'), ('provider', 'p'), ('model', 'm'))
    """

    __slots__ = ("_wire",)
    _wire: dict[str, SourceValue]

    def __init__(self, kind: str, **fields: str | Raw) -> None:
        # Checked by hand: the class opts out of beartype because decoding builds one per
        # message and reads its attributes in the trace's per-event loop.
        if not isinstance(kind, str) or not kind:
            raise ValueError("a message source needs a non-empty string kind")
        wire: dict[str, SourceValue] = {"kind": kind}
        for name, value in fields.items():
            if not isinstance(value, str | Raw):
                raise TypeError(f"message source field {name} must be a string or Raw")
            if name not in _SOURCE_KEYS:
                raise TypeError(f"unknown message source field {name!r}")
            wire[_SOURCE_KEYS[name]] = value
        object.__setattr__(self, "_wire", wire)

    @classmethod
    def from_wire(cls, obj: object) -> MessageSource:
        """From a decoded JSON object; nested values are kept as exact JSON text."""
        if not isinstance(obj, dict):
            raise TypeError("Expected `object`")
        return cast(MessageSource, dec_hook(cls, dict(obj)))

    @property
    def items(self) -> tuple[tuple[str, SourceValue], ...]:
        """The wire keys and values, in order."""
        return tuple(self._wire.items())

    def to_wire(self) -> dict[str, object]:
        return dict(self._wire)

    def get(self, key: str) -> SourceValue:
        """The value of a wire key (camelCase), or ``None``."""
        return self._wire.get(key)

    def _str(self, key: str) -> str | None:
        value = self._wire.get(key)
        return value if isinstance(value, str) else None

    @property
    def kind(self) -> str:
        return self._wire["kind"]  # type: ignore[return-value]  # checked on the way in

    @property
    def provider(self) -> str | None:
        return self._str("provider")

    @property
    def model(self) -> str | None:
        return self._str("model")

    @property
    def call_id(self) -> str | None:
        return self._str("callId")

    @property
    def plugin(self) -> str | None:
        return self._str("plugin")

    @property
    def form(self) -> str | None:
        return self._str("form")

    def _key(self) -> tuple[tuple[str, object], ...]:
        return tuple((k, bytes(v) if isinstance(v, Raw) else v) for k, v in self._wire.items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MessageSource):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("MessageSource is immutable")

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._wire.items())
        return f"MessageSource({shown})"


# The slot's own setter: how a decoded source is filled without a call to __init__.
_set_wire = MessageSource.__dict__["_wire"].__set__


@unchecked
def _settle_values(wire: dict[str, Any]) -> None:
    """Nested values become their exact JSON text; numbers must be lossless."""
    for key, value in wire.items():
        problem = lossless_problem(value)
        if problem is not None:
            raise ValueError(problem)
        if isinstance(value, dict | list):
            wire[key] = Raw(_RAW_ENCODER.encode(value))
        elif not isinstance(value, str | int | float | bool | Raw | None):
            raise TypeError(f"message source key {key!r} holds a {type(value).__name__}")


@unchecked
def dec_hook(kind: type, obj: object) -> object:
    """msgspec decode hook for the non-Struct wire types of this module.

    Raising ``NotImplementedError`` for any other type is msgspec's hook protocol: msgspec then
    reports the value as unsupported, with its path."""
    if kind is MessageSource:
        # A source is the decoded object itself, checked and made immutable: this runs once
        # per message, so it is kept to a few operations.
        if type(obj) is not dict:
            raise TypeError("Expected `object`")
        source_kind = obj.get("kind")
        if type(source_kind) is not str or not source_kind:
            raise ValueError("a message source needs a non-empty string `kind`")
        for value in obj.values():
            if type(value) is not str:
                _settle_values(obj)
                break
        source = _new(MessageSource)
        _set_wire(source, obj)
        return source
    raise NotImplementedError(f"cannot decode {kind}")


@unchecked
def enc_hook(obj: object) -> object:
    """msgspec encode hook for the non-Struct wire types of this module (any other type:
    ``NotImplementedError``, msgspec's protocol for "not mine")."""
    if isinstance(obj, MessageSource):
        return obj.to_wire()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


class UserMessage(_Wire, frozen=True, kw_only=True):
    """The ``data`` of ``user/message`` and the items of an inbox splice."""

    content: tuple[ContentBlock, ...]
    source: MessageSource
    role: Literal["user"] = "user"
    id: NonEmptyStr


class AssistantMessage(_Wire, frozen=True, kw_only=True):
    role: Literal["assistant"] = "assistant"
    content: tuple[ContentBlock, ...]
    source: MessageSource
    id: NonEmptyStr


class ToolResultMessage(_Wire, frozen=True, kw_only=True):
    source: MessageSource
    content: tuple[ContentBlock, ...]
    role: Literal["user"] = "user"
    id: NonEmptyStr


class TokenUsage(_Wire, frozen=True, kw_only=True):
    input_tokens: NonNegInt
    output_tokens: NonNegInt
    cache_read_tokens: NonNegInt | UnsetType = UNSET
    cache_write_tokens: NonNegInt | UnsetType = UNSET
    reasoning_tokens: NonNegInt | UnsetType = UNSET


# --------------------------------------------------------------------------- failures, reasons


class LlmFailure(_Wire, frozen=True, kw_only=True):
    message: str
    code: str
    status: SafeInt | UnsetType = UNSET
    provider_retry_after_ms: _SafeFloat | UnsetType = UNSET
    request_id: str | UnsetType = UNSET


class _Cause(_Wire, frozen=True, kw_only=True, tag_field="kind"):
    pass


class CancelUser(_Cause, frozen=True, kw_only=True, tag="user"):
    pass


class CancelParent(_Cause, frozen=True, kw_only=True, tag="parent"):
    pass


class CancelHook(_Cause, frozen=True, kw_only=True, tag="hook"):
    reason: str


class CancelDisposed(_Cause, frozen=True, kw_only=True, tag="disposed"):
    pass


class CancelLegacy(_Cause, frozen=True, kw_only=True, tag="legacy"):
    pass


CancelCause: TypeAlias = CancelUser | CancelParent | CancelHook | CancelDisposed | CancelLegacy


class _Reason(_Wire, frozen=True, kw_only=True, tag_field="kind"):
    pass


class TurnCompleted(_Reason, frozen=True, kw_only=True, tag="completed"):
    pass


class TurnAborted(_Reason, frozen=True, kw_only=True, tag="aborted"):
    reason: CancelCause


class TurnBlocked(_Reason, frozen=True, kw_only=True, tag="blocked"):
    pass


class TurnError(_Reason, frozen=True, kw_only=True, tag="error"):
    error: LlmFailure


class TurnMaxTokens(_Reason, frozen=True, kw_only=True, tag="max-tokens"):
    pass


class TurnInterrupted(_Reason, frozen=True, kw_only=True, tag="interrupted"):
    """Written only by crash repair, never by a live loop."""


TurnEndReason: TypeAlias = (
    TurnCompleted | TurnAborted | TurnBlocked | TurnError | TurnMaxTokens | TurnInterrupted
)

# --------------------------------------------------------------------------- stream chunks

BlockType: TypeAlias = Literal["text", "reasoning", "image", "tool-call", "tool-result"]


class _Chunk(_Wire, frozen=True, kw_only=True, tag_field="type"):
    pass


class _BlockChunk(_Chunk, frozen=True, kw_only=True):
    """A chunk about one content block: its index, first."""

    index: NonNegInt


class BlockStart(_BlockChunk, frozen=True, kw_only=True, tag="block-start"):
    block_type: BlockType


class TextDelta(_BlockChunk, frozen=True, kw_only=True, tag="text-delta"):
    text: str


class ReasoningDelta(_BlockChunk, frozen=True, kw_only=True, tag="reasoning-delta"):
    text: str


class ToolCallDelta(_BlockChunk, frozen=True, kw_only=True, tag="tool-call-delta"):
    id: str
    name: str | UnsetType = UNSET
    arguments_delta: str


class BlockEnd(_BlockChunk, frozen=True, kw_only=True, tag="block-end"):
    block: ContentBlock


class UsageChunk(_Chunk, frozen=True, kw_only=True, tag="usage"):
    usage: TokenUsage


class _Finish(_Wire, frozen=True, kw_only=True, tag_field="kind"):
    pass


class FinishStop(_Finish, frozen=True, kw_only=True, tag="stop"):
    pass


class FinishToolCalls(_Finish, frozen=True, kw_only=True, tag="tool-calls"):
    pass


class FinishMaxTokens(_Finish, frozen=True, kw_only=True, tag="max-tokens"):
    pass


class FinishAborted(_Finish, frozen=True, kw_only=True, tag="aborted"):
    failure: LlmFailure


class FinishError(_Finish, frozen=True, kw_only=True, tag="error"):
    failure: LlmFailure


FinishReason: TypeAlias = (
    FinishStop | FinishToolCalls | FinishMaxTokens | FinishAborted | FinishError
)


class FinishChunk(_Chunk, frozen=True, kw_only=True, tag="finish"):
    reason: FinishReason
    #: Adapter-private replay envelope ``{"response": …, "blocks"?: […]}``, kept verbatim.
    replay_state: Raw | UnsetType = UNSET


StreamChunk: TypeAlias = (
    BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk | FinishChunk
)

# --------------------------------------------------------------------------- request header


class AdapterDefaults(_Wire, frozen=True, kw_only=True):
    reasoning_effort: Literal[True] | UnsetType = UNSET
    max_tokens: Literal[True] | UnsetType = UNSET


class LlmCallConfig(_Wire, frozen=True, kw_only=True):
    provider: NonEmptyStr
    model: NonEmptyStr
    reasoning_effort: NonEmptyStr | UnsetType = UNSET
    temperature: _SafeFloat | UnsetType = UNSET
    max_tokens: NonNegInt | UnsetType = UNSET
    stop: tuple[str, ...] | UnsetType = UNSET


class ToolSchema(_Wire, frozen=True, kw_only=True):
    name: str
    description: str
    #: The JSON-Schema object, verbatim.
    parameters: Raw


class EpochHeader(_Wire, frozen=True, kw_only=True):
    config: LlmCallConfig
    adapter_defaults: AdapterDefaults | UnsetType = UNSET
    system: str | UnsetType = UNSET
    #: A tuple of schemas; DSH's projected test fixtures hold the placeholder string
    #: ``"{{tools}}"`` instead, which is kept so those logs round-trip.
    tools: tuple[ToolSchema, ...] | str | UnsetType = UNSET


class ToolRestriction(_Wire, frozen=True, kw_only=True):
    """``{allow?, deny?}``; a restriction naming neither is refused where it is used."""

    allow: tuple[str, ...] | UnsetType = UNSET
    deny: tuple[str, ...] | UnsetType = UNSET


class ToolErrorInfo(_Wire, frozen=True, kw_only=True):
    name: str
    code: str


class SurfaceReplace(_Wire, frozen=True, kw_only=True, tag_field="op", tag="replace"):
    start: NonNegInt
    end: NonNegInt


SurfaceOp: TypeAlias = Literal["append"] | SurfaceReplace

# --------------------------------------------------------------------------- payloads


class TurnStartData(_Wire, frozen=True, kw_only=True):
    turn: PositiveInt


class TurnEndData(_Wire, frozen=True, kw_only=True):
    turn: PositiveInt
    reason: TurnEndReason


class _InStep(_Wire, frozen=True, kw_only=True):
    """A payload that names the step it belongs to, first."""

    turn: PositiveInt
    step: PositiveInt


class StepData(_InStep, frozen=True, kw_only=True):
    pass


class AssistantChunkData(_InStep, frozen=True, kw_only=True):
    chunk: StreamChunk


class AssistantMessageData(_InStep, frozen=True, kw_only=True):
    message: AssistantMessage
    usage: TokenUsage | UnsetType = UNSET
    interrupted: Literal[True] | UnsetType = UNSET


class ToolCallData(_InStep, frozen=True, kw_only=True):
    call_id: str
    name: str
    arguments: str


class ToolResultData(_InStep, frozen=True, kw_only=True):
    message: ToolResultMessage
    error: ToolErrorInfo | UnsetType = UNSET
    meta: Raw | UnsetType = UNSET


class RequestHeaderData(_Wire, frozen=True, kw_only=True):
    header: EpochHeader
    reason: Literal["initial", "resume", "change"]


class SessionEndSeedData(_Wire, frozen=True, kw_only=True):
    pass


class SubagentDescriptorData(_Wire, frozen=True, kw_only=True):
    version: NonNegInt
    mode: Literal["one-shot", "continuable"]
    provider: str
    label: str | UnsetType = UNSET
    agent_provider: str | UnsetType = UNSET
    agent_model: str | UnsetType = UNSET
    persona: str | UnsetType = UNSET
    tool_filter: ToolRestriction | UnsetType = UNSET


class SandboxModeData(_Wire, frozen=True, kw_only=True):
    mode: Literal["read-only", "workspace-write", "danger-full-access"]
    source: Literal["delegation"] | UnsetType = UNSET


class ApprovalPolicyData(_Wire, frozen=True, kw_only=True):
    policy: Literal["ask", "never"]
    source: Literal["delegation"] | UnsetType = UNSET


class InboxSplicedData(_Wire, frozen=True, kw_only=True):
    target: Literal["next-turn", "next-step"]
    start: NonNegInt
    removed_count: NonNegInt | UnsetType = UNSET
    inserted: tuple[UserMessage, ...]
    outcome: Literal["canceled"] | UnsetType = UNSET


class LlmRetryData(_Wire, frozen=True, kw_only=True):
    """A model request retry, scheduled before its wait (DSH's llm-retry, key order its).

    ``max_retries`` is present for ``mode="normal"`` and absent for ``"always"``; the rules a
    log of them must keep are :func:`.retry.check_retries`'."""

    retry_id: str
    turn: NonNegInt
    step: NonNegInt
    provider: str
    mode: Literal["normal", "always"]
    policy_key: str
    retry: NonNegInt
    max_retries: NonNegInt | UnsetType = UNSET
    delay_ms: _SafeFloat
    failure: LlmFailure


class LlmRetryStartedData(_Wire, frozen=True, kw_only=True):
    """The wait of a scheduled retry is over; the retried request starts."""

    retry_id: str
    turn: NonNegInt
    step: NonNegInt
    retry: NonNegInt


# --------------------------------------------------------------------------- events


DataT = TypeVar("DataT")


class _Event(_Wire, Generic[DataT], frozen=True, kw_only=True, tag_field="type"):
    """Envelope fields shared by every typed event, in DSH's key order; ``data`` is the
    payload the type (the subclass's tag) names."""

    seq: NonNegInt
    time: SafeInt
    data: DataT
    ignorable: Literal[True] | UnsetType = UNSET


class _SurfaceEvent(_Event[DataT], frozen=True, kw_only=True):
    """A surface-eligible event: it carries ``surfaceOp`` (and may cite what it replaces)."""

    source_event_seqs: tuple[NonNegInt, ...] | UnsetType = UNSET
    surface_op: SurfaceOp


class TurnStartEvent(_Event[TurnStartData], frozen=True, tag="turn/start"): ...
class TurnEndEvent(_Event[TurnEndData], frozen=True, tag="turn/end"): ...
class StepStartEvent(_Event[StepData], frozen=True, tag="step/start"): ...
class StepEndEvent(_Event[StepData], frozen=True, tag="step/end"): ...
class UserMessageEvent(_SurfaceEvent[UserMessage], frozen=True, tag="user/message"): ...
class AssistantChunkEvent(_Event[AssistantChunkData], frozen=True, tag="assistant/chunk"): ...
class AssistantMessageEvent(_SurfaceEvent[AssistantMessageData], frozen=True,
                            tag="assistant/message"): ...
class ToolCallEvent(_Event[ToolCallData], frozen=True, tag="tool/call"): ...
class ToolResultEvent(_SurfaceEvent[ToolResultData], frozen=True, tag="tool/result"): ...
class RequestHeaderEvent(_Event[RequestHeaderData], frozen=True, tag="request/header"): ...


class SessionEndSeedEvent(_Event[SessionEndSeedData], frozen=True, kw_only=True,
                          tag="session/end-seed"):
    data: SessionEndSeedData = SessionEndSeedData()


class SubagentDescriptorEvent(_Event[SubagentDescriptorData], frozen=True,
                              tag="subagent/descriptor"):
    """A descriptor this runtime accepts; the codec keeps any other as an :class:`OpaqueEvent`
    of this type (:mod:`.descriptor` judges both)."""


class SandboxModeEvent(_Event[SandboxModeData], frozen=True, tag="sandbox/mode"): ...
class ApprovalPolicyEvent(_Event[ApprovalPolicyData], frozen=True, tag="approval/policy"): ...
class InboxSplicedEvent(_Event[InboxSplicedData], frozen=True, tag="agent/inbox/spliced"): ...
class LlmRetryEvent(_Event[LlmRetryData], frozen=True, tag="llm/retry"): ...
class LlmRetryStartedEvent(_Event[LlmRetryStartedData], frozen=True, tag="llm/retry-started"): ...


class OpaqueEvent(_Wire, frozen=True, kw_only=True):
    """An event turnfork does not interpret: DSH vocabulary outside the subagent contract
    (``session/title``, ``request/context``, ``todo/write``, …) or an unknown type marked
    ``"ignorable": true``. ``data`` is the exact JSON text it was read with."""

    type: NonEmptyStr
    seq: NonNegInt
    time: SafeInt
    data: Raw
    ignorable: Literal[True] | UnsetType = UNSET


TypedEvent: TypeAlias = (
    TurnStartEvent
    | TurnEndEvent
    | StepStartEvent
    | StepEndEvent
    | UserMessageEvent
    | AssistantChunkEvent
    | AssistantMessageEvent
    | ToolCallEvent
    | ToolResultEvent
    | RequestHeaderEvent
    | SessionEndSeedEvent
    | SubagentDescriptorEvent
    | SandboxModeEvent
    | ApprovalPolicyEvent
    | InboxSplicedEvent
    | LlmRetryEvent
    | LlmRetryStartedEvent
)

Event: TypeAlias = TypedEvent | OpaqueEvent

TYPED_EVENT_CLASSES: tuple[type[TypedEvent], ...] = (
    TurnStartEvent,
    TurnEndEvent,
    StepStartEvent,
    StepEndEvent,
    UserMessageEvent,
    AssistantChunkEvent,
    AssistantMessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    RequestHeaderEvent,
    SessionEndSeedEvent,
    SubagentDescriptorEvent,
    SandboxModeEvent,
    ApprovalPolicyEvent,
    InboxSplicedEvent,
    LlmRetryEvent,
    LlmRetryStartedEvent,
)

_TAG_OF: dict[type, str] = {cls: str(cls.__struct_config__.tag) for cls in TYPED_EVENT_CLASSES}

#: Surface-eligible types: they must carry ``surfaceOp`` (wire-format §1.1).
SURFACE_EVENT_TYPES = frozenset({"user/message", "assistant/message", "tool/result"})

#: DSH's known vocabulary at b150a551b8 (wire-format §1.2): a stored log may hold these
#: without ``ignorable``.
KNOWN_EVENT_TYPES = frozenset(
    {
        "agent-preset/selected", "agent/inbox/spliced", "approval/asked", "approval/decided",
        "approval/policy", "assistant/chunk", "assistant/message", "command/done",
        "command/run", "compaction/end", "compaction/prune", "compaction/start",
        "compaction/summary", "feedback/record", "goal/change", "hook/invoked", "hook/result",
        "llm/retry", "llm/retry-started", "permission/preset", "plan/mode", "request/context",
        "request/header", "sandbox/mode", "schedule/change", "session/end-seed",
        "session/title", "session/title-llm-request", "step/end", "step/start",
        "subagent/descriptor", "team/member", "team/message/delivered",
        "team/message/queued", "team/task", "todo/write", "tool-workflow/agent-end",
        "tool-workflow/agent-start", "tool-workflow/run-end", "tool-workflow/run-start",
        "tool/call", "tool/code-dispatch", "tool/code-dispatch-start", "tool/result",
        "turn/end", "turn/start", "user/message", "web/deepseek-search-llm-request",
    }
)


@unchecked
def event_type(event: Event) -> str:
    """The wire ``type`` of an event.

    Checked by hand (a ``TypeError`` for anything else): the trace asks it of every event, and
    a run-time check of the 18-class ``Event`` union would cost four times the lookup.

    >>> event_type(TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=1)))
    'turn/start'
    """
    tag = _TAG_OF.get(type(event))
    if tag is not None:
        return tag
    if isinstance(event, OpaqueEvent):
        return event.type
    raise TypeError(f"not an event: {type(event).__name__}")


# --------------------------------------------------------------------------- header


class SessionHeader(_Wire, frozen=True, kw_only=True):
    """Per-session metadata kept outside the event log (wire-format §4)."""

    version: int = SESSION_FORMAT_VERSION
    id: NonEmptyStr
    created_at: NonNegInt
    cwd: str | UnsetType = UNSET
    parent_session: str | UnsetType = UNSET
    seed_length: NonNegInt | UnsetType = UNSET
    origin: Literal["subagent"] | UnsetType = UNSET
    delegation_depth: NonNegInt | UnsetType = UNSET
    agent_preset: str | UnsetType = UNSET
