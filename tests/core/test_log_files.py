"""The rules over a log's bytes that the shell's reader and writer apply (core/log/files.py)."""

from __future__ import annotations

import doctest

import msgspec
import pytest

from turnfork.core import decode_log
from turnfork.core.log import files
from turnfork.core.log.files import (
    SEED_RECORD_TYPE,
    ZSTD_MAGIC,
    LoadedLog,
    LogReadError,
    ReadLimits,
    SeedRecord,
    TornTail,
    ZstdFrame,
    batch_refusal,
    closing_room,
    counted_events,
    decode_segment,
    encode_segment,
    event_limit_error,
    has_line_over,
    is_header_record,
    is_projected,
    long_line_error,
    part_refusal,
    seed_file_index,
    seed_file_name,
    seed_record_in,
    size_words,
    torn_line,
    utf8_error,
    zstd_frame_at,
)

ROW = (b'{"type":"text-chunks","seq0":1,"time0":0,"data":{"stepId":"s","blockId":"b",'
       b'"texts":["a","b","c"],"dt":[0,1,1]}}\n')


def test_the_doctests_hold() -> None:
    assert doctest.testmod(files).failed == 0


@pytest.mark.parametrize(("text", "expected"), [
    (b"", None),
    (b'{"a":1}\n', None),
    (b'{"a":1}\n\n', None),
    (b'{"a":1}\n{"b"', (8, 2, "no-newline")),
    (b'{"a":1}\n{"b"\n', (8, 2, "not-json")),
    (b'{"a":1}\r\n[1]\r\n', None),
])
def test_only_the_final_line_can_be_torn(text: bytes, expected: object) -> None:
    assert torn_line(text, 1) == expected


def test_a_torn_line_is_numbered_from_the_first_line_given() -> None:
    assert torn_line(b'x\n{"b"', 10) == (2, 11, "no-newline")


def test_packed_rows_count_their_members() -> None:
    assert counted_events(b'{"a":1}\n{"b":2}') == 2
    assert counted_events(ROW) == 1 + 3
    assert event_limit_error(ROW, "f", ReadLimits(max_events=10), spent=0) == 4
    refused = event_limit_error(b"x\n" + ROW, "f", ReadLimits(max_events=3), spent=0,
                                first_line=5)
    assert isinstance(refused, LogReadError) and refused.line == 6
    assert "expands to more than 3 events" in refused.problem
    many = event_limit_error(b"1,\n" * 4, "f", ReadLimits(max_events=3), spent=0)
    assert isinstance(many, LogReadError) and many.line is None


def test_line_limits() -> None:
    limits = ReadLimits(max_line=4)
    assert long_line_error(b"abcd\nefgh\n", "f", limits) is None
    refused = long_line_error(b"abcd\nefghi\n", "f", limits, first_line=3)
    assert refused is not None and refused.line == 4
    assert "longer than the read limit of 4 bytes" in refused.problem
    assert not has_line_over(b"abcd\nefgh\n", 4) and has_line_over(b"ab\nabcde", 4)


def test_invalid_utf8_is_named_by_its_line_and_byte() -> None:
    assert utf8_error("é\n".encode(), "f", 1, 0) is None
    refused = utf8_error(b"ok\n\xff\n", "f", 7, 100)
    assert refused is not None and refused.line == 8 and refused.problem.endswith("byte 103")


def test_seed_file_names() -> None:
    assert seed_file_name(3, compressed=True) == "seed-3.jsonl.zstd"
    assert [seed_file_index(name) for name in (
        "seed-0.jsonl", "seed-12.jsonl.zstd", "seed-01.jsonl", "seed-1.zstd", "seed-x.jsonl",
        "seed-1234567.jsonl", "session.jsonl")] == [0, 12, None, None, None, None, None]


def test_a_seed_record_is_read_from_the_second_line() -> None:
    line = (b'{"type":"turnfork/seed","file":"seed-0.jsonl","size":10,"events":2,'
            b'"lastTime":5}')
    assert seed_record_in(line, "f") == SeedRecord(file="seed-0.jsonl", size=10, events=2,
                                                   last_time=5)
    assert seed_record_in(b'{"type":"turn/start"}', "f") is None
    bad = seed_record_in(line.replace(b"seed-0", b"../x"), "f")
    assert isinstance(bad, LogReadError) and bad.line == 2
    assert bad.event_type == SEED_RECORD_TYPE and "not a seed file" in bad.problem
    unknown = seed_record_in(line[:-1] + b',"extra":1}', "f")
    assert isinstance(unknown, LogReadError) and unknown.problem.startswith("bad seed record")


def test_head_records() -> None:
    assert is_header_record(b'{"type":"session","id":"s"}')
    assert not is_header_record(b"  ") and not is_header_record(b"[")
    assert is_projected(b'{"type":"turn/start"}')
    assert not is_projected(b'{"type":"turn/start","seq":0}') and not is_projected(None)


def test_what_a_repaired_file_spends() -> None:
    log = LoadedLog(path="p", file="p", format="session-jsonl", projected=False, header=None,
                    header_file=None, events=(), text=b"h\n" + ROW, spent_bytes=100,
                    spent_events=9)
    assert log.spent_after_repair() == (100, 9)
    plain = msgspec.structs.replace(log, torn=TornTail(keep_bytes=0, line=3, dropped_bytes=7))
    assert plain.spent_after_repair() == (93, 9)
    frame = msgspec.structs.replace(log, torn=TornTail(keep_bytes=0, line=3, dropped_bytes=0,
                                               rewrite_from=1, frame_text_bytes=len(ROW)))
    assert frame.spent_after_repair() == (100 - len(ROW), 9 - 4)


def test_words() -> None:
    assert size_words(1) == "1 byte" and size_words(1536) == "1.5 KiB"
    assert closing_room(ReadLimits()) == (1 << 20, 4096)
    assert closing_room(ReadLimits(max_bytes=80, max_events=16)) == (10, 2)
    error = LogReadError(file="f", line=3, seq=2, event_type="turn/end", problem="bad")
    assert str(error) == "f:3: seq 2 (turn/end): bad"


@pytest.mark.parametrize("session_id", ["a", "a/b c", ".", "..", "é", "\ud800x", "~"])
def test_a_segment_decodes_to_its_id(session_id: str) -> None:
    assert decode_segment(encode_segment(session_id)) == session_id


def test_a_writer_refuses_what_its_loader_could_not_read_back() -> None:
    text = (b'{"type":"turn/start","seq":0,"time":0,"data":{"turn":1}}\n'
            b'{"type":"turn/end","seq":1,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}}\n')
    events = decode_log(text).unwrap()
    limits = ReadLimits(max_bytes=len(text) * 100, max_events=100)
    assert part_refusal(events, text, (0, 0), limits) is None
    line = part_refusal(events, text, (0, 0), ReadLimits(max_line=len(text.split(b"\n")[1]) - 1))
    assert line is not None and line.event is events[1] and "ReadLimits.max_line" in line.problem
    many = part_refusal(events, text, (0, 100), limits)
    assert many is not None and many.event is events[0] and "100 events" in many.problem
    room = batch_refusal(events[:1], (0, 0), (0, 95), size=0, written=1,
                         limits=ReadLimits(max_events=100))
    assert room is not None and "kept free for closing a turn" in room.problem
    assert batch_refusal(events, (0, 0), (0, 95), size=0, written=1,
                         limits=ReadLimits(max_events=100)) is None


def test_a_zstd_frame_is_bounded_from_its_headers() -> None:
    zstandard = pytest.importorskip("zstandard")
    data = zstandard.ZstdCompressor(write_checksum=True).compress(b"x" * 300_000)
    frame = zstd_frame_at(data, 0)
    assert isinstance(frame, ZstdFrame) and frame.complete and frame.end == len(data)
    assert frame.content_size == 300_000 and frame.bound >= 300_000
    assert frame.stops(1 << 40) == [frame.end]
    assert frame.stops(1)[:-1] == list(frame.block_ends[:len(frame.stops(1)) - 1])
    cut = zstd_frame_at(data[:-3], 0)
    assert isinstance(cut, ZstdFrame) and not cut.complete
    assert isinstance(zstd_frame_at(ZSTD_MAGIC[:3], 0), ZstdFrame)  # a frame cut in its magic
    assert zstd_frame_at(b"abcd", 0) == "not a zstd frame (unknown magic number)"
    assert zstd_frame_at(ZSTD_MAGIC + b"\x08", 0) == "the frame header sets a reserved bit"


def test_what_a_session_directory_cannot_be_named() -> None:
    from turnfork.core.log.files import session_id_problem

    assert session_id_problem("ea339828") is None
    assert session_id_problem("") == "a session id must not be empty"
    surrogate = session_id_problem("a\ud800")
    assert surrogate is not None and "U+D800 at index 1" in surrogate
    long = session_id_problem("/" * 60)
    assert long is not None and "(300 bytes > 255)" in long
