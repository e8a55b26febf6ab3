"""The disk store: DSH's JSONL session files (wire-format §5.1-5.5).

Layout: ``<root>/<project>/<encodeSegment(id)>/session.jsonl`` (compression ``none``) or
``session.jsonl.zstd`` (``zstd``: independent zstd frames, the header line alone in the first,
then one frame per batch). A root holds one encoding.

Writing: nothing exists until a session's first append; then the header line and every event not
yet durable (a fork child's seed included) are written, and every later batch is appended and
fsynced. A failed write is cut back off the file, so a batch is on disk whole or not at all.

Loading (mutating, like DSH's ``load``):

* a torn tail — a final line without ``\\n``, or unparsable lines with no later ``turn/end`` (for
  zstd: what a structurally incomplete last frame held) — is dropped with a
  :class:`~shell.store.SessionRepairWarning` and cut off the file;
* an unparsable line followed by a ``turn/end``, a record that parses but breaks the format (an
  unknown type without ``"ignorable": true``, a bad field, a bad checksum) or a log that breaks
  the balance rules is refused with :class:`~shell.store.SessionLoadError` naming file, line, seq;
* an open final turn is closed with the core's crash-repair closers (``interrupted``), written
  at once; then the live session appends ``session/end-seed`` (written with its next batch).
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from returns.result import Failure

from ..core import (
    Event,
    SessionHeader,
    Trace,
    TurnInterrupted,
    advance,
    close_open_turn,
    encode_header_line,
    encode_log,
    trace_log,
)
from .clock import Clock
from .logfile import read_session_file
from .session import Session
from .store import (
    SessionExistsError,
    SessionLoadError,
    SessionNotFoundError,
    SessionRepairWarning,
    _LiveSessions,
    decode_segment,
    encode_segment,
    project_dir_name,
)

if TYPE_CHECKING:
    import zstandard

__all__ = ["JsonlSessionStore", "Compression"]

Compression = Literal["none", "zstd"]
_FILE_NAMES: dict[str, str] = {"none": "session.jsonl", "zstd": "session.jsonl.zstd"}


def _zstd() -> Any:
    try:
        import zstandard  # noqa: PLC0415 - optional dependency, imported on first use
    except ImportError as exc:  # pragma: no cover - zstandard is in the test extra
        raise RuntimeError("compression='zstd' needs the zstandard package "
                           "(pip install 'turnfork[zstd]')") from exc
    return zstandard


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _JsonlSink:
    """Appends batches to one session file, creating it (header first) on the first batch."""

    def __init__(self, path: Path, compression: Compression, pack_chunks: bool,
                 exists: bool) -> None:
        self.path = path
        self.compression = compression
        self.pack_chunks = pack_chunks
        self.exists = exists
        self._compressor: zstandard.ZstdCompressor | None = None

    def _frame(self, text: bytes) -> bytes:
        if self.compression == "none":
            return text
        if self._compressor is None:
            self._compressor = _zstd().ZstdCompressor(write_checksum=True)
        return bytes(self._compressor.compress(text))

    def write(self, header: SessionHeader, events: Sequence[Event]) -> None:
        payload = self._frame(encode_log(events, pack_chunks=self.pack_chunks))
        if not self.exists:
            self._create(self._frame(encode_header_line(header) + b"\n") + payload)
            return
        with open(self.path, "ab") as handle:
            size = os.fstat(handle.fileno()).st_size
            try:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            except BaseException:
                handle.truncate(size)  # a batch is on disk whole or not at all
                raise

    def _create(self, payload: bytes) -> None:
        # The file appears whole or not at all: written and fsynced under a temporary name,
        # then linked into place (which fails if the name is taken). A crash leaves at most
        # a stray temporary file, never a session file without its header.
        directory = self.path.parent
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f".{self.path.name}.{os.getpid()}.{id(self):x}.tmp"
        try:
            with open(temporary, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fsync(handle.fileno())
            os.link(temporary, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        _fsync_dir(directory)
        self.exists = True


class JsonlSessionStore(_LiveSessions):
    """Sessions persisted as DSH JSONL files under ``root``.

    Args:
        root: the sessions directory (DSH: ``$DSH_HOME/sessions``).
        compression: ``"none"`` (default) or ``"zstd"`` (needs ``zstandard``).
        pack_chunks: write runs of three or more deltas of one batch as DSH packed rows.
        clock: default clock for the sessions it creates and loads.
    """

    def __init__(self, root: str | os.PathLike[str], *, compression: Compression = "none",
                 pack_chunks: bool = False, clock: Clock | None = None) -> None:
        super().__init__(clock)
        if compression not in _FILE_NAMES:
            raise ValueError(f"compression must be 'none' or 'zstd', not {compression!r}")
        if compression == "zstd":
            _zstd()
        self.root = Path(root)
        self.compression: Compression = compression
        self.pack_chunks = pack_chunks
        self.file_name = _FILE_NAMES[compression]

    def path_for(self, header: SessionHeader) -> Path:
        """Where the session with this header lives."""
        cwd = header.cwd if isinstance(header.cwd, str) else None
        return (self.root / project_dir_name(cwd) / encode_segment(header.id) / self.file_name)

    def _sink(self, path: Path, exists: bool) -> _JsonlSink:
        return _JsonlSink(path, self.compression, self.pack_chunks, exists)

    def create(self, header: SessionHeader, *, seed: Sequence[Event] | None = None,
               seed_trace: Trace | None = None, clock: Clock | None = None) -> Session:
        path = self.path_for(header)
        if header.id in self._live or self._find(header.id) is not None:
            raise SessionExistsError(header.id)
        return self._register(header, seed, seed_trace, clock, self._sink(path, False))

    def exists(self, session_id: str) -> bool:
        return session_id in self._live or self._find(session_id) is not None

    def _find(self, session_id: str) -> Path | None:
        """The file of a persisted session, searching every project directory."""
        if not self.root.is_dir():
            return None
        segment = encode_segment(session_id)
        found = [project / segment for project in sorted(self.root.iterdir())
                 if (project / segment).is_dir()]
        for directory in found:
            if (directory / self.file_name).is_file():
                return directory / self.file_name
        for directory in found:
            other = [name for name in _FILE_NAMES.values()
                     if name != self.file_name and (directory / name).is_file()]
            if other:
                raise SessionLoadError(
                    directory / other[0],
                    f"this store's root holds {self.compression!r} sessions "
                    f"({self.file_name}); a root holds one encoding only")
        return None

    def load(self, session_id: str, *, clock: Clock | None = None) -> Session:
        live = self._live.get(session_id)
        if live is not None:
            return live
        path = self._find(session_id)
        if path is None:
            raise SessionNotFoundError(session_id)
        session = _load(path, session_id, clock or self.clock, self._sink(path, True))
        self._live[session_id] = session
        return session

    def list(self) -> tuple[str, ...]:
        ids = dict.fromkeys(self._live)
        if self.root.is_dir():
            for project in sorted(self.root.iterdir()):
                if not project.is_dir():
                    continue
                for directory in sorted(project.iterdir()):
                    if (directory / self.file_name).is_file():
                        try:
                            ids.setdefault(decode_segment(directory.name))
                        except ValueError:
                            continue  # not a directory this layout makes
        return tuple(ids)

    def delete(self, session_id: str) -> None:
        live = self._live.pop(session_id, None)
        path = self._find(session_id)
        if path is None:
            if live is None:
                raise SessionNotFoundError(session_id)
            return
        path.unlink()
        for directory in (path.parent, path.parent.parent):
            try:
                directory.rmdir()
            except OSError:
                break  # not empty: something else lives there


# ---------------------------------------------------------------------------- loading


def _load(path: Path, session_id: str, clock: Clock, sink: _JsonlSink) -> Session:
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        read = read_session_file(path.name, dir_fd=directory, shown=str(path))
    finally:
        os.close(directory)
    if isinstance(read, Failure):
        raise SessionLoadError.from_read_error(read.failure())
    log = read.unwrap()
    header, events, torn = log.header, log.events, log.torn
    assert header is not None
    if header.id != session_id:
        raise SessionLoadError(path, f"line 1: header id {header.id!r} is not {session_id!r}")
    traced = trace_log(events)
    if isinstance(traced, Failure):
        raise SessionLoadError(path, traced.failure())
    trace = traced.unwrap()
    closers = close_open_turn(trace, events, TurnInterrupted())
    for closer in closers:
        trace = advance(trace, closer).unwrap()
    durable = len(events)
    if torn is not None:
        warnings.warn(f"{path}: dropped {torn.description}", SessionRepairWarning,
                      stacklevel=3)
        if torn.rewrite_from is not None:
            durable = torn.rewrite_from
        with open(path, "r+b") as handle:
            handle.truncate(torn.keep_bytes)
            os.fsync(handle.fileno())
    seed = events + closers
    session = Session(header, seed=seed, seed_trace=trace, clock=clock, sink=sink,
                      durable=durable)
    session.flush(upto=len(seed))  # recovered events and closers are made durable now
    return session
