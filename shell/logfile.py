"""Reading a session log from disk, whatever shape it comes in.

Input kinds, told apart by content (never by trust in the file name alone):

* a JSONL event log (records only, no header line), e.g. a seed written by ``turnfork seed``
  or a runtime dump ``X.events.jsonl`` (whose sibling ``X.header.json``, when present, is read
  as the session header);
* a DSH ``session.jsonl``: the header line ``{"type":"session",…}`` first;
* a DSH ``session.jsonl.zstd``: a concatenation of zstd frames holding the same text
  (recognised by the zstd magic number);
* a DSH session directory holding one of the two files above;
* DSH's *projected* test fixtures (records without ``seq``/``seq0``), decoded with
  ``projected=True`` and said so in :attr:`LoadedLog.description`.

Rules: every failure is a :class:`LogReadError` value naming the file, the line (1-based, in
the decompressed text for zstd) and the seq when known; nothing here raises for bad input or
prints. Judging a loaded log (valid, open, the cut) is the command line's job
(:mod:`shell.cli.assess`).
"""

from __future__ import annotations

import os
from typing import Any, Literal, TypeAlias

import msgspec
from returns.result import Failure, Result, Success

from ..core import (
    DecodeError,
    Event,
    SessionHeader,
    decode_log,
    decode_session,
)

__all__ = [
    "LogFormat",
    "LogReadError",
    "LoadedLog",
    "read_log",
    "SESSION_FILE_NAMES",
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
        return words

    def line_of(self, seq: int) -> int | None:
        """The 1-based line holding event ``seq`` (a packed row holds several), or ``None``."""
        if not 0 <= seq < len(self.events):
            return None
        lines = self.text.split(b"\n")
        first = 1 if self.format.startswith("session") else 0
        count = 0
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


# --------------------------------------------------------------------------- reading


def _os_problem(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file or directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, NotADirectoryError):
        return "a component of the path is not a directory"
    return exc.strerror or str(exc)


def _read_bytes(file: str) -> bytes | LogReadError:
    try:
        with open(file, "rb") as handle:
            return handle.read()
    except OSError as exc:
        return LogReadError(file=file, problem=f"cannot read: {_os_problem(exc)}")


def _session_file_in(directory: str) -> str | LogReadError:
    present = [name for name in SESSION_FILE_NAMES
               if os.path.isfile(os.path.join(directory, name))]
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


def _decompress(data: bytes, file: str) -> bytes | LogReadError:
    """All zstd frames of ``data``, in order; a cut or corrupt frame is an error."""
    try:
        import zstandard  # noqa: PLC0415 - optional dependency, needed for .zstd only
    except ImportError:
        return LogReadError(file=file, problem="reading zstd needs the zstandard package "
                                               "(pip install 'turnfork[zstd]')")
    context = zstandard.ZstdDecompressor()
    parts: list[bytes] = []
    offset = 0
    frame = 0
    remaining = data
    while remaining:
        frame += 1
        reader = context.decompressobj()
        try:
            parts.append(reader.decompress(remaining))
        except zstandard.ZstdError as exc:
            return LogReadError(file=file, problem=f"corrupt zstd frame {frame} at byte "
                                                   f"{offset}: {exc}")
        if not reader.eof:
            return LogReadError(file=file, problem=f"truncated zstd stream: frame {frame} "
                                                   f"(from byte {offset}) is cut off at "
                                                   f"byte {len(data)}")
        consumed = len(remaining) - len(reader.unused_data)
        offset += consumed
        remaining = reader.unused_data
    return b"".join(parts)


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


def _sibling_header(file: str) -> tuple[SessionHeader, str] | LogReadError | None:
    """``X.header.json`` next to ``X.events.jsonl`` (a runtime dump's in-memory header)."""
    if not file.endswith(_EVENTS_SUFFIX):
        return None
    header_file = file[: -len(_EVENTS_SUFFIX)] + _HEADER_SUFFIX
    if not os.path.isfile(header_file):
        return None
    data = _read_bytes(header_file)
    if isinstance(data, LogReadError):
        return data
    try:
        return msgspec.json.decode(data, type=SessionHeader), header_file
    except _UNREADABLE as exc:
        return LogReadError(file=header_file, line=1, problem=f"header: {exc}")


def _from_decode_error(file: str, error: DecodeError) -> LogReadError:
    return LogReadError(file=file, line=error.line, seq=error.seq, event_type=error.event_type,
                        problem=error.problem)


def read_log(path: str | os.PathLike[str]) -> Result[LoadedLog, LogReadError]:
    """Read a log in any supported shape (see the module docstring).

    Args:
        path: a JSONL event log, a DSH session file (plain or zstd) or a session directory.

    Returns:
        ``Success(LoadedLog)`` or ``Failure(LogReadError)`` naming file, line, seq, problem.
    """
    given = os.fspath(path)
    in_directory = os.path.isdir(given)  # False for anything it cannot stat; open() says why
    file = given
    if in_directory:
        found = _session_file_in(given)
        if isinstance(found, LogReadError):
            return Failure(found)
        file = found
    raw = _read_bytes(file)
    if isinstance(raw, LogReadError):
        return Failure(raw)
    compressed = raw.startswith(_ZSTD_MAGIC)
    if compressed:
        text = _decompress(raw, file)
        if isinstance(text, LogReadError):
            return Failure(text)
    elif file.endswith((".zstd", ".zst")):
        return Failure(LogReadError(
            file=file, problem="not a zstd stream (the file does not start with the zstd "
                               "magic number)"))
    else:
        text = raw
    return _decode(given, file, text, compressed=compressed, expect_header=in_directory)


def _decode(given: str, file: str, text: bytes, *, compressed: bool, expect_header: bool,
            ) -> Result[LoadedLog, LogReadError]:
    first_line = text.split(b"\n", 1)[0].rstrip(b"\r")
    first = _peek(first_line) if first_line.strip() else None
    has_header = first is not None and first.type == "session"
    if has_header or ((compressed or expect_header) and not text.strip()):
        projected = _is_projected(_first_record(text, skip_header=True))
        decoded = decode_session(text, projected=projected)
        if isinstance(decoded, Failure):
            return Failure(_from_decode_error(file, decoded.failure()))
        session_header, events = decoded.unwrap()
        return Success(LoadedLog(
            path=given, file=file,
            format="session-jsonl-zstd" if compressed else "session-jsonl",
            projected=projected, header=session_header, header_file=None, events=events,
            text=text))
    projected = _is_projected(_first_record(text, skip_header=False))
    decoded_log = decode_log(text, projected=projected)
    if isinstance(decoded_log, Failure):
        return Failure(_from_decode_error(file, decoded_log.failure()))
    sibling = _sibling_header(file)
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
