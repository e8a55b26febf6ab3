"""Codec corners a mutation run found unpinned (issue 29): whitespace-only lines anywhere in a
log, invalid UTF-8 after a blank first line, and the problems a projected fixture's record is
refused for (``-0``, a lone surrogate beside the stand-in characters) — the same words as for
a record with its envelope."""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure

from turnfork.core import Event, decode_log, encode_log
from turnfork.core.codec import is_json_line
from turnfork.core.strategies import session_logs

Log = tuple[Event, ...]


@settings(max_examples=examples(200), deadline=None)
@given(session_logs(), st.data())
def test_whitespace_lines_anywhere_change_nothing(log: Log, data: st.DataObject) -> None:
    """Blank and whitespace-only lines between any records, several in a row too, read as
    the log without them (typed records and the opaque ones read apart alike)."""
    lines = encode_log(log).split(b"\n")[:-1]
    padded: list[bytes] = []
    for line in lines:
        padded.extend(data.draw(st.lists(st.sampled_from([b"", b" ", b"\t", b"  "]),
                                         max_size=3)))
        padded.append(line)
    padded.extend(data.draw(st.lists(st.sampled_from([b"", b" "]), max_size=2)))
    assert decode_log(b"\n".join(padded) + b"\n").unwrap() == log


def test_invalid_utf8_after_blank_lines_is_named_at_its_line() -> None:
    """The line number counts the blank lines before it, the first one included."""
    for text, line in ((b"\n\xff\n", 2), (b"\n\n \xff", 3), (b"\xff\n", 1)):
        refused = decode_log(text)
        assert isinstance(refused, Failure), text
        assert refused.failure().line == line, (text, refused.failure())
        assert "invalid UTF-8" in refused.failure().problem


def test_a_projected_record_is_refused_in_the_same_words() -> None:
    """-0, and a lone surrogate escape beside a stand-in character, refused in a projected
    fixture as in a record with seq and time: the problem is the same sentence."""
    stand_in = "\U000f0001"
    for body in (b'"data":{"x":-0}', b'"data":{"x":[1,-0.0]}',
                 ('"data":{"t":"\\ud800","u":"' + stand_in + '"}').encode()):
        projected = decode_log(b'{"type":"goal/change",' + body + b"}\n", projected=True)
        plain = decode_log(b'{"type":"goal/change","seq":0,"time":1,' + body + b"}\n")
        assert isinstance(projected, Failure) and isinstance(plain, Failure), body
        assert projected.failure().problem == plain.failure().problem, body
        assert projected.failure().line == 1


def test_a_line_only_this_codec_cannot_read_is_still_json() -> None:
    """A lone surrogate escape beside a stand-in character: JSON.parse reads it, so it is a
    complete line (a bad record to name, never a torn write to drop)."""
    line = '{"t":"\\ud800","u":"\U000f0001"}'.encode()
    assert is_json_line(line)
    assert not is_json_line(line[:-1])


def test_an_event_or_header_that_cannot_be_encoded_is_a_wire_error() -> None:
    """A value msgspec will not encode (a payload that is no JSON at all) is refused as a
    WireError naming the event, never raised."""
    import msgspec

    from turnfork.core import OpaqueEvent, SessionHeader
    from turnfork.core.codec import check_event, check_header

    unwritable = OpaqueEvent(type="plugin/x", seq=4, time=1,
                             data=object())  # type: ignore[arg-type]
    refused = check_event(unwritable)
    assert isinstance(refused, Failure)
    error = refused.failure()
    assert (error.seq, error.event_type) == (4, "plugin/x")
    assert error.problem.startswith("cannot be written: ")
    header = SessionHeader(id="s", created_at=0, cwd=object())  # type: ignore[arg-type]
    refused_header = check_header(header)
    assert isinstance(refused_header, Failure)
    assert refused_header.failure().problem.startswith("cannot be written: ")
    assert check_event(OpaqueEvent(type="plugin/x", seq=4, time=1, data=msgspec.Raw(b"{}"),
                                   ignorable=True)).unwrap().type == "plugin/x"


@settings(max_examples=examples(100), deadline=None)
@given(session_logs(), st.booleans())
def test_any_iterable_of_events_encodes_as_its_tuple(log: Log, surrogate: bool) -> None:
    """A generator encodes like the tuple of its events, also when a text holds a lone
    surrogate (the encoder then starts again on the slow path)."""
    from turnfork.core import AssistantChunkData, AssistantChunkEvent, TextDelta

    if surrogate:
        log = (*log, AssistantChunkEvent(seq=len(log), time=0, data=AssistantChunkData(
            turn=1, step=1, chunk=TextDelta(index=0, text="half \ud800 a pair"))))
    for pack in (False, True):
        assert encode_log(iter(log), pack_chunks=pack) == encode_log(log, pack_chunks=pack)
        assert encode_log(list(log), pack_chunks=pack) == encode_log(log, pack_chunks=pack)
