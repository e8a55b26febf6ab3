"""Reading a session log from disk, whatever shape it comes in.

This is the one reader of DSH files: the CLI reads through :func:`read_log`, the disk store
through :func:`read_session_file`; both share the bounded file reading, the zstd frames and
the torn-tail rule below.

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
* The torn-tail rule (``tolerate_torn_tail``): only the *final* line can be torn — when it
  has no newline, or is not JSON at all — and it is left out (:class:`TornTail` says where
  the file would be cut). For zstd, an incomplete final frame is torn; the whole lines it
  holds are kept (the store writes them again), its own final line under the same rule. A
  complete line that cannot be decoded anywhere else is an error, never a tail.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from typing import Any, Literal, NamedTuple, TypeAlias

import msgspec
from returns.result import Failure, Result, Success

from ..core import (
    DecodeError,
    Event,
    SessionHeader,
    decode_header_line,
    decode_log,
    decode_session,
)
from ..core.codec import is_json_line

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
    "read_log",
    "read_text",
    "read_session_file",
    "read_session_header",
    "SESSION_FILE_NAMES",
    "counted_events",
]

LogFormat: TypeAlias = Literal["events-jsonl", "events-jsonl-zstd", "session-jsonl",
                              "session-jsonl-zstd"]

#: The file names a DSH session directory may hold (zstd is DSH's default).
SESSION_FILE_NAMES = ("session.jsonl.zstd", "session.jsonl")

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
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


class TornTail(msgspec.Struct, frozen=True, kw_only=True):
    """The torn tail a tolerant read left out, and how to cut it off the file."""

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

    @property
    def description(self) -> str:
        if self.rewrite_from is None:
            return f"a torn tail ({self.dropped_bytes} bytes from line {self.line})"
        return (f"an incomplete final zstd frame ({self.frame_text_bytes} bytes of text, "
                f"{self.dropped_bytes} of them a torn tail)")


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
    #: What a tolerant read left out (``None``: nothing was torn, or the read was strict).
    torn: TornTail | None = None
    #: The seed record of the file, when its seed lives in another file.
    seed: SeedRecord | None = None
    #: Bytes of the file as read.
    file_bytes: int = 0
    #: What the read spent against :class:`ReadLimits` (the seed's files included, a torn
    #: tail too): bytes of text (``max_bytes``) and :func:`counted_events` (``max_events``).
    spent_bytes: int = 0
    spent_events: int = 0

    @property
    def description(self) -> str:
        """The kind of input, in words, e.g. ``DSH session file, projected fixture (…)``."""
        words = _FORMAT_NAMES[self.format]
        if self.file != self.path:
            words += f" in session directory ({os.path.basename(self.file)})"
        if self.header_file is not None:
            words += f", header from {os.path.basename(self.header_file)}"
        if self.projected:
            words += ", projected fixture (no seq/time: restored by counting, time 0)"
        if self.seed is not None:
            words += (f", seed of {self.seed.events} events from {self.seed.file} (a turnfork "
                      "fork child: export it for DSH)")
        return words

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
        for index in range(first, len(lines)):
            line = lines[index]
            if not line.strip():
                continue
            count += _events_on_line(line)
            if count > seq:
                return index + 1
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
    return f"{size} bytes"


class _Reader:
    """One read: where files are opened from, the limits, and what the read has spent."""

    def __init__(self, limits: ReadLimits, dir_fd: int | None, follow: bool) -> None:
        self.limits = limits
        self.dir_fd = dir_fd
        self.follow = follow
        # What the read has taken so far (a seed's files share the limits).
        self.spent_bytes = 0
        self.spent_events = 0

    def read_file(self, name: str, shown: str, *, size_cap: int | None = None,
                  follow: bool | None = None) -> bytes | LogReadError:
        """The bytes of a regular file (at most ``size_cap`` of them, when given);
        ``follow``: whether a symbolic link is followed (default: the reader's rule)."""
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
            why = _not_regular(opened.st_mode, follow=True)
            if why is not None:  # replaced between the stat and the open
                return LogReadError(file=shown, problem=f"cannot read: {why}")
            cap = limit if size_cap is None else min(limit, size_cap)
            with os.fdopen(os.dup(fd), "rb") as handle:
                data = handle.read(cap + 1 if size_cap is None else cap)
        except OSError as exc:
            return LogReadError(file=shown, problem=f"cannot read: {_os_problem(exc)}")
        finally:
            os.close(fd)
        if size_cap is None and len(data) > limit:
            return LogReadError(file=shown, problem=(
                f"the file grew past the read limit of {_size_words(limit)} while it was "
                "read (ReadLimits.max_bytes)"))
        return data


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
    last = False
    while not last:
        if position + 3 > size:
            return incomplete._replace(known=known, bound=bound + _BLOCK_MAX,
                                       block_ends=tuple(block_ends))
        block = int.from_bytes(data[position:position + 3], "little")
        kind, length, last = (block >> 1) & 3, block >> 3, bool(block & 1)
        if kind == 3:
            return "a block of the reserved type"
        if kind == 1:  # RLE: one byte, regenerated `length` times
            position += 4
            known += length
            bound += length
        else:
            position += 3 + length
            if kind == 0:
                known += length
                bound += length
            else:
                bound += _BLOCK_MAX
        block_ends.append(position)
        if position > size:
            return incomplete._replace(known=known, bound=bound,
                                       block_ends=tuple(block_ends))
    end = position + (4 if descriptor & 0x04 else 0)
    return _Frame(start, end, end <= size, False, content_size, known, bound,
                  tuple(block_ends))


class _ZstdText(NamedTuple):
    #: The text of the complete frames.
    text: bytes
    #: The text an incomplete final frame held (``None``: the last frame is complete).
    partial: bytes | None
    #: Where that incomplete frame starts in the file.
    partial_offset: int


class _TextBudget:
    """Decompressed text under the limits, checked as it grows (before memory is spent)."""

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


def _decompress(data: bytes, shown: str, reader: _Reader, *, tolerate_torn: bool,
                ) -> _ZstdText | LogReadError:
    """The text of every zstd frame of ``data``, within the limits.

    A cut or corrupt frame is an error, except (``tolerate_torn``) an incomplete last one."""
    zstandard = _zstd_module()
    if zstandard is None:
        return LogReadError(file=shown, problem="reading zstd needs the zstandard package "
                                                "(pip install 'turnfork[zstd]')")
    budget = _TextBudget(reader, shown)
    context = zstandard.ZstdDecompressor()
    parts: list[bytes] = []
    offset, number = 0, 0
    while offset < len(data):
        number += 1
        frame = _scan_frame(data, offset)
        if isinstance(frame, str):
            return LogReadError(file=shown, problem=f"corrupt zstd frame {number} at byte "
                                                    f"{offset}: {frame}")
        if not frame.complete and not tolerate_torn:
            return LogReadError(file=shown, problem=(
                f"truncated zstd stream: frame {number} (from byte {offset}) is cut off at "
                f"byte {len(data)}"))
        if frame.skippable:
            offset = frame.end
            continue
        refused = budget.reserve(frame.known if frame.content_size is None
                                 else frame.content_size)
        if refused is not None:
            return refused
        text = _frame_text(context, zstandard, data, frame, budget)
        if isinstance(text, LogReadError | str):
            if isinstance(text, LogReadError):
                return text
            return LogReadError(file=shown, problem=f"corrupt zstd frame {number} at byte "
                                                    f"{offset}: {text}")
        if not frame.complete:
            return _ZstdText(b"".join(parts), text, offset)
        parts.append(text)
        offset = frame.end
    return _ZstdText(b"".join(parts), None, 0)


def _frame_text(context: Any, zstandard: Any, data: bytes, frame: _Frame,
                budget: _TextBudget) -> bytes | str | LogReadError:
    """One frame's text. A frame that could pass the limit is fed block by block, so that
    the limit stops it within a block's worth of text."""
    stream = context.decompressobj()
    room = budget.reader.limits.max_bytes - budget.reader.spent_bytes
    whole = frame.complete and (frame.content_size is not None or frame.bound <= room)
    stops = (frame.end,) if whole else (*frame.block_ends, frame.end)
    pieces: list[bytes] = []
    start = frame.start
    try:
        for stop in stops:
            chunk = stream.decompress(data[start:min(stop, len(data))])
            start = stop
            refused = budget.admit(chunk)
            if refused is not None:
                return refused
            pieces.append(chunk)
            if start >= len(data):
                break
    except zstandard.ZstdError as exc:
        return str(exc)
    if frame.complete and not stream.eof:
        return "the frame ends early"
    return b"".join(pieces)


# --------------------------------------------------------------------------- text checks


def _line_too_long(shown: str, line: int | None, limits: ReadLimits) -> LogReadError:
    return LogReadError(file=shown, line=line, problem=(
        f"a line is longer than the read limit of {_size_words(limits.max_line)} "
        "(ReadLimits.max_line)"))


def _check_lines(text: bytes, shown: str, limits: ReadLimits) -> LogReadError | None:
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
            return _line_too_long(shown, text.count(b"\n", 0, begin) + 1, limits)
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
    lines = text.count(b"\n") + (0 if text.endswith(b"\n") else 1)
    if _ROW_MARK not in text:
        return lines
    return lines + sum(members for _, members in _packed_rows(text))


def _check_events(text: bytes, shown: str, reader: _Reader) -> LogReadError | None:
    """Refuse a log that would expand to more than ``max_events`` events (a seed's files
    count too): :func:`counted_events`."""
    limits = reader.limits
    budget = limits.max_events - reader.spent_events
    events = text.count(b"\n") + (0 if text.endswith(b"\n") else 1)
    # Every member of a row after its first costs a comma: lines + commas bound the events.
    # Within that bound the text is let through, but what it spends is its exact count: the
    # seed's files read next get only what is left.
    if events + text.count(b",") <= budget:
        reader.spent_events += counted_events(text)
        return None
    for begin, members in _packed_rows(text):
        events += members
        if events > budget:
            return LogReadError(file=shown, line=text.count(b"\n", 0, begin) + 1, problem=(
                f"the log expands to more than {limits.max_events:,} events (ReadLimits."
                "max_events): packed rows stand for more events than can be read"))
    if events > budget:
        return LogReadError(file=shown, problem=(
            f"the log holds more than {limits.max_events:,} events (ReadLimits.max_events)"))
    reader.spent_events += events
    return None


def _is_json(line: bytes) -> bool:
    # As DSH's JSON.parse reads it (lone-surrogate escapes, any depth): a complete line the
    # codec then refuses is a bad record, never a torn write to drop.
    return is_json_line(line)


def _torn_line(text: bytes, first_line: int) -> tuple[int, int] | None:
    """(byte offset, line) where the torn final line of ``text`` starts, if it is torn: it
    has no newline, or it is not JSON at all. ``first_line`` is the line number of
    ``text``'s first line."""
    if not text:
        return None
    if not text.endswith(b"\n"):
        start = text.rfind(b"\n") + 1
    else:
        start = text.rfind(b"\n", 0, len(text) - 1) + 1
        line = text[start:-1].rstrip(b"\r")
        if not line.strip() or _is_json(line):
            return None
    return start, first_line + text.count(b"\n", 0, start)


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


def _first_record(text: bytes, *, skip_header: bool) -> bytes | None:
    """The first non-blank record line (after the header line when ``skip_header``)."""
    start = 0
    if skip_header:
        newline = text.find(b"\n")
        if newline == -1:
            return None
        start = newline + 1
    while start < len(text):
        end = text.find(b"\n", start)
        if end == -1:
            end = len(text)
        line = text[start:end]
        if line.strip():
            return line
        start = end + 1
    return None


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


class _Decoded(NamedTuple):
    header: SessionHeader | None
    events: tuple[Event, ...]
    seed: SeedRecord | None


def _decode_session_text(text: bytes, shown: str, reader: _Reader, *, projected: bool,
                         below: int | None) -> _Decoded | LogReadError:
    """A session file's text (header line first), its seed resolved. ``below``: the index
    of the seed file being read (its own seed must name a lower one)."""
    newline = text.find(b"\n")
    rest_at = len(text) if newline < 0 else newline + 1
    second_end = text.find(b"\n", rest_at)
    second = text[rest_at:len(text) if second_end < 0 else second_end]
    record = _seed_record(second, shown) if second.strip() else None
    if isinstance(record, LogReadError):
        return record
    if record is None:
        decoded = decode_session(text, projected=projected)
        if isinstance(decoded, Failure):
            return _from_decode_error(shown, decoded.failure())
        header, events = decoded.unwrap()
        return _Decoded(header, events, None)
    parsed = decode_header_line(text[:newline].rstrip(b"\r"))
    if isinstance(parsed, Failure):
        return _from_decode_error(shown, parsed.failure())
    header = parsed.unwrap()
    seed = _read_seed(record, header, shown, reader, below)
    if isinstance(seed, LogReadError):
        return seed
    body = b"" if second_end < 0 else text[second_end + 1:]
    own = decode_log(body)
    if isinstance(own, Failure):
        return _from_decode_error(shown, own.failure(), shift=2)
    return _Decoded(header, seed + own.unwrap(), record)


def _read_seed(record: SeedRecord, header: SessionHeader, shown: str, reader: _Reader,
               below: int | None) -> tuple[Event, ...] | LogReadError:
    index = _seed_file_index(record.file)
    assert index is not None
    where = os.path.join(os.path.dirname(shown), record.file)

    def refused(problem: str) -> LogReadError:
        return LogReadError(file=shown, line=2, event_type=SEED_RECORD_TYPE,
                            problem=f"seed {record.file}: {problem}")

    if below is not None and index >= below:
        return refused(f"a seed file may only name a lower-numbered one (read from seed-"
                       f"{below})")
    raw = reader.read_file(record.file, where, size_cap=record.size, follow=False)
    if isinstance(raw, LogReadError):
        return raw
    if len(raw) < record.size:
        return refused(f"the file holds {len(raw)} bytes, the record needs {record.size}")
    if raw.startswith(_ZSTD_MAGIC):
        unpacked = _decompress(raw, where, reader, tolerate_torn=False)
        if isinstance(unpacked, LogReadError):
            return unpacked
        text = unpacked.text
    else:
        budget = _TextBudget(reader, where)
        too_much = budget.admit(raw)
        if too_much is not None:
            return too_much
        text = raw
    checked = _check_lines(text, where, reader.limits) or _check_events(text, where, reader)
    if checked is not None:
        return checked
    decoded = _decode_session_text(text, where, reader, projected=False, below=index)
    if isinstance(decoded, LogReadError):
        return decoded
    events = decoded.events
    if isinstance(header.parent_session, str) and decoded.header is not None and (
            decoded.header.id != header.parent_session):
        return refused(f"it is session {decoded.header.id!r}, not the parent "
                       f"{header.parent_session!r}")
    if len(events) != record.events:
        return refused(f"it holds {len(events)} events, the record says {record.events}")
    if events and events[-1].time != record.last_time:
        return refused("its last event is not the one the record names")
    return events


def _decode(given: str, file: str, text: bytes, reader: _Reader, *, compressed: bool,
            expect_header: bool) -> Result[LoadedLog, LogReadError]:
    first_line = text.split(b"\n", 1)[0].rstrip(b"\r")
    first = _peek(first_line) if first_line.strip() else None
    has_header = first is not None and first.type == "session"
    if has_header or ((compressed or expect_header) and not text.strip()):
        projected = _is_projected(_first_record(text, skip_header=True))
        decoded = _decode_session_text(text, file, reader, projected=projected, below=None)
        if isinstance(decoded, LogReadError):
            return Failure(decoded)
        return Success(LoadedLog(
            path=given, file=file,
            format="session-jsonl-zstd" if compressed else "session-jsonl",
            projected=projected and decoded.seed is None, header=decoded.header,
            header_file=None, events=decoded.events, text=text, seed=decoded.seed))
    projected = _is_projected(_first_record(text, skip_header=False))
    decoded_log = decode_log(text, projected=projected)
    if isinstance(decoded_log, Failure):
        return Failure(_from_decode_error(file, decoded_log.failure()))
    sibling = _sibling_header(file, reader)
    if isinstance(sibling, LogReadError):
        return Failure(sibling)
    header: SessionHeader | None = None
    header_file: str | None = None
    if sibling is not None:
        header, header_file = sibling
    return Success(LoadedLog(
        path=given, file=file, format="events-jsonl-zstd" if compressed else "events-jsonl",
        projected=projected, header=header, header_file=header_file,
        events=decoded_log.unwrap(), text=text))


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


# --------------------------------------------------------------------------- reading


def _session_file_in(directory: str) -> str | LogReadError:
    present = [name for name in SESSION_FILE_NAMES
               if os.path.lexists(os.path.join(directory, name))]
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


def _out_of_memory(file: str) -> LogReadError:
    return LogReadError(file=file, problem=(
        "out of memory while reading the log (ReadLimits bound what one read may take)"))


def _text_of(raw: bytes, file: str, reader: _Reader, *, tolerate_torn: bool,
             ) -> tuple[bytes, bytes | None, int, bool] | LogReadError:
    """(text, text of an incomplete last zstd frame, that frame's offset, compressed)."""
    if raw.startswith(_ZSTD_MAGIC):
        unpacked = _decompress(raw, file, reader, tolerate_torn=tolerate_torn)
        if isinstance(unpacked, LogReadError):
            return unpacked
        return unpacked.text, unpacked.partial, unpacked.partial_offset, True
    if file.endswith((".zstd", ".zst")):
        return LogReadError(file=file, problem="not a zstd stream (the file does not start "
                                               "with the zstd magic number)")
    too_much = _TextBudget(reader, file).admit(raw)
    if too_much is not None:
        return too_much
    return raw, None, 0, False


def _bounded(text: bytes, file: str, reader: _Reader) -> LogReadError | None:
    return _check_lines(text, file, reader.limits) or _check_events(text, file, reader)


def read_log(path: str | os.PathLike[str], *, limits: ReadLimits = DEFAULT_LIMITS,
             ) -> Result[LoadedLog, LogReadError]:
    """Read a log in any supported shape (see the module docstring), strictly: a torn tail
    is an error here, as anything else that cannot be read.

    Args:
        path: a JSONL event log, a DSH session file (plain or zstd) or a session directory.
        limits: bounds on what the read may cost.

    Returns:
        ``Success(LoadedLog)`` or ``Failure(LogReadError)`` naming file, line, seq, problem.
    """
    given = os.fspath(path)
    try:
        in_directory = os.path.isdir(given)  # False for what it cannot stat; the read says why
        file = given
        if in_directory:
            found = _session_file_in(given)
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
            read = _whole_file(reader, os.path.basename(file), file)
            if isinstance(read, LogReadError):
                return Failure(read)
            refused = _bounded(read.text, file, reader)
            if refused is not None:
                return Failure(refused)
            decoded = _decode(given, file, read.text, reader, compressed=read.compressed,
                              expect_header=in_directory)
            return decoded.map(lambda log: msgspec.structs.replace(
                log, file_bytes=read.file_bytes, spent_bytes=reader.spent_bytes,
                spent_events=reader.spent_events))
        finally:
            os.close(dir_fd)
    except MemoryError:
        return Failure(_out_of_memory(given))


class FileText(msgspec.Struct, frozen=True, kw_only=True):
    """A file's text, read like a log (:func:`read_text`) but not decoded."""

    file: str
    #: The text (decompressed when the file is zstd).
    text: bytes
    compressed: bool
    #: Bytes of the file as read.
    file_bytes: int


def _whole_file(reader: _Reader, name: str, shown: str) -> FileText | LogReadError:
    """``name`` read and decompressed whole, strictly (an incomplete zstd frame is an error);
    its lines and events are not looked at yet."""
    raw = reader.read_file(name, shown)
    if isinstance(raw, LogReadError):
        return raw
    read = _text_of(raw, shown, reader, tolerate_torn=False)
    if isinstance(read, LogReadError):
        return read
    text, _, _, compressed = read
    return FileText(file=shown, text=text, compressed=compressed, file_bytes=len(raw))


def read_text(path: str | os.PathLike[str], *, limits: ReadLimits = DEFAULT_LIMITS,
              ) -> Result[FileText, LogReadError]:
    """The text of a file that holds something other than a DSH log (a wire history, say),
    read with the same refusals and limits as :func:`read_log`: a regular file only, its size
    and its decompressed text under ``max_bytes`` (zstd bounded frame by frame), no line over
    ``max_line``. A directory is refused; nothing is decoded."""
    file = os.fspath(path)
    try:
        read = _whole_file(_Reader(limits, None, follow=True), file, file)
        if isinstance(read, LogReadError):
            return Failure(read)
        refused = _check_lines(read.text, file, limits)
        if refused is not None:
            return Failure(refused)
        return Success(read)
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
        raw = reader.read_file(name, shown)
        if isinstance(raw, LogReadError):
            return Failure(raw)
        compressed = name.endswith(".zstd")
        if compressed and not raw.startswith(_ZSTD_MAGIC):
            return Failure(LogReadError(file=shown, problem=(
                "not a zstd stream (the file does not start with the zstd magic number)")))
        read = _text_of(raw, shown, reader, tolerate_torn=True)
        if isinstance(read, LogReadError):
            return Failure(read)
        text, partial, partial_offset, _ = read
        if b"\n" not in text:
            if partial is None:
                return Failure(LogReadError(file=shown, line=1,
                                            problem="the header line is incomplete"))
            return Failure(LogReadError(file=shown, line=1, problem=(
                "the header line is incomplete (it is in the incomplete final zstd frame)")))
        torn: TornTail | None = None
        kept = b""
        if compressed:
            if not text.endswith(b"\n"):
                return Failure(LogReadError(
                    file=shown, line=text.count(b"\n") + 1,
                    problem="a record is cut short inside a complete zstd frame"))
            if partial is not None:
                first_line = text.count(b"\n") + 1
                cut = _torn_line(partial, first_line)
                kept = partial if cut is None else partial[:cut[0]]
                torn = TornTail(keep_bytes=partial_offset, line=first_line if cut is None
                                else cut[1], dropped_bytes=len(partial) - len(kept),
                                rewrite_from=-1, frame_text_bytes=len(partial))
                text += kept
        else:
            cut = _torn_line(text, 1)
            if cut is not None and cut[1] > 1:
                torn = TornTail(keep_bytes=cut[0], line=cut[1],
                                dropped_bytes=len(text) - cut[0])
                text = text[:cut[0]]
        refused = _bounded(text, shown, reader)
        if refused is not None:
            return Failure(refused)
        decoded = _decode_session_text(text, shown, reader, projected=False, below=None)
        if isinstance(decoded, LogReadError):
            return Failure(decoded)
        if torn is not None and torn.rewrite_from is not None:
            recovered = decode_log(kept)
            if isinstance(recovered, Failure):  # the seed record itself is in that frame
                return Failure(LogReadError(file=shown, line=torn.line, problem=(
                    "the incomplete final zstd frame holds more than events")))
            torn = msgspec.structs.replace(
                torn, rewrite_from=len(decoded.events) - len(recovered.unwrap()))
        return Success(LoadedLog(
            path=shown, file=shown,
            format="session-jsonl-zstd" if compressed else "session-jsonl", projected=False,
            header=decoded.header, header_file=None, events=decoded.events, text=text,
            torn=torn, seed=decoded.seed, file_bytes=len(raw),
            spent_bytes=reader.spent_bytes, spent_events=reader.spent_events))
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
