"""How the codec names what is wrong with an unreadable line, for lines built to reach the less
travelled paths of its error reporting: a line that is not JSON at all, a lone surrogate beside
another problem, a ``seq`` that is a boolean, an unsafe integer away from the typed decoder's
complaint, a key repeated with another shape, and a caller whose stack is nearly used up."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from hypothesis import example, given
from hypothesis import strategies as st
from returns.result import Failure

from turnfork.core.log import (
    AssistantChunkData,
    AssistantChunkEvent,
    DecodeError,
    Event,
    MessageSource,
    OpaqueEvent,
    SubagentDescriptorEvent,
    TextBlock,
    TextDelta,
    UserMessage,
    UserMessageEvent,
    check_event,
    decode_log,
    decode_session,
    encode_log,
)

T = TypeVar("T")


def _error(line: bytes) -> DecodeError:
    result = decode_log(line + b"\n")
    assert isinstance(result, Failure), result
    error = result.failure()
    assert isinstance(error, DecodeError)
    return error


def test_a_line_that_is_not_json_says_so_rather_than_what_the_record_decoder_expected() -> None:
    """``[1, 2`` is cut short: the problem is that, not that a record should be an object."""
    error = _error(b"[1, 2")
    assert error.problem == "Input data was truncated"
    assert (error.seq, error.event_type) == (None, None)


def test_a_lone_surrogate_does_not_hide_the_records_type_and_seq() -> None:
    """A record with ``-0`` is refused; a lone surrogate elsewhere in it still lets the error
    name the record (read again with the surrogate masked)."""
    error = _error(b'{"type":"user/message","seq":5,"time":0,'
                   b'"data":{"x":"\\ud800","y":-0}}')
    assert (error.seq, error.event_type) == (5, "user/message")
    assert error.problem.startswith("-0 is not lossless JSON")


def test_a_boolean_seq_is_no_seq() -> None:
    """JSON ``true`` is not a sequence number: the error names the type, not ``seq True``."""
    for value in (b"true", b"false"):
        error = _error(b'{"type":"user/message","seq":' + value +
                       b',"time":0,"data":{"y":-0}}')
        assert error.seq is None
        assert error.event_type == "user/message"
        assert "seq" not in error.message


def test_an_unsafe_integer_is_named_even_away_from_the_typed_complaint() -> None:
    """The typed decoder stops at ``time`` (a string); the line also holds an integer beyond
    the safe range elsewhere: that is what is named, with no location, since the typed
    decoder's path does not lead to it. At the path, it is named with its location."""
    elsewhere = _error(b'{"type":"turn/start","seq":0,"time":"x",'
                       b'"data":{"turn":1,"n":9007199254740993}}')
    assert elsewhere.problem == "integer 9007199254740993 is beyond the safe-integer range"
    there = _error(b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":9007199254740993}}')
    assert there.problem == ("integer 9007199254740993 is beyond the safe-integer range"
                             " - at `data.turn`")


def test_a_repeated_key_of_another_shape_does_not_break_the_location() -> None:
    """``data`` twice: the typed decoder complains inside the first (an object), the plain
    JSON reading keeps the second (a list, or an object without the key). The path then leads
    nowhere, and the problem is named without a location instead of failing."""
    unsafe = "integer 9007199254740993 is beyond the safe-integer range"
    for second, problem in ((b"[9007199254740993]", unsafe),
                            (b'{"n":9007199254740993}', unsafe),
                            (b'{"turn":[9007199254740993]}', unsafe + " - at `data.turn`")):
        error = _error(b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":"x"},'
                       b'"data":' + second + b"}")
        assert error.problem == problem
        assert (error.seq, error.event_type) == (0, "turn/start")


def _at_depth(frames: int, call: Callable[[], T]) -> T:
    return call() if frames <= 0 else _at_depth(frames - 1, call)


def test_a_caller_with_little_stack_left_gets_an_error_value_not_a_recursion_error() -> None:
    """Nesting well within turnfork's limit, decoded by a caller with only a little of the
    interpreter's stack left: msgspec may run out of room; the codec answers with a
    ``DecodeError`` value either way (from Python 3.12 the C stack is counted apart, and no
    margin here may run out: every answer is then the ordinary one)."""
    deep = b"[" * 60 + b"]" * 60
    short = "JSON nested too deeply for the interpreter's remaining stack"
    here = len(_frames())
    for nested, ordinary in (
            (b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1,"x":' + deep + b"}}\n",
             "Object contains unknown field `x` - at `data`"),
            (b'{"x":' + deep + b"}\n", "Object missing required field `type`")):
        # At full depth first: the ordinary answer, and any checker built before stack is short.
        problems = {decode_log(nested).failure().problem}
        for margin in range(30, 125, 5):
            result = _at_depth(sys.getrecursionlimit() - here - margin,
                               lambda nested=nested: decode_log(nested))
            assert isinstance(result, Failure), (margin, result)
            problems.add(result.failure().problem)
        assert problems <= {ordinary, short}
        if sys.version_info < (3, 12):  # the interpreter's stack is msgspec's there
            assert short in problems


def _frames() -> list[object]:
    frame, frames = sys._getframe(), []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back  # type: ignore[assignment]
    return frames


_UNSAFE = {b"9007199254740993": "integer 9007199254740993 is beyond the safe-integer range",
           b"-9007199254740993": "integer -9007199254740993 is beyond the safe-integer range"}
_GOOD_LINE = (b'{"type":"turn/start","seq":%d,"time":0,"data":{"turn":1}}')


def _payload_line(kind: str, seq: int, poisoned: int | None, tools: int, number: bytes) -> bytes:
    """An event whose ``Raw`` payloads hold ``number`` where ``poisoned`` says (a tool's
    index, or 0 for the one payload of the other kinds), else only safe numbers."""
    def payload(index: int) -> bytes:
        return b'{"type":"object","maximum":' + (number if index == poisoned else b"7") + b"}"

    head = b'{"type":"%s","seq":%d,"time":0,"data":' % (kind.encode(), seq)
    if kind == "request/header":
        listed = b",".join(b'{"name":"t%d","description":"","parameters":%s}' % (index,
                                                                                 payload(index))
                           for index in range(tools))
        return head + (b'{"header":{"config":{"provider":"p","model":"m"},"tools":[%s]},'
                       b'"reason":"initial"}}' % listed)
    if kind == "assistant/chunk":
        return head + (b'{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"},'
                       b'"replayState":%s}}}' % payload(0))
    return head + (b'{"turn":1,"step":1,"message":{"source":{"kind":"tool","callId":"c"},'
                   b'"content":[{"type":"tool-result","toolCallId":"c","content":[]}],'
                   b'"role":"user","id":"m"},"meta":%s},'
                   b'"sourceEventSeqs":[],"surfaceOp":"append"}' % payload(0))


@given(kind=st.sampled_from(["request/header", "assistant/chunk", "tool/result"]),
       before=st.integers(0, 3), tools=st.integers(1, 4), data=st.data(),
       number=st.sampled_from(sorted(_UNSAFE)))
def test_an_unsafe_number_in_any_payload_is_refused_at_its_line(
        kind: str, before: int, tools: int, data: st.DataObject, number: bytes) -> None:
    """Payloads are kept as their JSON text, so the codec checks them itself: an unsafe
    integer in a replay state, a result's ``meta`` or any of a request header's tool schemas
    (the first, the last, one between) is refused at its line and seq, after any number of
    good lines; the same line with only safe numbers reads back."""
    count = tools if kind == "request/header" else 1
    poisoned = data.draw(st.none() | st.integers(0, count - 1), label="poisoned")
    lines = [_GOOD_LINE % seq for seq in range(before)]
    lines.append(_payload_line(kind, before, poisoned, tools, number))
    result = decode_log(b"\n".join(lines) + b"\n")
    if poisoned is None:
        assert not isinstance(result, Failure), result
        assert len(result.unwrap()) == before + 1
    else:
        assert isinstance(result, Failure), result
        error = result.failure()
        assert (error.line, error.seq, error.event_type) == (before + 1, before, kind)
        assert error.problem == _UNSAFE[number]


#: Text with lone surrogates in about every other example: built from a list of characters,
#: as ``st.text`` leaves out the surrogates an alphabet strategy offers it.
_WITH_LONE_SURROGATES = st.lists(st.one_of(
    st.characters(), st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])),
    max_size=12).map("".join)


def _read_back(line: bytes, texts: list[str], expected: tuple[Event, ...]) -> None:
    """``line`` reads back as ``expected``, unless its texts hold both a surrogate and a
    character the reader borrows to stand in for one (U+F0000-U+F0FFF): that record is
    refused, with the sentence that says so."""
    decoded = decode_log(line)
    points = [ord(char) for text in texts for char in text]
    if (any(0xD800 <= point <= 0xDFFF for point in points)
            and any(0xF0000 <= point <= 0xF0FFF for point in points)):
        assert decoded.failure().problem == (
            "a lone surrogate escape cannot be read in a record that also holds characters "
            "U+F0000-U+F0FFF (they stand in for lone surrogates while reading)")
    else:
        assert decoded.unwrap() == expected


def _as_read(text: str) -> str:
    """``text`` as a JSON reader reads its escapes back: a high surrogate followed by a low
    one is one character (UTF-16, as DSH's JavaScript holds it), a lone one stays."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


@given(texts=st.lists(_WITH_LONE_SURROGATES, min_size=1, max_size=4),
       pack_chunks=st.booleans())
def test_lone_surrogates_inside_a_messages_blocks_round_trip(texts: list[str],
                                                             pack_chunks: bool) -> None:
    """Half of a surrogate pair in any of a message's text blocks (a tuple inside the event)
    is written escaped and read back in place, in every block (two halves side by side read
    back as the one character they make, as in JavaScript)."""
    def event(read: bool) -> UserMessageEvent:
        return UserMessageEvent(seq=0, time=0, surface_op="append", data=UserMessage(
            content=tuple(TextBlock(text=_as_read(text) if read else text) for text in texts),
            source=MessageSource(kind="user"), id="u"))

    line = encode_log((event(read=False),), pack_chunks=pack_chunks)
    line.decode("utf-8")
    _read_back(line, texts, (event(read=True),))


def test_a_descriptor_dsh_would_not_accept_is_kept_opaque_with_its_exact_text() -> None:
    """A ``subagent/descriptor`` the typed model can hold but DSH's service refuses (a
    continuable one without a label) or cannot classify (a later version) is read as an
    opaque event with its JSON untouched, alone or among others; an accepted one is typed."""
    refused = (b'{"version":2,"mode":"continuable","provider":"p"}',
               b'{"version":3,"mode":"one-shot","provider":"p"}')
    accepted = b'{"version":2,"mode":"one-shot","provider":"p"}'
    lines = [b'{"type":"subagent/descriptor","seq":%d,"time":0,"data":%s}' % (seq, data)
             for seq, data in enumerate((*refused, accepted))]
    for chosen in ([0], [1], [2], [0, 1, 2]):
        events = decode_log(b"\n".join(lines[index] for index in chosen) + b"\n").unwrap()
        for index, event in zip(chosen, events, strict=True):
            if index == 2:
                assert isinstance(event, SubagentDescriptorEvent)
            else:
                assert isinstance(event, OpaqueEvent)
                assert (event.type, bytes(event.data)) == ("subagent/descriptor", refused[index])


def test_a_projected_record_reads_as_the_record_it_would_have_been() -> None:
    """DSH's committed fixtures leave out ``seq`` and ``time``: restored by counting, the
    record is named as an unprojected one would be — without a type, with a null type — and
    blank lines between records are skipped, not the end of the log."""
    for record in (b'{"data":{"turn":1}}', b'{"type":null,"data":{"turn":1}}'):
        projected = _error_of(record, projected=True)
        written = _error_of(record[:1] + b'"seq":0,"time":0,' + record[1:], projected=False)
        assert projected == written
    assert _error_of(b'{"data":{"turn":1}}', projected=True).problem == \
        "Object missing required field `type`"
    events = decode_log(b'{"type":"turn/start","data":{"turn":1}}\n\n  \n'
                        b'{"type":"turn/start","data":{"turn":2}}\n', projected=True).unwrap()
    assert [(event.seq, event.data.turn) for event in events] == [(0, 1), (1, 2)]


def _error_of(line: bytes, *, projected: bool) -> DecodeError:
    result = decode_log(line + b"\n", projected=projected)
    assert isinstance(result, Failure), result
    return result.failure()


_LINE_KINDS = st.lists(st.sampled_from(["typed", "unknown", "blank", "spaces"]), max_size=10)


@given(kinds=_LINE_KINDS, trailing_newline=st.booleans())
def test_blank_lines_and_unknown_records_anywhere_read_in_order(kinds: list[str],
                                                                trailing_newline: bool) -> None:
    """Blank (or whitespace-only) lines anywhere — first, last, several in a row — are
    skipped, and ignorable records of types we do not know are kept as opaque events, each
    in its place: the events are the records, in order, whatever surrounds them."""
    lines, expected = [], []
    for index, kind in enumerate(kinds):
        seq = len(expected)
        if kind == "typed":
            lines.append(b'{"type":"turn/start","seq":%d,"time":0,"data":{"turn":1}}' % seq)
            expected.append(("turn/start", seq))
        elif kind == "unknown":
            lines.append(b'{"type":"acme/x%d","seq":%d,"time":0,"data":{"i":%d},'
                         b'"ignorable":true}' % (index, seq, index))
            expected.append((f"acme/x{index}", seq))
        else:
            lines.append(b"" if kind == "blank" else b"   ")
    data = b"\n".join(lines) + (b"\n" if trailing_newline else b"")
    events = decode_log(data).unwrap()
    assert [(event.type if isinstance(event, OpaqueEvent) else "turn/start", event.seq)
            for event in events] == expected
    assert all(isinstance(event, OpaqueEvent) == (kind != "turn/start")
               for event, (kind, _) in zip(events, expected, strict=True))


_BIG = "integer 9007199254740993 is beyond the safe-integer range"
_ROW = (b'{"type":"text-chunks","seq0":0,"time0":0,'
        b'"data":{"turn":1,"step":1,"index":0,"dt":%s,"texts":["a","b","c"]}%s}')


def test_a_number_beyond_the_double_range_is_named_the_same_way_everywhere() -> None:
    """``1e400`` in a typed field, in a projected record and in an opaque payload: one
    sentence for all three."""
    finite = "number is out of the double range (not finite)"
    assert _error(b'{"type":"turn/start","seq":0,"time":1e400,"data":{"turn":1}}').problem \
        == finite
    assert _error_of(b'{"type":"turn/start","data":{"turn":1e400}}', projected=True).problem \
        == finite
    assert _error(b'{"type":"goal/change","seq":0,"time":0,"data":{"v":[1e400]}}').problem \
        == finite


def test_an_unsafe_integer_in_a_packed_row_is_located_by_its_index() -> None:
    """A packed row's time gaps: at ``dt[1]`` the unsafe integer is located; when a repeated
    ``data`` makes that path lead past the end of a shorter list, or into an object, it is
    named without a location."""
    assert _error(_ROW % (b"[1,9007199254740993]", b"")).problem == _BIG + " - at `data.dt[1]`"
    for second in (b'{"dt":[9007199254740993]}', b'{"dt":{"1":9007199254740993}}'):
        error = _error(_ROW % (b'[1,"x"]', b',"data":' + second))
        assert (error.problem, error.seq, error.event_type) == (_BIG, 0, "text-chunks")


def test_a_malformed_packed_row_is_refused_among_good_lines() -> None:
    """Three texts with one time gap: refused at its line, after good lines or alone."""
    good = b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}'
    for before in (0, 2):
        row = _ROW % (b"[1]", b"")
        result = decode_log(b"\n".join([good] * before + [row.replace(b'"seq0":0',
                                                                     b'"seq0":%d' % before)])
                            + b"\n")
        assert isinstance(result, Failure)
        error = result.failure()
        assert (error.line, error.problem) == (before + 1,
                                               "packed row has 3 members but 1 time gaps")


def test_an_unknown_records_envelope_and_payload_are_checked() -> None:
    """An ignorable record of a type we do not know is kept opaque only when its envelope is
    well formed and its payload lossless."""
    unsafe = _error(b'{"type":"acme/x","seq":0,"time":0,"data":{"v":9007199254740993},'
                    b'"ignorable":true}')
    assert (unsafe.problem, unsafe.seq, unsafe.event_type) == (_BIG, 0, "acme/x")
    negative = _error(b'{"type":"acme/x","seq":-1,"time":0,"data":{},"ignorable":true}')
    assert negative.problem == "Expected `int` >= 0 - at `seq`"
    assert negative.event_type == "acme/x"


def test_a_lone_surrogate_beside_a_typed_problem_names_that_problem_with_it_escaped() -> None:
    """Read again with the surrogate masked, the record still fails: the problem is the
    typed one, and a key quoted in it shows the surrogate as its escape."""
    assert _error(b'{"type":"turn/start","seq":0,"time":"x","data":{"turn":1},'
                  b'"s\\ud800":1}').problem == "Expected `int`, got `str` - at `time`"
    error = _error(b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1,"k\\ud800":1}}')
    assert error.problem == "Object contains unknown field `k\ud800` - at `data`"
    assert error.message.endswith("Object contains unknown field `k\\ud800` - at `data`")


@given(texts=st.lists(_WITH_LONE_SURROGATES, min_size=3, max_size=6))
@example(texts=["", "\ud800", "\U000f0000"])  # a stand-in beside a lone surrogate: refused
@example(texts=["", "a", "\U000f0000"])  # a stand-in with no surrogate reads back
def test_lone_surrogates_in_a_packed_run_of_chunks_round_trip(texts: list[str]) -> None:
    """A run of text deltas is written as one packed row (an object built for the line):
    lone surrogates in its texts are written escaped there too, and read back in place."""
    def events(read: bool) -> tuple[AssistantChunkEvent, ...]:
        return tuple(AssistantChunkEvent(seq=index, time=index, data=AssistantChunkData(
            turn=1, step=1, chunk=TextDelta(index=0, text=_as_read(text) if read else text)))
            for index, text in enumerate(texts))

    packed = encode_log(events(read=False), pack_chunks=True)
    assert b"text-chunks" in packed
    packed.decode("utf-8")
    _read_back(packed, texts, events(read=True))


def test_an_unwritable_payload_is_refused_with_or_without_a_lone_surrogate() -> None:
    """A payload msgspec cannot encode is a write error, whether or not the event also holds
    a lone surrogate (the escaping encoder's path)."""
    for kind in ("acme/x", "acme/\ud800"):
        checked = check_event(OpaqueEvent(type=kind, seq=0, time=0, data=object(),  # type: ignore[arg-type]
                                          ignorable=True))
        assert isinstance(checked, Failure)
        assert checked.failure().problem == "cannot be written: cannot encode object"


def test_invalid_utf8_is_located_by_its_byte_in_the_whole_file() -> None:
    """The byte offset counts from the start of the file, header line included, and the line
    is the file's."""
    header = b'{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}'
    good = b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}'
    for data in (header + b"\n" + good + b'\n{"type":"x\xff"}\n',
                 header + b"\n\n" + b'{"type":"x\xff"}'):
        result = decode_session(data)
        assert isinstance(result, Failure)
        error = result.failure()
        bad = data.index(b"\xff")
        assert error.problem == f"invalid UTF-8 at byte {bad}"
        assert error.line == data[:bad].count(b"\n") + 1
    error = _error(good + b'\n{"type":"x\xff"}')
    assert (error.line, error.problem) == (2, f"invalid UTF-8 at byte {len(good) + 11}")


def test_a_last_line_without_a_newline_after_a_leading_blank_line_is_read() -> None:
    """A file that starts with a blank line and does not end in a newline: its last line is a
    record like any other, read (or refused) on the line-by-line path as on the fast one."""
    minus_zero = b'{"type":"goal/change","seq":0,"time":0,"data":{"v":-0}}'
    error = _error(b"\n" + minus_zero)
    assert (error.line, error.seq) == (2, 0)
    good = b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}'
    assert len(decode_log(b"\n" + good).unwrap()) == 1
    assert len(decode_log(b'\n{"type":"turn/start","data":{"turn":1}}', projected=True)
               .unwrap()) == 1
