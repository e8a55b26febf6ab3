"""JSONL codec for DSH session logs (wire-format §5.2–5.5, §5.8).

Rules of this module:

* Decoders and encoders are built once, at import, and reused for every line.
* Decoding never raises for bad input: it returns ``Failure(DecodeError)`` naming the 1-based
  line, and the seq and event type when they are known.
* A line is either one event or one DSH *packed chunk row* (``text-chunks``,
  ``reasoning-chunks``, ``tool-call-chunks``), which expands to ``assistant/chunk`` events.
* Types outside the typed model are kept as :class:`OpaqueEvent` when they are in DSH's known
  vocabulary or carry ``"ignorable": true``; any other type is refused.
* What DSH calls "lossless JSON" is enforced: no ``-0``, no integer beyond the safe range.
* ``projected=True`` reads DSH's committed test fixtures, whose records have no ``seq``/``time``
  (``seq0``/``time0`` for rows): they are restored by counting, time 0 (wire-format §5.8).

Structural checks only: ``seq == index`` and turn/step balance are the trace's business.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeAlias

import msgspec
from msgspec import UNSET, Raw, UnsetType
from returns.result import Failure, Result, Success

from ._checking import unchecked
from .events import (
    KNOWN_EVENT_TYPES,
    MAX_SAFE_INTEGER,
    SESSION_FORMAT_VERSION,
    TYPED_EVENT_CLASSES,
    AssistantChunkData,
    AssistantChunkEvent,
    Event,
    NonNegInt,
    OpaqueEvent,
    PositiveInt,
    ReasoningDelta,
    SafeInt,
    SessionHeader,
    TextDelta,
    ToolCallDelta,
    TypedEvent,
    dec_hook,
    enc_hook,
)

__all__ = [
    "DecodeError",
    "decode_log",
    "decode_session",
    "decode_header_line",
    "encode_log",
    "encode_session",
    "encode_event",
    "encode_header_line",
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


#: What ``str.splitlines`` breaks a line on, mapped to its escape (``"\n"`` → ``\\n``).
_LINE_BREAKS = {code: repr(chr(code))[1:-1]
                for code in (0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)}


# --------------------------------------------------------------------------- packed rows


class _TextRowData(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    turn: PositiveInt
    step: PositiveInt
    index: NonNegInt
    dt: tuple[SafeInt, ...]
    texts: tuple[str, ...]


class _ToolRowData(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    turn: PositiveInt
    step: PositiveInt
    index: NonNegInt
    dt: tuple[SafeInt, ...]
    id: str
    args: tuple[str, ...]
    name: str | UnsetType = UNSET


class _Row(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="type"):
    seq0: NonNegInt
    time0: SafeInt


class _TextRow(_Row, frozen=True, kw_only=True, tag="text-chunks"):
    data: _TextRowData


class _ReasoningRow(_Row, frozen=True, kw_only=True, tag="reasoning-chunks"):
    data: _TextRowData


class _ToolRow(_Row, frozen=True, kw_only=True, tag="tool-call-chunks"):
    data: _ToolRowData


_PackedRow: TypeAlias = _TextRow | _ReasoningRow | _ToolRow
_Record: TypeAlias = TypedEvent | _PackedRow
_ROW_TAGS = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})


class _Peek(msgspec.Struct):
    """Just enough of a record to name it in an error and route unknown types."""

    type: Any = None
    seq: Any = None
    seq0: Any = None
    ignorable: Any = None


class _HeaderLine(msgspec.Struct, frozen=True, kw_only=True, rename="camel",
                  forbid_unknown_fields=True, tag_field="type", tag="session"):
    version: int
    id: str
    created_at: NonNegInt
    cwd: str | UnsetType = UNSET
    parent_session: str | UnsetType = UNSET
    seed_length: NonNegInt | UnsetType = UNSET
    origin: Literal["subagent"] | UnsetType = UNSET
    delegation_depth: NonNegInt
    agent_preset: str | UnsetType = UNSET


class _HeaderVersion(msgspec.Struct):
    type: Any = None
    version: Any = None


_RECORD_DECODER = msgspec.json.Decoder(_Record, dec_hook=dec_hook)
_PEEK_DECODER = msgspec.json.Decoder(_Peek)
_OPAQUE_DECODER = msgspec.json.Decoder(OpaqueEvent, dec_hook=dec_hook)
_HEADER_DECODER = msgspec.json.Decoder(_HeaderLine)
_HEADER_VERSION_DECODER = msgspec.json.Decoder(_HeaderVersion)
_ANY_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder(enc_hook=enc_hook)
#: What decoding text that is not a readable record raises: msgspec's errors, and
#: RecursionError for JSON nested deeper than the interpreter's recursion limit.
_UNREADABLE = (msgspec.DecodeError, RecursionError)

# A JSON string literal, so number tokens can be looked for outside strings only.
_STRING_LITERAL = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NEGATIVE_ZERO = re.compile(rb"(?<![0-9.eE+-])-0(?:\.0*)?(?:[eE][+-]?[0-9]+)?(?![0-9.eE])")
# A JSON number starts after ':', ',', '[' or white space. Finding "-0" right after one of
# them is a fast over-approximation of _NEGATIVE_ZERO (it also fires inside strings and on
# -0.5); only its hits need the exact check.
_NUMBER_STARTS = frozenset(b":,[ \t\r\n")
# An integer beyond the safe range has 16 or more digits. With every digit mapped to "0",
# finding 16 zeros in a row is a fast over-approximation (it also fires on such runs inside
# strings); only its hits need the exact check, which also covers the payloads kept as Raw
# inside typed events (meta, replayState, tool schemas, message-source extras).
_SIXTEEN_DIGITS = b"0" * 16
# A number beyond the double range (1e999, which DSH reads as Infinity) without 16 digits in
# a row has an exponent of three or more digits: "e000" once scanned (below).
_BIG_EXPONENT = b"e000"


@unchecked
def _may_hold_negative_zero(data: bytes) -> bool:
    at = data.find(b"-0")
    while at != -1:
        if at > 0 and data[at - 1] in _NUMBER_STARTS:
            return True
        at = data.find(b"-0", at + 2)
    return False


# One translation serves all over-approximations: digits become "0" and every byte after
# which a JSON number may start becomes ":", so "-0" after such a byte reads ":-0"; "E" and
# an exponent's "+" become "e" and "0", so 1E+999 reads "0e0000".
_SCAN_TABLE = bytes.maketrans(b"123456789,[ \t\r\nE+", b"000000000::::::e0")


@unchecked
def _may_be_lossy(data: bytes) -> bool:
    """Whether ``data`` may hold ``-0``, an unsafe integer or a number beyond the double range
    (cheap; false positives allowed)."""
    scanned = data.translate(_SCAN_TABLE)
    return (scanned.find(b":-0") != -1 or scanned.find(_SIXTEEN_DIGITS) != -1
            or _may_overflow(scanned))


@unchecked
def _may_overflow(scanned: bytes) -> bool:
    """A big exponent after a mantissa that follows a number start (``:`` once scanned)."""
    at = scanned.find(_BIG_EXPONENT)
    while at != -1:
        start = at
        while start and scanned[start - 1] in b"0.":
            start -= 1
        if start < at:
            if scanned[start - 1:start] == b"-":
                start -= 1
            if start == 0 or scanned[start - 1] == ord(":"):
                return True
        at = scanned.find(_BIG_EXPONENT, at + 1)
    return False


@unchecked
def _has_negative_zero(line: bytes) -> bool:
    if not _may_hold_negative_zero(line):
        return False
    return _NEGATIVE_ZERO.search(_STRING_LITERAL.sub(b'""', line)) is not None


def _lossless_problem(value: Any) -> str | None:
    """Why a decoded JSON value could not be held exactly by DSH's JavaScript, if it can't."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, int):
            if abs(item) > MAX_SAFE_INTEGER:
                return f"integer {item} is beyond the safe-integer range"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "number is not finite"
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _lossless_line_problem(json_text: bytes | Raw) -> str | None:
    """Why a JSON text could not be held exactly by DSH's JavaScript, if it can't."""
    try:
        value = _ANY_DECODER.decode(json_text)
    except msgspec.ValidationError:
        return "number is out of the double range (not finite)"
    except _UNREADABLE:
        return None  # malformed JSON: the record decoder names the problem
    return _lossless_problem(value)


def _json_problem(line: bytes) -> str | None:
    """Why ``line`` is not JSON (malformed, or nested too deeply), if it is not."""
    try:
        _ANY_DECODER.decode(line)
    except msgspec.ValidationError:
        return None  # JSON, with a number out of range: the lossless check names it
    except _UNREADABLE as exc:
        return _clean(str(exc))
    return None


def _clean(problem: str) -> str:
    """msgspec says ``$.data.turn``; a user reads ``data.turn``."""
    return problem.replace("`$.", "`").replace("- at `$`", "").strip()


def _peek(line: bytes) -> _Peek:
    try:
        return _PEEK_DECODER.decode(line)
    except _UNREADABLE:
        return _Peek()


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


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


def _restore_envelope(line: bytes, count: int) -> bytes | str:
    """A projected fixture record with ``seq``/``time`` (or ``seq0``/``time0``) restored."""
    try:
        obj = _ANY_DECODER.decode(line)
    except _UNREADABLE as exc:
        return _clean(str(exc))
    if not isinstance(obj, dict):
        return "record is not a JSON object"
    keys = ("seq0", "time0") if obj.get("type") in _ROW_TAGS else ("seq", "time")
    restored: dict[str, Any] = {"type": obj.pop("type", None), keys[0]: count, keys[1]: 0}
    restored.update(obj)
    return _ENCODER.encode(restored)


@unchecked
def _decode_untyped(line: bytes, line_no: int, typed_error: Exception) -> Event | DecodeError:
    peek = _peek(line)
    kind = _str_or_none(peek.type)
    seq = _int_or_none(peek.seq if peek.seq is not None else peek.seq0)
    typed_tags = _TYPED_TAGS | _ROW_TAGS
    if kind is None or kind in typed_tags:
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
    try:
        opaque = _OPAQUE_DECODER.decode(line)
    except _UNREADABLE as exc:
        return DecodeError(line=line_no, problem=_clean(str(exc)), seq=seq, event_type=kind)
    problem = _lossless_line_problem(opaque.data)
    if problem is not None:
        return DecodeError(line=line_no, problem=problem, seq=seq, event_type=kind)
    return OpaqueEvent(type=opaque.type, seq=opaque.seq, time=opaque.time,
                       data=opaque.data.copy(), ignorable=opaque.ignorable)


_TYPED_TAGS = frozenset(str(cls.__struct_config__.tag) for cls in TYPED_EVENT_CLASSES)
_ROW_TYPES = frozenset({_TextRow, _ReasoningRow, _ToolRow})
#: Retired vocabulary DSH refuses on load, ignorable or not (wire-format §1.2).
_REFUSED_LEGACY_TYPES = frozenset({"request/header-delta", "mode/set"})


@unchecked
def _decode_lines(lines: Sequence[bytes], first_line_no: int, projected: bool,
                  suspicious: bool) -> Result[tuple[Event, ...], DecodeError]:
    """Decode line by line. ``suspicious``: the text may hold ``-0`` or an unsafe integer,
    which msgspec would accept silently, so every line is checked for them first."""
    events: list[Event] = []
    decode = _RECORD_DECODER.decode
    row_types = _ROW_TYPES
    for offset, raw_line in enumerate(lines):
        line_no = first_line_no + offset
        line = raw_line
        if projected:
            if not line.strip():
                continue
            restored = _restore_envelope(line, len(events))
            if isinstance(restored, str):
                return Failure(DecodeError(line=line_no, problem=restored))
            line = restored
        if suspicious:
            problem = _line_lossless_problem(line, line_no)
            if problem is not None:
                return Failure(problem)
        try:
            record = decode(line)
        except _UNREADABLE as exc:
            if not line.strip():
                continue
            decoded = _decode_untyped(line, line_no, exc)
            if isinstance(decoded, DecodeError):
                return Failure(decoded)
            events.append(decoded)
            continue
        if type(record) in row_types:
            expanded = _expand_row(record)  # type: ignore[arg-type]
            if isinstance(expanded, str):
                return Failure(DecodeError(
                    line=line_no, problem=expanded, seq=record.seq0,  # type: ignore[union-attr]
                    event_type=str(type(record).__struct_config__.tag)))
            events.extend(expanded)
        else:
            events.append(record)  # type: ignore[arg-type]
    return Success(tuple(events))


@unchecked
def _line_lossless_problem(line: bytes, line_no: int) -> DecodeError | None:
    problem = None
    if _has_negative_zero(line):
        problem = "-0 is not lossless JSON (DSH refuses negative zero)"
    elif _may_be_lossy(line):
        problem = _lossless_line_problem(line)
    if problem is None:
        return None
    peek = _peek(line)
    return DecodeError(line=line_no, problem=problem, event_type=_str_or_none(peek.type),
                       seq=_int_or_none(peek.seq if peek.seq is not None else peek.seq0))


def _split(data: bytes) -> list[bytes] | DecodeError:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_no = data.count(b"\n", 0, exc.start) + 1
        return DecodeError(line=line_no, problem=f"invalid UTF-8 at byte {exc.start}")
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


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
    suspicious = _may_be_lossy(data)
    if not projected and not suspicious:
        fast = _decode_segments(data)
        if fast is not None:
            return Success(fast)
    lines = _split(data)
    if isinstance(lines, DecodeError):
        return Failure(lines)
    return _decode_lines(lines, 1, projected, suspicious)


@unchecked
def _expand_records(records: list[Any], into: list[Event]) -> bool:
    """Append decoded records to ``into``, expanding packed rows; False on a malformed row."""
    row_types = _ROW_TYPES
    for record in records:
        if type(record) in row_types:
            expanded = _expand_row(record)
            if isinstance(expanded, str):
                return False
            into.extend(expanded)
        else:
            into.append(record)
    return True


_FAILED_INDEX = re.compile(r"`\$\[(\d+)\]")


@unchecked
def _decode_segments(data: bytes) -> tuple[Event, ...] | None:
    """The common case at msgspec's speed: runs of typed lines decode in one call each.

    A line outside the typed model (an opaque event) stops a run; msgspec names its index,
    the run before it is decoded, the line itself goes through the opaque lane, and the next
    run starts after it. Each line is decoded at most twice. ``None`` (any real problem, or
    blank lines that would shift msgspec's indexes) sends the caller to the line-by-line path,
    which names the line of the problem.
    """
    if data.startswith(b"\n") or b"\n\n" in data or b"\n\r\n" in data:
        return None
    try:
        data.decode("utf-8")  # opaque payloads are kept as Raw, which msgspec does not validate
    except UnicodeDecodeError:
        return None
    decode_lines = _RECORD_DECODER.decode_lines
    view = memoryview(data)
    events: list[Event] = []
    lines: list[bytes] | None = None
    starts: list[int] = []
    first = 0  # index of the first line of the current run
    while True:
        start = starts[first] if first else 0
        try:
            records = decode_lines(view[start:])
        except _UNREADABLE as exc:
            found = _FAILED_INDEX.search(str(exc))
            if found is None:
                return None
            if lines is None:
                lines = data.split(b"\n")
                starts = [0, *itertools.accumulate(len(line) + 1 for line in lines)]
            bad = first + int(found.group(1))
            if bad >= len(lines):
                return None
            if bad > first and not _expand_records(
                    decode_lines(view[start:starts[bad]]), events):
                return None
            opaque = _decode_untyped(lines[bad], bad + 1, exc)
            if isinstance(opaque, DecodeError):
                return None
            events.append(opaque)
            first = bad + 1
            if first >= len(lines) or starts[first] >= len(data):
                return tuple(events)
            continue
        if not _expand_records(records, events):
            return None
        return tuple(events)


def decode_header_line(line: bytes, line_no: int = 1) -> Result[SessionHeader, DecodeError]:
    """Decode the on-disk header line ``{"type":"session",…}`` of a DSH session file."""
    try:
        peek = _HEADER_VERSION_DECODER.decode(line)
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
        header = _HEADER_DECODER.decode(line)
    except _UNREADABLE as exc:
        return Failure(DecodeError(line=line_no, problem=f"header: {_clean(str(exc))}"))
    return Success(SessionHeader(
        version=header.version, id=header.id, created_at=header.created_at, cwd=header.cwd,
        parent_session=header.parent_session, seed_length=header.seed_length,
        origin=header.origin, delegation_depth=header.delegation_depth,
        agent_preset=header.agent_preset))


def decode_session(data: bytes, *, projected: bool = False,
                   ) -> Result[tuple[SessionHeader, tuple[Event, ...]], DecodeError]:
    """Decode a DSH ``session.jsonl`` text: the header line, then event records.

    >>> text = (b'{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}\\n'
    ...         b'{"type":"session/end-seed","seq":0,"time":1,"data":{}}\\n')
    >>> header, events = decode_session(text).unwrap()
    >>> header.id, len(events)
    ('s', 1)
    """
    lines = _split(data)
    if isinstance(lines, DecodeError):
        return Failure(lines)
    if not lines or not lines[0].strip():
        return Failure(DecodeError(line=1, problem="empty session file: no header line"))
    header = decode_header_line(lines[0].rstrip(b"\r"))
    if isinstance(header, Failure):
        return Failure(header.failure())
    body = data[len(lines[0]) + 1:]
    suspicious = _may_be_lossy(body)
    return _decode_lines(lines[1:], 2, projected, suspicious).map(
        lambda events: (header.unwrap(), events))


# --------------------------------------------------------------------------- encoding


def encode_event(event: Event) -> bytes:
    """One event as compact JSON in DSH's key order (no newline)."""
    return _ENCODER.encode(event)


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
    return _ENCODER.encode({"type": key[0], "seq0": first.seq, "time0": first.time,
                            "data": data})


def _encode_records(events: Iterable[Event], pack_chunks: bool) -> list[bytes]:
    out: list[bytes] = []
    if not pack_chunks:
        out.extend(_ENCODER.encode(event) for event in events)
        return out
    run: list[AssistantChunkEvent] = []
    run_key: tuple[Any, ...] | None = None

    def flush() -> None:
        if len(run) >= 3:
            out.append(_packed_row(run))
        else:
            out.extend(_ENCODER.encode(event) for event in run)
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
            out.append(_ENCODER.encode(event))
    flush()
    return out


def encode_log(events: Iterable[Event], *, pack_chunks: bool = False) -> bytes:
    """Events as JSONL: compact JSON, one record per ``\\n``-terminated line.

    Args:
        events: the log.
        pack_chunks: write runs of three or more text/reasoning/tool-call deltas as DSH's
            packed chunk rows (§5.4), as DSH's default JSONL store does.

    >>> encode_log(decode_log(b'{"type":"session/end-seed","seq":0,"time":1,"data":{}}').unwrap())
    b'{"type":"session/end-seed","seq":0,"time":1,"data":{}}\\n'
    """
    records = _encode_records(events, pack_chunks)
    return b"".join(record + b"\n" for record in records)


def encode_header_line(header: SessionHeader) -> bytes:
    """The on-disk header line (no newline); ``delegationDepth`` is always written."""
    depth = header.delegation_depth
    return _ENCODER.encode(_HeaderLine(
        version=header.version, id=header.id, created_at=header.created_at, cwd=header.cwd,
        parent_session=header.parent_session, seed_length=header.seed_length,
        origin=header.origin, delegation_depth=0 if isinstance(depth, UnsetType) else depth,
        agent_preset=header.agent_preset))


def encode_session(header: SessionHeader, events: Iterable[Event], *,
                   pack_chunks: bool = False) -> bytes:
    """A DSH ``session.jsonl`` text: the header line, then the records."""
    return encode_header_line(header) + b"\n" + encode_log(events, pack_chunks=pack_chunks)

