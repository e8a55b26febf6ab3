"""The codec's whole-text fast path reads what the line-by-line path reads (issue 15.5)."""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Result, Success

from turnfork.core import DecodeError, Event, decode_log, encode_log
from turnfork.core.log.codec import MAX_JSON_DEPTH, _decode_fast, _decode_lines
from turnfork.core.strategies import session_logs

Log = tuple[Event, ...]
_DEPTH_PROBLEM = (f"JSON nested deeper than {MAX_JSON_DEPTH} levels (turnfork's limit, the "
                  "same on every Python)")


def _line_by_line(data: bytes) -> Result[tuple[Event, ...], DecodeError]:
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    return _decode_lines(lines, 1, False)


@settings(max_examples=examples(200), deadline=None)
@given(session_logs(), st.booleans())
def test_the_fast_path_equals_the_line_by_line_path(log: Log, packed: bool) -> None:
    """On generated logs the fast path decodes and gives what reading line by line gives."""
    data = encode_log(log, pack_chunks=packed)
    fast = _decode_fast(data)
    assert fast is not None
    assert Success(fast) == _line_by_line(data)


def _opaque(data: bytes) -> bytes:
    return b'{"type":"goal/change","seq":0,"time":1,"data":' + data + b"}\n"


def test_a_deep_line_too_short_to_close_is_refused_as_too_deep() -> None:
    """An unclosed line deeper than the limit (shorter than any closed one) names the depth."""
    error = decode_log(_opaque(b"[" * (MAX_JSON_DEPTH + 10))).failure()
    assert (error.line, error.seq, error.event_type, error.problem) == (
        1, 0, "goal/change", _DEPTH_PROBLEM)


def test_one_level_beyond_the_limit_is_refused_after_a_good_line() -> None:
    """A line one level too deep is refused at its line; one level less is read."""
    turn_start = b'{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\n'
    inner = MAX_JSON_DEPTH  # with the record's own object: one level beyond the limit
    error = decode_log(turn_start + _opaque(b"[" * inner + b"]" * inner)).failure()
    assert (error.line, error.problem) == (2, _DEPTH_PROBLEM)
    inner -= 1
    assert isinstance(decode_log(_opaque(b"[" * inner + b"]" * inner)), Success)


#: Lines of every kind the fast path has to give up on or read past: good records, blank
#: lines, ignorable unknown records, ``-0`` as a number or only inside a string, an unsafe
#: integer, a lone surrogate, a record that is not JSON, one nested too deep.
_PIECES = {
    "typed": b'{"type":"turn/start","seq":%(seq)d,"time":0,"data":{"turn":1}}',
    "blank": b"",
    "spaces": b" \t ",
    "unknown": b'{"type":"acme/x","seq":%(seq)d,"time":0,"data":{"k":[1,"-0"]},"ignorable":true}',
    "minus-zero": b'{"type":"goal/change","seq":%(seq)d,"time":0,"data":{"v":[1,-0]}}',
    "minus-zero-in-text": b'{"type":"goal/change","seq":%(seq)d,"time":0,"data":{"v":"a,-0 [-0"}}',
    "minus-zero-key": b'{"type":"goal/change","seq":%(seq)d,"time":0,"data":{"-0":-0.5}}',
    "unsafe": b'{"type":"goal/change","seq":%(seq)d,"time":0,"data":{"v":9007199254740993}}',
    "surrogate": b'{"type":"goal/change","seq":%(seq)d,"time":0,"data":{"v":"\\ud800"}}',
    "not-json": b'{"type":"goal/change","seq":%(seq)d,"time":0,"data":{"v":"open',
    "deep": b'{"type":"goal/change","seq":%(seq)d,"time":0,"data":'
            + b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1) + b"}",
}


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(sorted(_PIECES)), max_size=8), st.booleans(),
       st.sampled_from([b"\n", b"\r\n"]))
def test_the_fast_path_agrees_with_the_line_by_line_path_on_any_mix(
        kinds: list[str], trailing: bool, newline: bytes) -> None:
    """Whatever mix of good and bad lines, the answer (events, or the first problem with its
    line, seq and type) is the one the line-by-line path gives."""
    lines = [_PIECES[kind] % {b"seq": index} for index, kind in enumerate(kinds)]
    data = newline.join(lines) + (newline if trailing else b"")
    assert decode_log(data) == _line_by_line(data)
