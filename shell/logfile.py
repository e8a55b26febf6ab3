"""Reading a session log from disk, whatever its shape: the one reader of DSH files.

A JSONL event log (with its sibling ``X.header.json``), a DSH ``session.jsonl[.zstd]`` or its
directory, a projected fixture, a fork child's file whose seed chain names ``seed-N`` files;
told apart by content. The rules over bytes already read are the core's (core/log/files.py);
here is what touches the disk and zstd, bounded by :class:`ReadLimits` before memory is spent
(docs/api-shell-runtime.md, "Reading logs"). Every failure is a :class:`LogReadError` value.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeAlias

import msgspec
from returns.result import Failure, Result, Success

from ..core import (
    DEFAULT_LIMITS,
    SEED_RECORD_TYPE,
    ZSTD_MAGIC,
    Event,
    FileText,
    FrameMark,
    LoadedLog,
    LogChunk,
    LogFormat,
    LogReadError,
    ReadLimits,
    SeedRecord,
    SessionHeader,
    TornTail,
    counted_events,
    cut_short_error,
    cut_torn_tail,
    decode_header_line,
    decode_log,
    describe_log,
    event_limit_error,
    is_header_record,
    is_projected,
    line_too_long_error,
    long_line_error,
    read_error_from_decode,
    seed_file_index,
    seed_file_name,
    seed_record_in,
    size_words,
    utf8_error,
    zstd_frame_at,
)

__all__ = [
    "LogFormat", "LogReadError", "LoadedLog", "ReadLimits", "DEFAULT_LIMITS", "TornTail",
    "SeedRecord", "SEED_RECORD_TYPE", "seed_file_name", "FileText", "LogChunk", "LogStream",
    "CHUNK_TEXT", "open_log", "read_log", "read_text", "read_session_file",
    "read_session_header", "session_file_in", "SESSION_FILE_NAMES", "counted_events",
]

#: The file names a DSH session directory may hold (zstd is DSH's default).
SESSION_FILE_NAMES = ("session.jsonl.zstd", "session.jsonl")

#: Bytes of whole lines decoded at a time.
CHUNK_TEXT = 1 << 20

#: Bytes read from a file (or regenerated bound fed to zstd) at a time; the first read of a
#: file is smaller: its head lines are usually all a seed file is opened for at first.
_PIECE = 1 << 20
_FIRST_PIECE = 64 << 10
#: Unreadable JSON; RecursionError for JSON nested deeper than the recursion limit.
_UNREADABLE = (msgspec.DecodeError, RecursionError)
_EVENTS_SUFFIX = ".events.jsonl"
_HEADER_SUFFIX = ".header.json"

# --------------------------------------------------------------------------- files


_LINK = "it is a symbolic link (the session store does not follow links)"
_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _cannot_read(shown: str, why: OSError | str) -> LogReadError:
    if isinstance(why, FileNotFoundError):
        why = "no such file or directory"
    elif isinstance(why, PermissionError):
        why = "permission denied"
    elif isinstance(why, NotADirectoryError):
        why = "a component of the path is not a directory"
    elif isinstance(why, OSError):
        why = ("too many levels of symbolic links (a symlink loop?)"
               if why.errno == errno.ELOOP else why.strerror or str(why))
    return LogReadError(file=shown, problem=f"cannot read: {why}")


def _not_regular(mode: int, *, follow: bool) -> str | None:
    """Why a file of this mode is not read (``None``: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode) and not follow:
        return _LINK
    for is_kind, kind in _NOT_REGULAR:
        if is_kind(mode):
            return f"it is {kind}, not a regular file"
    return "it is a directory" if stat.S_ISDIR(mode) else "it is not a regular file"


class _Reader:
    """One read: where files are opened from, the limits, and what the read has spent (a
    seed's files share the limits)."""

    def __init__(self, limits: ReadLimits, dir_fd: int | None, follow: bool) -> None:
        self.limits = limits
        self.dir_fd = dir_fd
        self.follow = follow
        self.spent_bytes = 0
        self.spent_events = 0
        #: Bytes of the files read so far, of all there are to read (for a progress bar).
        self.done_bytes = self.total_bytes = 0

    def scratch(self) -> _Reader:
        """The same files and limits, its spending not counted (to look at a file's head)."""
        return _Reader(self.limits, self.dir_fd, self.follow)

    def too_much(self, shown: str) -> LogReadError:
        return LogReadError(file=shown, problem=(
            f"the decompressed text is over the read limit of {size_words(self.limits.max_bytes)}"
            " (ReadLimits.max_bytes): a zstd bomb, or a log too large to read"))

    def count_events(self, text: bytes, shown: str, first_line: int = 1) -> LogReadError | None:
        counted = event_limit_error(text, shown, self.limits, self.spent_events, first_line)
        if isinstance(counted, LogReadError):
            return counted
        self.spent_events += counted
        return None

    def open_file(self, name: str, shown: str, *, size_cap: int | None = None,
                  follow: bool | None = None) -> tuple[int, os.stat_result] | LogReadError:
        """A regular file open for reading, and its ``fstat`` (``follow``: symbolic links,
        by default the reader's rule)."""
        limit = self.limits.max_bytes
        follow = self.follow if follow is None else follow
        try:
            before = os.stat(name, dir_fd=self.dir_fd, follow_symlinks=follow)
        except OSError as exc:
            return _cannot_read(shown, exc)
        why = _not_regular(before.st_mode, follow=follow)
        if why is not None:
            return _cannot_read(shown, why)
        wanted = before.st_size if size_cap is None else min(size_cap, before.st_size)
        if wanted > limit:
            return LogReadError(file=shown, problem=(
                f"the file is {size_words(wanted)}, over the read limit of "
                f"{size_words(limit)} (ReadLimits.max_bytes)"))
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
        try:
            fd = os.open(name, flags, dir_fd=self.dir_fd)
        except OSError as exc:
            return _cannot_read(shown, _LINK if exc.errno == errno.ELOOP and not follow else exc)
        try:
            opened = os.fstat(fd)
            # Checked again: the file may have been replaced between the stat and the open.
            refused: OSError | str | None = _not_regular(opened.st_mode, follow=True)
        except OSError as exc:
            refused = exc
        if refused is not None:
            os.close(fd)
            return _cannot_read(shown, refused)
        return fd, opened

    def read_file(self, name: str, shown: str, *, size_cap: int | None = None,
                  follow: bool | None = None) -> bytes | LogReadError:
        """The bytes of a regular file (at most ``size_cap`` of them, when given)."""
        opened = self.open_file(name, shown, size_cap=size_cap, follow=follow)
        if isinstance(opened, LogReadError):
            return opened
        return _read_whole(opened[0], shown, self.limits.max_bytes, size_cap)


def _read_whole(fd: int, shown: str, limit: int, size_cap: int | None) -> bytes | LogReadError:
    """Everything of ``fd`` (closed after), at most ``size_cap`` bytes or the limit."""
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(limit + 1 if size_cap is None else min(limit, size_cap))
    except OSError as exc:
        return _cannot_read(shown, exc)
    if size_cap is None and len(data) > limit:
        return _grew(shown, limit)
    return data


def _grew(shown: str, limit: int) -> LogReadError:
    return LogReadError(file=shown, problem=(
        f"the file grew past the read limit of {size_words(limit)} while it was read "
        "(ReadLimits.max_bytes)"))


# --------------------------------------------------------------------------- zstd frames


def _zstd_module() -> Any:
    try:
        import zstandard  # noqa: PLC0415 - optional dependency, needed for .zstd only
    except ImportError:
        return None
    return zstandard


class _Partial(NamedTuple):
    """Where in the file an incomplete final zstd frame starts (its text begins here)."""

    offset: int


#: What a file's text source yields: text, the start of an incomplete final frame, or why it
#: stops.
_Piece: TypeAlias = "bytes | _Partial | LogReadError"


def _zstd_pieces(data: bytes, shown: str, reader: _Reader, *, tolerate_torn: bool,
                 ) -> Iterator[_Piece]:
    """The text of every zstd frame of ``data``, within the limits: each frame fed to the
    decompressor a group of blocks at a time (about :data:`_PIECE` of text), so the limits
    stop a bomb within a block's worth of text. A cut or corrupt frame is an error, except
    (``tolerate_torn``) an incomplete last one."""
    zstandard = _zstd_module()
    if zstandard is None:
        yield LogReadError(file=shown, problem="reading zstd needs the zstandard package "
                                               "(pip install 'turnfork[zstd]')")
        return
    context = zstandard.ZstdDecompressor()
    offset, number = 0, 0

    def corrupt(why: str) -> LogReadError:
        return LogReadError(file=shown, problem=f"corrupt zstd frame {number} at byte "
                                                f"{offset}: {why}")

    while offset < len(data):
        number += 1
        frame = zstd_frame_at(data, offset)
        if isinstance(frame, str):
            yield corrupt(frame)
            return
        if not frame.complete and not tolerate_torn:
            yield LogReadError(file=shown, problem=(
                f"truncated zstd stream: frame {number} (from byte {offset}) is cut off at "
                f"byte {len(data)}"))
            return
        if frame.skippable:
            offset = frame.end
            continue
        # Refused now when the bytes it is known to regenerate would pass the limit.
        known = frame.known if frame.content_size is None else frame.content_size
        if reader.spent_bytes + known > reader.limits.max_bytes:
            yield reader.too_much(shown)
            return
        if not frame.complete:
            yield _Partial(offset)
        stream = context.decompressobj()
        try:
            for chunk, fed in _fed(stream, data, frame.start, frame.stops(_PIECE)):
                reader.done_bytes += fed
                if chunk:
                    yield chunk
        except zstandard.ZstdError as exc:
            yield corrupt(str(exc))
            return
        if not frame.complete:
            return
        if not stream.eof:
            yield corrupt("the frame ends early")
            return
        offset = frame.end


def _fed(stream: Any, data: bytes, start: int, stops: list[int]) -> Iterator[tuple[bytes, int]]:
    """A frame of ``data`` from ``start`` fed to a decompressor ``stream`` up to each of its
    ``stops`` in turn (while there are bytes): each feed's text, and the bytes it took."""
    for stop in stops:
        end = min(stop, len(data))
        yield stream.decompress(data[start:end]), end - start
        start = stop
        if start >= len(data):
            return


def _file_pieces(fd: int, shown: str, reader: _Reader, cap: int | None) -> Iterator[_Piece]:
    """The bytes of a plain file, piece by piece (``fd`` is closed at the end); ``cap``: the
    bytes that belong to the log (a seed's region), else up to the read limit."""
    limit = reader.limits.max_bytes
    left = (limit + 1) if cap is None else min(cap, limit)
    size = _FIRST_PIECE
    try:
        while left > 0:
            try:
                piece = os.read(fd, min(size, left))
            except OSError as exc:
                yield _cannot_read(shown, exc)
                return
            if not piece:
                return
            size = _PIECE
            left -= len(piece)
            reader.done_bytes += len(piece)
            if cap is None and left <= 0:
                yield _grew(shown, limit)
                return
            yield piece
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- a file's text


class _Text:
    """A file's (decompressed) text, pulled from its source piece by piece under the read's
    limits (checked as it grows, before memory is spent) and handed out as whole lines."""

    def __init__(self, pieces: Iterator[_Piece], shown: str, compressed: bool,
                 reader: _Reader) -> None:
        self._pieces = pieces
        self._reader = reader
        self.shown = shown
        self.compressed = compressed
        self.buffer = bytearray()
        self.start, self.line = 0, 1  # offset in the text, and line number, of buffer[0]
        self.ended = False
        self.error: LogReadError | None = None
        self.partial: FrameMark | None = None  # where an incomplete final zstd frame starts
        self.file_bytes = 0  # of the file read (for zstd: the whole file, read at once)
        self._last = self._before_last = -1  # the last two newlines of the buffer (-1: none)

    def close(self) -> None:
        close = getattr(self._pieces, "close", None)
        if close is not None:
            close()

    def pull(self) -> bool:
        """One more piece of text into the buffer; ``False`` at the end or on an error."""
        while not self.ended:
            piece = next(self._pieces, None)
            if piece is None:
                self.ended = True
            elif isinstance(piece, LogReadError):
                self.error, self.ended = piece, True
            elif isinstance(piece, _Partial):
                line = self.line + self.buffer.count(b"\n")
                self.partial = FrameMark(self.start + len(self.buffer), piece.offset, line)
                if self.buffer and self.buffer[-1] != 0x0A:
                    self.error, self.ended = cut_short_error(self.shown, line), True
            elif piece:
                at, last, limits = len(self.buffer), piece.rfind(b"\n"), self._reader.limits
                self._reader.spent_bytes += len(piece)
                # The buffer starts a line: what follows its last newline is the open line.
                open_line = len(piece) - last - 1 + (0 if last >= 0 else at - self._last - 1)
                if self._reader.spent_bytes > limits.max_bytes:
                    self.error, self.ended = self._reader.too_much(self.shown), True
                elif open_line > limits.max_line:
                    self.error = line_too_long_error(self.shown, None, limits)
                    self.ended = True
                if self.error is not None:
                    return False
                if not self.compressed:
                    self.file_bytes += len(piece)
                self.buffer += piece
                if last >= 0:
                    before = piece.rfind(b"\n", 0, last)
                    self._before_last = at + before if before >= 0 else self._last
                    self._last = at + last
                return True
        return False

    def head_line(self, index: int) -> tuple[bytes, bool] | None:
        """Line ``index`` (0-based) of the text not yet handed out, and whether a newline
        ends it; ``None`` when there are fewer lines (or on an error)."""
        at = 0
        searched = 0
        while True:
            newline = self.buffer.find(b"\n", max(at, searched))
            if newline < 0:
                searched = len(self.buffer)
                if self.pull():
                    continue
                if self.error is not None or index > 0 or at >= len(self.buffer):
                    return None  # fewer lines than that
                return bytes(self.buffer[at:]), False
            if index == 0:
                return bytes(self.buffer[at:newline]), True
            index -= 1
            at = newline + 1

    def skip(self, size: int) -> bytes | None:
        """Hand out the first ``size`` bytes; ``None`` if the text is shorter."""
        while len(self.buffer) < size:
            if not self.pull():
                return None
        return self._hand_out(size)

    def _hand_out(self, size: int) -> bytes:
        text = bytes(self.buffer[:size])
        del self.buffer[:size]
        self.start += size
        self.line += text.count(b"\n")
        self._last = max(self._last - size, -1)
        self._before_last = max(self._before_last - size, -1)
        return text

    def take(self, size: int | None) -> tuple[bytes, int, int, bool] | None:
        """Whole lines: at least ``size`` bytes of them (``None``: all the text), the final
        line held back until the text ends, and never across the start of an incomplete
        final frame. Returns (text, its first line, its offset, whether it is the last), or
        ``None`` on an error."""
        while not self.ended and (size is None or len(self.buffer) < size
                                  or self._before_last < 0):
            self.pull()
        if self.error is not None:
            return None
        cut, final = len(self.buffer), True
        if not self.ended:
            assert size is not None
            newline = self.buffer.find(b"\n", size - 1, self._before_last + 1)
            cut, final = (self._before_last if newline < 0 else newline) + 1, False
        if self.partial is not None and (
                self.start < self.partial.text_offset < self.start + cut):
            cut, final = self.partial.text_offset - self.start, False
        first_line, offset = self.line, self.start
        return self._hand_out(cut), first_line, offset, final


def _open_text(reader: _Reader, name: str, shown: str, *, size_cap: int | None = None,
               follow: bool | None = None, tolerate_torn: bool,
               ) -> tuple[_Text, os.stat_result] | LogReadError:
    """The text of a file (its first ``size_cap`` bytes, when given), ready to be pulled."""
    opened = reader.open_file(name, shown, size_cap=size_cap, follow=follow)
    if isinstance(opened, LogReadError):
        return opened
    fd, status = opened
    try:
        magic = os.pread(fd, 4, 0)
    except OSError as exc:
        os.close(fd)
        return _cannot_read(shown, exc)
    if magic != ZSTD_MAGIC or (size_cap is not None and size_cap < 4):
        if name.endswith((".zstd", ".zst")):
            os.close(fd)
            return LogReadError(file=shown, problem="not a zstd stream (the file does not "
                                                    "start with the zstd magic number)")
        return _Text(_file_pieces(fd, shown, reader, size_cap), shown, False, reader), status
    data = _read_whole(fd, shown, reader.limits.max_bytes, size_cap)
    if isinstance(data, LogReadError):
        return data
    text = _Text(_zstd_pieces(data, shown, reader, tolerate_torn=tolerate_torn), shown, True,
                 reader)
    text.file_bytes = len(data)
    return text, status


# --------------------------------------------------------------------------- decoding


@dataclass
class _Level:
    """One file of a log: the log's own file, or a seed file of its chain."""

    shown: str  # in messages; ``name`` in the reader's directory
    name: str
    session: bool
    header: SessionHeader | None
    record: SeedRecord | None  # the seed record the file holds: it names the next level
    head_bytes: int  # the header line and the seed record line
    projected: bool
    compressed: bool
    size_cap: int | None  # the bytes that belong to the log (a seed: its record's size)
    identity: tuple[int, int]
    named_by: SeedRecord | None = None  # the record of the level above (None: the top)
    above: str = ""  # where the level above is shown (its record is on its line 2)
    unterminated: bool = False  # an event log of one line without a newline: all torn


def _first_record(text: _Text, index: int) -> bytes | None:
    """The first non-blank line from line ``index`` of the text not yet handed out."""
    while True:
        line = text.head_line(index)
        if line is None:
            return None
        if line[0].strip():
            return line[0]
        index += 1


def _read_head(text: _Text, name: str, shown: str, status: os.stat_result, *,
               expect_header: bool, tolerate_torn: bool,
               size_cap: int | None = None) -> _Level | LogReadError:
    """What a file's first lines say: a session file's header and seed record, or an event
    log; whether it is a projected fixture."""
    level = _Level(shown=shown, name=name, session=False, header=None, record=None,
                   head_bytes=0, projected=False, compressed=text.compressed,
                   size_cap=size_cap, identity=(status.st_dev, status.st_ino))
    first = text.head_line(0)
    event_log = (not (first is not None and is_header_record(first[0].rstrip(b"\r")))
                 and not expect_header
                 and not (text.compressed and _first_record(text, 0) is None))
    if text.error is not None:
        return text.error
    if event_log:
        level.projected = is_projected(_first_record(text, 0))
        level.unterminated = first is not None and not first[1]
        return level
    if first is None or not first[0].strip():
        return LogReadError(file=shown, line=1, problem="empty session file: no header line")
    line, newline = first
    if not newline:
        words = " (it is in the incomplete final zstd frame)" if text.partial is not None else ""
        return LogReadError(file=shown, line=1, problem=f"the header line is incomplete{words}")
    parsed = decode_header_line(line.rstrip(b"\r"))
    if isinstance(parsed, Failure):
        return read_error_from_decode(shown, parsed.failure())
    level.session, level.header, level.head_bytes = True, parsed.unwrap(), len(line) + 1
    second = text.head_line(1)
    if second is not None and second[0].strip() and (second[1] or not tolerate_torn):
        found = seed_record_in(second[0].rstrip(b"\r"), shown)
        if isinstance(found, LogReadError):
            return found
        if found is not None:
            level.record = found
            level.head_bytes += len(second[0]) + 1
    level.projected = level.record is None and is_projected(_first_record(text, 1))
    return text.error or level


def _seed_chain(top: _Level, reader: _Reader) -> list[_Level] | LogReadError:
    """The seed files below ``top``, nearest first, each one's head read and checked (the
    chain is walked, not recursed into: it may be as long as the generations of forks)."""
    chain: list[_Level] = []
    above, below = top, None
    directory = os.path.dirname(top.shown)
    while above.record is not None:
        record = above.record
        index = seed_file_index(record.file)
        if index is None:  # _seed_record refuses such a name
            return _seed_refused(above.shown, record, "not a seed file name")
        if below is not None and index >= below:
            return _seed_refused(above.shown, record, (
                f"a seed file may only name a lower-numbered one (read from seed-{below})"))
        where = os.path.join(directory, record.file)
        opened = _open_text(reader.scratch(), record.file, where, size_cap=record.size,
                            follow=False, tolerate_torn=False)
        if isinstance(opened, LogReadError):
            return opened
        text, status = opened
        try:
            if status.st_size < record.size:
                plural = "" if status.st_size == 1 else "s"
                return _seed_refused(above.shown, record, (
                    f"the file holds {status.st_size:,} byte{plural}, the record needs "
                    f"{record.size:,}"))
            level = _read_head(text, record.file, where, status, expect_header=True,
                               tolerate_torn=False, size_cap=record.size)
        finally:
            text.close()
        if isinstance(level, LogReadError):
            return level
        parent = above.header.parent_session if above.header is not None else None
        if isinstance(parent, str) and level.header is not None and level.header.id != parent:
            return _seed_refused(above.shown, record, (
                f"it is session {level.header.id!r}, not the parent {parent!r}"))
        level.named_by, level.above = record, above.shown
        chain.append(level)
        above, below = level, index
    return chain


def _seed_refused(shown: str, record: SeedRecord, problem: str) -> LogReadError:
    return LogReadError(file=shown, line=2, event_type=SEED_RECORD_TYPE,
                        problem=f"seed {record.file}: {problem}")


# --------------------------------------------------------------------------- the stream


class LogStream:
    """A log open for reading: its file, kind, header and seed now, its events a chunk at a
    time (:meth:`chunks`), then what was left out (:attr:`torn`). Close it (or use ``with``)
    when :meth:`chunks` may not be read to its end."""

    def __init__(self, *, path: str, levels: list[_Level], text: _Text, reader: _Reader,
                 header_file: str | None, header: SessionHeader | None,
                 close_directory: bool) -> None:
        top = levels[0]
        self.path = path  # as the user gave it; ``file`` is the file actually read
        self.file = top.shown
        self.format: LogFormat = (("session-jsonl-zstd" if top.compressed else "session-jsonl")
                                  if top.session else
                                  ("events-jsonl-zstd" if top.compressed else "events-jsonl"))
        self.projected = top.projected
        self.header = header
        self.header_file = header_file
        self.seed = top.record
        self.torn: TornTail | None = None  # known once chunks() has ended
        self.events = 0  # read so far
        #: The head lines of the log's file (its header and seed record lines).
        self.head_text = b""
        self._levels = levels
        self._text = text
        self._reader = reader
        self._close_directory = close_directory
        self._closed = False
        self._ahead: tuple[LogChunk | LogReadError | None,
                           Iterator[LogChunk | LogReadError]] | None = None

    @property
    def description(self) -> str:
        return describe_log(self.format, self.path, self.file, header_file=self.header_file,
                         projected=self.projected, seed=self.seed)

    @property
    def files(self) -> tuple[str, ...]:
        """Every file the log is read from: the log, its header file, its seed files."""
        header = () if self.header_file is None else (self.header_file,)
        return (self.file, *header, *(level.shown for level in self._levels[1:]))

    @property
    def one_torn_line(self) -> bool:
        """An event log of one line without a newline: by the torn-tail rule, no events (it
        may be a JSON document of another kind)."""
        return self._levels[0].unterminated

    @property
    def file_bytes(self) -> int:
        return self._text.file_bytes

    @property
    def progress(self) -> tuple[int, int]:
        """(bytes read, bytes to read) of the log's files."""
        reader = self._reader
        return min(reader.done_bytes, reader.total_bytes), reader.total_bytes

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._text.close()
            if self._close_directory and self._reader.dir_fd is not None:
                os.close(self._reader.dir_fd)

    def __enter__(self) -> LogStream:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def peek(self) -> LogChunk | LogReadError | None:
        """The first chunk, read ahead (:meth:`chunks` still begins with it; ``None``: no
        events)."""
        if self._ahead is None:
            pieces = self._chunks()
            self._ahead = (next(pieces, None), pieces)
        return self._ahead[0]

    def chunks(self) -> Iterator[LogChunk | LogReadError]:
        """The events a chunk at a time, the seed's first, once; an error ends them."""
        first, pieces = self._ahead or (None, self._chunks())
        if first is not None:
            yield first
        yield from pieces

    def _chunks(self) -> Iterator[LogChunk | LogReadError]:
        """The seeds' events, deepest first, then the file's (read up to the first error)."""
        files = [*map(self._seed_chunks, reversed(self._levels[1:])),
                 self._file_chunks(self._levels[0], self._text)]
        try:
            for piece in itertools.chain.from_iterable(files):
                yield piece
                if isinstance(piece, LogReadError):
                    return
        except MemoryError:
            yield _out_of_memory(self.file)
        finally:
            for pieces in files:
                pieces.close()
            self.close()

    def _seed_chunks(self, level: _Level) -> Generator[LogChunk | LogReadError, None, None]:
        """A seed file's own events, read strictly; then the record that names it checked."""
        opened = _open_text(self._reader, level.name, level.shown, size_cap=level.size_cap,
                            follow=False, tolerate_torn=False)
        if isinstance(opened, LogReadError):
            yield opened
            return
        text, status = opened
        last_time: int | None = None
        try:
            same = (status.st_dev, status.st_ino) == level.identity
            for piece in self._file_chunks(level, text, same_file=same):
                yield piece
                if isinstance(piece, LogChunk) and piece.events:
                    last_time = piece.events[-1].time
        finally:
            text.close()
        record = level.named_by
        assert record is not None
        if self.events != record.events:
            yield _seed_refused(level.above, record, (
                f"it holds {self.events:,} events, the record says {record.events:,}"))
        elif last_time is not None and last_time != record.last_time:
            yield _seed_refused(level.above, record,
                                "its last event is not the one the record names")

    def _file_chunks(self, level: _Level, text: _Text, *, same_file: bool = True,
                     ) -> Generator[LogChunk | LogReadError, None, None]:
        """A file's events after its head, chunk by chunk (only the log's own file may end
        in a torn tail)."""
        reader, top = self._reader, level is self._levels[0]
        head = text.skip(level.head_bytes) if same_file else None
        if head is None:
            yield text.error or LogReadError(file=level.shown, problem=(
                "cannot read: the file changed while it was read"))
            return
        if text.partial is not None and text.partial.text_offset < level.head_bytes:
            yield LogReadError(file=level.shown, line=1, problem=(
                "the incomplete final zstd frame holds more than events"))
            return
        # The head lines count against max_events as every line does (the store's writer
        # counts what it writes so).
        refused = reader.count_events(head, level.shown)
        if refused is not None:
            yield refused
            return
        if top:
            self.head_text = head
        size = None if level.projected else CHUNK_TEXT
        recovered_from: int | None = None
        while True:
            taken = text.take(size)
            if taken is None:
                yield text.error or _out_of_memory(level.shown)
                return
            chunk_text, first_line, offset, final = taken
            if recovered_from is None and text.partial is not None and (
                    offset >= text.partial.text_offset):
                recovered_from = self.events
            if final and top:
                kept = cut_torn_tail(chunk_text, first_line, offset, compressed=text.compressed,
                                     frame=text.partial, shown=level.shown)
                if isinstance(kept, LogReadError):
                    yield kept
                    return
                chunk_text, torn = kept
                if torn is not None:
                    self.torn = torn
            record = level.named_by
            if final and record is not None and chunk_text and not chunk_text.endswith(b"\n"):
                yield LogReadError(
                    file=level.shown, line=first_line + chunk_text.count(b"\n"), problem=(
                        f"the seed record ({level.above}:2) names the first {record.size:,} "
                        f"bytes of {level.name}, which end inside this line: the record does "
                        "not fit the file"))
                return
            if chunk_text:
                refused = (utf8_error(chunk_text, level.shown, first_line, offset)
                           or long_line_error(chunk_text, level.shown, reader.limits, first_line)
                           or reader.count_events(chunk_text, level.shown, first_line))
                if refused is not None:
                    yield refused
                    return
                decoded = decode_log(chunk_text, projected=level.projected)
                if isinstance(decoded, Failure):
                    yield read_error_from_decode(level.shown, decoded.failure(), first_line - 1)
                    return
                events = decoded.unwrap()
                chunk = LogChunk(events, self.events, level.shown, first_line, chunk_text)
                self.events += len(events)
                yield chunk
            if final:
                break
        if self.torn is not None and self.torn.rewrite_from is not None:
            self.torn = msgspec.structs.replace(
                self.torn, rewrite_from=self.events if recovered_from is None
                else recovered_from)

    def read_all(self, *, tick: Callable[[], object] | None = None,
                 ) -> Result[LoadedLog, LogReadError]:
        """Every event, in a :class:`LoadedLog` (``tick``: called after each chunk)."""
        parts: list[tuple[Event, ...]] = []
        texts: list[bytes] = []
        for piece in self.chunks():
            if isinstance(piece, LogReadError):
                return Failure(piece)
            if tick is not None:
                tick()
            parts.append(piece.events)
            if piece.file == self.file:
                texts.append(piece.text)
        return Success(LoadedLog(
            path=self.path, file=self.file, format=self.format,
            projected=self.projected and self.seed is None, header=self.header,
            header_file=self.header_file, events=tuple(itertools.chain.from_iterable(parts)),
            text=self.head_text + b"".join(texts), torn=self.torn, seed=self.seed,
            file_bytes=self.file_bytes, files=self.files,
            spent_bytes=self._reader.spent_bytes, spent_events=self._reader.spent_events))


def _out_of_memory(file: str) -> LogReadError:
    return LogReadError(file=file, problem=(
        "out of memory while reading the log (ReadLimits bound what one read may take)"))


def _sibling_header(file: str, reader: _Reader,
                    ) -> tuple[SessionHeader, str] | LogReadError | None:
    """``X.header.json`` next to ``X.events.jsonl`` (a runtime dump's in-memory header)."""
    if not file.endswith(_EVENTS_SUFFIX):
        return None
    header_file = file[: -len(_EVENTS_SUFFIX)] + _HEADER_SUFFIX
    if not os.path.lexists(header_file):
        return None
    data = reader.read_file(os.path.basename(header_file), header_file, follow=True)
    if isinstance(data, LogReadError):
        return data
    try:
        return msgspec.json.decode(data, type=SessionHeader), header_file
    except _UNREADABLE as exc:
        return LogReadError(file=header_file, line=1, problem=f"header: {exc}")


def _stream(path: str, reader: _Reader, name: str, shown: str, located: str, *,
            expect_header: bool, close_directory: bool) -> LogStream | LogReadError:
    """Open ``name`` in the reader's directory (``located`` on disk, ``shown`` in messages),
    read its head and its seed chain's heads."""
    opened = _open_text(reader, name, shown, tolerate_torn=True)
    if isinstance(opened, LogReadError):
        return opened
    text, status = opened
    kept = False
    try:
        top = _read_head(text, name, shown, status, expect_header=expect_header,
                         tolerate_torn=True)
        if isinstance(top, LogReadError):
            return top
        sibling = None if top.session else _sibling_header(located, reader)
        if isinstance(sibling, LogReadError):
            return sibling
        header, header_file = (top.header, None) if sibling is None else sibling
        chain = _seed_chain(top, reader)
        if isinstance(chain, LogReadError):
            return chain
        reader.total_bytes = status.st_size + sum(level.size_cap or 0 for level in chain)
        kept = True
        return LogStream(path=path, levels=[top, *chain], text=text, reader=reader,
                         header_file=header_file, header=header,
                         close_directory=close_directory)
    finally:
        if not kept:
            text.close()


# --------------------------------------------------------------------------- reading


def session_file_in(directory: str) -> str | LogReadError:
    """The session file a DSH session directory holds, or why there is none to read."""
    present = []
    for name in SESSION_FILE_NAMES:
        try:
            os.lstat(os.path.join(directory, name))
        except FileNotFoundError:
            continue
        except OSError as exc:
            return _cannot_read(directory, exc)
        present.append(name)
    if not present:
        return LogReadError(file=directory, problem="directory holds no session.jsonl or "
                            "session.jsonl.zstd (not a DSH session directory)")
    if len(present) > 1:
        return LogReadError(file=directory, problem="directory holds both session.jsonl and "
                            "session.jsonl.zstd; name the file to read")
    return os.path.join(directory, present[0])


def open_log(path: str | os.PathLike[str], *, limits: ReadLimits = DEFAULT_LIMITS,
             shown: str | None = None) -> Result[LogStream, LogReadError]:
    """Open a log of any shape for streaming: its head (header, seed chain) is read now, its
    events by :meth:`LogStream.chunks`; ``shown`` names the file in messages."""
    given = os.fspath(path)
    try:
        in_directory = os.path.isdir(given)  # False for what it cannot stat; the read says why
        file = given
        if in_directory:
            found = session_file_in(given)
            if isinstance(found, LogReadError):
                return Failure(found)
            file = found
        directory = os.path.dirname(file) or "."
        try:
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            return Failure(_cannot_read(file, exc))
        stream: LogStream | LogReadError | None = None
        try:
            stream = _stream(shown or given, _Reader(limits, dir_fd, follow=True),
                             os.path.basename(file), shown or file, file,
                             expect_header=in_directory, close_directory=True)
            return Success(stream) if isinstance(stream, LogStream) else Failure(stream)
        finally:
            if not isinstance(stream, LogStream):
                os.close(dir_fd)
    except MemoryError:
        return Failure(_out_of_memory(given))


def read_log(path: str | os.PathLike[str], *, limits: ReadLimits = DEFAULT_LIMITS,
             ) -> Result[LoadedLog, LogReadError]:
    """:func:`open_log` read whole; a torn tail left out and described in ``torn``."""
    opened = open_log(path, limits=limits)
    if isinstance(opened, Failure):
        return Failure(opened.failure())
    with opened.unwrap() as stream:
        try:
            return stream.read_all()
        except MemoryError:
            return Failure(_out_of_memory(stream.file))


def read_text(path: str | os.PathLike[str], *, limits: ReadLimits = DEFAULT_LIMITS,
              ) -> Result[FileText, LogReadError]:
    """The text of a file that holds something else (a wire history, say), read with the
    refusals and limits of :func:`read_log`; nothing is decoded."""
    file = os.fspath(path)
    try:
        reader = _Reader(limits, None, follow=True)
        opened = _open_text(reader, file, file, tolerate_torn=False)
        if isinstance(opened, LogReadError):
            return Failure(opened)
        text, _ = opened
        try:
            taken = text.take(None)  # the whole text: nothing of it is held back
        finally:
            text.close()
        if taken is None:
            return Failure(text.error or _out_of_memory(file))
        whole = taken[0]
        refused = long_line_error(whole, file, limits)
        if refused is not None:
            return Failure(refused)
        return Success(FileText(file=file, text=whole, compressed=text.compressed,
                                file_bytes=text.file_bytes))
    except MemoryError:
        return Failure(_out_of_memory(file))


def read_session_file(name: str, *, dir_fd: int, shown: str,
                      limits: ReadLimits = DEFAULT_LIMITS) -> Result[LoadedLog, LogReadError]:
    """The session file ``name`` in the open directory ``dir_fd`` (no symbolic link followed,
    the seed's files included), read whole; a torn tail described in ``torn``, never cut."""
    try:
        reader = _Reader(limits, dir_fd, follow=False)
        stream = _stream(shown, reader, name, shown, shown, expect_header=True,
                         close_directory=False)
        if isinstance(stream, LogReadError):
            return Failure(stream)
        with stream:
            return stream.read_all()
    except MemoryError:
        return Failure(_out_of_memory(shown))


#: The first read for a header line: a header longer than this is read again, four times
#: as much each time, up to a line's limit.
_HEADER_READ = 64 << 10


def _header_text(raw: bytes, compressed: bool, shown: str,
                 max_line: int) -> bytes | LogReadError:
    """The text at the head of a session file's first ``raw`` bytes: up to the first newline
    or past a line's length, whichever comes first (a zstd file's first frame decompressed a
    group of blocks at a time, so a bomb in it spends no more than a line)."""
    if not compressed:
        return raw
    if not raw.startswith(ZSTD_MAGIC):
        return LogReadError(file=shown, problem=(
            "not a zstd stream (the file does not start with the zstd magic number)"))
    frame = zstd_frame_at(raw, 0)
    stops = [len(raw)] if isinstance(frame, str) else frame.stops(_PIECE)
    stream = _zstd_module().ZstdDecompressor().decompressobj()
    parts: list[bytes] = []
    try:
        for chunk, _ in _fed(stream, raw, 0, stops):
            parts.append(chunk)
            if b"\n" in chunk or sum(map(len, parts)) > max_line:
                break
    except Exception as exc:  # zstandard's ZstdError: a damaged first frame
        return LogReadError(file=shown, line=1, problem=f"the header line is unreadable: {exc}")
    return b"".join(parts)


def read_session_header(name: str, *, dir_fd: int, shown: str,
                        limits: ReadLimits = DEFAULT_LIMITS) -> Result[SessionHeader, LogReadError]:
    """The header line of a session file (as :func:`read_session_file`), reading only the
    bytes that can hold it: enumerating a store costs one short read per session."""
    try:
        reader = _Reader(limits, dir_fd, follow=False)
        compressed = name.endswith(".zstd")
        # A line of max_line bytes compresses to at most a little more than itself.
        most = limits.max_line + (4096 if compressed else 1)
        cap = min(_HEADER_READ, most)
        while True:  # a longer read only for a header longer than the last read held
            raw = reader.read_file(name, shown, size_cap=cap)
            if isinstance(raw, LogReadError):
                return Failure(raw)
            text = _header_text(raw, compressed, shown, limits.max_line)
            if isinstance(text, LogReadError):
                return Failure(text)
            if b"\n" in text or len(text) > limits.max_line or len(raw) < cap or cap == most:
                break
            cap = min(cap * 4, most)
        newline = text.find(b"\n")
        if newline < 0:
            return Failure(LogReadError(file=shown, line=1,
                                        problem="the header line is incomplete"))
        parsed = decode_header_line(text[:newline].rstrip(b"\r"))
        if isinstance(parsed, Failure):
            return Failure(read_error_from_decode(shown, parsed.failure()))
        return Success(parsed.unwrap())
    except MemoryError:
        return Failure(_out_of_memory(shown))
