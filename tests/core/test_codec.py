"""The JSONL codec: what it refuses, how it says so, and what it writes (issue 2, item 3)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET
from returns.result import Failure, Success

from turnfork.core import (
    AssistantChunkData,
    AssistantChunkEvent,
    DecodeError,
    Event,
    MessageSource,
    OpaqueEvent,
    SandboxModeData,
    SandboxModeEvent,
    SessionHeader,
    TextBlock,
    TextDelta,
    ToolCallDelta,
    ToolResultBlock,
    ToolResultData,
    ToolResultEvent,
    ToolResultMessage,
    TurnStartData,
    TurnStartEvent,
    UserMessageEvent,
    decode_log,
    decode_session,
    encode_log,
    encode_session,
    event_type,
)
from turnfork.core.codec import MAX_JSON_DEPTH, is_json_line
from turnfork.core.log import codec  # its private lanes, compared below
from turnfork.core.strategies import session_logs

TURN_START = b'{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\n'
HEADER = b'{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}\n'


def _error(data: bytes, *, projected: bool = False) -> DecodeError:
    result = decode_log(data, projected=projected)
    assert isinstance(result, Failure), result
    error: DecodeError = result.failure()
    return error


def _session_error(data: bytes) -> DecodeError:
    result = decode_session(data)
    assert isinstance(result, Failure), result
    error: DecodeError = result.failure()
    return error


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


# --------------------------------------------------------------------------- error messages


def test_missing_field_names_line_seq_type_and_field() -> None:
    """A typed event missing a field is refused with line, seq, type and the field's path."""
    error = _error(TURN_START + b'{"type":"step/start","seq":1,"time":6,"data":{"turn":1}}\n')
    assert (error.line, error.seq, error.event_type) == (2, 1, "step/start")
    assert str(error) == ("line 2 (seq 1, step/start): Object missing required field `step` "
                          "- at `data`")


def test_error_without_a_readable_record_names_the_line_only() -> None:
    """Text that is not JSON is refused naming its line."""
    error = _error(TURN_START + b'{"type":"turn/start",\n')
    assert (error.line, error.seq, error.event_type) == (2, None, None)
    assert str(error).startswith("line 2: ")


def test_unknown_type_without_ignorable_is_refused() -> None:
    """An unknown type not marked ignorable is refused, naming it."""
    error = _error(TURN_START + b'{"type":"acme/thing","seq":1,"time":5,"data":{}}\n')
    assert str(error) == ('line 2 (seq 1, acme/thing): unknown event type "acme/thing" is not '
                          'marked "ignorable": true')


def test_ignorable_unknown_type_is_kept_opaque_and_round_trips_exactly() -> None:
    """An ignorable unknown event is an OpaqueEvent holding its exact data JSON."""
    line = (b'{"type":"acme/thing","seq":0,"time":5,"data":{"a": [1, 2.50, "x\\u00e9"],'
            b'"b":{}},"ignorable":true}\n')
    (event,) = decode_log(line).unwrap()
    assert isinstance(event, OpaqueEvent)
    assert (event.type, event.seq, event.time, event.ignorable) == ("acme/thing", 0, 5, True)
    assert bytes(event.data) == b'{"a": [1, 2.50, "x\\u00e9"],"b":{}}'
    assert encode_log((event,)) == line


def test_known_vocabulary_is_kept_opaque_without_ignorable() -> None:
    """DSH's own untyped vocabulary (session/title) needs no ignorable flag."""
    line = b'{"type":"session/title","seq":0,"time":5,"data":{"title":"t","messageSeqs":[4]}}\n'
    (event,) = decode_log(line).unwrap()
    assert isinstance(event, OpaqueEvent) and event.ignorable is UNSET
    assert encode_log((event,)) == line


def test_legacy_fallback_request_header_is_refused() -> None:
    """request/header with the legacy reason "fallback" is refused where it stands."""
    error = _error(b'{"type":"request/header","seq":0,"time":1,"data":{"header":{"config":'
                   b'{"provider":"p","model":"m"}},"reason":"fallback"}}\n')
    assert (error.line, error.seq, error.event_type) == (1, 0, "request/header")
    assert "'fallback'" in error.problem and "data.reason" in error.problem


def test_legacy_header_delta_type_is_refused() -> None:
    """The retired request/header-delta type is refused."""
    error = _error(b'{"type":"request/header-delta","seq":0,"time":1,"data":{}}\n')
    assert error.event_type == "request/header-delta"
    assert "legacy event type" in error.problem
    marked = _error(b'{"type":"mode/set","seq":0,"time":1,"data":{},"ignorable":true}\n')
    assert "legacy event type" in marked.problem


@pytest.mark.parametrize("line", [
    b'{"type":"turn/start","seq":0,"time":-0,"data":{"turn":1}}\n',
    b'{"type":"goal/change","seq":0,"time":1,"data":{"x":-0.0}}\n',
    b'{"type":"goal/change","seq":0,"time":1,"data":{"x":[1,-0e3]}}\n',
])
def test_negative_zero_is_refused(line: bytes) -> None:
    """-0 anywhere in a record is not lossless JSON."""
    error = _error(line)
    assert (error.line, error.seq) == (1, 0)
    assert error.problem == "-0 is not lossless JSON (DSH refuses negative zero)"


def test_minus_zero_inside_strings_and_negative_fractions_are_accepted() -> None:
    """Only the number -0 is refused: "-0" in a string and -0.5 are fine."""
    line = b'{"type":"goal/change","seq":0,"time":1,"data":{"s":"-0","x":-0.5,"y":[-0.25]}}\n'
    assert encode_log(decode_log(line).unwrap()) == line


@pytest.mark.parametrize(("line", "kind"), [
    (b'{"type":"turn/start","seq":0,"time":9007199254740992,"data":{"turn":1}}\n',
     "turn/start"),
    (b'{"type":"goal/change","seq":0,"time":1,"data":{"n":[1,-9007199254740992]}}\n',
     "goal/change"),
    (b'{"type":"tool/result","seq":0,"time":1,"data":{"turn":1,"step":1,"message":{"source":'
     b'{"kind":"tool","callId":"c"},"content":[{"type":"tool-result","toolCallId":"c",'
     b'"content":[],"isError":false}],"role":"user","id":"m"},"meta":{"n":90071992547409930}},'
     b'"sourceEventSeqs":[0],"surfaceOp":"append"}\n', "tool/result"),
])
def test_integer_beyond_the_safe_range_is_refused(line: bytes, kind: str) -> None:
    """An integer beyond 2^53-1 is refused in typed fields, opaque data and raw payloads."""
    error = _error(line)
    assert (error.line, error.seq, error.event_type) == (1, 0, kind)
    assert "9007199254740992" in error.problem or "90071992547409930" in error.problem


def test_largest_safe_integer_is_accepted() -> None:
    """2^53-1 is a safe integer and round-trips."""
    line = b'{"type":"turn/start","seq":0,"time":9007199254740991,"data":{"turn":1}}\n'
    assert encode_log(decode_log(line).unwrap()) == line


def test_number_beyond_a_double_in_opaque_data_is_refused_not_raised() -> None:
    """A number JavaScript reads as Infinity is refused with a DecodeError, never raised."""
    error = _error(b'{"type":"goal/change","seq":0,"time":1,"data":{"x":1e400}}\n')
    assert (error.seq, error.event_type) == (0, "goal/change")
    assert "not finite" in error.problem


@pytest.mark.parametrize(("line", "path"), [
    (b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1},"ignorable":null}\n',
     "ignorable"),
    (b'{"type":"sandbox/mode","seq":0,"time":1,"data":{"mode":"read-only","source":null}}\n',
     "data.source"),
])
def test_null_for_an_optional_key_is_refused(line: bytes, path: str) -> None:
    """DSH never writes null for an absent key, so null is refused."""
    error = _error(line)
    assert "null" in error.problem and f"`{path}`" in error.problem


def test_unknown_key_is_refused() -> None:
    """A key outside the envelope is refused (a decoded event must re-encode the same)."""
    error = _error(b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1},"foo":1}\n')
    assert "unknown field `foo`" in str(error)


def test_invalid_utf8_names_its_line() -> None:
    """Bytes that are not UTF-8 are refused naming the line and byte offset."""
    error = _error(TURN_START + b'{"type":"goal/change","seq":1,"time":1,"data":{"s":"\xff"}}\n')
    assert error.line == 2
    assert error.problem == f"invalid UTF-8 at byte {len(TURN_START) + 52}"


# --------------------------------------------------------------------------- packed rows


def test_packed_rows_expand_to_chunk_events() -> None:
    """A packed row expands to one assistant/chunk per member, times from dt."""
    data = (b'{"type":"text-chunks","seq0":0,"time0":10,"data":{"turn":1,"step":1,"index":0,'
            b'"dt":[1,-2],"texts":["a","b","c"]}}\n'
            b'{"type":"tool-call-chunks","seq0":3,"time0":20,"data":{"turn":1,"step":1,'
            b'"index":1,"dt":[0,0],"id":"c1","name":"bash","args":["{","}",""]}}\n')
    events = decode_log(data).unwrap()
    assert [(e.seq, e.time) for e in events] == [(0, 10), (1, 11), (2, 9), (3, 20), (4, 20),
                                                 (5, 20)]
    assert events[1] == AssistantChunkEvent(seq=1, time=11, data=AssistantChunkData(
        turn=1, step=1, chunk=TextDelta(index=0, text="b")))
    assert events[3] == AssistantChunkEvent(seq=3, time=20, data=AssistantChunkData(
        turn=1, step=1, chunk=ToolCallDelta(index=1, id="c1", name="bash", arguments_delta="{")))
    assert encode_log(events, pack_chunks=True) == data


@pytest.mark.parametrize(("row", "problem"), [
    (b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,'
     b'"dt":[1],"texts":["a","b","c"]}}', "packed row has 3 members but 1 time gaps"),
    (b'{"type":"reasoning-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,'
     b'"dt":[],"texts":[]}}', "packed row has no members"),
    (b'{"type":"tool-call-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,'
     b'"dt":[0],"id":"c","args":["a","b"],"extra":1}}', "unknown field `extra`"),
    (b'{"type":"text-chunks","seq0":0,"time0":1,"data":{"turn":1,"step":1,"index":0,'
     b'"dt":[0],"texts":["a",2]}}', "Expected `str`"),
])
def test_malformed_packed_row_is_refused(row: bytes, problem: str) -> None:
    """A malformed packed row is corruption: refused naming the row."""
    error = _error(TURN_START + row + b"\n")
    assert (error.line, error.seq) == (2, 0)
    assert error.event_type in ("text-chunks", "reasoning-chunks", "tool-call-chunks")
    assert problem in error.problem


def test_short_runs_stay_unpacked() -> None:
    """Runs shorter than three deltas are written one event per line."""
    events = tuple(AssistantChunkEvent(seq=k, time=k, data=AssistantChunkData(
        turn=1, step=1, chunk=TextDelta(index=0, text=str(k)))) for k in range(2))
    assert encode_log(events, pack_chunks=True) == encode_log(events)
    third = AssistantChunkEvent(seq=2, time=2, data=AssistantChunkData(
        turn=1, step=1, chunk=TextDelta(index=0, text="2")))
    assert b"text-chunks" in encode_log((*events, third), pack_chunks=True)


@pytest.mark.parametrize("kind", [b"[]", b"{}", b"[\"text-chunks\"]"])
def test_projected_record_of_a_type_that_is_not_a_string_is_refused(kind: bytes) -> None:
    """A projected record whose type is an array or object is a DecodeError, not a crash."""
    error = _error(b'{"type":%s,"data":{"turn":1}}\n' % kind, projected=True)
    assert error.line == 1


def test_projected_records_get_seq_and_time_by_counting() -> None:
    """Projected fixtures: plain lines and packed rows are numbered by counting, time 0."""
    data = (b'{"type":"turn/start","data":{"turn":1}}\n'
            b'{"type":"text-chunks","data":{"turn":1,"step":1,"index":0,"dt":[3,4],'
            b'"texts":["a","b","c"]}}\n'
            b'{"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}\n')
    events = decode_log(data, projected=True).unwrap()
    assert [(e.seq, e.time) for e in events] == [(0, 0), (1, 0), (2, 3), (3, 7), (4, 0)]


# --------------------------------------------------------------------------- session header


@pytest.mark.parametrize(("version", "hint"), [(1, "upgrade turnfork"),
                                               (-1, "no upgrade path exists")])
def test_header_version_other_than_zero_is_refused(version: int, hint: str) -> None:
    """A header version other than 0 is refused before any other check, saying why."""
    header = (b'{"type":"session","version":%d,"id":"s","createdAt":1,"retired":1}\n' % version)
    error = _session_error(header + TURN_START)
    assert str(error) == f"line 1: session format version {version} is not supported ({hint})"


@pytest.mark.parametrize(("first", "problem"), [
    (TURN_START, 'the first line is not a session header ("type":"session")'),
    (b"", "empty session file: no header line"),
    (b'{"type":"session","version":0,"id":"s","createdAt":1}\n',
     "header: Object missing required field `delegationDepth`"),
    (b'{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0,'
     b'"sandboxMode":"read-only"}\n', "header: Object contains unknown field `sandboxMode`"),
])
def test_bad_header_line_is_refused(first: bytes, problem: str) -> None:
    """A missing, incomplete or retired-key header line is refused on line 1."""
    error = _session_error(first)
    assert (error.line, error.problem) == (1, problem)


def test_session_errors_count_lines_from_the_header() -> None:
    """In a session file the first event is line 2."""
    error = _session_error(HEADER + b'{"type":"turn/start","seq":0,"time":5,"data":{}}\n')
    assert (error.line, error.seq) == (2, 0)


def test_session_round_trips() -> None:
    """encode_session writes the header line first; decode_session reads it back."""
    header = SessionHeader(id="s", created_at=1, parent_session="p", seed_length=0,
                           origin="subagent", delegation_depth=1)
    events = (TurnStartEvent(seq=0, time=5, data=TurnStartData(turn=1)),)
    data = encode_session(header, events)
    assert data.startswith(b'{"type":"session","version":0,"id":"s","createdAt":1,'
                           b'"parentSession":"p","seedLength":0,"origin":"subagent",'
                           b'"delegationDepth":1}\n')
    assert decode_session(data) == Success((header, events))


# --------------------------------------------------------------------------- encoding


def _has_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return False


def test_absent_optional_keys_are_absent_on_encode() -> None:
    """UNSET fields are left out of the JSON, never written as null."""
    result = ToolResultEvent(seq=3, time=1, source_event_seqs=(2,), surface_op="append",
                             data=ToolResultData(turn=1, step=1, message=ToolResultMessage(
                                 source=MessageSource(kind="tool", call_id="c"),
                                 content=(ToolResultBlock(tool_call_id="c", content=(
                                     TextBlock(text="ok"),)),), id="m")))
    mode = SandboxModeEvent(seq=4, time=1, data=SandboxModeData(mode="read-only"))
    lines = [json.loads(line) for line in encode_log((result, mode)).splitlines()]
    assert list(lines[0]) == ["type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp"]
    assert list(lines[0]["data"]) == ["turn", "step", "message"]
    assert "isError" not in lines[0]["data"]["message"]["content"][0]
    assert lines[1] == {"type": "sandbox/mode", "seq": 4, "time": 1,
                        "data": {"mode": "read-only"}}


@settings(max_examples=examples(100), deadline=None)
@given(session_logs())
def test_generated_logs_encode_without_null(log: tuple[Event, ...]) -> None:
    """No encoded generated log holds a JSON null anywhere."""
    for line in encode_log(log, pack_chunks=True).splitlines():
        assert not _has_null(msgspec.json.decode(line))


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=300))
def test_decoding_arbitrary_bytes_never_raises(data: bytes) -> None:
    """Any input gives Success or a DecodeError, never an exception."""
    for result in (decode_log(data), decode_log(data, projected=True), decode_session(data)):
        assert isinstance(result, Success | Failure)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                 max_size=3),
    max_leaves=8)
_records = st.fixed_dictionaries(
    {"type": st.sampled_from(("turn/start", "goal/change", "acme/x", "text-chunks",
                              "user/message", "tool-call-chunks"))},
    optional={"seq": _json, "time": _json, "seq0": _json, "time0": _json, "data": _json,
              "ignorable": _json, "surfaceOp": _json})


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_records, max_size=4))
def test_decoding_arbitrary_records_never_raises(records: list[dict[str, Any]]) -> None:
    """Records of the right kinds with arbitrary fields give Success or a DecodeError."""
    data = b"".join(_line(record) for record in records)
    for result in (decode_log(data), decode_log(data, projected=True)):
        assert isinstance(result, Success | Failure)
        if isinstance(result, Success):
            assert decode_log(encode_log(result.unwrap())) == result


# --------------------------------------------------------------------------- JSON lines


@pytest.mark.parametrize("separator", [b" ", b"", b"\t"])
def test_two_records_on_one_line_are_refused(separator: bytes) -> None:
    """One line holds one JSON value, as for DSH's JSON.parse per line."""
    second = b'{"type":"turn/start","seq":1,"time":5,"data":{"turn":1}}'
    error = _error(TURN_START + TURN_START.strip() + separator + second + b"\n")
    assert error.line == 2


def test_record_over_two_lines_is_refused() -> None:
    """A record broken between two of its tokens is a cut-short line, not one record."""
    error = _error(TURN_START + b'{"type":"turn/start","seq":1,"time":5,\n"data":{"turn":1}}\n')
    assert error.line == 2


# --------------------------------------------------------------------------- nesting


def _nested(depth: int) -> bytes:
    """An opaque record whose data nests arrays so that the record is ``depth`` deep."""
    inner = depth - 1  # the record object itself is one level
    return (b'{"type":"goal/change","seq":0,"time":1,"data":' + b"[" * inner + b"]" * inner
            + b"}\n")


def test_nesting_up_to_the_limit_is_read() -> None:
    """A record exactly MAX_JSON_DEPTH deep decodes and re-encodes as it was."""
    line = _nested(MAX_JSON_DEPTH)
    assert encode_log(decode_log(line).unwrap()) == line


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5_000, 200_000])
def test_nesting_beyond_the_limit_is_refused_naming_seq_and_type(depth: int) -> None:
    """Deeper than the limit is refused with one message, on every Python, seq and type named."""
    error = _error(TURN_START.replace(b'"seq":0', b'"seq":7') + _nested(depth).replace(
        b'"seq":0', b'"seq":8'))
    assert (error.line, error.seq, error.event_type) == (2, 8, "goal/change")
    assert error.problem == (f"JSON nested deeper than {MAX_JSON_DEPTH} levels (turnfork's "
                             "limit, the same on every Python)")


def test_nesting_inside_typed_records_and_raw_payloads_counts() -> None:
    """Depth counts from the record: a deep tool/result meta is refused like opaque data."""
    meta = b'{"a":' * MAX_JSON_DEPTH + b"0" + b"}" * MAX_JSON_DEPTH
    line = (b'{"type":"tool/result","seq":0,"time":1,"data":{"turn":1,"step":1,"message":'
            b'{"source":{"kind":"tool","callId":"c"},"content":[{"type":"tool-result",'
            b'"toolCallId":"c","content":[],"isError":false}],"role":"user","id":"m"},"meta":'
            + meta + b'},"sourceEventSeqs":[0],"surfaceOp":"append"}\n')
    error = _error(line)
    assert (error.seq, error.event_type) == (0, "tool/result")
    assert "nested deeper" in error.problem


def test_brackets_in_strings_and_wide_arrays_do_not_count_as_depth() -> None:
    """Only nesting counts: brackets inside strings, many sibling arrays."""
    line = (b'{"type":"goal/change","seq":0,"time":1,"data":{"s":"' + b"[{" * 3_000
            + b'","wide":[' + b",".join([b"[[]]"] * 3_000) + b"]}}\n")
    assert encode_log(decode_log(line).unwrap()) == line


def test_nesting_is_checked_on_the_header_line() -> None:
    """The header line is held to the same limit."""
    deep = b'{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0,"x":'
    error = _session_error(deep + b"[" * 1_000 + b"]" * 1_000 + b"}\n")
    assert (error.line, error.problem) == (1, "header: JSON nested deeper than 512 levels "
                                              "(turnfork's limit, the same on every Python)")


# --------------------------------------------------------------------------- lossless header


@pytest.mark.parametrize("value", [b"-0", b"-0.0", b"-0e2"])
def test_negative_zero_in_the_header_is_refused(value: bytes) -> None:
    """`"createdAt":-0` is refused on the header line as on any record (it read as 0)."""
    header = b'{"type":"session","version":0,"id":"s","createdAt":%s,"delegationDepth":0}\n'
    error = _session_error(header % value + TURN_START)
    assert (error.line, error.problem) == (1, "header: -0 is not lossless JSON (DSH refuses "
                                              "negative zero)")


@pytest.mark.parametrize("value", [b"12345678901234567890", b"9007199254740992", b"1e300"])
def test_float_fields_beyond_the_safe_range_are_refused(value: bytes) -> None:
    """A float field holding an integer JavaScript cannot hold exactly is refused too."""
    line = (b'{"type":"request/header","seq":0,"time":1,"data":{"header":{"config":'
            b'{"provider":"p","model":"m","temperature":%s}},"reason":"initial"}}\n' % value)
    error = _error(line)
    assert (error.seq, error.event_type) == (0, "request/header")


# --------------------------------------------------------------------------- lone surrogates


def _chunk_line(text: bytes) -> bytes:
    return (b'{"type":"assistant/chunk","seq":0,"time":1,"data":{"turn":1,"step":1,"chunk":'
            b'{"type":"text-delta","index":0,"text":"' + text + b'"}}}\n')


@pytest.mark.parametrize(("escaped", "read"), [
    (b"\\ud83d", "\ud83d"), (b"a\\ude00b", "a\ude00b"), (b"\\udfff\\ud800", "\udfff\ud800"),
    (b"\\\\ud800\\ud800", "\\ud800\ud800"),
])
def test_lone_surrogate_escapes_read_as_javascript_reads_them(escaped: bytes, read: str) -> None:
    """JSON.parse accepts a lone-surrogate escape (a stream may split an emoji): so do we, and
    the text is written back as the same escape."""
    line = _chunk_line(escaped)
    (event,) = decode_log(line).unwrap()
    assert isinstance(event, AssistantChunkEvent) and isinstance(event.data.chunk, TextDelta)
    assert event.data.chunk.text == read
    assert encode_log((event,)) == line


def test_surrogate_pair_escape_reads_as_one_character() -> None:
    """A high and a low escape together are one character, as in UTF-16."""
    (event,) = decode_log(_chunk_line(b"\\ud83d\\ude00")).unwrap()
    assert isinstance(event, AssistantChunkEvent) and isinstance(event.data.chunk, TextDelta)
    assert event.data.chunk.text == "\U0001f600"


def test_lone_surrogates_in_every_kind_of_value_round_trip() -> None:
    """Opaque data, message sources, ignorable unknown types and the header all keep them."""
    data = (b'{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w\\udc80",'
            b'"delegationDepth":0}\n'
            b'{"type":"goal/change","seq":0,"time":1,"data":{"k\\ud800":["\\udbff"]}}\n'
            b'{"type":"acme/\\ud800","seq":1,"time":1,"data":{},"ignorable":true}\n'
            b'{"type":"user/message","seq":2,"time":1,"data":{"content":[{"type":"text",'
            b'"text":"hi"}],"source":{"kind":"user","note":"\\ud800","n":[1]},"role":"user",'
            b'"id":"u"},"surfaceOp":"append"}\n')
    header, events = decode_session(data).unwrap()
    assert header.cwd == "/w\udc80"
    assert isinstance(events[1], OpaqueEvent) and events[1].type == "acme/\ud800"
    assert isinstance(events[2], UserMessageEvent)
    assert events[2].data.source.get("note") == "\ud800"
    assert encode_session(header, events) == data


def test_a_lone_surrogate_from_a_provider_is_written_escaped() -> None:
    """An event built with half of a surrogate pair encodes to valid UTF-8 JSON and reads back."""
    event = AssistantChunkEvent(seq=0, time=1, data=AssistantChunkData(
        turn=1, step=1, chunk=TextDelta(index=0, text="\ud83d")))
    line = encode_log((event,))
    assert line == _chunk_line(b"\\ud83d")
    line.decode("utf-8")
    assert decode_log(line).unwrap() == (event,)
    assert decode_log(encode_log((event,), pack_chunks=True)).unwrap() == (event,)


def test_lone_surrogate_beside_private_use_stand_ins_is_refused_clearly() -> None:
    """The one text turnfork cannot read: a lone surrogate escape in a record that also holds
    U+F0000 (the private-use characters that carry lone surrogates while reading)."""
    error = _error(_chunk_line("\\ud800\U000f0000".encode()))
    assert (error.seq, error.event_type) == (0, "assistant/chunk")
    assert "lone surrogate" in error.problem and "U+F0000" in error.problem


def test_an_error_quoting_a_lone_surrogate_prints_on_any_terminal() -> None:
    """Messages show lone surrogates escaped, as they show line breaks."""
    error = _error(b'{"type":"acme/\\ud800","seq":0,"time":1,"data":{}}\n')
    assert error.event_type == "acme/\ud800"
    assert "acme/\\ud800" in error.message
    error.message.encode("utf-8")


# --------------------------------------------------------------------------- message sources


def test_message_source_keeps_nested_values_as_json_and_copies_its_input() -> None:
    """from_wire keeps nested values as exact JSON text; mutating the input changes nothing."""
    wire: dict[str, Any] = {"kind": "plugin", "sections": [{"name": "a"}], "n": 3}
    source = MessageSource.from_wire(wire)
    wire["kind"] = "changed"
    assert source.kind == "plugin" and source.get("n") == 3
    assert bytes(source.get("sections")) == b'[{"name":"a"}]'  # type: ignore[arg-type]
    assert source == MessageSource.from_wire({"kind": "plugin", "sections": [{"name": "a"}],
                                              "n": 3})


def test_unsafe_integer_in_a_message_source_is_refused_at_its_path() -> None:
    """Numbers inside a source are held to the lossless rule, named at the source's path."""
    line = (b'{"type":"user/message","seq":0,"time":1,"data":{"content":[],"source":{"kind":'
            b'"user","n":[9007199254740993]},"role":"user","id":"u"},"surfaceOp":"append"}\n')
    error = _error(line)
    assert (error.seq, error.event_type) == (0, "user/message")
    assert "9007199254740993" in error.problem


def test_event_type_names_every_event_and_refuses_anything_else() -> None:
    """The wire type of typed and opaque events; a non-event is a TypeError, not a lookup miss."""
    assert event_type(TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=1))) == "turn/start"
    assert event_type(OpaqueEvent(type="goal/change", seq=0, time=0, data=msgspec.Raw(b"{}"))) == (
        "goal/change")
    with pytest.raises(TypeError, match="not an event: dict"):
        event_type({"type": "turn/start"})  # type: ignore[arg-type]


@pytest.mark.parametrize(("line", "whole"), [
    (TURN_START.strip(), True), (TURN_START[:30], False), (b'{"t":"\\ud800"}', True),
    (b'{"n":1e999}', True), (b"[" * 3_000 + b"]" * 3_000, True),
    (b"[" * 3_000 + b"]" * 2_999, False), (b'{"a":"]"' + b"[" * 600 + b"]" * 600 + b"}", True),
    (b'{"a":1} {"b":2}', False), (b"\x00\x00", False),
])
def test_is_json_line_says_whether_json_parse_would_read_the_line(line: bytes,
                                                                   whole: bool) -> None:
    """A loader tells a torn write from a bad record by it: any depth, lone surrogates."""
    assert is_json_line(line) is whole


@settings(max_examples=examples(100), deadline=None)
@given(session_logs(), st.booleans())
def test_both_decoding_lanes_agree_on_generated_logs(log: tuple[Event, ...], pack: bool) -> None:
    """The whole-text lane and the exact line-by-line lane read any valid log alike."""
    data = encode_log(log, pack_chunks=pack)
    fast = codec._decode_fast(data)
    assert fast is not None and fast == log
    assert codec._decode_lines(data.split(b"\n"), 1, False) == Success(log)
