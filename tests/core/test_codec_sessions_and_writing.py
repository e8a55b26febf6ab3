"""Reading whole session files and writing logs, pinned down end to end.

What is pinned here:

* A session's header is its first line without the line break (a header cut short reads as
  that cut line reads on its own).
* A session file is read whatever version its header names: version 0 with any fields and
  any seed length reads back as written (an unset delegation depth reads back as 0), with or
  without a newline after a header that has no events, with a CRLF after the header; any other
  version is refused on line 1, saying whether an upgrade would help.
* Invalid UTF-8 anywhere in a session file is named by its line and by its byte offset in the
  whole file, the header line included.
* A lone surrogate in a header beside the private-use characters that stand in for lone
  surrogates while reading is refused on line 1, by reading and by ``check_header`` alike.
* ``check_event`` and ``check_header`` return a ``WireError`` (never raise) for a value the
  writer raises ``TypeError``, ``ValueError``, ``OverflowError`` or ``NotImplementedError`` for;
  and ``check_event`` refuses a value whose line reads back as several events.
* ``encode_log`` and ``encode_session`` write one line per event unless asked to pack chunk
  runs, whatever the run of chunk deltas, and pack a run into one row when asked.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET, Raw
from msgspec.structs import replace
from returns.result import Failure, Success

from turnfork.core.log import (
    MAX_SAFE_INTEGER,
    SESSION_FORMAT_VERSION,
    AssistantChunkData,
    AssistantChunkEvent,
    DecodeError,
    Event,
    OpaqueEvent,
    ReasoningDelta,
    SessionHeader,
    TextDelta,
    ToolCallDelta,
    WireError,
    check_event,
    check_header,
    decode_header_line,
    decode_log,
    decode_session,
    encode_event,
    encode_header_line,
    encode_log,
    encode_session,
)
from turnfork.core.log.strategies import session_logs

# --------------------------------------------------------------------------- strategies

#: Text without lone surrogates (those have tests of their own).
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
_COUNT = st.integers(0, MAX_SAFE_INTEGER)


def _maybe(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(UNSET), values)


def _headers(version: st.SearchStrategy[int] | None = None) -> st.SearchStrategy[SessionHeader]:
    """Headers with any version (0 about half the time) and any valid fields."""
    return st.builds(
        SessionHeader,
        version=st.one_of(st.just(SESSION_FORMAT_VERSION), st.integers())
        if version is None else version,
        id=_TEXT.filter(bool), created_at=_COUNT, cwd=_maybe(_TEXT),
        parent_session=_maybe(_TEXT), seed_length=_maybe(_COUNT),
        origin=_maybe(st.just("subagent")), delegation_depth=_maybe(_COUNT),
        agent_preset=_maybe(_TEXT))


def _as_read(header: SessionHeader) -> SessionHeader:
    """The header as a reader sees it: an unset delegation depth is written as 0."""
    return replace(header, delegation_depth=0) if header.delegation_depth is UNSET else header


_DELTA_KINDS: dict[str, Callable[[int, str], TextDelta | ReasoningDelta | ToolCallDelta]] = {
    "text": lambda index, text: TextDelta(index=index, text=text),
    "reasoning": lambda index, text: ReasoningDelta(index=index, text=text),
    "tool call": lambda index, text: ToolCallDelta(index=index, id="call", name="f",
                                                   arguments_delta=text),
}


@st.composite
def _chunk_runs(draw: st.DrawFn) -> tuple[AssistantChunkEvent, ...]:
    """A run of three or more deltas of one kind, turn, step and index, at contiguous seqs:
    what ``pack_chunks=True`` writes as one packed row."""
    make = _DELTA_KINDS[draw(st.sampled_from(sorted(_DELTA_KINDS)))]
    turn, step = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    index, first = draw(st.integers(0, 3)), draw(st.integers(0, 50))
    texts = draw(st.lists(_TEXT, min_size=3, max_size=8))
    times = draw(st.lists(st.integers(0, 10**6), min_size=len(texts), max_size=len(texts)))
    return tuple(AssistantChunkEvent(seq=first + k, time=time, data=AssistantChunkData(
        turn=turn, step=step, chunk=make(index, text)))
        for k, (text, time) in enumerate(zip(texts, sorted(times), strict=True)))


def _one_line_each(events: tuple[Event, ...]) -> bytes:
    return b"".join(encode_event(event) + b"\n" for event in events)


# --------------------------------------------------------------------------- reading sessions


@settings(max_examples=examples(150), deadline=None)
@given(header=_headers(), events=st.one_of(st.just(()), session_logs(max_turns=2)),
       ending=st.sampled_from([b"\n", b"\r\n", b""]))
def test_a_session_of_any_header_reads_back_or_names_its_version(
        header: SessionHeader, events: tuple[Event, ...], ending: bytes) -> None:
    """Version 0 reads back as written (a header alone may end the file without a newline);
    another version is refused on line 1, before anything else in the header is read."""
    if events and not ending:
        ending = b"\n"
    data = encode_header_line(header) + ending + encode_log(events)
    result = decode_session(data)
    if header.version == SESSION_FORMAT_VERSION:
        assert result == Success((_as_read(header), decode_log(encode_log(events)).unwrap()))
    else:
        hint = "upgrade turnfork" if header.version > SESSION_FORMAT_VERSION else (
            "no upgrade path exists")
        assert result == Failure(DecodeError(line=1, problem=(
            f"session format version {header.version} is not supported ({hint})")))


def test_a_header_alone_without_a_newline_is_a_session_without_events() -> None:
    """The shortest session file: its header line, no newline, no events."""
    header = SessionHeader(id="s", created_at=1, delegation_depth=2, seed_length=0)
    line = encode_header_line(header)
    assert not line.endswith(b"\n")
    assert decode_session(line) == Success((header, ()))
    assert decode_session(line + b"\n") == Success((header, ()))


@settings(max_examples=examples(100), deadline=None)
@given(header=_headers(version=st.just(SESSION_FORMAT_VERSION)),
       events=session_logs(max_turns=2), ending=st.sampled_from([b"\n", b"\r\n"]),
       data=st.data())
def test_the_header_is_the_first_line_without_its_line_break(
        header: SessionHeader, events: tuple[Event, ...], ending: bytes,
        data: st.DataObject) -> None:
    """A header line cut anywhere (a torn write), then the events: the session reads as
    decode_header_line reads that first line, its line break left out (a string or literal
    cut short is "truncated", not a line break read as a bad character)."""
    line = encode_header_line(header)
    cut = line[:_boundary(line, data.draw(st.integers(1, len(line)), label="cut"))]
    first = decode_header_line(cut)
    result = decode_session(cut + ending + encode_log(events))
    if isinstance(first, Failure):
        assert result == first
    else:
        assert result == Success((first.unwrap(), decode_log(encode_log(events)).unwrap()))


_NOT_UTF8 = st.sampled_from([b"\xff", b"\xfe", b"\xc0", b"\xc1", b"\x80", b"\xbf"])


def _boundary(text: bytes, at: int) -> int:
    """The start of the character of ``text`` that holds offset ``at``."""
    while 0 < at < len(text) and text[at] & 0xC0 == 0x80:
        at -= 1
    return at


@settings(max_examples=examples(150), deadline=None)
@given(header=_headers(version=st.just(SESSION_FORMAT_VERSION)),
       events=session_logs(max_turns=2), bad=_NOT_UTF8, projected=st.booleans(),
       in_header=st.booleans(), data=st.data())
def test_invalid_utf8_is_named_by_its_line_and_its_byte_in_the_file(
        *, header: SessionHeader, events: tuple[Event, ...], bad: bytes, projected: bool,
        in_header: bool, data: st.DataObject) -> None:
    """A byte that cannot start a UTF-8 character, put anywhere in a session file: the error
    names its line (the header is line 1) and its offset from the start of the file."""
    line, body = encode_header_line(header), encode_log(events)
    if in_header or not body:
        at = _boundary(line, data.draw(st.integers(0, len(line)), label="at"))
        text = line[:at] + bad + line[at:] + b"\n" + body
        expected = DecodeError(line=1, problem=f"invalid UTF-8 at byte {at}")
    else:
        at = _boundary(body, data.draw(st.integers(0, len(body)), label="at"))
        text = line + b"\n" + body[:at] + bad + body[at:]
        expected = DecodeError(line=2 + body.count(b"\n", 0, at),
                               problem=f"invalid UTF-8 at byte {len(line) + 1 + at}")
    assert decode_session(text, projected=projected) == Failure(expected)


def test_invalid_utf8_offsets_count_from_the_start_of_the_file() -> None:
    """The worked case: the header line and its newline, a 54-byte event line and its
    newline, then a bad byte after two bytes of line 3; and one two bytes into the header."""
    header = b'{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}'
    event = b'{"type":"session/end-seed","seq":0,"time":1,"data":{}}'
    error = decode_session(header + b"\n" + event + b'\n{"\xff').failure()
    assert error == DecodeError(line=3,
                                problem=f"invalid UTF-8 at byte {len(header) + 1 + 54 + 1 + 2}")
    assert decode_session(b'{"\xff' + header[3:]).failure() == DecodeError(
        line=1, problem="invalid UTF-8 at byte 2")


_STAND_INS = "a lone surrogate escape cannot be read in a record that also holds characters"


@settings(max_examples=examples(60), deadline=None)
@given(header=_headers(version=st.just(SESSION_FORMAT_VERSION)),
       field=st.sampled_from(["id", "cwd", "parent_session", "agent_preset"]),
       lone=st.integers(0xD800, 0xDFFF), stand_in=st.integers(0xF0000, 0xF0FFF),
       parts=st.tuples(_TEXT, _TEXT, _TEXT), stand_in_first=st.booleans())
def test_a_lone_surrogate_beside_stand_ins_in_a_header_is_refused_on_line_1(
        *, header: SessionHeader, field: str, lone: int, stand_in: int,
        parts: tuple[str, str, str], stand_in_first: bool) -> None:
    """The one header turnfork cannot read back is refused clearly, not misread."""
    pair = (chr(stand_in), chr(lone)) if stand_in_first else (chr(lone), chr(stand_in))
    header = replace(header, **{field: parts[0] + pair[0] + parts[1] + pair[1] + parts[2]})
    error = decode_session(encode_session(header, ())).failure()
    assert error.line == 1 and error.problem.startswith(f"header: {_STAND_INS}")
    assert check_header(header) == Failure(WireError(
        problem=error.problem.removeprefix("header: ")))


# --------------------------------------------------------------------------- checking


class _RaisingZone(datetime.tzinfo):
    """A time zone whose offset cannot be computed: the writer raises what it raises."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
        raise self.error


def _unwritable(error: Exception) -> datetime.datetime:
    return datetime.datetime(2026, 1, 1, tzinfo=_RaisingZone(error))


def _chunk(text: object, seq: int = 3) -> AssistantChunkEvent:
    return AssistantChunkEvent(seq=seq, time=1, data=AssistantChunkData(
        turn=1, step=1, chunk=TextDelta(index=0, text=text)))  # type: ignore[arg-type]


_WRITING_ERRORS = st.sampled_from([TypeError, ValueError, OverflowError, NotImplementedError])


@settings(max_examples=examples(60), deadline=None)
@given(kind=_WRITING_ERRORS, why=_TEXT, seq=_COUNT,
       field=st.sampled_from(["id", "cwd", "parent_session", "agent_preset"]))
def test_a_value_the_writer_raises_for_is_a_wire_error(
        kind: type[Exception], why: str, seq: int, field: str) -> None:
    """Each error the writer may raise becomes ``cannot be written: <why>``, for an event
    (with its seq and type) and for a header."""
    poison = _unwritable(kind(why))
    assert check_event(_chunk(poison, seq)) == Failure(WireError(
        problem=f"cannot be written: {why}", seq=seq, event_type="assistant/chunk"))
    header = replace(SessionHeader(id="s", created_at=1), **{field: poison})
    assert check_header(header) == Failure(WireError(problem=f"cannot be written: {why}"))


class _NotAnOffset(datetime.tzinfo):
    def utcoffset(self, dt: datetime.datetime | None) -> datetime.timedelta:
        return 5  # type: ignore[return-value]


@pytest.mark.parametrize(("value", "kind"), [
    (datetime.datetime(2026, 1, 1, tzinfo=_NotAnOffset()), TypeError),
    (frozenset({"\ud800"}), ValueError),  # a lone surrogate where no escape is written
    (object(), NotImplementedError),
], ids=["TypeError", "ValueError", "NotImplementedError"])
def test_what_the_writer_itself_refuses_is_a_wire_error(value: object,
                                                        kind: type[Exception]) -> None:
    """Values the writer really raises each kind of error for (not a stand-in that raises).
    ``OverflowError`` has no such value on every supported Python (a UUID whose int was
    forced past 128 bits raises it on 3.11 and 3.12, not on 3.13): the property above covers
    it with a stand-in."""
    with pytest.raises(kind) as raised:
        encode_event(_chunk(value))
    why = f"cannot be written: {raised.value}"
    assert check_event(_chunk(value)) == Failure(WireError(
        problem=why, seq=3, event_type="assistant/chunk"))
    assert check_header(SessionHeader(id="s", created_at=1, cwd=value)) == Failure(
        WireError(problem=why))


class _RowShaped(OpaqueEvent, frozen=True, kw_only=True):
    """An event written with a packed row's envelope (``seq0``/``time0``): its line is a row."""

    seq: int = msgspec.field(name="seq0")
    time: int = msgspec.field(name="time0")


@settings(max_examples=examples(40), deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=6), seq=st.integers(0, 1000),
       row=st.sampled_from(["text-chunks", "reasoning-chunks"]))
def test_an_event_whose_line_reads_as_several_events_is_refused(
        texts: list[str], seq: int, row: str) -> None:
    """check_event returns what the line reads back as: one event, or a refusal naming how
    many events a row-shaped line holds."""
    data = msgspec.json.encode({"turn": 1, "step": 1, "index": 0, "dt": [0] * (len(texts) - 1),
                                "texts": texts})
    event = _RowShaped(type=row, seq=seq, time=0, data=Raw(data))
    read = decode_log(encode_log((event,))).unwrap()
    assert len(read) == len(texts)
    if len(texts) == 1:
        assert check_event(event) == Success(read[0])
    else:
        assert check_event(event) == Failure(WireError(
            problem=f"reads back as {len(texts)} events", seq=seq, event_type=row))


# --------------------------------------------------------------------------- writing


@settings(max_examples=examples(100), deadline=None)
@given(run=_chunk_runs(), header=_headers(version=st.just(SESSION_FORMAT_VERSION)))
def test_chunk_runs_are_packed_only_when_asked(run: tuple[AssistantChunkEvent, ...],
                                               header: SessionHeader) -> None:
    """By default, and with ``pack_chunks=False``, each event is its own line; with
    ``pack_chunks=True`` the run is one row. Both read back as the run."""
    unpacked = _one_line_each(run)
    for written in (encode_log(run), encode_log(run, pack_chunks=False), encode_log(iter(run))):
        assert written == unpacked
    packed = encode_log(run, pack_chunks=True)
    assert packed.count(b"\n") == 1 and packed.endswith(b"\n")
    assert decode_log(packed).unwrap() == decode_log(unpacked).unwrap() == run
    line = encode_header_line(header) + b"\n"
    assert encode_session(header, run) == encode_session(header, run, pack_chunks=False) == (
        line + unpacked)
    assert encode_session(header, run, pack_chunks=True) == line + packed


@settings(max_examples=examples(100), deadline=None)
@given(log=session_logs())
def test_an_unpacked_log_is_each_event_on_its_own_line(log: tuple[Event, ...]) -> None:
    """encode_log writes exactly the lines encode_event writes, in order, one per event."""
    assert encode_log(log) == _one_line_each(log)
    assert encode_log(log).count(b"\n") == len(log)


@settings(max_examples=examples(60), deadline=None)
@given(header=_headers(version=st.just(SESSION_FORMAT_VERSION)))
def test_a_header_reads_back_with_an_unset_delegation_depth_written_as_0(
        header: SessionHeader) -> None:
    """delegationDepth is always on the line; an unset depth is written, and read, as 0."""
    line = encode_header_line(header)
    written = _as_read(header).delegation_depth
    assert f'"delegationDepth":{written},'.encode() in line or line.endswith(
        f'"delegationDepth":{written}}}'.encode())
    assert check_header(header) == Success(_as_read(header))
