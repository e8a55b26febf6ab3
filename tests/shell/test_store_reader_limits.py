"""The shared log reader is bounded: zstd bombs, devices, FIFOs, huge lines, packed rows that
stand for millions of events and running out of memory are one clear error each (issue 14.3)."""

from __future__ import annotations

import os
import signal
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard

from turnfork.shell import logfile
from turnfork.shell.logfile import LogReadError, ReadLimits, read_log

HEADER = b'{"type":"session","version":0,"id":"s","createdAt":0,"delegationDepth":0}\n'
TURN = (b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
        b'{"type":"turn/end","seq":1,"time":2,"data":{"turn":1,"reason":{"kind":"completed"}}}\n')


@pytest.fixture(autouse=True)
def _never_hang() -> Iterator[None]:
    """A read that blocks (a FIFO opened for reading) fails the test instead of hanging."""
    signal.alarm(20)
    yield
    signal.alarm(0)


def _error(path: Path, limits: ReadLimits | None = None) -> LogReadError:
    result = read_log(path) if limits is None else read_log(path, limits=limits)
    error = result.failure()
    assert isinstance(error, LogReadError)
    return error


def _rle_bomb(blocks: int) -> bytes:
    """A zstd frame of ``blocks`` RLE blocks of 128 KiB zeros each, no declared size: 4 bytes
    of file per 128 KiB of text."""
    header = b"\x28\xb5\x2f\xfd" + bytes([0x00, 0x58])  # no content size; a window byte
    block = ((128 * 1024) << 3) | (1 << 1)
    body = b"".join((block | (index == blocks - 1)).to_bytes(3, "little") + b"\x00"
                    for index in range(blocks))
    return header + body


def test_the_rle_bomb_is_what_zstd_reads() -> None:
    """The hand-made bomb is a real zstd frame (a small one decompresses to its zeros)."""
    assert zstandard.ZstdDecompressor().decompressobj().decompress(_rle_bomb(3)) == (
        b"\x00" * 3 * 128 * 1024)


def test_a_131_kb_zstd_bomb_is_refused_before_it_is_decompressed(tmp_path: Path) -> None:
    """131 KB that would decompress to 4 GiB: refused from the block headers alone."""
    path = tmp_path / "bomb.jsonl.zstd"
    path.write_bytes(_rle_bomb(32 * 1024))
    assert 130_000 < path.stat().st_size < 132_000
    error = _error(path)
    assert error.file == str(path)
    assert "decompressed text is over the read limit of 1 GiB" in error.problem


def test_a_bomb_of_compressed_blocks_stops_at_the_line_limit(tmp_path: Path) -> None:
    """Compressed blocks whose size only decompression tells: stopped within a block of the
    limit (here a line without a newline)."""
    compressor = zstandard.ZstdCompressor(write_content_size=False)
    path = tmp_path / "bomb.jsonl.zstd"
    with path.open("wb") as file, compressor.stream_writer(file) as writer:
        for _ in range(64):
            writer.write(b"abcdefgh" * 16 * 1024)
    error = _error(path, ReadLimits(max_line=1 << 20))
    assert "a line is longer than the read limit of 1 MiB (ReadLimits.max_line)" in error.problem


def test_decompressed_text_over_the_limit_is_refused(tmp_path: Path) -> None:
    """A frame that declares more text than the limit is refused without decompressing it."""
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(zstandard.ZstdCompressor().compress(HEADER + TURN * 2000))
    error = _error(path, ReadLimits(max_bytes=64 * 1024))
    assert "over the read limit of 64 KiB (ReadLimits.max_bytes)" in error.problem


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_devices_are_refused_without_reading(device: str) -> None:
    """/dev/zero would never end: a device is named as such from stat, never read."""
    error = _error(Path(device))
    assert error.problem == "cannot read: it is a character device, not a regular file"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    """Opening a FIFO for reading waits for a writer: it is refused from stat instead."""
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    assert _error(fifo).problem == "cannot read: it is a FIFO (named pipe), not a regular file"
    assert _error(tmp_path).problem == (
        "cannot read: it is a FIFO (named pipe), not a regular file")


def test_a_symlink_loop_and_permission_denied_are_named(tmp_path: Path) -> None:
    """The real cause is named: a symlink loop, a file that cannot be read."""
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    assert "too many levels of symbolic links" in _error(loop).problem
    if os.geteuid() == 0:
        return  # root reads anything: the permission check cannot be seen
    private = tmp_path / "private.jsonl"
    private.write_bytes(TURN)
    private.chmod(0)
    assert _error(private).problem == "cannot read: permission denied"


def test_a_file_over_the_size_limit_is_refused_from_stat(tmp_path: Path) -> None:
    """A plain file larger than max_bytes is refused before it is read."""
    path = tmp_path / "big.jsonl"
    path.write_bytes(TURN * 100)
    error = _error(path, ReadLimits(max_bytes=1000))
    assert error.problem.startswith("the file is ")
    assert "over the read limit of 1,000 bytes" in error.problem


def test_a_line_over_the_line_limit_is_refused_with_its_line(tmp_path: Path) -> None:
    """The longest line is bounded; the error names the line."""
    long_line = b'{"type":"goal/change","seq":2,"time":3,"data":{"x":"' + b"y" * 5000 + b'"}}\n'
    path = tmp_path / "long.jsonl"
    path.write_bytes(TURN + long_line + TURN)
    error = _error(path, ReadLimits(max_line=4096))
    assert (error.line, error.problem) == (
        3, "a line is longer than the read limit of 4 KiB (ReadLimits.max_line)")
    assert len(read_log(path, limits=ReadLimits(max_line=8192)).unwrap().events) == 5


def test_packed_rows_may_not_expand_past_the_event_limit(tmp_path: Path) -> None:
    """A packed row of a few bytes per member stands for one event per member: capped."""
    members = 5000
    row = (b'{"type":"text-chunks","seq0":2,"time0":3,"data":{"turn":1,"step":1,"index":0,'
           b'"texts":[' + b",".join([b'""'] * members) + b'],"dt":['
           + b",".join([b"0"] * (members - 1)) + b"]}}\n")
    path = tmp_path / "rows.jsonl"
    path.write_bytes(TURN + row)
    error = _error(path, ReadLimits(max_events=4000))
    assert error.line == 3
    assert "expands to more than 4,000 events (ReadLimits.max_events)" in error.problem
    within = read_log(path, limits=ReadLimits(max_events=members + 2)).unwrap()
    assert len(within.events) == members + 2


def test_running_out_of_memory_is_an_error_value(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A MemoryError while decoding becomes one LogReadError, never a traceback."""
    path = tmp_path / "session.jsonl"
    path.write_bytes(HEADER + TURN)

    def exhausted(*args: object, **kwargs: object) -> object:
        raise MemoryError

    monkeypatch.setattr(logfile, "decode_log", exhausted)
    error = _error(path)
    assert error.problem.startswith("out of memory while reading the log")


def test_the_header_read_of_a_zstd_bomb_spends_a_line_at_most(tmp_path: Path) -> None:
    """``read_session_header`` (what listing a store's sessions reads) decompresses the header
    frame only as far as one line may go: a 10 KB frame of 300 MiB without a newline costs
    about ``max_line``, not its 300 MiB, and its header line is incomplete."""
    (tmp_path / "session.jsonl.zstd").write_bytes(_rle_bomb(2400))
    directory = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    tracemalloc.start()
    try:
        read = logfile.read_session_header("session.jsonl.zstd", dir_fd=directory, shown="s",
                                           limits=ReadLimits(max_line=1 << 20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        os.close(directory)
    error = read.failure()
    assert (error.line, error.problem) == (1, "the header line is incomplete")
    assert peak < 32 << 20, f"{peak >> 20} MiB"


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_the_header_read_of_a_large_session_reads_its_head_only(tmp_path: Path,
                                                                compression: str) -> None:
    """Listing a store reads each session's header: a 40 MB session file costs a short read,
    not the whole file up to a line's limit (256 MiB by default)."""
    body = HEADER + os.urandom(20 << 20).hex().encode()  # one 40 MB line after the header
    name = "session.jsonl" if compression == "none" else "session.jsonl.zstd"
    if compression == "zstd":  # the header alone in the first frame, as the store writes it
        body = zstandard.ZstdCompressor().compress(HEADER) + zstandard.ZstdCompressor(
            level=1).compress(body[len(HEADER):])
    (tmp_path / name).write_bytes(body)
    directory = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    tracemalloc.start()
    try:
        read = logfile.read_session_header(name, dir_fd=directory, shown="s")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        os.close(directory)
    assert read.unwrap().id == "s"
    assert peak < 4 << 20, f"{peak >> 20} MiB"


def test_a_header_longer_than_the_first_read_is_still_read(tmp_path: Path) -> None:
    long_header = HEADER[:-2] + b',"cwd":"' + b"d" * (300 << 10) + b'"}\n'
    (tmp_path / "session.jsonl").write_bytes(long_header + b'{"type":"x"}\n')
    directory = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        read = logfile.read_session_header("session.jsonl", dir_fd=directory, shown="s")
    finally:
        os.close(directory)
    assert read.unwrap().cwd == "d" * (300 << 10)
