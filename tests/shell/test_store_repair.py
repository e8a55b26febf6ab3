"""Loading damaged logs: torn tails are dropped (with a warning), open turns closed durably,
everything else refused with the file, line and seq."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard

from turnfork.core import (
    SessionEndSeedEvent,
    SessionHeader,
    StepEndEvent,
    ToolErrorInfo,
    ToolResultEvent,
    TurnEndEvent,
    TurnInterrupted,
    decode_session,
    encode_header_line,
)
from turnfork.shell import JsonlSessionStore, SessionLoadError
from turnfork.shell.store import SessionRepairWarning

HEADER = SessionHeader(id="s", created_at=0)
TURN_START = b'{"type":"turn/start","seq":%d,"time":1,"data":{"turn":%d}}'
TURN_END = b'{"type":"turn/end","seq":%d,"time":2,"data":{"turn":%d,"reason":{"kind":"completed"}}}'
STEP_START = b'{"type":"step/start","seq":%d,"time":3,"data":{"turn":%d,"step":1}}'
TOOL_CALL = (b'{"type":"tool/call","seq":%d,"time":4,"data":{"turn":%d,"step":1,'
             b'"callId":"c1","name":"echo","arguments":"{}"}}')


def _write(root: Path, *records: bytes, tail: bytes = b"") -> Path:
    path = root / "_no-cwd" / "s" / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(line + b"\n" for line in (encode_header_line(HEADER), *records))
                     + tail)
    return path


def _complete_turns(count: int) -> list[bytes]:
    lines: list[bytes] = []
    for turn in range(1, count + 1):
        lines += [TURN_START % (len(lines), turn), TURN_END % (len(lines) + 1, turn)]
    return lines


def test_torn_final_line_is_dropped_and_cut_off(tmp_path: Path) -> None:
    """A final line without newline is dropped with a warning and truncated away."""
    good = _complete_turns(2)
    path = _write(tmp_path, *good, tail=b'{"type":"turn/start","se')
    with pytest.warns(SessionRepairWarning, match="torn tail"):
        session = JsonlSessionStore(tmp_path).load("s")
    assert [e.seq for e in session.events] == [0, 1, 2, 3, 4]
    assert isinstance(session.events[4], SessionEndSeedEvent)
    assert path.read_bytes() == encode_header_line(HEADER) + b"\n" + b"\n".join(good) + b"\n"


def test_a_final_line_that_is_not_json_is_a_torn_tail(tmp_path: Path) -> None:
    """A complete final line that is not JSON at all (zero-filled blocks) is torn."""
    good = _complete_turns(1)
    path = _write(tmp_path, *good, b"\x00\x00\x00\x00")
    with pytest.warns(SessionRepairWarning, match="torn tail .5 bytes from line 4"):
        session = JsonlSessionStore(tmp_path).load("s")
    assert len(session.events) == 3  # two events and the end-seed
    assert path.read_bytes() == encode_header_line(HEADER) + b"\n" + b"\n".join(good) + b"\n"


def test_a_final_line_with_a_lone_surrogate_escape_is_a_record_not_a_tail(
        tmp_path: Path) -> None:
    """JSON that strict parsers refuse (a lone-surrogate escape, as DSH writes it) is still
    JSON: the final line is kept, never dropped as torn."""
    line = b'{"type":"made/up","seq":2,"time":0,"data":{"x":"\\ud800"},"ignorable":true}'
    path = _write(tmp_path, *_complete_turns(1), line)
    before = path.read_bytes()
    session = JsonlSessionStore(tmp_path).load("s")
    assert len(session.events) == 4
    assert path.read_bytes() == before


def test_a_complete_unreadable_line_before_the_last_is_refused_and_kept(
        tmp_path: Path) -> None:
    """Only the final line can be torn: an unreadable line before it is refused, the file
    left exactly as it was (issue 14.9)."""
    good = _complete_turns(1)
    path = _write(tmp_path, *good, b"\x00\x00garbage", TURN_START % (2, 2))
    before = path.read_bytes()
    with pytest.raises(SessionLoadError, match=r"session\.jsonl: line 4: JSON is malformed"):
        JsonlSessionStore(tmp_path).load("s")
    assert path.read_bytes() == before


def test_a_complete_final_line_that_does_not_decode_is_refused(tmp_path: Path) -> None:
    """A final line that is JSON but not a valid record is corruption, never a tail."""
    good = _complete_turns(1)
    path = _write(tmp_path, *good, b'{"type":"turn/start","seq":2,"time":1,"data":{}}')
    before = path.read_bytes()
    with pytest.raises(SessionLoadError, match=r"line 4 \(seq 2, turn/start\)"):
        JsonlSessionStore(tmp_path).load("s")
    assert path.read_bytes() == before


def test_open_final_turn_is_closed_with_interrupted_and_made_durable(tmp_path: Path) -> None:
    """Crash repair answers the started call, ends the step and the turn, on disk too."""
    path = _write(tmp_path, *_complete_turns(1), TURN_START % (2, 2), STEP_START % (3, 2),
                  TOOL_CALL % (4, 2))
    session = JsonlSessionStore(tmp_path).load("s")
    closers = list(session.events)[5:8]
    assert [type(e) for e in closers] == [ToolResultEvent, StepEndEvent, TurnEndEvent]
    result = closers[0]
    assert isinstance(result, ToolResultEvent)
    assert isinstance(result.data.error, ToolErrorInfo)
    assert result.data.error.code == "TOOL_OUTCOME_UNKNOWN"
    assert result.source_event_seqs == (4,)
    assert isinstance(closers[2], TurnEndEvent)
    assert closers[2].data.reason == TurnInterrupted()
    _, on_disk = decode_session(path.read_bytes()).unwrap()
    assert list(on_disk) == list(session.events)[:8]
    assert session.trace.is_closed


def test_unknown_event_type_is_refused_with_file_line_and_seq(tmp_path: Path) -> None:
    """A record of an unknown type without ignorable fails the load with a clear message."""
    lines = _complete_turns(1)
    _write(tmp_path, *lines, b'{"type":"made/up","seq":2,"time":0,"data":{}}')
    with pytest.raises(SessionLoadError) as caught:
        JsonlSessionStore(tmp_path).load("s")
    message = str(caught.value)
    assert "session.jsonl: line 4 (seq 2, made/up)" in message
    assert 'unknown event type "made/up" is not marked "ignorable": true' in message


def test_ignorable_unknown_event_type_loads(tmp_path: Path) -> None:
    """An unknown type marked ignorable is kept."""
    _write(tmp_path, *_complete_turns(1),
           b'{"type":"made/up","seq":2,"time":0,"data":{"x":1},"ignorable":true}')
    assert len(JsonlSessionStore(tmp_path).load("s").events) == 4


def test_balance_violation_is_refused_with_its_seq(tmp_path: Path) -> None:
    """A log that breaks the turn rules fails the load at the breaking seq."""
    _write(tmp_path, TURN_START % (0, 2))
    with pytest.raises(SessionLoadError, match="seq 0: turn/start for turn 2, expected turn 1"):
        JsonlSessionStore(tmp_path).load("s")


def test_header_must_name_the_session(tmp_path: Path) -> None:
    """The header id must be the id asked for."""
    path = _write(tmp_path)
    path.write_bytes(encode_header_line(SessionHeader(id="other", created_at=0)) + b"\n")
    with pytest.raises(SessionLoadError, match="header id 'other' is not 's'"):
        JsonlSessionStore(tmp_path).load("s")


def test_incomplete_header_is_refused(tmp_path: Path) -> None:
    """A file without a whole header line cannot be loaded."""
    path = _write(tmp_path)
    path.write_bytes(b'{"type":"session","vers')
    with pytest.raises(SessionLoadError, match="header line is incomplete"):
        JsonlSessionStore(tmp_path).load("s")


def _zstd_file(root: Path, frames: list[bytes]) -> Path:
    path = root / "_no-cwd" / "s" / "session.jsonl.zstd"
    path.parent.mkdir(parents=True)
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    path.write_bytes(b"".join(compressor.compress(frame) for frame in frames))
    return path


def test_zstd_incomplete_last_frame_keeps_its_whole_lines(tmp_path: Path) -> None:
    """A cut-short final frame is dropped from the file; its whole lines are rewritten."""
    lines = _complete_turns(2)
    path = _zstd_file(tmp_path, [encode_header_line(HEADER) + b"\n",
                                 lines[0] + b"\n" + lines[1] + b"\n"])
    last = zstandard.ZstdCompressor(write_checksum=True).compress(
        lines[2] + b"\n" + lines[3][:10])
    path.write_bytes(path.read_bytes() + last[:-4])  # checksum missing: frame incomplete
    store = JsonlSessionStore(tmp_path, compression="zstd")
    with pytest.warns(SessionRepairWarning, match="incomplete final zstd frame"):
        session = store.load("s")
    # two events, the recovered turn/start, its interrupted turn/end, the end-seed
    assert [e.seq for e in session.events] == [0, 1, 2, 3, 4]
    closer = session.events[3]
    assert isinstance(closer, TurnEndEvent) and closer.data.reason == TurnInterrupted()
    reader = zstandard.ZstdDecompressor().stream_reader(path.read_bytes(),
                                                        read_across_frames=True)
    _, on_disk = decode_session(reader.read()).unwrap()
    assert list(on_disk) == list(session.events)[:4]
    store.release("s")
    again = store.load("s")  # the repaired file loads without a warning
    assert list(again.events)[:4] == list(session.events)[:4]


def test_zstd_bad_checksum_is_corruption(tmp_path: Path) -> None:
    """A complete frame whose checksum fails refuses the load."""
    path = _zstd_file(tmp_path, [encode_header_line(HEADER) + b"\n",
                                 b"\n".join(_complete_turns(1)) + b"\n"])
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(SessionLoadError, match=r"corrupt zstd frame 2 at byte .*checksum"):
        JsonlSessionStore(tmp_path, compression="zstd").load("s")
