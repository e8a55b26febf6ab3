"""The disk store: DSH's JSONL session files (wire-format §5.1-5.5), rules in full in
docs/api-shell-runtime.md ("Stores").

``<root>/<project>/<encodeSegment(id)>/session.jsonl[.zstd]``, one encoding per root. One
writer per session: an exclusive ``flock`` on the session directory (advisory: DSH does not
take it; it dies with its process). A batch is checked against the loader's limits before it
is written, and a failed write is cut back off; a committer thread fsyncs in groups. A fork
child may link its parent's file as ``seed-N`` and name it in a ``turnfork/seed`` record.
No symbolic link inside the root is followed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import math
import os
import secrets
import stat
import threading
import time
import warnings
import weakref
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

import msgspec
from returns.result import Failure

from ..core import (
    DEFAULT_LIMITS,
    Event,
    LoadedLog,
    ReadLimits,
    SeedRecord,
    SessionHeader,
    Trace,
    TurnEndEvent,
    advance,
    batch_refusal,
    check_event,
    check_header,
    closing_room,
    counted_events,
    decode_log,
    decode_segment,
    encode_header_line,
    encode_log,
    encode_segment,
    encode_session,
    part_refusal,
    project_dir_name,
    repair_closers,
    seed_file_index,
    seed_file_name,
    session_id_problem,
    trace_log,
)
from .clock import Clock
from .logfile import read_session_file, read_session_header
from .session import Session
from .store import (
    InvalidSessionIdError,
    SessionEventError,
    SessionExistsError,
    SessionLoadError,
    SessionLockedError,
    SessionNotFoundError,
    SessionRepairWarning,
    SessionWriteError,
    _LiveSessions,
)

__all__ = ["JsonlSessionStore", "Compression", "ForkSeeds", "SessionPathError",
           "check_session_id", "session_file_bytes", "closing_room", "held_directory_lock"]

logger = logging.getLogger(__name__)

Compression = Literal["none", "zstd"]
#: How a fork child's file holds its seed: a reference to its parent's file, or a full copy.
ForkSeeds = Literal["reference", "inline"]
_FILE_NAMES: dict[str, str] = {"none": "session.jsonl", "zstd": "session.jsonl.zstd"}
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMPORARY_PREFIX = ".session."


def _zstd() -> Any:
    try:
        import zstandard  # noqa: PLC0415 - optional dependency, imported on first use
    except ImportError as exc:  # pragma: no cover - zstandard is in the test extra
        raise RuntimeError("compression='zstd' needs the zstandard package "
                           "(pip install 'turnfork[zstd]')") from exc
    return zstandard


def check_session_id(session_id: str) -> None:
    """Raise :class:`InvalidSessionIdError` for an id the disk store cannot persist."""
    problem = session_id_problem(session_id)
    if problem is not None:
        raise InvalidSessionIdError(problem)


def session_file_bytes(header: SessionHeader, events: Sequence[Event], *,
                       compression: Compression = "none", pack_chunks: bool = False) -> bytes:
    """One self-contained session file, as :meth:`JsonlSessionStore.export` writes it (for
    ``zstd``: the header line in a frame of its own, then the rest in one)."""
    text = encode_session(header, events, pack_chunks=pack_chunks)
    if compression != "zstd":
        return text
    compressor = _zstd().ZstdCompressor(write_checksum=True)
    header_end = text.index(b"\n") + 1
    return bytes(compressor.compress(text[:header_end]) + compressor.compress(text[header_end:]))


class _Spent(NamedTuple):
    """What reading a file back spends against ``max_bytes`` and ``max_events`` (its seed's
    files included)."""

    text_bytes: int
    events: int

    def plus(self, text: bytes) -> _Spent:
        return _Spent(self.text_bytes + len(text), self.events + counted_events(text))


class _Cut(NamedTuple):
    """Just after the last ``turn/end`` in a file: a child's seed ends there."""

    events: int
    size: int
    spent: _Spent  # reading through the cut (what a child's seed costs its reader)


class SessionPathError(OSError):
    """A path of the store it cannot use (a symbolic link inside its root, not a directory,
    refused by the system); the message names the path and the cause."""

    def __init__(self, path: Path, cause: OSError | None = None) -> None:
        if cause is None or cause.errno in (errno.ELOOP, errno.ENOTDIR):
            words = ("is a symbolic link or not a directory (the session store never follows "
                     "links out of its root)")
            number = errno.ELOOP
        else:
            words = f"cannot be used: {(cause.strerror or str(cause)).lower()}"
            number = cause.errno or errno.EIO
        super().__init__(number, f"{path} {words}")
        self.path = path

    def __str__(self) -> str:
        return str(self.strerror)


#: Why a directory of the layout is passed over when found: a link, not a directory, gone
#: meanwhile, or not this user's. Any other failure (out of descriptors, say) is raised: the
#: session there is not absent.
_NOT_THE_STORES = frozenset({errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.EACCES,
                             errno.EPERM})


def _subdirectories(fd: int, shown: Path) -> list[str]:
    """The names of the directories in the open directory ``fd`` (``shown`` in errors)."""
    try:
        with os.scandir(fd) as entries:
            return sorted(entry.name for entry in entries
                          if entry.is_dir(follow_symlinks=False))
    except OSError as exc:
        raise SessionPathError(shown, exc) from exc


def _make_dir(parent: int, name: str, shown: Path, created: list[int]) -> None:
    """Make a directory of the layout unless it exists; ``created`` gets its parent (whose
    entries the first commit fsyncs)."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent)
        created.append(os.dup(parent))
    except FileExistsError:
        pass
    except OSError as exc:
        raise SessionPathError(shown, exc) from exc


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ---------------------------------------------------------------------------- group commit


class _Committer:
    """One thread that makes written files durable: each dirty file once per window, or at
    once when asked. It exits when idle and starts again on the next request."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Nothing due and no thread (so in a child made by ``fork()``: the thread stayed with
        the parent)."""
        self._condition = threading.Condition()
        self._due: dict[_SessionFile, float] = {}
        self._earliest = math.inf
        self._thread: threading.Thread | None = None

    def schedule(self, writer: _SessionFile, window: float) -> None:
        if window > 0 and writer in self._due:  # a commit is due already: it will cover this
            return
        deadline = time.monotonic() + window
        with self._condition:
            known = self._due.get(writer)
            if known is not None and known <= deadline:
                return
            self._due[writer] = deadline
            if deadline < self._earliest:  # wake the thread only when it must wake sooner
                self._earliest = deadline
                self._condition.notify()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="turnfork-committer",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._condition:
                while (delay := self._earliest - time.monotonic()) > 0:
                    if self._due:
                        self._condition.wait(delay)
                        continue
                    self._condition.wait(1.0)
                    if not self._due:
                        self._thread = None
                        return
                now = time.monotonic()
                ready = [writer for writer, due in self._due.items() if due <= now]
                for writer in ready:
                    del self._due[writer]
                self._earliest = min(self._due.values(), default=math.inf)
            for writer in ready:
                writer.commit(quiet=True)


_COMMITTER = _Committer()
os.register_at_fork(after_in_child=_COMMITTER.forget)

#: The session files this process writes, so that a process forked from it (a worker pool)
#: gives up its copies: their writer locks stay with this process alone.
_WRITERS: weakref.WeakSet[_SessionFile] = weakref.WeakSet()


def _disown_writers() -> None:
    for writer in list(_WRITERS):
        writer.disown()
    _WRITERS.clear()


os.register_at_fork(after_in_child=_disown_writers)


# ---------------------------------------------------------------------------- one directory


@dataclass
class _Directory:
    """A session directory, open and locked by this process (the writer's lock)."""

    fd: int
    path: Path
    #: Directories whose entries this writer created, to fsync at the first commit.
    parents: list[int] = field(default_factory=list)

    def has_file(self, name: str) -> bool:
        """Whether it holds an entry of that name, whatever it is (reading says what)."""
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def remove_files(self) -> None:
        """Remove what the store keeps there (anything else stays, and the directory too):
        the session file first, so that a removal the disk refuses leaves it whole."""
        with os.scandir(self.fd) as entries:
            names = [entry.name for entry in entries]
        ours = [name for name in names if name in _FILE_NAMES.values()
                or name.startswith(("seed-", _TEMPORARY_PREFIX))]
        for name in sorted(ours, key=lambda name: name not in _FILE_NAMES.values()):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=self.fd)

    def close(self) -> None:
        """Unlock (closing the descriptors it holds)."""
        for parent in self.parents:
            _close_quietly(parent)
        self.parents.clear()
        _close_quietly(self.fd)
        self.fd = -1  # its number may be reused: never closed again from here


#: How long a busy writer lock is retried before it counts as another writer's: a child
#: process being spawned holds every descriptor of its parent until it execs, the lock of a
#: session just released included.
_LOCK_PATIENCE = 0.25


def _lock(fd: int, shown: Path) -> bool:
    """Take the writer lock on an open session directory, or say it is held (a file system
    that takes no locks: :class:`SessionPathError`)."""
    deadline = time.monotonic() + _LOCK_PATIENCE
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        except OSError as exc:
            raise SessionPathError(shown, exc) from exc


@contextlib.contextmanager
def held_directory_lock(directory: str | os.PathLike[str]) -> Iterator[bool]:
    """A session directory's writer lock for a writer that is not a store (``turnfork
    export``): whether it is held here (``False``: another writer holds it)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield _lock(fd, Path(directory))
    finally:
        _close_quietly(fd)


# ---------------------------------------------------------------------------- the writer


@dataclass
class _SeedPlan:
    """A fork child's seed as a reference to its parent's file (see the module rules)."""

    record: SeedRecord
    spent: _Spent  # reading the parent's file through the cut, its seeds included
    #: The parent's session directory, held by the child (the parent may be released
    #: meanwhile) until its first write links the files.
    source: int
    parent_chain: int  # seed files in the parent's directory (linked into the child's too)
    links: tuple[str, ...] = ()  # linked into the child's directory, fsynced at its commit

    def link(self, directory: _Directory, parent_name: str, compressed: bool) -> bool:
        """Link the parent's file and its seed files into ``directory``; False (nothing left
        behind) when the file system will not."""
        made: list[str] = []
        try:
            for index in range(self.parent_chain):
                name = seed_file_name(index, compressed=compressed)
                os.link(name, name, src_dir_fd=self.source, dst_dir_fd=directory.fd,
                        follow_symlinks=False)
                made.append(name)
            os.link(parent_name, self.record.file, src_dir_fd=self.source,
                    dst_dir_fd=directory.fd, follow_symlinks=False)
            made.append(self.record.file)
        except OSError:
            for name in made:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=directory.fd)
            return False
        finally:
            self.close()
        self.links = tuple(made)
        return True

    def close(self) -> None:
        if self.source >= 0:
            _close_quietly(self.source)
            self.source = -1


class _SessionFile:
    """One session's file: written at once, committed in groups (a :class:`SessionSink`)."""

    def __init__(self, store: JsonlSessionStore, directory: _Directory | None,
                 session_id: str, *, seed: _SeedPlan | None = None) -> None:
        self.store = store
        self.directory = directory  # locked; None until the first write reserves it
        self.session_id = session_id
        self.name = store.file_name
        self.seed = seed
        self.chain = 0  # seed files this directory holds (seed-0 … seed-{chain-1})
        self.fd: int | None = None
        self.size = 0  # bytes of the file, all written by this writer or loaded
        self.written = 0  # events in the file
        self.durable = 0
        self.cut: _Cut | None = None  # just after the file's last turn/end: a child's seed
        self.spent = _Spent(0, 0)
        self.failure: OSError | None = None
        self.closed = False
        self._first_commit = True
        self._lock = threading.Lock()
        self._commit_lock = threading.Lock()
        #: Awaiters of :meth:`wait_durable`: the length each waits for (resolved from any thread).
        self._waiters: list[tuple[int, Future[None]]] = []
        self._compressor: Any = None
        self.forked = False  # a copy in a process forked from the writer's
        _WRITERS.add(self)

    # -- the sink protocol

    @property
    def durable_length(self) -> int:
        return self.durable

    def write(self, header: SessionHeader, events: Sequence[Event]) -> None:
        if self.forked:
            raise self._forked()
        if self.closed:
            raise SessionWriteError(self.session_id, "the session was released; nothing was "
                                                     "written")
        if self.failure is not None:
            raise SessionWriteError(self.session_id, "an earlier write or commit (fsync) "
                                    "failed, so what is on disk is not known; release and "
                                    "load the session again", self.failure)
        if events[0].seq != self.written and self.fd is not None:
            raise SessionWriteError(self.session_id, f"batch starts at seq {events[0].seq}, "
                                    f"the file holds {self.written} events")
        if self.fd is None:
            self._create(header, events)
        else:
            self._append(events)
        _COMMITTER.schedule(self, self.store.commit_window)

    def commit(self, *, quiet: bool = False) -> None:
        """fsync what is written (and, the first time, the directory entries)."""
        if self.forked:  # before the locks: a thread of the writer's process may hold them
            if quiet:
                return
            raise self._forked()
        with self._commit_lock:
            with self._lock:
                if self.fd is None or self.closed or self.durable >= self.written:
                    if self.failure is not None and not quiet:
                        raise self._failed("an earlier write or commit (fsync) failed")
                    return
                target, first = self.written, self._first_commit
                fd = os.dup(self.fd)
                directory = self.directory
                assert directory is not None
            try:
                if first:
                    for link in () if self.seed is None else self.seed.links:
                        link_fd = os.open(link, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                          dir_fd=directory.fd)
                        try:
                            os.fsync(link_fd)
                        finally:
                            os.close(link_fd)
                    os.fsync(fd)
                    for entries in (directory.fd, *directory.parents):
                        os.fsync(entries)
                else:
                    os.fdatasync(fd)
            except OSError as exc:
                with self._lock:
                    self.failure = exc
                    waiters, self._waiters = self._waiters, []
                error = self._failed("a commit (fsync) failed; events from seq "
                                     f"{self.durable} may not be durable", exc)
                _settle(waiters, error)
                if not quiet:
                    raise error from exc
                return
            finally:
                os.close(fd)
            with self._lock:
                self.durable = max(self.durable, target)
                self._first_commit = False
                ready = [w for w in self._waiters if w[0] <= self.durable]
                self._waiters = [w for w in self._waiters if w[0] > self.durable]
            if first:
                for parent in directory.parents:
                    _close_quietly(parent)
                directory.parents.clear()
            _settle(ready, None)

    async def wait_durable(self, length: int) -> None:
        import asyncio  # noqa: PLC0415 - only the async path needs it

        if self.forked:
            raise self._forked()
        future: Future[None] = Future()
        with self._lock:
            if self.failure is not None:
                raise self._failed("an earlier write or commit (fsync) failed", self.failure)
            if self.durable >= length:
                return
            if self.closed:
                raise SessionWriteError(self.session_id, "the session was released")
            self._waiters.append((length, future))
        _COMMITTER.schedule(self, 0.0)
        await asyncio.wrap_future(future)

    # -- writing

    def _failed(self, what: str, cause: OSError | None = None) -> SessionWriteError:
        return SessionWriteError(self.session_id, what, cause)

    def _forked(self) -> SessionWriteError:
        return self._failed("this process was forked from the one that writes the session, "
                            "which holds its writer lock; nothing was written")

    def _encode(self, events: Sequence[Event], spent: _Spent, size: int,
                ) -> tuple[bytes, _Cut | None, _Spent]:
        """The bytes of ``events`` (parts split after each ``turn/end``, a zstd frame each)
        for a file of ``size`` bytes that spends ``spent``; the cut after their last
        ``turn/end`` (in the file) and what the file spends then. Refused when the loader
        could not read it back."""
        payload: list[bytes] = []
        cut: _Cut | None = None
        written, start, before = 0, 0, spent
        limits = self.store.limits
        for index, event in enumerate(events):
            if isinstance(event, TurnEndEvent) or index == len(events) - 1:
                part = events[start:index + 1]
                text = self._checked(part)
                refused = part_refusal(part, text, spent, limits)
                if refused is not None:
                    raise self._event_error(refused.event, refused.problem)
                spent = spent.plus(text)
                data = self._frame(text)
                payload.append(data)
                written += len(data)
                start = index + 1
                if isinstance(event, TurnEndEvent):
                    cut = _Cut(event.seq + 1, size + written, spent)
        refused = batch_refusal(events, before, spent, size=size, written=written,
                                limits=limits)
        if refused is not None:
            raise self._event_error(refused.event, refused.problem)
        return b"".join(payload), cut, spent

    def _event_error(self, event: Event, problem: str) -> SessionEventError:
        kind = event.__struct_config__.tag
        return SessionEventError(self.session_id, event.seq,
                                 kind if isinstance(kind, str) else None, problem)

    def _checked(self, events: Sequence[Event]) -> bytes:
        """The JSONL of ``events``, read back through the typed decoder first."""
        try:
            text = encode_log(events, pack_chunks=self.store.pack_chunks)
        except (TypeError, ValueError, OverflowError, NotImplementedError) as exc:
            raise self._refused(events, f"cannot be written: {exc}") from None
        decoded = decode_log(text)
        if isinstance(decoded, Failure):
            error = decoded.failure()
            raise SessionEventError(self.session_id, error.seq, error.event_type,
                                    error.problem)
        if len(decoded.unwrap()) != len(events):
            raise self._refused(events, "the batch does not read back as it was written")
        return text

    def _refused(self, events: Sequence[Event], problem: str) -> SessionEventError:
        """The error for the first of ``events`` the codec will not write (else ``problem``)."""
        for event in events:
            checked = check_event(event)
            if isinstance(checked, Failure):
                error = checked.failure()
                return SessionEventError(self.session_id, error.seq, error.event_type,
                                         error.problem)
            if checked.unwrap() != event:
                return self._event_error(event, "does not read back as it was written")
        return SessionEventError(self.session_id, None, None, problem)

    def _frame(self, text: bytes) -> bytes:
        if self.store.compression == "none":
            return text
        if self._compressor is None:
            self._compressor = _zstd().ZstdCompressor(write_checksum=True)
        return bytes(self._compressor.compress(text))

    def _append(self, events: Sequence[Event]) -> None:
        payload, cut, spent = self._encode(events, self.spent, self.size)
        fd = self.fd
        assert fd is not None
        with self._lock:
            try:
                _write_all(fd, payload)
            except OSError as exc:
                raise self._rolled_back(fd, exc, len(payload)) from exc
            if cut is not None:
                self.cut = cut
            self.size += len(payload)
            self.spent = spent
            self.written = events[-1].seq + 1

    def _rolled_back(self, fd: int, exc: OSError, attempted: int) -> SessionWriteError:
        """Cut a failed write back off, only when the file holds what this writer wrote and
        at most ``attempted`` bytes more (else another writer appended: the session stops)."""
        try:
            found = os.fstat(fd).st_size
            if not self.size <= found <= self.size + attempted:
                self.failure = OSError(errno.EIO, "the file changed under its writer")
                return self._failed(
                    f"the batch was not written, and the file is {found} bytes where this "
                    f"writer wrote {self.size}: another process writes to it", exc)
            os.ftruncate(fd, self.size)  # only the bytes of this batch
        except OSError as cut_failed:
            self.failure = cut_failed
            return self._failed("the batch was not written, and its partial write could not "
                                "be cut off", cut_failed)
        return self._failed("the batch was not written (the file is as it was)", exc)

    def _create(self, header: SessionHeader, events: Sequence[Event]) -> None:
        """Reserve the directory, then make the file appear whole: written under a temporary
        name, linked into place (a fork child's seed as a record, when it can be linked)."""
        directory = self.store._reserve(header)
        try:
            self._create_in(directory, header, events)
        except BaseException:
            with contextlib.suppress(SessionWriteError):  # the first failure is the one told
                self.store._abandon(directory, header.id)
            raise
        self.directory = directory

    def _create_in(self, directory: _Directory, header: SessionHeader,
                   events: Sequence[Event]) -> None:
        if self.seed is not None and not self.seed.link(
                directory, self.name, self.store.compression == "zstd"):
            self.seed = None  # the file system will not link: the seed is written in full
        header_line = encode_header_line(header) + b"\n"
        head = self._frame(header_line)
        spent = _Spent(0, 0).plus(header_line)
        own: Sequence[Event] = events
        cut: _Cut | None = None
        if self.seed is not None:
            record = self.seed.record
            record_line = msgspec.json.encode(record) + b"\n"
            head += self._frame(record_line)
            spent = self.seed.spent.plus(header_line + record_line)
            own = events[record.events:]
            cut = _Cut(record.events, len(head), spent)  # a seed ends with its turn/end
        body = b""
        if own:
            body, body_cut, spent = self._encode(own, spent, len(head))
            cut = cut if body_cut is None else body_cut
        payload = head + body
        temporary = f"{_TEMPORARY_PREFIX}{os.getpid()}.{secrets.token_hex(4)}.tmp"
        flags = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW
                 | os.O_CLOEXEC)
        try:
            fd = os.open(temporary, flags, 0o600, dir_fd=directory.fd)
        except OSError as exc:
            raise self._failed("cannot create the session file", exc) from exc
        try:
            try:
                _write_all(fd, payload)
                os.link(temporary, self.name, src_dir_fd=directory.fd,
                        dst_dir_fd=directory.fd, follow_symlinks=False)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=directory.fd)
        except OSError as exc:
            os.close(fd)
            if exc.errno == errno.EEXIST:
                raise self._failed(f"{self.name} appeared in {directory.path} meanwhile (a "
                                   "writer that does not take the lock?); nothing was "
                                   "written", exc) from exc
            raise self._failed("the session file was not created", exc) from exc
        with self._lock:
            self.fd, self.size, self.written, self.cut = fd, len(payload), len(events), cut
            self.spent = spent
            self.chain = 0 if self.seed is None else len(self.seed.links)

    # -- opening an existing file (load)

    def adopt(self, log: LoadedLog, size: int, written: int) -> None:
        """Take over the loaded file: append to it from ``size`` bytes, ``written`` events."""
        assert self.directory is not None
        try:
            fd = os.open(self.name, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=self.directory.fd)
        except OSError as exc:
            raise SessionLoadError(self.directory.path / self.name,
                                   f"cannot open for writing: {exc.strerror}") from exc
        try:
            if os.fstat(fd).st_size != size:
                os.ftruncate(fd, size)
            os.fsync(fd)  # what a crashed writer left may have been written, not committed
        except OSError as exc:
            os.close(fd)
            raise SessionLoadError(self.directory.path / self.name,
                                   f"cannot repair: {exc.strerror}") from exc
        self.fd, self.size, self.written, self.durable = fd, size, written, written
        self._first_commit = False
        if log.seed is not None:
            self.chain = (seed_file_index(log.seed.file) or 0) + 1
        self.spent = _Spent(*log.spent_after_repair())
        events = log.events
        if events and isinstance(events[-1], TurnEndEvent) and written == len(events):
            self.cut = _Cut(len(events), size, self.spent)

    # -- the end

    def disown(self) -> None:
        """In a forked process: close this copy's descriptors without committing or
        unlocking (the lock is shared with the writer's process, which keeps it), and refuse
        every write from now on."""
        closed, self.forked, self.closed = self.closed, True, True
        self._waiters = []
        if closed:
            return  # released: its descriptors are closed (their numbers may be in use)
        if self.fd is not None:
            _close_quietly(self.fd)
            self.fd = None
        if self.directory is not None:
            self.directory.close()  # closing a shared lock's descriptor does not unlock it
        if self.seed is not None:
            self.seed.close()

    def close(self) -> None:
        """Commit and close the file (the directory lock stays with the store)."""
        if self.closed:
            return
        with contextlib.suppress(OSError):
            self.commit()
        with self._lock:
            self.closed = True
            fd, self.fd = self.fd, None
            waiters, self._waiters = self._waiters, []
        if fd is not None:
            _close_quietly(fd)
        if self.seed is not None:
            self.seed.close()
        _settle(waiters, self._failed("the session was released before its events were "
                                      "durable", self.failure))


def _check_header_id(header: SessionHeader, session_id: str, shown: Path) -> SessionHeader:
    """The header of the session file in ``session_id``'s directory, if it names that id."""
    if header.id != session_id:
        raise SessionLoadError(shown, f"line 1: header id {header.id!r} is not {session_id!r}")
    return header


def _settle(waiters: Sequence[tuple[int, Future[None]]], error: BaseException | None) -> None:
    for _, future in waiters:
        with contextlib.suppress(InvalidStateError):  # its awaiter was cancelled
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)


# ---------------------------------------------------------------------------- the store


class JsonlSessionStore(_LiveSessions):
    """Sessions persisted as DSH JSONL files under ``root`` (DSH: ``$DSH_HOME/sessions``);
    the options are described in docs/api-shell-runtime.md ("Stores")."""

    def __init__(self, root: str | os.PathLike[str], *, compression: Compression = "none",
                 pack_chunks: bool = False, clock: Clock | None = None,
                 commit_window: float = 0.005, fork_seeds: ForkSeeds = "reference",
                 limits: ReadLimits = DEFAULT_LIMITS) -> None:
        super().__init__(clock)
        if compression not in _FILE_NAMES:
            raise ValueError(f"compression must be 'none' or 'zstd', not {compression!r}")
        if fork_seeds not in ("reference", "inline"):
            raise ValueError(f"fork_seeds must be 'reference' or 'inline', not {fork_seeds!r}")
        if commit_window < 0:
            raise ValueError("commit_window must not be negative")
        if compression == "zstd":
            _zstd()
        self.root = Path(root)
        self.compression: Compression = compression
        self.pack_chunks = pack_chunks
        self.file_name = _FILE_NAMES[compression]
        self.commit_window = commit_window
        self.fork_seeds: ForkSeeds = fork_seeds
        self.limits = limits
        self._writers: dict[str, _SessionFile] = {}

    def path_for(self, header: SessionHeader) -> Path:
        cwd = header.cwd if isinstance(header.cwd, str) else None
        return self.root / project_dir_name(cwd) / encode_segment(header.id) / self.file_name

    # -- directories

    @contextlib.contextmanager
    def _root(self, *, create: bool) -> Iterator[int | None]:
        """The root, open (``None``: it does not exist and ``create`` is false)."""
        try:
            if create:
                self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            if create:
                raise
            yield None
            return
        except OSError as exc:
            raise SessionPathError(self.root, exc) from exc
        try:
            yield fd
        finally:
            os.close(fd)

    def _open_dir(self, parent: int, name: str, shown: Path) -> int:
        """A directory of the layout, open, never through a symbolic link (else
        :class:`SessionPathError`)."""
        try:
            return os.open(name, _DIRECTORY, dir_fd=parent)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise SessionPathError(shown, exc) from exc

    def _locate(self, session_id: str) -> list[str]:
        """Project directories holding a directory for this session (no link followed)."""
        segment = encode_segment(session_id)
        found: list[str] = []
        with self._root(create=False) as root:
            if root is None:
                return found
            for project in _subdirectories(root, self.root):
                try:
                    info = os.stat(f"{project}/{segment}", dir_fd=root,
                                   follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    found.append(project)
        return found

    def _open_session_dir(self, project: str, session_id: str, *, locked: bool = False,
                          created: list[int] | None = None) -> _Directory:
        """The session's directory in ``project``, open (``locked``: with its writer lock;
        ``created``: made where missing, the parents of what was made gathered there)."""
        shown, segment = self.root / project, encode_segment(session_id)
        with self._root(create=created is not None) as root:
            if root is None:
                raise FileNotFoundError(errno.ENOENT, "no such directory", str(self.root))
            if created is not None:
                _make_dir(root, project, shown, created)
            project_fd = self._open_dir(root, project, shown)
        try:
            if created is not None:
                _make_dir(project_fd, segment, shown / segment, created)
            directory = _Directory(self._open_dir(project_fd, segment, shown / segment),
                                   shown / segment)
        finally:
            os.close(project_fd)
        try:
            if locked and not _lock(directory.fd, directory.path):
                raise SessionLockedError(session_id, directory.path)
        except BaseException:
            directory.close()
            raise
        return directory

    @contextlib.contextmanager
    def _persisted(self, session_id: str) -> Iterator[_Directory]:
        """The first of the session's directories holding this store's file, open (none:
        :class:`SessionNotFoundError`)."""
        for project in self._locate(session_id):
            directory = self._open_session_dir(project, session_id)
            try:
                if directory.has_file(self.file_name):
                    yield directory
                    return
            finally:
                directory.close()
        raise SessionNotFoundError(session_id)

    def _openable(self, session_id: str) -> Generator[tuple[str, _Directory], None, None]:
        """The session's directories that open (others are passed over), each closed after."""
        for project in self._locate(session_id):
            try:
                directory = self._open_session_dir(project, session_id)
            except OSError as exc:
                if exc.errno in _NOT_THE_STORES:
                    continue
                raise
            try:
                yield project, directory
            finally:
                directory.close()

    def _find(self, session_id: str) -> str | None:
        """The project directory of the persisted session, if any."""
        with contextlib.closing(self._openable(session_id)) as directories:
            for project, directory in directories:
                if directory.has_file(self.file_name):
                    return project
                other = [name for name in _FILE_NAMES.values()
                         if name != self.file_name and directory.has_file(name)]
                if other:
                    raise SessionLoadError(
                        directory.path / other[0],
                        f"this store's root holds {self.compression!r} sessions "
                        f"({self.file_name}); a root holds one encoding only")
        return None

    def _reserve(self, header: SessionHeader) -> _Directory:
        """Create and lock the session's directory (the loser of a race: exists)."""
        cwd = header.cwd if isinstance(header.cwd, str) else None
        created: list[int] = []
        try:
            directory = self._open_session_dir(project_dir_name(cwd), header.id,
                                               created=created)
        except BaseException:
            for parent in created:
                _close_quietly(parent)
            raise
        directory.parents = created
        # Held by another writer, or persisted (created before, or just now).
        try:
            if not _lock(directory.fd, directory.path) or directory.has_file(self.file_name):
                raise SessionExistsError(header.id)
        except BaseException:
            directory.close()
            raise
        return directory

    def _abandon(self, directory: _Directory, session_id: str, *,
                 with_project: bool = False) -> None:
        """Remove a session directory's files, the directory (when empty) and its lock; with
        ``with_project``, its project directory too when empty. The lock is dropped whatever
        happens; files the disk will not remove raise :class:`SessionWriteError`."""
        try:
            try:
                directory.remove_files()
            except OSError as exc:
                where = directory.path / exc.filename if isinstance(exc.filename, str) \
                    else directory.path
                raise SessionWriteError(session_id, f"{where} could not be removed", exc) from exc
            project = directory.path.parent.name
            with self._root(create=False) as root, contextlib.suppress(OSError):
                if root is not None:
                    project_fd = os.open(project, _DIRECTORY, dir_fd=root)
                    try:
                        os.rmdir(directory.path.name, dir_fd=project_fd)
                    finally:
                        os.close(project_fd)
                    if with_project:
                        os.rmdir(project, dir_fd=root)
        finally:
            directory.close()

    # -- the protocol

    def create(self, header: SessionHeader, *, seed: Sequence[Event] | None = None,
               seed_trace: Trace | None = None, clock: Clock | None = None) -> Session:
        """Create and register a live session; its first append reserves the directory and
        takes the writer lock (another process there first: :class:`SessionExistsError`)."""
        check_session_id(header.id)
        checked = check_header(header)
        if isinstance(checked, Failure):
            raise SessionEventError(header.id, None, None,
                                    f"the session header: {checked.failure().problem}")
        if header.id in self._live or self._find(header.id) is not None:
            raise SessionExistsError(header.id)
        writer = _SessionFile(self, None, header.id,
                              seed=self._seed_plan(header, seed, seed_trace))
        try:
            session = self._register(header, seed, seed_trace, clock, writer)
        except BaseException:
            writer.close()
            raise
        self._writers[header.id] = writer
        return session

    def _seed_plan(self, header: SessionHeader, seed: Sequence[Event] | None,
                   seed_trace: Trace | None) -> _SeedPlan | None:
        """A reference to the parent's file for a seed that is its completed prefix."""
        if self.fork_seeds != "reference" or not seed or seed_trace is None:
            return None
        parent_id = header.parent_session
        parent = self._live.get(parent_id) if isinstance(parent_id, str) else None
        writer = self._writers.get(parent_id) if isinstance(parent_id, str) else None
        if (parent is None or writer is None or writer.fd is None or writer.failure
                or writer.directory is None):
            return None
        if writer.cut is None or writer.cut.events != len(seed):
            return None
        if parent.completed_prefix()[1] is not seed_trace:
            return None  # the same length, but not provably the parent's own prefix
        name = seed_file_name(writer.chain, compressed=self.compression == "zstd")
        record = SeedRecord(file=name, size=writer.cut.size, events=len(seed),
                            last_time=seed[-1].time)
        try:  # opened anew, not dup'd: a duplicate would share the parent's writer lock and
            # hold it after the parent is released
            source = os.open(".", _DIRECTORY, dir_fd=writer.directory.fd)
        except OSError:
            return None  # the seed is written in full
        return _SeedPlan(record=record, spent=writer.cut.spent, source=source,
                         parent_chain=writer.chain)

    def exists(self, session_id: str) -> bool:
        if session_id in self._live:
            return True
        with contextlib.closing(self._openable(session_id)) as directories:
            # Persisted (in either encoding), or reserved: its writer holds the lock.
            return any(any(directory.has_file(name) for name in _FILE_NAMES.values())
                       or not _lock(directory.fd, directory.path)
                       for _, directory in directories)

    def load(self, session_id: str, *, clock: Clock | None = None) -> Session:
        """The live session, or the persisted one, locked for writing and repaired."""
        live = self._live.get(session_id)
        if live is not None:
            return live
        project = self._find(session_id)
        if project is None:
            raise SessionNotFoundError(session_id)
        directory = self._open_session_dir(project, session_id, locked=True)
        writer = _SessionFile(self, directory, session_id)
        try:
            session = self._repair(writer, session_id, clock or self.clock)
        except BaseException:
            writer.close()  # the file it opened for writing, if it got that far
            directory.close()
            raise
        self._live[session_id] = session
        self._writers[session_id] = writer
        return session

    def _read(self, directory: _Directory, session_id: str) -> LoadedLog:
        shown = directory.path / self.file_name
        read = read_session_file(self.file_name, dir_fd=directory.fd, shown=str(shown),
                                 limits=self.limits)
        if isinstance(read, Failure):
            raise SessionLoadError.from_read_error(read.failure())
        log = read.unwrap()
        assert log.header is not None
        _check_header_id(log.header, session_id, shown)
        return log

    def _repair(self, writer: _SessionFile, session_id: str, clock: Clock) -> Session:
        directory = writer.directory
        assert directory is not None
        log = self._read(directory, session_id)
        assert log.header is not None
        shown = directory.path / self.file_name
        events, torn = log.events, log.torn
        traced = trace_log(events)
        if isinstance(traced, Failure):
            broken = traced.failure()
            raise SessionLoadError.from_violation(shown, broken, log.line_of(broken.seq))
        trace = traced.unwrap()
        closers = repair_closers(events)
        open_turn = trace.open_turn
        for closer in closers:
            trace = advance(trace, closer).unwrap()
        written, size = len(events), log.file_bytes
        if torn is not None:
            size = torn.keep_bytes
            if torn.rewrite_from is not None:
                written = torn.rewrite_from
        writer.adopt(log, size, written)

        # Each repair is told once it is done: a load that fails before has changed nothing.
        def tell_dropped() -> None:
            if torn is not None:
                logger.warning("%s: dropped %s", shown, torn.description)
                warnings.warn(f"{shown}: dropped {torn.description}", SessionRepairWarning,
                              stacklevel=5)

        seed = events + closers
        try:
            session = Session(log.header, seed=seed, seed_trace=trace, clock=clock,
                              sink=writer, written=written)
            session.flush(upto=len(seed))  # recovered events and closers made durable now
        except BaseException:
            tell_dropped()  # the tail is cut off the file: it is gone whatever follows
            raise
        if closers:
            logger.warning("%s: closed turn %s, left open by a crash, as interrupted", shown,
                           open_turn)
        tell_dropped()
        return session

    def inspect(self, session_id: str) -> LoadedLog:
        """A persisted (or live) session as its file holds it, read without the lock and
        never written: a torn tail left out and described in ``torn``, an open turn open."""
        with self._persisted(session_id) as directory:
            return self._read(directory, session_id)

    def header(self, session_id: str) -> SessionHeader:
        """A live session's header, or a persisted one's header line, read alone."""
        live = self._live.get(session_id)
        if live is not None:
            return live.header
        with self._persisted(session_id) as directory:
            shown = directory.path / self.file_name
            read = read_session_header(self.file_name, dir_fd=directory.fd, shown=str(shown))
        if isinstance(read, Failure):
            raise SessionLoadError.from_read_error(read.failure())
        return _check_header_id(read.unwrap(), session_id, shown)

    def export(self, session_id: str, destination: str | os.PathLike[str], *,
               compression: Compression | None = None) -> Path:
        """Write what :meth:`inspect` reads as one self-contained DSH session file (at
        ``destination``, or in it when a directory), atomically; returns its path. Never over
        what is not a regular file, nor in a directory whose writer lock is held (a live
        session's: :class:`SessionPathError`)."""
        log = self.inspect(session_id)
        assert log.header is not None
        encoding = self.compression if compression is None else compression
        target = Path(destination)
        if target.is_dir():
            target = target / _FILE_NAMES[encoding]
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG(os.stat(target).st_mode):
                raise SessionPathError(target, OSError(errno.EEXIST, (
                    "it is not a regular file, and export would replace it")))
        data = session_file_bytes(log.header, log.events, compression=encoding,
                                  pack_chunks=self.pack_chunks)
        # Replaced under its directory's writer lock: a live session's file replaced under
        # its writer would lose every event the writer appends after.
        with held_directory_lock(target.parent) as held:
            if not held:
                raise SessionPathError(target, OSError(errno.EBUSY, (
                    "it is in a session directory whose writer lock is held (a live session "
                    "store writes it), and replacing it would lose what the store writes "
                    "next")))
            temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
            try:
                with open(temporary, "xb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(temporary, target)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temporary)
        return target

    def list(self) -> tuple[str, ...]:
        ids = dict.fromkeys(self._live)
        with self._root(create=False) as root:
            if root is None:
                return tuple(ids)
            for project in _subdirectories(root, self.root):
                try:
                    project_fd = os.open(project, _DIRECTORY, dir_fd=root)
                except OSError as exc:
                    if exc.errno in _NOT_THE_STORES:
                        continue
                    raise SessionPathError(self.root / project, exc) from exc
                try:
                    for name in _subdirectories(project_fd, self.root / project):
                        try:
                            info = os.stat(f"{name}/{self.file_name}", dir_fd=project_fd,
                                           follow_symlinks=False)
                            session_id = decode_segment(name)
                        except (OSError, ValueError):
                            continue  # nothing persisted, or not a directory this layout makes
                        if stat.S_ISREG(info.st_mode):
                            ids.setdefault(session_id)
                finally:
                    os.close(project_fd)
        return tuple(ids)

    def release(self, session_id: str) -> None:
        """Forget a live session: commit and close its file, drop its writer lock."""
        self._live.pop(session_id, None)
        writer = self._writers.pop(session_id, None)
        if writer is not None:
            writer.close()
            if writer.directory is not None:  # None: never written, nothing on disk
                writer.directory.close()

    def delete(self, session_id: str) -> None:
        """Release a session and remove its files (never another process's live session)."""
        live = self._live.pop(session_id, None)
        writer = self._writers.pop(session_id, None)
        if writer is not None:
            writer.close()
            if writer.directory is not None:
                self._abandon(writer.directory, session_id, with_project=True)
            return
        project = self._find(session_id)
        if project is None:
            if live is None:
                raise SessionNotFoundError(session_id)
            return
        self._abandon(self._open_session_dir(project, session_id, locked=True), session_id,
                      with_project=True)

