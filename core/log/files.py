"""A DSH log as files hold it: the rules a reader and a writer of session files apply to bytes
already read, with no I/O of their own.

What a read may cost (:class:`ReadLimits`) and why it failed (:class:`LogReadError`); the
torn-tail rule (only the final line can be torn: no newline, or not JSON at all;
:func:`torn_line`, :class:`TornTail`); what a text counts against the event limit (packed
rows count their members, :func:`counted_events`); turnfork's seed record (a fork child's seed
kept in its parent's file, :class:`SeedRecord`); a log read (:class:`LoadedLog`,
:class:`LogChunk`); the session directory layout (wire-format §5.1: :func:`project_key`,
:func:`encode_segment`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, NamedTuple, TypeAlias

import msgspec

from .._checking import checked, unchecked
from .codec import DecodeError, encode_log, is_json_line
from .events import Event, SessionHeader, TurnEndEvent

__all__ = [
    "LogFormat",
    "ReadLimits",
    "DEFAULT_LIMITS",
    "LogReadError",
    "TornCause",
    "TornTail",
    "SEED_RECORD_TYPE",
    "SeedRecord",
    "seed_file_name",
    "seed_file_index",
    "seed_record_in",
    "LoadedLog",
    "LogChunk",
    "FileText",
    "describe_log",
    "size_words",
    "read_error_from_decode",
    "line_too_long_error",
    "long_line_error",
    "counted_events",
    "event_limit_error",
    "utf8_error",
    "torn_line",
    "FrameMark",
    "cut_short_error",
    "cut_torn_tail",
    "is_header_record",
    "is_projected",
    "closing_room",
    "has_line_over",
    "ZSTD_MAGIC",
    "ZstdFrame",
    "zstd_frame_at",
    "WriteRefusal",
    "part_refusal",
    "batch_refusal",
    "project_key",
    "project_dir_name",
    "encode_segment",
    "decode_segment",
    "session_id_problem",
]

LogFormat: TypeAlias = Literal["events-jsonl", "events-jsonl-zstd", "session-jsonl",
                              "session-jsonl-zstd"]

#: What msgspec raises for text that is not readable JSON; RecursionError for JSON nested
#: deeper than the interpreter's recursion limit.
_UNREADABLE = (msgspec.DecodeError, RecursionError)
_ROW_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})

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


@checked
def size_words(size: int) -> str:
    """A size for a message: ``1.5 MiB``, ``12 bytes``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.3g} {unit}"
    return _bytes(size)


# --------------------------------------------------------------------------- seed records


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


@checked
def seed_file_name(index: int, *, compressed: bool) -> str:
    """The name of the ``index``-th seed file of a session directory."""
    return f"seed-{index}.jsonl{'.zstd' if compressed else ''}"


@checked
def seed_file_index(name: str) -> int | None:
    """N for a name ``seed-N.jsonl`` or ``seed-N.jsonl.zstd``, else ``None``."""
    number = name.removeprefix("seed-").removesuffix(".zstd").removesuffix(".jsonl")
    if not (number.isascii() and number.isdigit() and len(number) <= 6) or name not in (
            seed_file_name(int(number), compressed=False),
            seed_file_name(int(number), compressed=True)):
        return None
    return int(number)


class _Peek(msgspec.Struct):
    type: Any = None
    seq: Any = None
    seq0: Any = None


def _peek(line: bytes) -> _Peek | None:
    try:
        return msgspec.json.decode(line, type=_Peek)
    except _UNREADABLE:
        return None


@checked
def is_header_record(line: bytes) -> bool:
    """Whether a (first) line is a session header record, ``{"type":"session",…}``."""
    return bool(line.strip()) and (_peek(line) or _Peek()).type == "session"


@checked
def is_projected(first_record: bytes | None) -> bool:
    """DSH's committed fixtures drop ``seq``/``seq0``: tell them by their first record."""
    if first_record is None:
        return False
    peek = _peek(first_record)
    return peek is not None and peek.seq is None and peek.seq0 is None


_SEED_DECODER = msgspec.json.Decoder(SeedRecord)


@checked
def seed_record_in(line: bytes, shown: str) -> SeedRecord | LogReadError | None:
    """The seed record a session file's second line holds (``None``: it holds none)."""
    peek = _peek(line)
    if peek is None or peek.type != SEED_RECORD_TYPE:
        return None
    try:
        record = _SEED_DECODER.decode(line)
    except _UNREADABLE as exc:
        return LogReadError(file=shown, line=2, event_type=SEED_RECORD_TYPE,
                            problem=f"bad seed record: {exc}")
    if seed_file_index(record.file) is None:
        return LogReadError(file=shown, line=2, event_type=SEED_RECORD_TYPE, problem=(
            f"bad seed record: {record.file!r} is not a seed file of this directory"))
    for name, value in (("size", record.size), ("events", record.events)):
        if value < 0:
            return LogReadError(file=shown, line=2, event_type=SEED_RECORD_TYPE,
                                problem=f"bad seed record: its {name} is {value}, below zero")
    return record


# --------------------------------------------------------------------------- a log read


def _basename(path: str) -> str:
    return path[path.rfind("/") + 1:]


@checked
def describe_log(format_name: LogFormat, path: str, file: str, *, header_file: str | None,
                 projected: bool, seed: SeedRecord | None) -> str:
    """The kind of input, in words, e.g. ``DSH session file, projected fixture (…)``."""
    words = _FORMAT_NAMES[format_name]
    if file != path:
        words += f" in session directory ({_basename(file)})"
    if header_file is not None:
        words += f", header from {_basename(header_file)}"
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
        """The kind of input, in words (:func:`describe_log`)."""
        return describe_log(self.format, self.path, self.file, header_file=self.header_file,
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

    def spent_after_repair(self) -> tuple[int, int]:
        """(text bytes, counted events) reading the file spends once its torn tail is cut
        off: the read counted the tail; a zstd tail's whole lines are written again, and
        counted then."""
        torn = self.torn
        if torn is None:
            return self.spent_bytes, self.spent_events
        if torn.rewrite_from is None:
            return self.spent_bytes - torn.dropped_bytes, self.spent_events
        kept = self.text[len(self.text) - (torn.frame_text_bytes - torn.dropped_bytes):]
        return (self.spent_bytes - torn.frame_text_bytes,
                self.spent_events - (counted_events(kept) if kept else 0))


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


class FileText(msgspec.Struct, frozen=True, kw_only=True):
    """A file's text, read like a log but not decoded."""

    file: str
    #: The text (decompressed when the file is zstd).
    text: bytes
    compressed: bool
    #: Bytes of the file as read.
    file_bytes: int


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


# --------------------------------------------------------------------------- text checks


@checked
def read_error_from_decode(file: str, error: DecodeError, shift: int = 0) -> LogReadError:
    """The codec's error as the reader's, its line moved by ``shift``."""
    return LogReadError(file=file, line=error.line + shift, seq=error.seq,
                        event_type=error.event_type, problem=error.problem)


@checked
def line_too_long_error(shown: str, line: int | None, limits: ReadLimits) -> LogReadError:
    return LogReadError(file=shown, line=line, problem=(
        f"a line is longer than the read limit of {size_words(limits.max_line)} "
        "(ReadLimits.max_line)"))


@unchecked
def long_line_error(text: bytes, shown: str, limits: ReadLimits,
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
            return line_too_long_error(shown, first_line + text.count(b"\n", 0, begin), limits)
    return None


@checked
def has_line_over(text: bytes, limit: int) -> bool:
    """Whether a line of ``text`` (a newline not counted) is longer than ``limit`` bytes."""
    if len(text) <= limit:
        return False
    begin = 0
    while begin < len(text):
        end = text.find(b"\n", begin)
        end = len(text) if end < 0 else end
        if end - begin > limit:
            return True
        begin = end + 1
    return False


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


def _lines_in(text: bytes) -> int:
    return text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)


@unchecked
def counted_events(text: bytes) -> int:
    """What ``text`` counts against :attr:`ReadLimits.max_events`: one per line, plus the
    members of its packed rows (a writer that must stay readable counts what it writes so)."""
    lines = _lines_in(text)
    if _ROW_MARK not in text:
        return lines
    return lines + sum(members for _, members in _packed_rows(text))


@unchecked
def event_limit_error(text: bytes, shown: str, limits: ReadLimits, spent: int,
                      first_line: int = 1) -> LogReadError | int:
    """Refuse a text that would take a read that has counted ``spent`` events past
    ``max_events`` (:func:`counted_events`); else the events it counts."""
    budget = limits.max_events - spent
    events = _lines_in(text)
    # Every member of a row after its first costs a comma: lines + commas bound the events.
    if events + text.count(b",") <= budget:
        return counted_events(text)
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
    return events


@unchecked
def utf8_error(text: bytes, shown: str, first_line: int, offset: int) -> LogReadError | None:
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


@unchecked
def torn_line(text: bytes, first_line: int) -> tuple[int, int, TornCause] | None:
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


class FrameMark(NamedTuple):
    """Where the text of an incomplete final zstd frame starts."""

    #: Offset in the text, offset of the frame in the file, line of its first text.
    text_offset: int
    file_offset: int
    line: int


@checked
def cut_short_error(shown: str, line: int) -> LogReadError:
    return LogReadError(file=shown, line=line,
                        problem="a record is cut short inside a complete zstd frame")


@unchecked
def cut_torn_tail(text: bytes, first_line: int, offset: int, *, compressed: bool,
                  frame: FrameMark | None, shown: str,
                  ) -> tuple[bytes, TornTail | None] | LogReadError:
    """The last lines of a log's file (from ``offset`` in its text, line ``first_line``)
    without their torn tail, and the tail (``frame``: where the text of an incomplete final
    zstd frame starts)."""
    if frame is not None:
        cut = torn_line(text, first_line)
        kept = text if cut is None else text[:cut[0]]
        return kept, TornTail(
            keep_bytes=frame.file_offset, line=frame.line if cut is None else cut[1],
            dropped_bytes=len(text) - len(kept), rewrite_from=-1,
            frame_text_bytes=offset + len(text) - frame.text_offset, cause="incomplete-frame")
    if compressed:
        if text and not text.endswith(b"\n"):
            return cut_short_error(shown, first_line + text.count(b"\n"))
        return text, None
    cut = torn_line(text, first_line)
    if cut is None:
        return text, None
    start, line, cause = cut
    return text[:start], TornTail(keep_bytes=offset + start, line=line,
                                  dropped_bytes=len(text) - start, cause=cause)


@checked
def closing_room(limits: ReadLimits) -> tuple[int, int]:
    """(bytes of text, events) a batch that does not end its turn must leave free under
    ``limits``, for the events that close a turn (results for its pending calls, ``step/end``,
    ``turn/end``): an eighth of each limit, at most 1 MiB and 4,096 events."""
    return min(1 << 20, limits.max_bytes // 8), min(4096, limits.max_events // 8)


# --------------------------------------------------------------------------- zstd frames


#: The magic number that starts a zstd frame (RFC 8878 §3.1.1).
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_BLOCK_MAX = 128 * 1024
_FCS_SIZES = (0, 2, 4, 8)
_DICT_ID_SIZES = (0, 1, 2, 4)


class ZstdFrame(NamedTuple):
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

    def stops(self, piece: int) -> list[int]:
        """Where to feed the decompressor up to, so that each feed regenerates at most about
        ``piece`` bytes (a group of blocks): the limits then stop a bomb within a block."""
        stops: list[int] = []
        group = 0
        for end, regenerated in zip(self.block_ends, self.block_bounds, strict=True):
            group += regenerated
            if group >= piece:
                stops.append(end)
                group = 0
        if not stops or stops[-1] != self.end:  # the checksum, or the blocks since the last
            stops.append(self.end)
        return stops


@unchecked
def zstd_frame_at(data: bytes, start: int) -> ZstdFrame | str:
    """The frame at ``start``, or why the bytes there are no zstd frame. An incomplete frame
    (cut off by the end of ``data``) carries the blocks seen so far."""
    size = len(data)
    magic = data[start:start + 4]
    incomplete = ZstdFrame(start, size + 1, False, False, None, 0, _BLOCK_MAX, ())
    if len(magic) < 4:
        return incomplete if ZSTD_MAGIC.startswith(magic) else "not a zstd frame"
    number = int.from_bytes(magic, "little")
    if 0x184D2A50 <= number <= 0x184D2A5F:  # a skippable frame: size, then ignored bytes
        if start + 8 > size:
            return incomplete
        end = start + 8 + int.from_bytes(data[start + 4:start + 8], "little")
        return ZstdFrame(start, end, end <= size, True, 0, 0, 0, ())
    if magic != ZSTD_MAGIC:
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
    return ZstdFrame(start, end, end <= size, False, content_size, known, bound,
                  tuple(block_ends), tuple(block_bounds))


class WriteRefusal(NamedTuple):
    """Why a writer must not write a batch: its loader could not read the file back."""

    #: The event named (the one at which the limit is passed; the batch's last when only the
    #: batch as a whole passes it).
    event: Event
    problem: str


_UNREADABLE_AGAIN = "the session could not be loaded again"


def _line_length(line: bytes) -> int:
    return len(line) - 1  # its newline not counted, as the reader counts


def _refusal(events: Sequence[Event], problem: str, measure: Callable[[bytes], int],
             before: int, limit: int, *, alone: bool = False) -> WriteRefusal:
    """Name the event at which ``before`` plus the ``measure`` of each event's own line passes
    ``limit`` (``alone``: the first event whose own line does)."""
    culprit, total = events[-1], before
    for event in events:
        measured = measure(encode_log((event,)))
        total = measured if alone else total + measured
        if total > limit:
            culprit = event
            break
    return WriteRefusal(culprit, problem)


@unchecked
def part_refusal(part: Sequence[Event], text: bytes, spent: tuple[int, int],
                 limits: ReadLimits) -> WriteRefusal | None:
    """Refuse the JSONL ``text`` of ``part`` when a file whose reading spends ``spent`` (text
    bytes, counted events) could not be read back with it under ``limits``."""
    if has_line_over(text, limits.max_line):
        return _refusal(part, f"a line is longer than the read limit of "
                              f"{size_words(limits.max_line)} (ReadLimits.max_line): "
                              f"{_UNREADABLE_AGAIN}", _line_length, 0, limits.max_line,
                        alone=True)
    if spent[0] + len(text) > limits.max_bytes:
        return _refusal(part, f"the session's text would pass the read limit of "
                              f"{size_words(limits.max_bytes)} (ReadLimits.max_bytes): "
                              f"{_UNREADABLE_AGAIN}", len, spent[0], limits.max_bytes)
    if spent[1] + counted_events(text) > limits.max_events:
        return _refusal(part, f"the session would pass the read limit of "
                              f"{limits.max_events:,} events (ReadLimits.max_events): "
                              f"{_UNREADABLE_AGAIN}", counted_events, spent[1],
                        limits.max_events)
    return None


@unchecked
def batch_refusal(events: Sequence[Event], before: tuple[int, int], after: tuple[int, int], *,
                  size: int, written: int, limits: ReadLimits) -> WriteRefusal | None:
    """Refuse a batch that takes a file of ``size`` bytes past the limits with the
    ``written`` bytes it adds (its reading spending ``before``, then ``after``), or, when it
    does not end its turn, leaves less than :func:`closing_room` for closing one."""
    if size + written > limits.max_bytes:
        return _refusal(events, f"the session file would pass the read limit of "
                                f"{size_words(limits.max_bytes)} (ReadLimits.max_bytes): "
                                f"{_UNREADABLE_AGAIN}", len, size, limits.max_bytes)
    if isinstance(events[-1], TurnEndEvent):
        return None
    room_bytes, room_events = closing_room(limits)
    closing = "kept free for closing a turn: it could not be closed"
    if max(after[0], size + written) > limits.max_bytes - room_bytes:
        return _refusal(events, f"it would leave less than {size_words(room_bytes)} of the "
                                f"read limit of {size_words(limits.max_bytes)} (ReadLimits."
                                f"max_bytes) {closing}", len, max(before[0], size),
                        limits.max_bytes - room_bytes)
    if after[1] > limits.max_events - room_events:
        return _refusal(events, f"it would leave less than {room_events:,} of the read limit "
                                f"of {limits.max_events:,} events (ReadLimits.max_events) "
                                f"{closing}", counted_events, before[1],
                        limits.max_events - room_events)
    return None


# --------------------------------------------------------------------------- layout (§5.1)


_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_SEPARATORS = frozenset("/\\:")
_NO_CWD_DIR = "_no-cwd"


def _code_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]


def _escape(unit: int) -> str:
    char = chr(unit)
    return char if char in _SAFE else f"~{unit:04X}"


@checked
def project_key(cwd: str) -> str:
    """DSH's project directory name for a cwd: ``--<slug>--``.

    Each run of ``/``, ``\\`` or ``:`` becomes one ``-``; ``[A-Za-z0-9._-]`` stays; every other
    UTF-16 code unit becomes ``~XXXX``; leading ``-`` are stripped; empty becomes ``root``;
    the slug is cut to 251 characters.

    >>> project_key("/home/u/proj")
    '--home-u-proj--'
    >>> project_key("/")
    '--root--'
    >>> project_key("C:\\\\Users\\\\me~x")
    '--C-Users-me~007Ex--'
    """
    parts: list[str] = []
    in_separator = False
    for unit in _code_units(cwd):
        if chr(unit) in _SEPARATORS:
            if not in_separator:
                parts.append("-")
            in_separator = True
            continue
        in_separator = False
        parts.append(_escape(unit))
    slug = "".join(parts).lstrip("-") or "root"
    return f"--{slug[:251]}--"


@checked
def project_dir_name(cwd: str | None) -> str:
    """The project directory of a session: :func:`project_key` of its cwd, or ``_no-cwd``."""
    return _NO_CWD_DIR if cwd is None else project_key(cwd)


@checked
def encode_segment(session_id: str) -> str:
    """A session id as a directory name: DSH's per-unit escaping, ``.``/``..`` escaped.

    >>> encode_segment("ea339828-1f2e-4c5d-9a8b-7c6d5e4f3a2b")
    'ea339828-1f2e-4c5d-9a8b-7c6d5e4f3a2b'
    >>> encode_segment("a/b c"), encode_segment("..")
    ('a~002Fb~0020c', '~002E~002E')

    Raises:
        ValueError: the id is empty.
    """
    if not session_id:
        raise ValueError("a session id must not be empty")
    if session_id in (".", ".."):
        return "~002E" * len(session_id)
    return "".join(_escape(unit) for unit in _code_units(session_id))


@checked
def decode_segment(segment: str) -> str:
    """The session id an :func:`encode_segment` directory name stands for.

    >>> decode_segment("a~002Fb~0020c")
    'a/b c'

    Raises:
        ValueError: ``segment`` is not such a name.
    """
    units: list[int] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "~":
            digits = segment[index + 1:index + 5]
            if len(digits) != 4 or any(d not in "0123456789ABCDEF" for d in digits):
                raise ValueError(f"bad escape in session directory name {segment!r}")
            units.append(int(digits, 16))
            index += 5
        elif char in _SAFE:
            units.append(ord(char))
            index += 1
        else:
            raise ValueError(f"unescaped {char!r} in session directory name {segment!r}")
    if not units:
        raise ValueError("an empty session directory name")
    data = b"".join(unit.to_bytes(2, "little") for unit in units)
    return data.decode("utf-16-le", "surrogatepass")


#: The longest file name a session directory may have (POSIX NAME_MAX on every common file
#: system).
_NAME_MAX = 255


@checked
def session_id_problem(session_id: str) -> str | None:
    """Why a session id cannot name a session directory and its header (``None``: it can):
    empty, holding a lone surrogate, or too long for a file name once encoded."""
    if not session_id:
        return "a session id must not be empty"
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"session id {session_id!r} holds a lone surrogate "
                f"(U+{ord(session_id[exc.start]):04X} at index {exc.start}): it cannot be "
                "written to a session file")
    length = len(encode_segment(session_id).encode())
    if length > _NAME_MAX:
        return (f"session id of {len(session_id)} characters is too long for a file name once "
                f"encoded ({length} bytes > {_NAME_MAX})")
    return None
