"""JSONL codec for DSH session logs (wire-format §5.2–5.5, §5.8).

Rules of this module:

* Decoders and encoders are built once, at import, and reused for every line.
* A line is one JSON value, as for DSH's reader (``JSON.parse`` per line): two records on one
  line, or one record over two lines, are refused. Blank lines are skipped.
* Decoding never raises for bad input: it returns ``Failure(DecodeError)`` naming the 1-based
  line, and the seq and event type when they are known.
* A line is either one event or one DSH *packed chunk row* (``text-chunks``,
  ``reasoning-chunks``, ``tool-call-chunks``), which expands to ``assistant/chunk`` events.
* Types outside the typed model are kept as :class:`OpaqueEvent` when they are in DSH's known
  vocabulary or carry ``"ignorable": true``; any other type is refused.
* A ``subagent/descriptor`` whose payload DSH's subagent service would not accept (malformed,
  or of another version) is kept as an :class:`OpaqueEvent` too, with its exact JSON: DSH's
  loader reads any descriptor payload and leaves the judgement to the service
  (:mod:`.descriptor`), so a typed :class:`SubagentDescriptorEvent` is always an accepted one.
* What DSH calls "lossless JSON" is enforced: no ``-0``, no integer beyond the safe range, no
  number beyond the double range. JSON nested deeper than :data:`MAX_JSON_DEPTH` is refused,
  the same on every Python. A lone-surrogate escape (``"\\ud800"``), which ``JSON.parse``
  accepts, is read as that lone surrogate and written back as the same escape.
* ``projected=True`` reads DSH's committed test fixtures, whose records have no ``seq``/``time``
  (``seq0``/``time0`` for rows): they are restored by counting, time 0 (wire-format §5.8).
* :func:`check_event` and :func:`check_header` tell whether a value can be written so that this
  decoder reads it back: they write it and read it with the decoder itself.

Structural checks only: ``seq == index`` and turn/step balance are the trace's business.

How the common case stays near msgspec's own speed: the text is checked once for what msgspec
cannot see (invalid UTF-8 inside payloads kept as ``Raw``, ``-0``, nesting), each line is then
decoded by one typed decoder whose union also holds DSH's known untyped vocabulary, and only
the records that hold ``Raw`` payloads are looked at again. Anything unusual sends the text to
the line-by-line path, which names the line of the problem.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from typing import Any, Generic, Literal, TypeAlias, TypeVar, Union, cast

import msgspec
from msgspec import UNSET, Raw, UnsetType
from returns.result import Failure, Result, Success

from .._checking import checked, plain, unchecked
from .._json import (
    MAX_JSON_DEPTH,
    MAX_SAFE_INTEGER,
    brackets_close,
    exceeds_depth,
    has_negative_zero,
    json_string_literal,
    lossless_problem,
    mask_lone_surrogates,
    may_be_lossy,
    negative_zero_candidates,
    plain_lone_surrogates,
    unmask_json,
    unmask_text,
)
from .descriptor import DESCRIPTOR_EVENT_TYPE, parse_subagent_descriptor
from .events import (
    KNOWN_EVENT_TYPES,
    SESSION_FORMAT_VERSION,
    TYPED_EVENT_CLASSES,
    AssistantChunkData,
    AssistantChunkEvent,
    Event,
    FinishChunk,
    MessageSource,
    NonNegInt,
    OpaqueEvent,
    PositiveInt,
    ReasoningDelta,
    RequestHeaderEvent,
    SafeInt,
    SessionHeader,
    SubagentDescriptorEvent,
    TextDelta,
    ToolCallDelta,
    ToolResultEvent,
    dec_hook,
    enc_hook,
    event_type,
)

#: Called per descriptor record while decoding (behind checked entry points).
_parse_subagent_descriptor = plain(parse_subagent_descriptor)

__all__ = [
    "MAX_JSON_DEPTH",
    "DecodeError",
    "WireError",
    "decode_log",
    "decode_session",
    "decode_header_line",
    "encode_log",
    "encode_session",
    "encode_event",
    "encode_header_line",
    "check_event",
    "check_header",
    "is_json_line",
]


class DecodeError(msgspec.Struct, frozen=True, kw_only=True):
    """Why a log could not be read, and where.

    ``line`` is 1-based within the decoded text; ``seq`` and ``event_type`` are set when the
    failing record revealed them.
    """

    line: int
    problem: str
    seq: int | None = None
    event_type: str | None = None

    @property
    def message(self) -> str:
        where = f"line {self.line}"
        details = []
        if self.seq is not None:
            details.append(f"seq {self.seq}")
        if self.event_type is not None:
            details.append(self.event_type)
        if details:
            where += f" ({', '.join(details)})"
        # Types, keys and values quoted from the record may hold line breaks: shown escaped.
        return f"{where}: {self.problem}".translate(_LINE_BREAKS)

    def __str__(self) -> str:
        return self.message


class WireError(msgspec.Struct, frozen=True, kw_only=True):
    """Why an event or header cannot be written as a line this codec reads back.

    ``seq`` and ``event_type`` name the event (``None`` for a header).
    """

    problem: str
    seq: int | None = None
    event_type: str | None = None

    @property
    def message(self) -> str:
        details = [f"seq {self.seq}"] if self.seq is not None else []
        if self.event_type is not None:
            details.append(self.event_type)
        where = ", ".join(details) if details else "session header"
        return f"{where}: {self.problem}".translate(_LINE_BREAKS)

    def __str__(self) -> str:
        return self.message


#: What ``str.splitlines`` breaks a line on, mapped to its escape (``"\n"`` → ``\\n``), and
#: lone surrogates (which no output encoding can print) to theirs.
_LINE_BREAKS = {code: repr(chr(code))[1:-1]
                for code in (0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029,
                             *range(0xD800, 0xE000))}


# --------------------------------------------------------------------------- packed rows


class _RowData(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What every packed row holds first: the step and block of its chunks, their time steps."""

    turn: PositiveInt
    step: PositiveInt
    index: NonNegInt
    dt: tuple[SafeInt, ...]


class _TextRowData(_RowData, frozen=True, kw_only=True):
    texts: tuple[str, ...]


class _ToolRowData(_RowData, frozen=True, kw_only=True):
    id: str
    args: tuple[str, ...]
    name: str | UnsetType = UNSET


_RowDataT = TypeVar("_RowDataT")


class _Row(msgspec.Struct, Generic[_RowDataT], frozen=True, kw_only=True,
           forbid_unknown_fields=True, tag_field="type"):
    seq0: NonNegInt
    time0: SafeInt
    data: _RowDataT


class _TextRow(_Row[_TextRowData], frozen=True, tag="text-chunks"): ...
class _ReasoningRow(_Row[_TextRowData], frozen=True, tag="reasoning-chunks"): ...
class _ToolRow(_Row[_ToolRowData], frozen=True, tag="tool-call-chunks"): ...


_PackedRow: TypeAlias = _TextRow | _ReasoningRow | _ToolRow
_ROW_TAGS = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
_TYPED_TAGS = frozenset(str(cls.__struct_config__.tag) for cls in TYPED_EVENT_CLASSES)


# --------------------------------------------------------------------------- known vocabulary


class _KnownOpaque(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True,
                   tag_field="type", gc=False):
    """A record of DSH's vocabulary outside the typed model, read in the typed decoder's own
    pass (one subclass per type), then kept as an :class:`OpaqueEvent`."""

    seq: NonNegInt
    time: SafeInt
    data: Raw
    ignorable: Literal[True] | UnsetType = UNSET


_KNOWN_OPAQUE_CLASSES: dict[str, type[_KnownOpaque]] = {
    tag: cast(type[_KnownOpaque], msgspec.defstruct(
        f"_Known_{tag}", [], bases=(_KnownOpaque,), tag=tag, frozen=True, kw_only=True))
    for tag in sorted(KNOWN_EVENT_TYPES - _TYPED_TAGS)
}
_UNION_TAGS = _TYPED_TAGS | _ROW_TAGS | frozenset(_KNOWN_OPAQUE_CLASSES)
#: Retired vocabulary DSH refuses on load, ignorable or not (wire-format §1.2).
_REFUSED_LEGACY_TYPES = frozenset({"request/header-delta", "mode/set"})


class _Peek(msgspec.Struct):
    """Just enough of a record to name it in an error and route unknown types."""

    type: Any = None
    seq: Any = None
    seq0: Any = None
    ignorable: Any = None


# The usual start of a record, for naming one that cannot be decoded at all (too deep).
_ENVELOPE_START = re.compile(
    rb'\s*\{\s*"type"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"seq0?"\s*:\s*([0-9]{1,16})[,}\s]')


class _HeaderLine(SessionHeader, frozen=True, kw_only=True, tag_field="type", tag="session"):
    """The header as a session file's first line holds it: tagged, with its version and
    ``delegationDepth`` always written, and an id read as it stands."""

    version: int
    id: str
    delegation_depth: NonNegInt


class _HeaderVersion(msgspec.Struct):
    type: Any = None
    version: Any = None


#: Every record one line may hold: a typed event, a packed row, DSH's known untyped vocabulary.
_RECORD_TYPES: Any = Union[(*TYPED_EVENT_CLASSES, _TextRow, _ReasoningRow, _ToolRow,
                            *_KNOWN_OPAQUE_CLASSES.values())]
_RECORD_DECODER = msgspec.json.Decoder(_RECORD_TYPES, dec_hook=dec_hook)
_PEEK_DECODER = msgspec.json.Decoder(_Peek)
_OPAQUE_DECODER = msgspec.json.Decoder(OpaqueEvent, dec_hook=dec_hook)
_HEADER_DECODER = msgspec.json.Decoder(_HeaderLine)
_HEADER_VERSION_DECODER = msgspec.json.Decoder(_HeaderVersion)
_ANY_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder(enc_hook=enc_hook)
#: What decoding text that is not a readable record raises: msgspec's errors, and
#: RecursionError should the caller's stack leave msgspec too little room.
_UNREADABLE = (msgspec.DecodeError, RecursionError)

_NEGATIVE_ZERO_PROBLEM = "-0 is not lossless JSON (DSH refuses negative zero)"
_DEPTH_PROBLEM = (f"JSON nested deeper than {MAX_JSON_DEPTH} levels (turnfork's limit, the "
                  "same on every Python)")


# --------------------------------------------------------------------------- checks


def _clean(problem: str) -> str:
    """msgspec says ``$.data.turn``; a user reads ``data.turn``."""
    return problem.replace("`$.", "`").replace("- at `$`", "").strip()


def _json_problem(line: bytes) -> str | None:
    """Why ``line`` is not JSON (malformed, say), if it is not."""
    try:
        _ANY_DECODER.decode(line)
    except msgspec.ValidationError:
        return None  # JSON, with a number out of range: the lossless check names it
    except RecursionError:
        return "JSON nested too deeply for the interpreter's remaining stack"
    except msgspec.DecodeError as exc:
        return _clean(str(exc))
    return None


@unchecked
def _raw_problem(raw: Raw) -> str | None:
    """Why a payload kept as ``Raw`` is not lossless JSON (``-0`` is checked on the line)."""
    text = bytes(raw)
    if not may_be_lossy(text):
        return None
    try:
        value = _ANY_DECODER.decode(text)
    except msgspec.ValidationError:
        return "number is out of the double range (not finite)"
    except _UNREADABLE:
        return None  # the record decoder validated it as JSON
    return lossless_problem(value)


_ERROR_PATH = re.compile(r" - at `\$([^`]*)`$")
_PATH_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def _lossless_line_problem(line: bytes, typed_error: Exception) -> str | None:
    """Why a whole line is not lossless JSON, if it is JSON and it is not; located at the path
    of the typed decoder's error when the number there is the culprit."""
    try:
        value = _ANY_DECODER.decode(line)
    except msgspec.ValidationError:
        return "number is out of the double range (not finite)"
    except _UNREADABLE:
        return None
    problem = lossless_problem(value)
    if problem is None:
        return None
    found = _ERROR_PATH.search(str(typed_error))
    if found is not None:
        at = _value_at(value, found.group(1))
        located = None if at is _NOWHERE else lossless_problem(at)
        if located is not None:
            return f"{located} - at `{found.group(1).removeprefix('.')}`"
    return problem


_NOWHERE = object()


def _value_at(value: Any, path: str) -> Any:
    """The value at a msgspec error path (``.data.inserted[0].id``), or ``_NOWHERE``."""
    for step in _PATH_STEP.finditer(path):
        key, index = step.groups()
        if key is not None and isinstance(value, dict) and key in value:
            value = value[key]
        elif index is not None and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return _NOWHERE
    return value


@unchecked
def _text_problem(line: bytes) -> str | None:
    """What the typed decoder cannot see in a line: nesting beyond our limit, ``-0``."""
    if exceeds_depth(line):
        return _DEPTH_PROBLEM
    if has_negative_zero(line):
        return _NEGATIVE_ZERO_PROBLEM
    return None


def _peek(line: bytes) -> _Peek:
    if exceeds_depth(line):
        return _peek_envelope(line)
    try:
        return _PEEK_DECODER.decode(line)
    except _UNREADABLE:
        masked = mask_lone_surrogates(line)
        if isinstance(masked, str):
            return _peek_envelope(line)
        if masked is not None:
            return _peek(masked)
        return _Peek()


def _peek_envelope(line: bytes) -> _Peek:
    """The type and seq of a record msgspec cannot read at all (too deep, or a lone surrogate
    beside the private-use stand-ins), when it starts as records are written."""
    found = _ENVELOPE_START.match(line)
    if found is None:
        return _Peek()
    try:
        kind = _ANY_DECODER.decode(b'"' + found.group(1) + b'"')
    except _UNREADABLE:
        kind = None
    return _Peek(type=kind, seq=int(found.group(2)))


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_none(value: Any) -> str | None:
    return unmask_text(value) if isinstance(value, str) else None


def _error_at(line: bytes, line_no: int, problem: str) -> DecodeError:
    peek = _peek(line)
    return DecodeError(line=line_no, problem=problem, event_type=_str_or_none(peek.type),
                       seq=_int_or_none(peek.seq if peek.seq is not None else peek.seq0))


# --------------------------------------------------------------------------- records


@unchecked
def _expand_row(row: _PackedRow) -> list[Event] | str:
    """Members of a packed row as ``assistant/chunk`` events, or why the row is malformed."""
    data = row.data
    members: tuple[str, ...] = data.args if isinstance(data, _ToolRowData) else data.texts
    if not members:
        return "packed row has no members"
    if len(data.dt) != len(members) - 1:
        return f"packed row has {len(members)} members but {len(data.dt)} time gaps"
    events: list[Event] = []
    time = row.time0
    for k, member in enumerate(members):
        if k:
            time += data.dt[k - 1]
            if not -MAX_SAFE_INTEGER <= time <= MAX_SAFE_INTEGER:  # as DSH's own check of it
                return (f"the packed row's member at seq {row.seq0 + k} has time {time}, "
                        "beyond the safe-integer range (time0 plus the gaps before it)")
        chunk: TextDelta | ReasoningDelta | ToolCallDelta
        if isinstance(row, _TextRow):
            chunk = TextDelta(index=data.index, text=member)
        elif isinstance(row, _ReasoningRow):
            chunk = ReasoningDelta(index=data.index, text=member)
        else:
            assert isinstance(data, _ToolRowData)
            chunk = ToolCallDelta(index=data.index, id=data.id, name=data.name,
                                  arguments_delta=member)
        events.append(AssistantChunkEvent(
            seq=row.seq0 + k, time=time,
            data=AssistantChunkData(turn=data.turn, step=data.step, chunk=chunk)))
    return events


@unchecked
def _opaque(record: _KnownOpaque) -> OpaqueEvent | str:
    problem = _raw_problem(record.data)
    if problem is not None:
        return problem
    return OpaqueEvent(type=str(type(record).__struct_config__.tag), seq=record.seq,
                       time=record.time, data=record.data, ignorable=record.ignorable)


@unchecked
def _payload_problem(record: Any) -> str | None:
    """Why a typed event's ``Raw`` payloads (meta, tool schemas, replay state) are not
    lossless JSON, if they are not."""
    kind = type(record)
    if kind is AssistantChunkEvent:
        chunk = record.data.chunk
        if type(chunk) is FinishChunk and chunk.replay_state is not UNSET:
            return _raw_problem(chunk.replay_state)
    elif kind is ToolResultEvent:
        if record.data.meta is not UNSET:
            return _raw_problem(record.data.meta)
    elif kind is RequestHeaderEvent:
        tools = record.data.header.tools
        if isinstance(tools, tuple):
            for tool in tools:
                problem = _raw_problem(tool.parameters)
                if problem is not None:
                    return problem
    return None


_ROW_TYPES = frozenset({_TextRow, _ReasoningRow, _ToolRow})
_KNOWN_OPAQUE_TYPES = frozenset(_KNOWN_OPAQUE_CLASSES.values())
_PAYLOAD_TYPES = frozenset({ToolResultEvent, RequestHeaderEvent})
_SPECIAL_TYPES = _ROW_TYPES | _KNOWN_OPAQUE_TYPES | _PAYLOAD_TYPES | {SubagentDescriptorEvent}


@unchecked
def _complete(record: Any) -> list[Event] | str:
    """A decoded record as events (a packed row expands), or why it is not readable."""
    kind = type(record)
    if kind in _ROW_TYPES:
        return _expand_row(record)
    if kind in _KNOWN_OPAQUE_TYPES:
        opaque = _opaque(record)
        return opaque if isinstance(opaque, str) else [opaque]
    problem = _payload_problem(record)
    return [record] if problem is None else problem


@unchecked
def _complete_all(records: list[Any]) -> list[Event] | None:
    """:func:`_complete` over a whole log, in place and without a call per ordinary record;
    ``None`` on any problem (the line-by-line path then names it)."""
    chunk_type, finish_type = AssistantChunkEvent, FinishChunk
    special = _SPECIAL_TYPES
    rows = False
    for index, record in enumerate(records):
        kind = type(record)
        if kind is chunk_type:
            chunk = record.data.chunk
            if (type(chunk) is finish_type and chunk.replay_state is not UNSET
                    and _raw_problem(chunk.replay_state) is not None):
                return None
        elif kind in special:
            if kind in _ROW_TYPES:
                rows = True
            elif kind in _KNOWN_OPAQUE_TYPES:
                opaque = _opaque(record)
                if isinstance(opaque, str):
                    return None
                records[index] = opaque
            elif kind is SubagentDescriptorEvent:
                if not _accepted_descriptor(record):
                    return None  # kept opaque, from its line
            elif _payload_problem(record) is not None:
                return None
    if not rows:
        return records
    events: list[Event] = []
    for record in records:
        if type(record) in _ROW_TYPES:
            expanded = _expand_row(record)
            if isinstance(expanded, str):
                return None
            events.extend(expanded)
        else:
            events.append(record)
    return events


@unchecked
def _decode_untyped(line: bytes, line_no: int, typed_error: Exception) -> Event | DecodeError:
    """A line the typed decoder refused: an ignorable unknown type, or a problem to name."""
    peek = _peek(line)
    kind = _str_or_none(peek.type)
    seq = _int_or_none(peek.seq if peek.seq is not None else peek.seq0)
    if kind is None or (kind in _UNION_TAGS and kind != DESCRIPTOR_EVENT_TYPE):
        if isinstance(typed_error, RecursionError):
            why = "JSON nested too deeply for the interpreter's remaining stack"
        else:
            why = _clean(str(typed_error))
        if kind is None:  # maybe not JSON at all: say so, not where the typed decoder stopped
            why = _json_problem(line) or why
        return DecodeError(line=line_no, problem=why, seq=seq, event_type=kind)
    if kind in _REFUSED_LEGACY_TYPES:
        return DecodeError(line=line_no, seq=seq, event_type=kind,
                           problem=f'legacy event type "{kind}" is no longer readable (DSH '
                                   "refuses it too)")
    if kind not in KNOWN_EVENT_TYPES and peek.ignorable is not True:
        return DecodeError(
            line=line_no, seq=seq, event_type=kind,
            problem=f'unknown event type "{kind}" is not marked "ignorable": true',
        )
    return _decode_opaque(line, line_no, kind, seq)


@unchecked
def _decode_opaque(line: bytes, line_no: int, kind: str | None = None,
                   seq: int | None = None) -> OpaqueEvent | DecodeError:
    """A record kept as an :class:`OpaqueEvent` (its envelope still checked)."""
    try:
        opaque = _OPAQUE_DECODER.decode(line)
    except _UNREADABLE as exc:
        return DecodeError(line=line_no, problem=_clean(str(exc)), seq=seq, event_type=kind)
    problem = _raw_problem(opaque.data)
    if problem is not None:
        return DecodeError(line=line_no, problem=problem, seq=seq, event_type=kind)
    return opaque


@unchecked
def _accepted_descriptor(event: SubagentDescriptorEvent) -> bool:
    """Whether a typed descriptor is one DSH's subagent service accepts (else it is kept
    opaque, with its exact JSON, for :mod:`.descriptor` to name what is wrong)."""
    parsed = _parse_subagent_descriptor(event.data)
    return isinstance(parsed, Success) and parsed.unwrap() is not None


# --------------------------------------------------------------------------- lone surrogates


@unchecked
def _unmask(value: Any) -> Any:
    """A value decoded from a masked line, with lone surrogates back in place."""
    if isinstance(value, str):
        return unmask_text(value)
    if isinstance(value, tuple):
        return tuple(_unmask(item) for item in value)
    if isinstance(value, Raw):
        return Raw(unmask_json(bytes(value)))
    if isinstance(value, MessageSource):
        return MessageSource.from_wire({unmask_text(key): _unmask(item)
                                        for key, item in value.items})
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.replace(value, **{
            name: _unmask(getattr(value, name)) for name in value.__struct_fields__})
    return value


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class _Escaped:
    """A string with a lone surrogate, written as its JSON literal (msgspec writes UTF-8,
    which cannot hold one)."""

    __slots__ = ("literal",)

    def __init__(self, literal: bytes) -> None:
        self.literal = literal


@unchecked
def _escaping(value: Any) -> Any:
    """``value`` with every string that holds a lone surrogate made :class:`_Escaped`."""
    if isinstance(value, str):
        return _Escaped(json_string_literal(value)) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, tuple | list):
        return [_escaping(item) for item in value]
    if isinstance(value, dict):
        return _escaped_object(value.items())
    if isinstance(value, MessageSource):
        return _escaped_object(value.items)
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.replace(value, **{
            name: _escaping(getattr(value, name)) for name in value.__struct_fields__})
    return value


def _escaped_object(items: Iterable[tuple[str, Any]]) -> _Escaped:
    members = (json_string_literal(key) + b":" + _encode(value) for key, value in items)
    return _Escaped(b"{" + b",".join(members) + b"}")


def _escaped_hook(obj: object) -> object:
    if isinstance(obj, _Escaped):
        return Raw(obj.literal)
    return enc_hook(obj)


_ESCAPING_ENCODER = msgspec.json.Encoder(enc_hook=_escaped_hook)


@unchecked
def _encode(value: Any) -> bytes:
    """JSON of ``value``; lone surrogates are written as escapes."""
    try:
        return _ENCODER.encode(value)
    except UnicodeEncodeError:
        return _ESCAPING_ENCODER.encode(_escaping(value))


# --------------------------------------------------------------------------- decoding


@unchecked
def _decode_line(line: bytes, line_no: int) -> list[Event] | DecodeError:
    """One non-blank line as events, or why it cannot be read: the exact path."""
    problem = _text_problem(line)
    if problem is not None:
        return _error_at(line, line_no, problem)
    masked: bytes | None = None
    try:
        record = _RECORD_DECODER.decode(line)
    except _UNREADABLE as exc:
        found = mask_lone_surrogates(line)
        if isinstance(found, str):
            return _error_at(line, line_no, found)
        if found is None:
            lossy = _lossless_line_problem(line, exc)
            if lossy is not None:  # named by its value, not only by msgspec's bound
                return _error_at(line, line_no, lossy)
            untyped = _decode_untyped(line, line_no, exc)
            return untyped if isinstance(untyped, DecodeError) else [untyped]
        masked = found
        try:
            record = _RECORD_DECODER.decode(masked)
        except _UNREADABLE as masked_exc:
            record = _decode_untyped(masked, line_no, masked_exc)
            if isinstance(record, DecodeError):
                return msgspec.structs.replace(record, problem=unmask_text(record.problem))
    if type(record) is SubagentDescriptorEvent and not _accepted_descriptor(record):
        record = _decode_opaque(line if masked is None else masked, line_no,
                                DESCRIPTOR_EVENT_TYPE, record.seq)
        if isinstance(record, DecodeError):
            return record
    events = _complete(record)
    if isinstance(events, str):
        return _error_at(line, line_no, events)
    if masked is not None:
        events = [_unmask(event) for event in events]
    return events


def _restore_envelope(line: bytes, count: int) -> bytes | str:
    """A projected fixture record with ``seq``/``time`` (or ``seq0``/``time0``) restored."""
    problem = _text_problem(line)
    if problem is not None:
        return problem
    masked = mask_lone_surrogates(line)
    if isinstance(masked, str):
        return masked
    try:
        obj = _ANY_DECODER.decode(line if masked is None else masked)
    except msgspec.ValidationError:  # a DecodeError too: it must be caught first
        return "number is out of the double range (not finite)"
    except _UNREADABLE as exc:
        return _clean(str(exc))
    if not isinstance(obj, dict):
        return "record is not a JSON object"
    kind = obj.get("type")
    keys = ("seq0", "time0") if isinstance(kind, str) and kind in _ROW_TAGS else ("seq", "time")
    # As written: the type first (a record without one says so, as an unprojected one does).
    restored: dict[str, Any] = {"type": obj.pop("type")} if "type" in obj else {}
    restored[keys[0]], restored[keys[1]] = count, 0
    restored.update(obj)
    return unmask_json(_ENCODER.encode(restored))


@unchecked
def _decode_lines(lines: Sequence[bytes], first_line_no: int,
                  projected: bool) -> Result[tuple[Event, ...], DecodeError]:
    """Decode line by line, naming the line of the first problem."""
    events: list[Event] = []
    for offset, line in enumerate(lines):
        line_no = first_line_no + offset
        if not line.strip():
            continue
        if projected:
            restored = _restore_envelope(line, len(events))
            if isinstance(restored, str):
                return Failure(_error_at(line, line_no, restored))
            line = restored  # noqa: PLW2901  (the record as it would have been written)
        decoded = _decode_line(line, line_no)
        if isinstance(decoded, DecodeError):
            return Failure(decoded)
        events.extend(decoded)
    return Success(tuple(events))


@unchecked
def _decode_fast(data: bytes) -> tuple[Event, ...] | None:
    """The common case at near msgspec's speed, or ``None`` for the line-by-line path.

    Whole-text checks first (cheap over-approximations, confirmed on the lines they point
    at), then each line decoded in one C-level ``map``; when a line fails, the records before
    it are kept, the line goes through the untyped lane, and decoding resumes after it.
    """
    if not data.isascii():
        try:
            data.decode("utf-8")  # payloads kept as Raw are not validated by msgspec
        except UnicodeDecodeError:
            return None
    for at in negative_zero_candidates(data):
        if has_negative_zero(_line_around(data, at)):
            return None
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    if _has_deep_line(lines):
        return None
    records: list[Any] = []
    remaining = iter(lines)
    decode = _RECORD_DECODER.decode
    blank = 0
    while True:
        try:
            records.extend(map(decode, remaining))
        except _UNREADABLE as exc:
            index = len(records) + blank
            line = lines[index]
            if not line.strip():
                blank += 1
                continue
            untyped = _decode_untyped(line, index + 1, exc)
            if isinstance(untyped, DecodeError):
                return None
            records.append(untyped)
            continue
        break
    events = _complete_all(records)
    return None if events is None else tuple(events)


@unchecked
def _line_around(data: bytes, at: int) -> bytes:
    """The line of ``data`` that holds offset ``at``."""
    end = data.find(b"\n", at)
    return data[data.rfind(b"\n", 0, at) + 1:len(data) if end == -1 else end]


#: A JSON value nested ``d`` levels deep is at least ``2 * d`` bytes long (its brackets open
#: and close): only a line longer than this can be too deep and still decode.
_DEEP_LINE_LENGTH = 2 * (MAX_JSON_DEPTH + 1)


@unchecked
def _has_deep_line(lines: list[bytes]) -> bool:
    """Whether one of ``lines`` nests deeper than the limit. A shorter line that deep cannot
    be a whole JSON value (the decoder refuses it, and the line-by-line path names it)."""
    limit = _DEEP_LINE_LENGTH
    return any(exceeds_depth(line) for line in [line for line in lines if len(line) >= limit])


def _split(data: bytes, first_line_no: int, first_byte: int) -> list[bytes] | DecodeError:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = data.count(b"\n", 0, exc.start) + first_line_no
        return DecodeError(line=line_no,
                           problem=f"invalid UTF-8 at byte {exc.start + first_byte}")
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _decode_body(data: bytes, projected: bool, first_line_no: int = 1, first_byte: int = 0,
                 ) -> Result[tuple[Event, ...], DecodeError]:
    """Records from line ``first_line_no`` (byte ``first_byte``) of a file."""
    if not projected:
        fast = _decode_fast(data)
        if fast is not None:
            return Success(fast)
    lines = _split(data, first_line_no, first_byte)
    if isinstance(lines, DecodeError):
        return Failure(lines)
    return _decode_lines(lines, first_line_no, projected)


@checked
def decode_log(data: bytes, *, projected: bool = False) -> Result[tuple[Event, ...], DecodeError]:
    """Decode JSONL event records (no header line).

    Args:
        data: UTF-8 JSONL, one event or packed chunk row per line.
        projected: restore ``seq``/``time`` by counting, for DSH's committed fixtures.

    Returns:
        ``Success(events)`` or ``Failure(DecodeError)`` naming the line, seq and type.

    >>> decode_log(b'{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\\n').unwrap()
    (TurnStartEvent(seq=0, time=5, data=TurnStartData(turn=1), ignorable=UNSET),)
    >>> print(decode_log(b'{"type":"turn/start","seq":0,"time":5,"data":{}}').failure())
    line 1 (seq 0, turn/start): Object missing required field `turn` - at `data`
    """
    return _decode_body(data, projected)


@checked
def decode_header_line(line: bytes, line_no: int = 1) -> Result[SessionHeader, DecodeError]:
    """Decode the on-disk header line ``{"type":"session",…}`` of a DSH session file."""
    problem = _text_problem(line)
    if problem is not None:
        return Failure(DecodeError(line=line_no, problem=f"header: {problem}"))
    masked = mask_lone_surrogates(line)
    if isinstance(masked, str):
        return Failure(DecodeError(line=line_no, problem=f"header: {masked}"))
    text = line if masked is None else masked
    try:
        peek = _HEADER_VERSION_DECODER.decode(text)
    except _UNREADABLE as exc:
        return Failure(DecodeError(line=line_no, problem=f"header: {_clean(str(exc))}"))
    if peek.type != "session":
        return Failure(DecodeError(
            line=line_no, problem='the first line is not a session header ("type":"session")'))
    if isinstance(peek.version, int) and peek.version != SESSION_FORMAT_VERSION:
        newer = peek.version > SESSION_FORMAT_VERSION
        hint = "upgrade turnfork" if newer else "no upgrade path exists"
        return Failure(DecodeError(
            line=line_no,
            problem=f"session format version {peek.version} is not supported ({hint})"))
    try:
        header = _HEADER_DECODER.decode(text)
    except _UNREADABLE as exc:
        return Failure(DecodeError(line=line_no, problem=f"header: {_clean(str(exc))}"))
    if masked is not None:
        header = _unmask(header)
    return Success(SessionHeader(**msgspec.structs.asdict(header)))


@checked
def decode_session(data: bytes, *, projected: bool = False,
                   ) -> Result[tuple[SessionHeader, tuple[Event, ...]], DecodeError]:
    """Decode a DSH ``session.jsonl`` text: the header line, then event records.

    >>> text = (b'{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}\\n'
    ...         b'{"type":"session/end-seed","seq":0,"time":1,"data":{}}\\n')
    >>> header, events = decode_session(text).unwrap()
    >>> header.id, len(events)
    ('s', 1)
    """
    end = data.find(b"\n")
    first = data if end == -1 else data[:end]
    try:
        first.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Failure(DecodeError(line=1, problem=f"invalid UTF-8 at byte {exc.start}"))
    if not first.strip():
        return Failure(DecodeError(line=1, problem="empty session file: no header line"))
    header = decode_header_line(first.rstrip(b"\r"))
    if isinstance(header, Failure):
        return Failure(header.failure())
    body = b"" if end == -1 else data[end + 1:]
    return _decode_body(body, projected, 2, end + 1).map(lambda events: (header.unwrap(), events))


@checked
def is_json_line(line: bytes) -> bool:
    """Whether ``line`` is one complete JSON value as DSH's ``JSON.parse`` reads it: lone
    surrogate escapes, numbers out of range and nesting beyond :data:`MAX_JSON_DEPTH`
    included. A line that is not may be a torn write; one that is, but does not decode, is a
    bad record to name, never a torn write to drop.

    >>> is_json_line(b'{"t":"\\\\ud800"}'), is_json_line(b'{"t":')
    (True, False)
    >>> is_json_line(b"[" * 5000 + b"]" * 5000), is_json_line(b"[" * 5000 + b"]" * 4999)
    (True, False)
    """
    if exceeds_depth(line):
        return brackets_close(line)
    masked = mask_lone_surrogates(line)
    if isinstance(masked, str):  # stand-ins in it too: JSON.parse reads what this codec
        masked = plain_lone_surrogates(line)  # cannot, so only its syntax is checked
    try:
        _ANY_DECODER.decode(line if masked is None else masked)
    except msgspec.ValidationError:
        return True  # a number out of range: JSON all the same
    except _UNREADABLE:
        return False
    return True


# --------------------------------------------------------------------------- checking


@checked
def check_event(event: Event) -> Result[Event, WireError]:
    """Whether ``event`` can be written so that this codec reads it back: its wire types and
    bounds (non-negative safe-integer counts, non-empty names, known literals, lossless
    numbers, nesting), checked by writing it and reading the line with the decoder itself.

    Returns the event as it reads back. Order and balance (``seq == index``, turns, steps,
    tool-call pairing) are the trace's business (:func:`advance`).

    >>> from turnfork.core import TokenUsage, UsageChunk
    >>> usage = AssistantChunkEvent(seq=3, time=1, data=AssistantChunkData(turn=1, step=1,
    ...     chunk=UsageChunk(usage=TokenUsage(input_tokens=-1, output_tokens=5))))
    >>> print(check_event(usage).failure())
    seq 3, assistant/chunk: Expected `int` >= 0 - at `data.chunk.usage.inputTokens`
    """
    seq = event.seq if isinstance(event.seq, int) else None
    try:
        line = encode_event(event)
    except (TypeError, ValueError, OverflowError, NotImplementedError) as exc:
        return Failure(WireError(problem=f"cannot be written: {exc}", seq=seq,
                                 event_type=event_type(event)))
    decoded = _decode_line(line, 1)
    if isinstance(decoded, DecodeError):
        return Failure(WireError(problem=decoded.problem, seq=seq,
                                 event_type=event_type(event)))
    if len(decoded) != 1:  # a packed row's line (seq0/time0), as only an Event subclass writes
        return Failure(WireError(problem=f"reads back as {len(decoded)} events",
                                 seq=seq, event_type=event_type(event)))
    return Success(decoded[0])


@checked
def check_header(header: SessionHeader) -> Result[SessionHeader, WireError]:
    """Whether ``header`` can be written as a header line this codec reads back; returns the
    header as it reads back (``delegation_depth`` written as 0 when unset)."""
    try:
        line = encode_header_line(header)
    except (TypeError, ValueError, OverflowError, NotImplementedError) as exc:
        return Failure(WireError(problem=f"cannot be written: {exc}"))
    decoded = decode_header_line(line)
    if isinstance(decoded, Failure):
        problem = decoded.failure().problem
        return Failure(WireError(problem=problem.removeprefix("header: ")))
    return Success(decoded.unwrap())


# --------------------------------------------------------------------------- encoding


@checked
def encode_event(event: Event) -> bytes:
    """One event as compact JSON in DSH's key order (no newline)."""
    return _encode(event)


@unchecked
def _pack_key(event: Event) -> tuple[Any, ...] | None:
    """Events with equal keys and contiguous seqs may share one packed row (§5.4)."""
    if not isinstance(event, AssistantChunkEvent) or event.ignorable is not UNSET:
        return None
    chunk = event.data.chunk
    if isinstance(chunk, TextDelta):
        return ("text-chunks", event.data.turn, event.data.step, chunk.index)
    if isinstance(chunk, ReasoningDelta):
        return ("reasoning-chunks", event.data.turn, event.data.step, chunk.index)
    if isinstance(chunk, ToolCallDelta):
        return ("tool-call-chunks", event.data.turn, event.data.step, chunk.index, chunk.id,
                chunk.name)
    return None


@unchecked
def _packed_row(run: Sequence[AssistantChunkEvent]) -> bytes:
    first = run[0]
    key = _pack_key(first)
    assert key is not None
    data: dict[str, Any] = {"turn": first.data.turn, "step": first.data.step,
                            "index": key[3],
                            "dt": [b.time - a.time for a, b in itertools.pairwise(run)]}
    chunks = [event.data.chunk for event in run]
    if key[0] == "tool-call-chunks":
        data["id"] = key[4]
        if key[5] is not UNSET:
            data["name"] = key[5]
        data["args"] = [c.arguments_delta for c in chunks if isinstance(c, ToolCallDelta)]
    else:
        data["texts"] = [c.text for c in chunks if isinstance(c, TextDelta | ReasoningDelta)]
    return _encode({"type": key[0], "seq0": first.seq, "time0": first.time, "data": data})


def _encode_records(events: Iterable[Event], pack_chunks: bool) -> list[bytes]:
    out: list[bytes] = []
    if not pack_chunks:
        events = events if isinstance(events, Sequence) else list(events)
        try:
            return list(map(_ENCODER.encode, events))  # the common case, in one C loop
        except UnicodeEncodeError:
            return [_encode(event) for event in events]
    run: list[AssistantChunkEvent] = []
    run_key: tuple[Any, ...] | None = None

    def flush() -> None:
        if len(run) >= 3:
            out.append(_packed_row(run))
        else:
            out.extend(_encode(event) for event in run)
        run.clear()

    for event in events:
        key = _pack_key(event)
        if key is not None and key == run_key and run and event.seq == run[-1].seq + 1:
            assert isinstance(event, AssistantChunkEvent)
            run.append(event)
            continue
        flush()
        run_key = key
        if key is not None:
            assert isinstance(event, AssistantChunkEvent)
            run.append(event)
        else:
            out.append(_encode(event))
    flush()
    return out


@checked
def encode_log(events: Iterable[Event], *, pack_chunks: bool = False) -> bytes:
    """Events as JSONL: compact JSON, one record per ``\\n``-terminated line.

    Args:
        events: the log.
        pack_chunks: write runs of three or more text/reasoning/tool-call deltas as DSH's
            packed chunk rows (§5.4), as DSH's default JSONL store does.

    A string holding a lone surrogate (half of a pair, as a stream may split one) is written
    as its escape, ``\\ud800``, which DSH and this codec read back.

    >>> encode_log(decode_log(b'{"type":"session/end-seed","seq":0,"time":1,"data":{}}').unwrap())
    b'{"type":"session/end-seed","seq":0,"time":1,"data":{}}\\n'
    """
    records = _encode_records(events, pack_chunks)
    return b"\n".join(records) + b"\n" if records else b""


@checked
def encode_header_line(header: SessionHeader) -> bytes:
    """The on-disk header line (no newline); ``delegationDepth`` is always written."""
    fields = msgspec.structs.asdict(header)
    if isinstance(header.delegation_depth, UnsetType):
        fields["delegation_depth"] = 0
    return _encode(_HeaderLine(**fields))


@checked
def encode_session(header: SessionHeader, events: Iterable[Event], *,
                   pack_chunks: bool = False) -> bytes:
    """A DSH ``session.jsonl`` text: the header line, then the records."""
    return encode_header_line(header) + b"\n" + encode_log(events, pack_chunks=pack_chunks)
