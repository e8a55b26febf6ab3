"""Reading a session log from disk, whatever shape it comes in.

This is the one reader of DSH files: the CLI streams a log through :func:`open_log` (or reads
it whole with :func:`read_log`), the disk store reads with :func:`read_session_file`; they
share the bounded file reading, the zstd frames, the seed chain and the torn-tail rule below.

Input kinds, told apart by content (never by trust in the file name alone):

* a JSONL event log (records only, no header line), e.g. a seed written by ``turnfork seed``
  or a runtime dump ``X.events.jsonl`` (whose sibling ``X.header.json``, when present, is read
  as the session header);
* a DSH ``session.jsonl``: the header line ``{"type":"session",…}`` first;
* a DSH ``session.jsonl.zstd``: a concatenation of zstd frames holding the same text
  (recognised by the zstd magic number);
* a DSH session directory holding one of the two files above;
* DSH's *projected* test fixtures (records without ``seq``/``seq0``), decoded with
  ``projected=True`` and said so in :attr:`LoadedLog.description`;
* a turnfork fork child's session file whose second line is a *seed record*
  (``{"type":"turnfork/seed",…}``, see :class:`SeedRecord`): its seed is the first bytes of a
  ``seed-N.jsonl[.zstd]`` file in the same directory, read and checked here. DSH does not know
  this record: export such a session for DSH (``JsonlSessionStore.export``).

Rules:

* Every failure is a :class:`LogReadError` value naming the file, the line (1-based, in the
  decompressed text for zstd) and the seq when known; nothing here raises for bad input or
  prints, and nothing here writes.
* Reading is bounded (:class:`ReadLimits`): the file's size, its decompressed text, the
  longest line and the events it may expand to (packed rows) are capped before the memory is
  spent; a zstd frame's regenerated size is bounded from its block headers before it is
  decompressed; devices, FIFOs and sockets are refused from ``stat`` without being opened (and
  the file is opened ``O_NONBLOCK``, then checked again); running out of memory is an error
  value too.
* Reading streams: the text is decoded a piece at a time (:data:`CHUNK_TEXT` bytes of whole
  lines; a zstd frame is fed block by block), so a read holds one piece and what its caller
  keeps, whatever the size of the file (:class:`LogStream`). A projected fixture is decoded
  in one piece (its seqs are restored by counting from the first record).
* The torn-tail rule, the same for every reader and DSH's own: only the *final* line can be
  torn — when it has no newline, or is not JSON at all — and it is left out (:class:`TornTail`
  says where, how many bytes and why). For zstd, only an incomplete final frame can be torn:
  the whole lines it holds are kept (the store writes them again), its own final line under
  the same rule; a complete frame whose text does not end with a newline is corruption. A
  complete line that cannot be decoded anywhere else is an error, never a tail. A seed is
  read strictly: nothing of it may be torn.
* A seed chain (a seed file whose own seed record names a lower-numbered one, one link per
  generation of forks of forks) is followed iteratively, whatever its length.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeAlias

import msgspec
from returns.result import Failure, Result, Success

from ..core import (
    DecodeError,
    Event,
    SessionHeader,
    decode_header_line,
    decode_log,
    is_json_line,
)

__all__ = [
    "LogFormat",
    "LogReadError",
    "LoadedLog",
    "ReadLimits",
    "DEFAULT_LIMITS",
    "TornTail",
    "SeedRecord",
    "SEED_RECORD_TYPE",
    "seed_file_name",
    "FileText",
    "LogChunk",
    "LogStream",
    "CHUNK_TEXT",
    "open_log",
    "read_log",
    "read_text",
    "read_session_file",
    "read_session_header",
    "session_file_in",
    "SESSION_FILE_NAMES",
    "counted_events",
]

LogFormat: TypeAlias = Literal["events-jsonl", "events-jsonl-zstd", "session-jsonl",
                              "session-jsonl-zstd"]

#: The file names a DSH session directory may hold (zstd is DSH's default).
SESSION_FILE_NAMES = ("session.jsonl.zstd", "session.jsonl")

#: Bytes of whole lines decoded at a time.
CHUNK_TEXT = 1 << 20

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: Bytes read from a file (or regenerated bound fed to zstd) at a time; the first read of a
#: file is smaller: its head lines are usually all a seed file is opened for at first.
_PIECE = 1 << 20
_FIRST_PIECE = 64 << 10
#: What msgspec raises for text that is not readable JSON; RecursionError for JSON nested
#: deeper than the interpreter's recursion limit.
_UNREADABLE = (msgspec.DecodeError, RecursionError)
_ROW_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
_EVENTS_SUFFIX = ".events.jsonl"
_HEADER_SUFFIX = ".header.json"

_FORMAT_NAMES: dict[str, str] = {
    "events-jsonl": "JSONL event log",
    "events-jsonl-zstd": "JSONL event log (zstd)",
    "session-jsonl": "DSH session file",
    "session-jsonl-zstd": "DSH session file (zstd)",
}


class ReadLimits(msgspec.Struct, frozen=True, kw_only=True):
    """What reading one log may cost; past any bound the read fails with a clear error.

    The defaults are generous for real logs (DSH's own logs run to a few MB).
    """

    #: Bytes of the file, and bytes of its decompressed text (a seed's files count too).
    max_bytes: int = 1 << 30
    #: Bytes of the longest line.
    max_line: int = 256 << 20
    #: Events the log may hold, each member of a packed chunk row counted: a row of a few
    #: bytes per member can otherwise stand for millions of events.
    max_events: int = 1 << 25


DEFAULT_LIMITS = ReadLimits()


class LogReadError(msgspec.Struct, frozen=True, kw_only=True):
    """Why a log could not be read: the file, and the line and seq when known."""

    file: str
    problem: str
    line: int | None = None
    seq: int | None = None
    event_type: str | None = None

    @property
    def message(self) -> str:
        """One line: ``file:line: seq N (type): problem``."""
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        details = []
        if self.seq is not None:
            details.append(f"seq {self.seq}")
        if self.event_type is not None:
            details.append(f"({self.event_type})" if details else self.event_type)
        if details:
            return f"{where}: {' '.join(details)}: {self.problem}"
        return f"{where}: {self.problem}"

    def __str__(self) -> str:
        return self.message


#: Why a tail was left out.
TornCause: TypeAlias = Literal["no-newline", "not-json", "incomplete-frame"]

_CAUSE_WORDS: dict[str, str] = {
    "no-newline": "it has no newline",
    "not-json": "it is not JSON",
    "incomplete-frame": "the final zstd frame is incomplete",
}


class TornTail(msgspec.Struct, frozen=True, kw_only=True):
    """The torn tail a read left out, and how to cut it off the file."""

    #: The file's length without the tail: what crash repair truncates it to.
    keep_bytes: int
    #: The first line of the tail (1-based, in the decompressed text).
    line: int
    #: Bytes of text dropped (the torn final line; for zstd, of the incomplete frame).
    dropped_bytes: int
    #: zstd: the index of the first event recovered from the incomplete final frame (those
    #: events are cut off with the frame and must be written again); ``None`` for plain text.
    rewrite_from: int | None = None
    #: zstd: bytes of text the incomplete frame held in all.
    frame_text_bytes: int = 0
    #: Why it was left out: the final line has no newline, or is not JSON; or (zstd) the final
    #: frame is incomplete (its whole lines are kept, its final line under the same rule).
    cause: TornCause = "no-newline"

    @property
    def description(self) -> str:
        if self.rewrite_from is None:
            return f"a torn tail ({_bytes(self.dropped_bytes)} from line {self.line})"
        return (f"an incomplete final zstd frame ({_bytes(self.frame_text_bytes)} of text, "
                f"{self.dropped_bytes:,} of them a torn tail)")

    @property
    def words(self) -> str:
        """What was left out and why, in one sentence for a reader of the log."""
        if self.rewrite_from is None:
            return (f"left out line {self.line} ({_bytes(self.dropped_bytes)}): "
                    f"{_CAUSE_WORDS[self.cause]}, a write cut short (the torn-tail rule)")
        torn = (f", and dropped {_bytes(self.dropped_bytes)} of a torn final line from line "
                f"{self.line}" if self.dropped_bytes else "")
        return (f"read {_bytes(self.frame_text_bytes - self.dropped_bytes)} of whole lines from "
                f"an incomplete final zstd frame{torn} (the torn-tail rule)")


def _bytes(count: int) -> str:
    return f"{count:,} byte{'' if count == 1 else 's'}"


#: The record type of a seed taken from another file (a turnfork extension DSH does not read).
SEED_RECORD_TYPE = "turnfork/seed"


class SeedRecord(msgspec.Struct, frozen=True, kw_only=True, rename="camel",
                 forbid_unknown_fields=True, tag_field="type", tag=SEED_RECORD_TYPE):
    """The second line of a fork child's file whose seed stays in its parent's file.

    ``file`` names ``seed-N.jsonl[.zstd]`` in the same directory (a hard link to the parent's
    session file, so deleting the parent keeps it); its first ``size`` bytes are a session
    file (header line, events, possibly a seed record naming a lower N) holding exactly the
    ``events`` seed events, the last at ``last_time``.
    """

    file: str
    size: int
    events: int
    last_time: int


def seed_file_name(index: int, *, compressed: bool) -> str:
    """The name of the ``index``-th seed file of a session directory."""
    return f"seed-{index}.jsonl{'.zstd' if compressed else ''}"


def _seed_file_index(name: str) -> int | None:
    """N for a name ``seed-N.jsonl`` or ``seed-N.jsonl.zstd``, else ``None``."""
    number = name.removeprefix("seed-").removesuffix(".zstd").removesuffix(".jsonl")
    if not (number.isascii() and number.isdigit() and len(number) <= 6) or name not in (
            seed_file_name(int(number), compressed=False),
            seed_file_name(int(number), compressed=True)):
        return None
    return int(number)


def _describe(format_name: LogFormat, path: str, file: str, *, header_file: str | None,
              projected: bool, seed: SeedRecord | None) -> str:
    words = _FORMAT_NAMES[format_name]
    if file != path:
        words += f" in session directory ({os.path.basename(file)})"
    if header_file is not None:
        words += f", header from {os.path.basename(header_file)}"
    if projected:
        words += ", projected fixture (no seq/time: restored by counting, time 0)"
    if seed is not None:
        words += (f", seed of {seed.events:,} events from {seed.file} (a turnfork fork child: "
                  "export it for DSH)")
    return words


class LoadedLog(msgspec.Struct, frozen=True, kw_only=True):
    """A log read from disk: its header (if any), its events, and where they came from."""

    #: The path as the user gave it (a file or a session directory).
    path: str
    #: The file actually read (inside ``path`` when it is a directory).
    file: str
    format: LogFormat
    #: Decoded as a DSH projected fixture (seq/time restored by counting).
    projected: bool
    header: SessionHeader | None
    #: Where the header came from when it is not the file's first line (``X.header.json``).
    header_file: str | None
    events: tuple[Event, ...]
    #: The decoded (decompressed) text, kept to map a seq back to its line.
    text: bytes
    #: What the read left out (``None``: nothing was torn).
    torn: TornTail | None = None
    #: The seed record of the file, when its seed lives in another file.
    seed: SeedRecord | None = None
    #: Bytes of the file as read.
    file_bytes: int = 0
    #: Every file the read opened: the log, its header file, its seed files.
    files: tuple[str, ...] = ()
    #: What the read spent against :class:`ReadLimits` (the seed's files included, a torn
    #: tail too): bytes of text (``max_bytes``) and :func:`counted_events` (``max_events``).
    spent_bytes: int = 0
    spent_events: int = 0

    @property
    def description(self) -> str:
        """The kind of input, in words, e.g. ``DSH session file, projected fixture (…)``."""
        return _describe(self.format, self.path, self.file, header_file=self.header_file,
                         projected=self.projected, seed=self.seed)

    def line_of(self, seq: int) -> int | None:
        """The 1-based line holding event ``seq`` (a packed row holds several), or ``None``.

        The events of a seed taken from another file are all on the seed record's line."""
        if not 0 <= seq < len(self.events):
            return None
        first = 1 if self.format.startswith("session") else 0
        count = 0
        if self.seed is not None:
            if seq < self.seed.events:
                return 2
            first, count = 2, self.seed.events
        lines = self.text.split(b"\n")
        return _line_holding(lines[first:], first + 1, count, seq)


def _line_holding(lines: list[bytes], first_line: int, first_position: int,
                  position: int) -> int | None:
    """The line of ``lines`` (the first numbered ``first_line``, its first event at
    ``first_position``) that holds the event at ``position``."""
    count = first_position
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        count += _events_on_line(line)
        if count > position:
            return first_line + index
    return None


def _events_on_line(line: bytes) -> int:
    """How many events a decoded record line holds: the members of a packed row, else 1."""
    try:
        record = msgspec.json.decode(line)
    except _UNREADABLE:
        return 1
    if not isinstance(record, dict) or record.get("type") not in _ROW_TYPES:
        return 1
    data = record.get("data")
    if not isinstance(data, dict):
        return 1
    members = data.get("args") if record["type"] == "tool-call-chunks" else data.get("texts")
    return len(members) if isinstance(members, list) else 1


# --------------------------------------------------------------------------- files


def _os_problem(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file or directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, NotADirectoryError):
        return "a component of the path is not a directory"
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links (a symlink loop?)"
    return exc.strerror or str(exc)


def _not_regular(mode: int, *, follow: bool) -> str | None:
    """Why a file of this mode is not read (``None``: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode) and not follow:
        return "it is a symbolic link (the session store does not follow links)"
    if stat.S_ISFIFO(mode):
        return "it is a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode):
        return "it is a character device, not a regular file"
    if stat.S_ISBLK(mode):
        return "it is a block device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "it is a socket, not a regular file"
    if stat.S_ISDIR(mode):
        return "it is a directory"
    return "it is not a regular file"


def _size_words(size: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.3g} {unit}"
    return _bytes(size)


class _Progress:
    """Bytes of the files read so far, of all there are to read (for a progress bar)."""

    def __init__(self) -> None:
        self.done = 0
        self.total = 0


class _Reader:
    """One read: where files are opened from, the limits, and what the read has spent."""

    def __init__(self, limits: ReadLimits, dir_fd: int | None, follow: bool) -> None:
        self.limits = limits
        self.dir_fd = dir_fd
        self.follow = follow
        # What the read has taken so far (a seed's files share the limits).
        self.spent_bytes = 0
        self.spent_events = 0
        self.progress = _Progress()

    def scratch(self) -> _Reader:
        """A reader of the same files and limits whose spending is not counted (to look at
        a file's first lines before it is read)."""
        return _Reader(self.limits, self.dir_fd, self.follow)

    def open_file(self, name: str, shown: str, *, size_cap: int | None = None,
                  follow: bool | None = None) -> tuple[int, os.stat_result] | LogReadError:
        """A regular file open for reading, and its ``fstat``; ``follow``: whether a symbolic
        link is followed (default: the reader's rule)."""
        limit = self.limits.max_bytes
        follow = self.follow if follow is None else follow
        try:
            before = os.stat(name, dir_fd=self.dir_fd, follow_symlinks=follow)
        except OSError as exc:
            return LogReadError(file=shown, problem=f"cannot read: {_os_problem(exc)}")
        why = _not_regular(before.st_mode, follow=follow)
        if why is not None:
            return LogReadError(file=shown, problem=f"cannot read: {why}")
        wanted = before.st_size if size_cap is None else min(size_cap, before.st_size)
        if wanted > limit:
            return LogReadError(file=shown, problem=(
                f"the file is {_size_words(wanted)}, over the read limit of "
                f"{_size_words(limit)} (ReadLimits.max_bytes)"))
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
        if not follow:
            flags |= os.O_NOFOLLOW
        try:
            fd = os.open(name, flags, dir_fd=self.dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP and not follow:
                return LogReadError(file=shown, problem="cannot read: it is a symbolic link "
                                                        "(the session store does not follow "
                                                        "links)")
            return LogReadError(file=shown, problem=f"cannot read: {_os_problem(exc)}")
        try:
            opened = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            return LogReadError(file=shown, problem=f"cannot read: {_os_problem(exc)}")
        why = _not_regular(opened.st_mode, follow=True)
        if why is not None:  # replaced between the stat and the open
            os.close(fd)
            return LogReadError(file=shown, problem=f"cannot read: {why}")
        return fd, opened

    def read_file(self, name: str, shown: str, *, size_cap: int | None = None,
                  follow: bool | None = None) -> bytes | LogReadError:
        """The bytes of a regular file (at most ``size_cap`` of them, when given)."""
        opened = self.open_file(name, shown, size_cap=size_cap, follow=follow)
        if isinstance(opened, LogReadError):
            return opened
        fd, _ = opened
        return _read_whole(fd, shown, self.limits.max_bytes, size_cap)


def _read_whole(fd: int, shown: str, limit: int, size_cap: int | None) -> bytes | LogReadError:
    """Everything of ``fd`` (closed after), at most ``size_cap`` bytes or the limit."""
    cap = limit if size_cap is None else min(limit, size_cap)
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(cap + 1 if size_cap is None else cap)
    except OSError as exc:
        return LogReadError(file=shown, problem=f"cannot read: {_os_problem(exc)}")
    if size_cap is None and len(data) > limit:
        return _grew(shown, limit)
    return data


def _grew(shown: str, limit: int) -> LogReadError:
    return LogReadError(file=shown, problem=(
        f"the file grew past the read limit of {_size_words(limit)} while it was read "
        "(ReadLimits.max_bytes)"))


# --------------------------------------------------------------------------- zstd frames


_BLOCK_MAX = 128 * 1024
_FCS_SIZES = (0, 2, 4, 8)
_DICT_ID_SIZES = (0, 1, 2, 4)


class _Frame(NamedTuple):
    """One zstd frame of a file, read from its headers alone (RFC 8878 §3.1)."""

    start: int
    #: Where it ends (past the end of the data when the frame is incomplete).
    end: int
    complete: bool
    skippable: bool
    #: The content size the frame declares, if it does.
    content_size: int | None
    #: Bytes its raw and RLE blocks regenerate (known without decompressing).
    known: int
    #: The most it can regenerate.
    bound: int
    #: Where each of its blocks ends (to decompress a large frame block by block).
    block_ends: tuple[int, ...]
    #: The most each block can regenerate.
    block_bounds: tuple[int, ...] = ()


def _scan_frame(data: bytes, start: int) -> _Frame | str:
    """The frame at ``start``, or why the bytes there are no zstd frame. An incomplete frame
    (cut off by the end of ``data``) carries the blocks seen so far."""
    size = len(data)
    magic = data[start:start + 4]
    incomplete = _Frame(start, size + 1, False, False, None, 0, _BLOCK_MAX, ())
    if len(magic) < 4:
        return incomplete if _ZSTD_MAGIC.startswith(magic) else "not a zstd frame"
    number = int.from_bytes(magic, "little")
    if 0x184D2A50 <= number <= 0x184D2A5F:  # a skippable frame: size, then ignored bytes
        if start + 8 > size:
            return incomplete
        end = start + 8 + int.from_bytes(data[start + 4:start + 8], "little")
        return _Frame(start, end, end <= size, True, 0, 0, 0, ())
    if magic != _ZSTD_MAGIC:
        return "not a zstd frame (unknown magic number)"
    if start + 5 > size:
        return incomplete
    descriptor = data[start + 4]
    if descriptor & 0x08:
        return "the frame header sets a reserved bit"
    single_segment = bool(descriptor & 0x20)
    fcs_size = _FCS_SIZES[descriptor >> 6] or (1 if single_segment else 0)
    header_end = (start + 5 + (0 if single_segment else 1) + _DICT_ID_SIZES[descriptor & 3]
                  + fcs_size)
    if header_end > size:
        return incomplete
    content_size: int | None = None
    if fcs_size:
        content_size = int.from_bytes(data[header_end - fcs_size:header_end], "little")
        if fcs_size == 2:
            content_size += 256
    position, known, bound = header_end, 0, 0
    block_ends: list[int] = []
    block_bounds: list[int] = []
    last = False
    while not last:
        if position + 3 > size:
            return incomplete._replace(known=known, bound=bound + _BLOCK_MAX,
                                       block_ends=tuple(block_ends),
                                       block_bounds=tuple(block_bounds))
        block = int.from_bytes(data[position:position + 3], "little")
        kind, length, last = (block >> 1) & 3, block >> 3, bool(block & 1)
        if kind == 3:
            return "a block of the reserved type"
        if kind == 1:  # RLE: one byte, regenerated `length` times
            position += 4
            regenerated = length
            known += length
        else:
            position += 3 + length
            regenerated = length if kind == 0 else _BLOCK_MAX
            if kind == 0:
                known += length
        bound += regenerated
        block_ends.append(position)
        block_bounds.append(regenerated)
        if position > size:
            return incomplete._replace(known=known, bound=bound,
                                       block_ends=tuple(block_ends),
                                       block_bounds=tuple(block_bounds))
    end = position + (4 if descriptor & 0x04 else 0)
    return _Frame(start, end, end <= size, False, content_size, known, bound,
                  tuple(block_ends), tuple(block_bounds))


class _TextBudget:
    """Text under the limits, checked as it grows (before memory is spent)."""

    def __init__(self, reader: _Reader, shown: str) -> None:
        self.reader = reader
        self.shown = shown
        self.open_line = 0  # bytes since the last newline

    def admit(self, chunk: bytes) -> LogReadError | None:
        limits = self.reader.limits
        self.reader.spent_bytes += len(chunk)
        if self.reader.spent_bytes > limits.max_bytes:
            return self.too_much()
        newline = chunk.rfind(b"\n")
        self.open_line = self.open_line + len(chunk) if newline < 0 else len(chunk) - newline - 1
        if self.open_line > limits.max_line:
            return _line_too_long(self.shown, None, limits)
        return None

    def reserve(self, known: int) -> LogReadError | None:
        """Refuse now when bytes a frame is known to regenerate would pass the limit."""
        if self.reader.spent_bytes + known > self.reader.limits.max_bytes:
            return self.too_much()
        return None

    def too_much(self) -> LogReadError:
        limit = self.reader.limits.max_bytes
        return LogReadError(file=self.shown, problem=(
            f"the decompressed text is over the read limit of {_size_words(limit)} "
            "(ReadLimits.max_bytes): a zstd bomb, or a log too large to read"))


def _zstd_module() -> Any:
    try:
        import zstandard  # noqa: PLC0415 - optional dependency, needed for .zstd only
    except ImportError:
        return None
    return zstandard


class _Partial(NamedTuple):
    """Marks where the text of an incomplete final zstd frame begins."""

    #: Where that frame starts in the file.
    offset: int


class _FrameMark(NamedTuple):
    """Where the text of an incomplete final zstd frame starts."""

    #: Offset in the text, offset of the frame in the file, line of its first text.
    text_offset: int
    file_offset: int
    line: int


#: What a file's text source yields: text, the start of an incomplete final frame, or why it
#: stops.
_Piece: TypeAlias = "bytes | _Partial | LogReadError"


def _zstd_pieces(data: bytes, shown: str, reader: _Reader, *, tolerate_torn: bool,
                 ) -> Iterator[_Piece]:
    """The text of every zstd frame of ``data``, piece by piece, within the limits.

    A cut or corrupt frame is an error, except (``tolerate_torn``) an incomplete last one."""
    zstandard = _zstd_module()
    if zstandard is None:
        yield LogReadError(file=shown, problem="reading zstd needs the zstandard package "
                                               "(pip install 'turnfork[zstd]')")
        return
    budget = _TextBudget(reader, shown)
    context = zstandard.ZstdDecompressor()
    offset, number = 0, 0
    while offset < len(data):
        number += 1
        frame = _scan_frame(data, offset)
        if isinstance(frame, str):
            yield LogReadError(file=shown, problem=f"corrupt zstd frame {number} at byte "
                                                   f"{offset}: {frame}")
            return
        if not frame.complete and not tolerate_torn:
            yield LogReadError(file=shown, problem=(
                f"truncated zstd stream: frame {number} (from byte {offset}) is cut off at "
                f"byte {len(data)}"))
            return
        if frame.skippable:
            offset = frame.end
            continue
        refused = budget.reserve(frame.known if frame.content_size is None
                                 else frame.content_size)
        if refused is not None:
            yield refused
            return
        if not frame.complete:
            yield _Partial(offset)
        for piece in _frame_pieces(context, zstandard, data, frame, budget=budget,
                                   progress=reader.progress):
            if isinstance(piece, str):
                yield LogReadError(file=shown, problem=f"corrupt zstd frame {number} at byte "
                                                       f"{offset}: {piece}")
                return
            yield piece
            if isinstance(piece, LogReadError):
                return
        if not frame.complete:
            return
        offset = frame.end


def _frame_pieces(context: Any, zstandard: Any, data: bytes, frame: _Frame, *,
                  budget: _TextBudget, progress: _Progress,
                  ) -> Iterator[bytes | str | LogReadError]:
    """One frame's text, fed to the decompressor a group of blocks at a time (at most about
    :data:`_PIECE` of text each), so the limits stop a bomb within a block's worth of text."""
    stream = context.decompressobj()
    stops: list[int] = []
    group = 0
    for end, regenerated in zip(frame.block_ends, frame.block_bounds, strict=True):
        group += regenerated
        if group >= _PIECE:
            stops.append(end)
            group = 0
    if not stops or stops[-1] != frame.end:  # the checksum, or the blocks since the last stop
        stops.append(frame.end)
    start = frame.start
    try:
        for stop in stops:
            chunk = stream.decompress(data[start:min(stop, len(data))])
            progress.done += min(stop, len(data)) - start
            start = stop
            refused = budget.admit(chunk)
            if refused is not None:
                yield refused
                return
            if chunk:
                yield chunk
            if start >= len(data):
                break
    except zstandard.ZstdError as exc:
        yield str(exc)
        return
    if frame.complete and not stream.eof:
        yield "the frame ends early"


def _file_pieces(fd: int, shown: str, reader: _Reader, cap: int | None) -> Iterator[_Piece]:
    """The bytes of a plain file, piece by piece (``fd`` is closed at the end); ``cap``: the
    bytes that belong to the log (a seed's region), else up to the read limit."""
    limit = reader.limits.max_bytes
    left = (limit + 1) if cap is None else min(cap, limit)
    budget = _TextBudget(reader, shown)
    size = _FIRST_PIECE
    try:
        while left > 0:
            try:
                piece = os.read(fd, min(size, left))
            except OSError as exc:
                yield LogReadError(file=shown, problem=f"cannot read: {_os_problem(exc)}")
                return
            if not piece:
                return
            size = _PIECE
            left -= len(piece)
            reader.progress.done += len(piece)
            if cap is None and left <= 0:
                yield _grew(shown, limit)
                return
            refused = budget.admit(piece)
            if refused is not None:
                yield refused
                return
            yield piece
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- text checks


def _line_too_long(shown: str, line: int | None, limits: ReadLimits) -> LogReadError:
    return LogReadError(file=shown, line=line, problem=(
        f"a line is longer than the read limit of {_size_words(limits.max_line)} "
        "(ReadLimits.max_line)"))


def _check_lines(text: bytes, shown: str, limits: ReadLimits,
                 first_line: int = 1) -> LogReadError | None:
    """Refuse a line longer than ``limits.max_line``: any such line holds a whole aligned
    window of half that size, so only the windows without a newline are looked at."""
    window = max(1, limits.max_line // 2)
    for start in range(0, len(text), window):
        if text.find(b"\n", start, start + window) >= 0:
            continue
        begin = text.rfind(b"\n", 0, start) + 1
        end = text.find(b"\n", start)
        end = len(text) if end < 0 else end
        if end - begin > limits.max_line:
            return _line_too_long(shown, first_line + text.count(b"\n", 0, begin), limits)
    return None


_ROW_MARK = b'-chunks"'
_TIME_GAPS = b'"dt":['


def _packed_rows(text: bytes) -> Iterator[tuple[int, int]]:
    """(where its line begins, the members it counts) for each packed chunk row of ``text``,
    the members counted from its ``dt`` array."""
    mark = text.find(_ROW_MARK)
    while mark >= 0:
        begin = text.rfind(b"\n", 0, mark) + 1
        end = text.find(b"\n", mark)
        end = len(text) if end < 0 else end
        mark = text.find(_ROW_MARK, end)
        gaps = text.find(_TIME_GAPS, begin, end)
        if gaps < 0:
            continue
        close = text.find(b"]", gaps, end)
        if close < 0:
            continue
        yield begin, text.count(b",", gaps, close) + (0 if close == gaps + len(_TIME_GAPS)
                                                     else 1)


def counted_events(text: bytes) -> int:
    """What ``text`` counts against :attr:`ReadLimits.max_events`: one per line, plus the
    members of its packed rows (a writer that must stay readable counts what it writes so)."""
    lines = text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)
    if _ROW_MARK not in text:
        return lines
    return lines + sum(members for _, members in _packed_rows(text))


def _check_events(text: bytes, shown: str, reader: _Reader,
                  first_line: int = 1) -> LogReadError | None:
    """Refuse a log that would expand to more than ``max_events`` events (a seed's files
    count too): :func:`counted_events`."""
    limits = reader.limits
    budget = limits.max_events - reader.spent_events
    events = text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)
    # Every member of a row after its first costs a comma: lines + commas bound the events.
    # Within that bound the text is let through, but what it spends is its exact count: the
    # seed's files read next get only what is left.
    if events + text.count(b",") <= budget:
        reader.spent_events += counted_events(text)
        return None
    for begin, members in _packed_rows(text):
        events += members
        if events > budget:
            return LogReadError(
                file=shown, line=first_line + text.count(b"\n", 0, begin), problem=(
                    f"the log expands to more than {limits.max_events:,} events (ReadLimits."
                    "max_events): packed rows stand for more events than can be read"))
    if events > budget:
        return LogReadError(file=shown, problem=(
            f"the log holds more than {limits.max_events:,} events (ReadLimits.max_events)"))
    reader.spent_events += events
    return None


def _utf8_problem(text: bytes, shown: str, first_line: int, offset: int) -> LogReadError | None:
    """Invalid UTF-8 named by its line and its byte in the (decompressed) text."""
    if text.isascii():
        return None
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as exc:
        return LogReadError(file=shown, line=first_line + text.count(b"\n", 0, exc.start),
                            problem=f"invalid UTF-8 at byte {offset + exc.start}")
    return None


def _is_json(line: bytes) -> bool:
    # As DSH's JSON.parse reads it (invalid UTF-8 read as U+FFFD, lone-surrogate escapes, any
    # depth): a complete line the codec then refuses is a bad record, never a torn write.
    if not line.isascii():
        line = line.decode("utf-8", "replace").encode()
    return is_json_line(line)


def _torn_line(text: bytes, first_line: int) -> tuple[int, int, TornCause] | None:
    """(byte offset, line, cause) where the torn final line of ``text`` starts, if it is
    torn: it has no newline, or it is not JSON at all. ``first_line`` is the line number of
    ``text``'s first line."""
    if not text:
        return None
    if not text.endswith(b"\n"):
        start = text.rfind(b"\n") + 1
        cause: TornCause = "no-newline"
    else:
        start = text.rfind(b"\n", 0, len(text) - 1) + 1
        line = text[start:-1].rstrip(b"\r")
        if not line.strip() or _is_json(line):
            return None
        cause = "not-json"
    return start, first_line + text.count(b"\n", 0, start), cause


# --------------------------------------------------------------------------- a file's text


class _Text:
    """A file's text, pulled from its source piece by piece and handed out as whole lines.

    Offsets and line numbers count from the start of the file's (decompressed) text."""

    def __init__(self, pieces: Iterator[_Piece], shown: str, compressed: bool) -> None:
        self._pieces = pieces
        self.shown = shown
        self.compressed = compressed
        self.buffer = bytearray()
        #: Offset in the text, and line number, of ``buffer[0]``.
        self.start = 0
        self.line = 1
        self.ended = False
        self.error: LogReadError | None = None
        #: Where the text of an incomplete final zstd frame starts.
        self.partial: _FrameMark | None = None
        #: Bytes of the file read (for zstd: the whole file, read at once).
        self.file_bytes = 0
        #: The last two newlines of the buffer (-1: none).
        self._last = -1
        self._before_last = -1

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
                self.partial = _FrameMark(self.start + len(self.buffer), piece.offset, line)
                if self.buffer and self.buffer[-1] != 0x0A:
                    self.error, self.ended = _cut_short(self.shown, line), True
            elif piece:
                if not self.compressed:
                    self.file_bytes += len(piece)
                at = len(self.buffer)
                self.buffer += piece
                last = piece.rfind(b"\n")
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
        self._last -= size
        self._before_last -= size
        if self._before_last < 0:
            self._before_last = -1
        if self._last < 0:
            self._last = -1
        return text

    def take(self, size: int | None) -> tuple[bytes, int, int, bool] | None:
        """Whole lines: at least ``size`` bytes of them (``None``: all the text), the final
        line held back until the text ends, and never across the start of an incomplete
        final frame. Returns (text, its first line, its offset, whether it is the last), or
        ``None`` on an error."""
        while True:
            if self.ended:
                cut, final = len(self.buffer), True
                break
            if size is not None and len(self.buffer) >= size and self._before_last >= 0:
                newline = self.buffer.find(b"\n", size - 1, self._before_last + 1)
                cut, final = (self._before_last if newline < 0 else newline) + 1, False
                break
            self.pull()
        if self.error is not None:
            return None
        if self.partial is not None and (
                self.start < self.partial.text_offset < self.start + cut):
            cut, final = self.partial.text_offset - self.start, False
        first_line, offset = self.line, self.start
        return self._hand_out(cut), first_line, offset, final


def _cut_short(shown: str, line: int) -> LogReadError:
    return LogReadError(file=shown, line=line,
                        problem="a record is cut short inside a complete zstd frame")


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
        return LogReadError(file=shown, problem=f"cannot read: {_os_problem(exc)}")
    if magic != _ZSTD_MAGIC or (size_cap is not None and size_cap < 4):
        if name.endswith((".zstd", ".zst")):
            os.close(fd)
            return LogReadError(file=shown, problem="not a zstd stream (the file does not "
                                                    "start with the zstd magic number)")
        return _Text(_file_pieces(fd, shown, reader, size_cap), shown, False), status
    data = _read_whole(fd, shown, reader.limits.max_bytes, size_cap)
    if isinstance(data, LogReadError):
        return data
    text = _Text(_zstd_pieces(data, shown, reader, tolerate_torn=tolerate_torn), shown, True)
    text.file_bytes = len(data)
    return text, status


# --------------------------------------------------------------------------- decoding


class _Peek(msgspec.Struct):
    type: Any = None
    seq: Any = None
    seq0: Any = None


def _peek(line: bytes) -> _Peek | None:
    try:
        return msgspec.json.decode(line, type=_Peek)
    except _UNREADABLE:
        return None


def _is_projected(first_record: bytes | None) -> bool:
    """DSH's committed fixtures drop ``seq``/``seq0``: tell them by their first record."""
    if first_record is None:
        return False
    peek = _peek(first_record)
    return peek is not None and peek.seq is None and peek.seq0 is None


def _from_decode_error(file: str, error: DecodeError, shift: int = 0) -> LogReadError:
    return LogReadError(file=file, line=error.line + shift, seq=error.seq,
                        event_type=error.event_type, problem=error.problem)


_SEED_DECODER = msgspec.json.Decoder(SeedRecord)


def _seed_record(line: bytes, shown: str) -> SeedRecord | LogReadError | None:
    peek = _peek(line)
    if peek is None or peek.type != SEED_RECORD_TYPE:
        return None
    try:
        record = _SEED_DECODER.decode(line)
    except _UNREADABLE as exc:
        return LogReadError(file=shown, line=2, event_type=SEED_RECORD_TYPE,
                            problem=f"bad seed record: {exc}")
    if _seed_file_index(record.file) is None or min(record.size, record.events) < 0:
        return LogReadError(file=shown, line=2, event_type=SEED_RECORD_TYPE, problem=(
            f"bad seed record: {record.file!r} is not a seed file of this directory"))
    return record


@dataclass
class _Level:
    """One file of a log: the log's own file, or a seed file of its chain."""

    #: How the file is named in messages, and its name in the reader's directory.
    shown: str
    name: str
    session: bool
    header: SessionHeader | None
    #: The seed record the file holds (it names the next level down), if any.
    record: SeedRecord | None
    #: Bytes of the file's head (the header line and the seed record line).
    head_bytes: int
    projected: bool
    compressed: bool
    #: The bytes of the file that belong to the log (a seed: its record's ``size``).
    size_cap: int | None
    identity: tuple[int, int]
    #: The record of the level above, which names this one (``None`` for the log's file).
    named_by: SeedRecord | None = None
    #: Where the level above is shown (its seed record is on its line 2).
    above: str = ""
    #: An event log of one line without a newline (all of it a torn tail, by the rule).
    unterminated: bool = False


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
    identity = (status.st_dev, status.st_ino)
    first = text.head_line(0)
    if text.error is not None:
        return text.error
    is_session = first is not None and bool(first[0].strip()) and (
        (_peek(first[0].rstrip(b"\r")) or _Peek()).type == "session")
    if not is_session and not expect_header and not (
            text.compressed and _first_record(text, 0) is None):
        if text.error is not None:
            return text.error
        return _Level(shown=shown, name=name, session=False, header=None, record=None,
                      head_bytes=0, projected=_is_projected(_first_record(text, 0)),
                      compressed=text.compressed, size_cap=size_cap, identity=identity,
                      unterminated=first is not None and not first[1])
    if text.error is not None:
        return text.error
    if first is None or not first[0].strip():
        return LogReadError(file=shown, line=1, problem="empty session file: no header line")
    line, newline = first
    if not newline:
        words = " (it is in the incomplete final zstd frame)" if text.partial is not None else ""
        return LogReadError(file=shown, line=1, problem=f"the header line is incomplete{words}")
    parsed = decode_header_line(line.rstrip(b"\r"))
    if isinstance(parsed, Failure):
        return _from_decode_error(shown, parsed.failure())
    head_bytes = len(line) + 1
    record: SeedRecord | None = None
    second = text.head_line(1)
    if second is not None and second[0].strip() and (second[1] or not tolerate_torn):
        found = _seed_record(second[0].rstrip(b"\r"), shown)
        if isinstance(found, LogReadError):
            return found
        if found is not None:
            record = found
            head_bytes += len(second[0]) + 1
    projected = record is None and _is_projected(_first_record(text, 1))
    if text.error is not None:
        return text.error
    return _Level(shown=shown, name=name, session=True, header=parsed.unwrap(), record=record,
                  head_bytes=head_bytes, projected=projected, compressed=text.compressed,
                  size_cap=size_cap, identity=identity)


def _seed_chain(top: _Level, reader: _Reader) -> list[_Level] | LogReadError:
    """The seed files below ``top``, nearest first, each one's head read and checked (the
    chain is walked, not recursed into: it may be as long as the generations of forks)."""
    chain: list[_Level] = []
    above, below = top, None
    directory = os.path.dirname(top.shown)
    while above.record is not None:
        record = above.record
        index = _seed_file_index(record.file)
        if index is None:  # _seed_record refuses such a name
            return _seed_refused(above.shown, record, "not a seed file name")
        if below is not None and index >= below:
            return _seed_refused(above.shown, record, (
                f"a seed file may only name a lower-numbered one (read from seed-{below})"))
        where = os.path.join(directory, record.file)
        scratch = reader.scratch()
        opened = _open_text(scratch, record.file, where, size_cap=record.size, follow=False,
                            tolerate_torn=False)
        if isinstance(opened, LogReadError):
            return opened
        text, status = opened
        try:
            if status.st_size < record.size:
                return _seed_refused(above.shown, record, (
                    f"the file holds {_bytes(status.st_size)}, the record needs "
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


class LogChunk(NamedTuple):
    """Events of a log read together: the events of whole lines of one file."""

    events: tuple[Event, ...]
    #: The position (index in the log) of the first of them.
    start: int
    #: The file they were read from (a seed file for a fork child's inherited events).
    file: str
    #: The line (1-based, in the decompressed text) of the first line of ``text``.
    first_line: int
    #: The lines they were decoded from.
    text: bytes

    def line_of(self, position: int) -> int | None:
        """The line of ``file`` holding the event at ``position``, if it is in this chunk."""
        if not self.start <= position < self.start + len(self.events):
            return None
        return _line_holding(self.text.split(b"\n"), self.first_line, self.start, position)


class LogStream:
    """A log open for reading: what is known before its events (the file, its kind, its
    header, its seed), then its events a chunk at a time (:meth:`chunks`), and once they are
    all read, what was left out (:attr:`torn`).

    Use it as a context manager (or call :meth:`close`) when :meth:`chunks` may not be read
    to its end.
    """

    def __init__(self, *, path: str, levels: list[_Level], text: _Text, reader: _Reader,
                 header_file: str | None, header: SessionHeader | None,
                 close_directory: bool) -> None:
        top = levels[0]
        #: The path as the user gave it, and the file actually read.
        self.path = path
        self.file = top.shown
        self.format: LogFormat = (("session-jsonl-zstd" if top.compressed else "session-jsonl")
                                  if top.session else
                                  ("events-jsonl-zstd" if top.compressed else "events-jsonl"))
        #: Decoded as a DSH projected fixture.
        self.projected = top.projected
        self.header = header
        self.header_file = header_file
        #: The seed record of the file, when its seed lives in another file.
        self.seed = top.record
        #: What the read left out (known once :meth:`chunks` has ended).
        self.torn: TornTail | None = None
        #: Events read so far.
        self.events = 0
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
        """The kind of input, in words (as :attr:`LoadedLog.description`)."""
        return _describe(self.format, self.path, self.file, header_file=self.header_file,
                         projected=self.projected, seed=self.seed)

    @property
    def files(self) -> tuple[str, ...]:
        """Every file the log is read from: the log, its header file, its seed files."""
        header = () if self.header_file is None else (self.header_file,)
        return (self.file, *header, *(level.shown for level in self._levels[1:]))

    @property
    def one_torn_line(self) -> bool:
        """The file is an event log of one line without a newline: by the torn-tail rule,
        nothing of it is an event (it may be a JSON document of another kind)."""
        return self._levels[0].unterminated

    @property
    def file_bytes(self) -> int:
        """Bytes of the log's file read so far."""
        return self._text.file_bytes

    @property
    def progress(self) -> tuple[int, int]:
        """(bytes read, bytes to read) of the log's files, for a progress bar."""
        progress = self._reader.progress
        return min(progress.done, progress.total), progress.total

    def close(self) -> None:
        """Close the files (reading :meth:`chunks` to its end does it too)."""
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
        """The first chunk, read ahead (:meth:`chunks` still begins with it): whether the
        file starts as a log (``None``: it holds no events)."""
        if self._ahead is None:
            pieces = self._chunks()
            self._ahead = (next(pieces, None), pieces)
        return self._ahead[0]

    def chunks(self) -> Iterator[LogChunk | LogReadError]:
        """The events, a chunk at a time, the seed's first; a :class:`LogReadError` ends
        them. Read once."""
        if self._ahead is None:
            yield from self._chunks()
            return
        first, pieces = self._ahead
        if first is not None:
            yield first
            yield from pieces

    def _chunks(self) -> Iterator[LogChunk | LogReadError]:
        try:
            for level in reversed(self._levels[1:]):
                failed = yield from self._seed_level(level)
                if failed:
                    return
            top = self._levels[0]
            text = self._text
            if top.head_bytes:
                self.head_text = text.skip(top.head_bytes) or b""
                if text.partial is not None and text.partial.text_offset < top.head_bytes:
                    yield LogReadError(file=top.shown, line=1, problem=(
                        "the incomplete final zstd frame holds more than events"))
                    return
                # The head lines count against max_events as every line does (the store's
                # writer counts what it writes so): here and in each seed file.
                refused = _check_events(self.head_text, top.shown, self._reader)
                if refused is not None:
                    yield refused
                    return
            yield from self._level_chunks(top, text, tolerate_torn=True)
        except MemoryError:
            yield _out_of_memory(self.file)
        finally:
            self.close()

    def _seed_level(self, level: _Level) -> Generator[LogChunk | LogReadError, None, bool]:
        """A seed file's own events, read strictly; then the record that names it checked.
        Returns whether the read failed."""
        opened = _open_text(self._reader, level.name, level.shown, size_cap=level.size_cap,
                            follow=False, tolerate_torn=False)
        if isinstance(opened, LogReadError):
            yield opened
            return True
        text, status = opened
        last_time: int | None = None
        try:
            head = (text.skip(level.head_bytes)
                    if (status.st_dev, status.st_ino) == level.identity else None)
            if head is None:
                yield text.error or LogReadError(file=level.shown, problem=(
                    "cannot read: the file changed while it was read"))
                return True
            refused = _check_events(head, level.shown, self._reader)
            if refused is not None:
                yield refused
                return True
            for piece in self._level_chunks(level, text, tolerate_torn=False):
                yield piece
                if isinstance(piece, LogReadError):
                    return True
                if piece.events:
                    last_time = piece.events[-1].time
        finally:
            text.close()
        record = level.named_by
        assert record is not None
        if self.events != record.events:
            yield _seed_refused(level.above, record, (
                f"it holds {self.events:,} events, the record says {record.events:,}"))
            return True
        if last_time is not None and last_time != record.last_time:
            yield _seed_refused(level.above, record,
                                "its last event is not the one the record names")
            return True
        return False

    def _level_chunks(self, level: _Level, text: _Text, *, tolerate_torn: bool,
                      ) -> Iterator[LogChunk | LogReadError]:
        """A file's events after its head, chunk by chunk."""
        reader = self._reader
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
            if final and tolerate_torn:
                kept = self._torn_tail(level, text, chunk_text, first_line, offset)
                if isinstance(kept, LogReadError):
                    yield kept
                    return
                chunk_text = kept
            if chunk_text:
                refused = (_utf8_problem(chunk_text, level.shown, first_line, offset)
                           or _check_lines(chunk_text, level.shown, reader.limits, first_line)
                           or _check_events(chunk_text, level.shown, reader, first_line))
                if refused is not None:
                    yield refused
                    return
                decoded = decode_log(chunk_text, projected=level.projected)
                if isinstance(decoded, Failure):
                    yield _from_decode_error(level.shown, decoded.failure(), first_line - 1)
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

    def _torn_tail(self, level: _Level, text: _Text, chunk_text: bytes, first_line: int,
                   offset: int) -> bytes | LogReadError:
        """The last lines of the log's file, its torn tail (if any) left out and described."""
        mark = text.partial
        if mark is not None:
            cut = _torn_line(chunk_text, first_line)
            kept = chunk_text if cut is None else chunk_text[:cut[0]]
            self.torn = TornTail(
                keep_bytes=mark.file_offset, line=mark.line if cut is None else cut[1],
                dropped_bytes=len(chunk_text) - len(kept), rewrite_from=-1,
                frame_text_bytes=offset + len(chunk_text) - mark.text_offset,
                cause="incomplete-frame")
            return kept
        if text.compressed:
            if chunk_text and not chunk_text.endswith(b"\n"):
                return _cut_short(level.shown, first_line + chunk_text.count(b"\n"))
            return chunk_text
        cut = _torn_line(chunk_text, first_line)
        if cut is None:
            return chunk_text
        start, line, cause = cut
        self.torn = TornTail(keep_bytes=offset + start, line=line,
                             dropped_bytes=len(chunk_text) - start, cause=cause)
        return chunk_text[:start]

    def read_all(self, *, tick: Callable[[], object] | None = None,
                 ) -> Result[LoadedLog, LogReadError]:
        """Every event, gathered into a :class:`LoadedLog` (``tick`` is called after each
        chunk, for a progress bar)."""
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
    try:
        top = _read_head(text, name, shown, status, expect_header=expect_header,
                         tolerate_torn=True)
        if isinstance(top, LogReadError):
            text.close()
            return top
        header, header_file = top.header, None
        if not top.session:
            sibling = _sibling_header(located, reader)
            if isinstance(sibling, LogReadError):
                text.close()
                return sibling
            if sibling is not None:
                header, header_file = sibling
        chain = _seed_chain(top, reader)
        if isinstance(chain, LogReadError):
            text.close()
            return chain
    except BaseException:
        text.close()
        raise
    reader.progress.total = status.st_size + sum(level.size_cap or 0 for level in chain)
    return LogStream(path=path, levels=[top, *chain], text=text, reader=reader,
                     header_file=header_file, header=header,
                     close_directory=close_directory)


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
            return LogReadError(file=directory, problem=f"cannot read: {_os_problem(exc)}")
        present.append(name)
    if not present:
        return LogReadError(
            file=directory,
            problem="directory holds no session.jsonl or session.jsonl.zstd "
                    "(not a DSH session directory)")
    if len(present) > 1:
        return LogReadError(
            file=directory,
            problem="directory holds both session.jsonl and session.jsonl.zstd; "
                    "name the file to read")
    return os.path.join(directory, present[0])


def open_log(path: str | os.PathLike[str], *, limits: ReadLimits = DEFAULT_LIMITS,
             shown: str | None = None) -> Result[LogStream, LogReadError]:
    """Open a log in any supported shape (see the module docstring) for streaming: its head
    (header, seed chain) is read now, its events by :meth:`LogStream.chunks`.

    Args:
        path: a JSONL event log, a DSH session file (plain or zstd) or a session directory.
        limits: bounds on what the read may cost.
        shown: how to name the file in messages (default: as found from ``path``).
    """
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
            return Failure(LogReadError(file=file, problem=f"cannot read: {_os_problem(exc)}"))
        try:
            reader = _Reader(limits, dir_fd, follow=True)
            stream = _stream(shown or given, reader, os.path.basename(file), shown or file,
                             file, expect_header=in_directory, close_directory=True)
        except BaseException:
            os.close(dir_fd)
            raise
        if isinstance(stream, LogReadError):
            os.close(dir_fd)
            return Failure(stream)
        return Success(stream)
    except MemoryError:
        return Failure(_out_of_memory(given))


def read_log(path: str | os.PathLike[str], *, limits: ReadLimits = DEFAULT_LIMITS,
             ) -> Result[LoadedLog, LogReadError]:
    """Read a log in any supported shape (see the module docstring), whole. A torn tail is
    left out and described in :attr:`LoadedLog.torn`, as every reader does.

    Args:
        path: a JSONL event log, a DSH session file (plain or zstd) or a session directory.
        limits: bounds on what the read may cost.

    Returns:
        ``Success(LoadedLog)`` or ``Failure(LogReadError)`` naming file, line, seq, problem.
    """
    opened = open_log(path, limits=limits)
    if isinstance(opened, Failure):
        return Failure(opened.failure())
    with opened.unwrap() as stream:
        try:
            return stream.read_all()
        except MemoryError:
            return Failure(_out_of_memory(stream.file))


class FileText(msgspec.Struct, frozen=True, kw_only=True):
    """A file's text, read like a log (:func:`read_text`) but not decoded."""

    file: str
    #: The text (decompressed when the file is zstd).
    text: bytes
    compressed: bool
    #: Bytes of the file as read.
    file_bytes: int


def read_text(path: str | os.PathLike[str], *, limits: ReadLimits = DEFAULT_LIMITS,
              ) -> Result[FileText, LogReadError]:
    """The text of a file that holds something other than a DSH log (a wire history, say),
    read with the same refusals and limits as :func:`read_log`: a regular file only, its size
    and its decompressed text under ``max_bytes`` (zstd bounded frame by frame), no line over
    ``max_line``. A directory is refused; nothing is decoded."""
    file = os.fspath(path)
    try:
        reader = _Reader(limits, None, follow=True)
        opened = _open_text(reader, file, file, tolerate_torn=False)
        if isinstance(opened, LogReadError):
            return Failure(opened)
        text, _ = opened
        try:
            while text.pull():
                pass
        finally:
            text.close()
        if text.error is not None:
            return Failure(text.error)
        whole = bytes(text.buffer)
        refused = _check_lines(whole, file, limits)
        if refused is not None:
            return Failure(refused)
        return Success(FileText(file=file, text=whole, compressed=text.compressed,
                                file_bytes=text.file_bytes))
    except MemoryError:
        return Failure(_out_of_memory(file))


def read_session_file(name: str, *, dir_fd: int, shown: str,
                      limits: ReadLimits = DEFAULT_LIMITS) -> Result[LoadedLog, LogReadError]:
    """Read a DSH session file the way the disk store does: ``name`` in the directory
    ``dir_fd`` (no symbolic link followed, the seed's files included), the header line first,
    and a torn tail left out and described (:attr:`LoadedLog.torn`), never cut here.

    Args:
        name: ``session.jsonl`` or ``session.jsonl.zstd``.
        dir_fd: the session directory, open.
        shown: how to name the file in errors.
        limits: bounds on what the read may cost.
    """
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


def read_session_header(name: str, *, dir_fd: int, shown: str,
                        limits: ReadLimits = DEFAULT_LIMITS) -> Result[SessionHeader, LogReadError]:
    """The header line of a DSH session file (``name`` in the directory ``dir_fd``, no link
    followed), read without its events: only the bytes that can hold the first line are read
    (the first zstd frame for a compressed file), so enumerating a store costs one short read
    per session."""
    try:
        reader = _Reader(limits, dir_fd, follow=False)
        compressed = name.endswith(".zstd")
        # A line of max_line bytes compresses to at most a little more than itself.
        raw = reader.read_file(name, shown, size_cap=limits.max_line + (4096 if compressed
                                                                          else 1))
        if isinstance(raw, LogReadError):
            return Failure(raw)
        text = raw
        if compressed:
            if not raw.startswith(_ZSTD_MAGIC):
                return Failure(LogReadError(file=shown, problem=(
                    "not a zstd stream (the file does not start with the zstd magic number)")))
            try:
                text = _zstd_module().ZstdDecompressor().decompressobj().decompress(raw)
            except Exception as exc:  # zstandard's ZstdError: a damaged first frame
                return Failure(LogReadError(file=shown, line=1,
                                            problem=f"the header line is unreadable: {exc}"))
        newline = text.find(b"\n")
        if newline < 0:
            return Failure(LogReadError(file=shown, line=1,
                                        problem="the header line is incomplete"))
        parsed = decode_header_line(text[:newline].rstrip(b"\r"))
        if isinstance(parsed, Failure):
            return Failure(_from_decode_error(shown, parsed.failure()))
        return Success(parsed.unwrap())
    except MemoryError:
        return Failure(_out_of_memory(shown))
