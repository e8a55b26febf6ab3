"""Session stores: where live sessions are registered and, for the disk store
(:class:`~shell.jsonl_store.JsonlSessionStore`), persisted; the errors they raise, each
naming the session and the real cause (docs/api-shell-runtime.md, "Stores"). The layout
helpers are the core's, re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..core import (
    DecodeError,
    Event,
    LogReadError,
    SessionHeader,
    Trace,
    Violation,
    decode_segment,
    encode_segment,
    project_dir_name,
    project_key,
)
from ._inert import inert
from .clock import Clock, system_clock
from .session import Session, SessionSink

__all__ = [
    "SessionStore", "MemorySessionStore", "SessionNotFoundError", "SessionExistsError",
    "SessionLoadError", "SessionLockedError", "SessionEventError", "SessionWriteError",
    "InvalidSessionIdError", "SessionRepairWarning", "project_key", "project_dir_name",
    "encode_segment", "decode_segment",
]


class SessionNotFoundError(LookupError):
    """No session with that id, live or persisted."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session {session_id!r}")
        self.session_id = session_id


class SessionExistsError(ValueError):
    """A session with that id is already live or persisted."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id!r} already exists")
        self.session_id = session_id


class SessionLoadError(Exception):
    """A persisted session cannot be loaded: the file and what is wrong, with line and seq."""

    def __init__(self, path: object, problem: DecodeError | Violation | str) -> None:
        detail = problem if isinstance(problem, str) else problem.message
        super().__init__(inert(f"{path}: {detail}"))
        self.path = path
        self.problem = problem

    @classmethod
    def from_violation(cls, path: object, violation: Violation,
                       line: int | None) -> SessionLoadError:
        """The store's error for a rule the file breaks at ``line`` (``None``: not known)."""
        error = cls(path, violation)
        if line is not None:
            error.args = (inert(f"{path}: line {line}: {violation.message}"),)
        return error

    @classmethod
    def from_read_error(cls, error: LogReadError) -> SessionLoadError:
        """The store's error for what the shared reader refused."""
        if error.line is None:
            return cls(error.file, error.problem)
        return cls(error.file, DecodeError(line=error.line, problem=error.problem,
                                           seq=error.seq, event_type=error.event_type))


class SessionLockedError(RuntimeError):
    """Another writer holds the session's writer lock (another process, or another store
    object in this one): it is live there."""

    def __init__(self, session_id: str, where: object) -> None:
        super().__init__(f"session {session_id!r} is open for writing in another process or "
                         f"by another store object in this one (its writer lock is held on "
                         f"{where}); a session has one writer")
        self.session_id = session_id
        self.where = where


class SessionEventError(ValueError):
    """An event the store will not write (its own reader would refuse it); nothing was."""

    def __init__(self, session_id: str, seq: int | None, event_type: str | None,
                 problem: str) -> None:
        where = "" if seq is None else f"seq {seq}" + ("" if event_type is None
                                                       else f" ({event_type})") + ": "
        super().__init__(f"session {session_id}: {where}{problem}; nothing was written")
        self.session_id = session_id
        self.seq = seq
        self.event_type = event_type
        self.problem = problem


class SessionWriteError(OSError):
    """The disk refused a write or a commit; ``errno`` is the cause's, the message says what
    happened to the batch."""

    def __init__(self, session_id: str, what: str, cause: OSError | None = None) -> None:
        reason = "" if cause is None else f": {cause.strerror or cause}"
        super().__init__(None if cause is None else cause.errno,
                         f"session {session_id}: {what}{reason}")
        self.session_id = session_id
        self.cause = cause

    def __str__(self) -> str:
        return str(self.strerror)


class InvalidSessionIdError(ValueError):
    """A session id the disk store cannot persist (refused at create)."""


class SessionRepairWarning(UserWarning):
    """A load dropped a torn tail (the file was truncated to its last whole record)."""


class SessionStore(Protocol):
    """What the host needs of a session store."""

    def create(self, header: SessionHeader, *, seed: Sequence[Event] | None = None,
               seed_trace: Trace | None = None, clock: Clock | None = None) -> Session:
        """Create and register a live session (nothing is persisted before its first
        append); :class:`SessionExistsError` when the id is live or persisted."""
        ...

    def get(self, session_id: str) -> Session | None:
        """The live session with that id, if any."""
        ...

    def exists(self, session_id: str) -> bool:
        """Whether a session with that id is live or persisted."""
        ...

    def load(self, session_id: str, *, clock: Clock | None = None) -> Session:
        """The live session, or the persisted one restored and registered live (the disk
        store takes its writer lock and repairs a crash there)."""
        ...

    def list(self) -> tuple[str, ...]:
        """Ids of live and persisted sessions."""
        ...

    def release(self, session_id: str) -> None:
        """Forget a live session; persisted files stay. A no-op when not live."""
        ...

    def delete(self, session_id: str) -> None:
        """Release a session and remove everything persisted for it."""
        ...


class _LiveSessions:
    """The registry of live sessions that every store keeps."""

    def __init__(self, clock: Clock | None) -> None:
        self.clock: Clock = clock or system_clock
        self._live: dict[str, Session] = {}

    def get(self, session_id: str) -> Session | None:
        return self._live.get(session_id)

    def release(self, session_id: str) -> None:
        self._live.pop(session_id, None)

    def _register(self, header: SessionHeader, seed: Sequence[Event] | None,
                  seed_trace: Trace | None, clock: Clock | None,
                  sink: SessionSink | None) -> Session:
        session = Session(header, seed=seed, seed_trace=seed_trace, clock=clock or self.clock,
                          sink=sink)
        self._live[header.id] = session
        return session


class MemorySessionStore(_LiveSessions):
    """Live sessions in memory only (the default store): a released session is gone."""

    def __init__(self, *, clock: Clock | None = None) -> None:
        super().__init__(clock)

    def create(self, header: SessionHeader, *, seed: Sequence[Event] | None = None,
               seed_trace: Trace | None = None, clock: Clock | None = None) -> Session:
        if header.id in self._live:
            raise SessionExistsError(header.id)
        return self._register(header, seed, seed_trace, clock, None)

    def exists(self, session_id: str) -> bool:
        return session_id in self._live

    def load(self, session_id: str, *, clock: Clock | None = None) -> Session:
        session = self._live.get(session_id)
        if session is None:
            raise SessionNotFoundError(session_id)
        return session

    def list(self) -> tuple[str, ...]:
        return tuple(self._live)

    def delete(self, session_id: str) -> None:
        if self._live.pop(session_id, None) is None:
            raise SessionNotFoundError(session_id)
