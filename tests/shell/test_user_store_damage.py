"""A demanding user's store: files damaged by hand or by the system, a delete the disk
refuses, errors that must name the file, the line and the seq."""

from __future__ import annotations

import errno
import fcntl
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
import zstandard

from turnfork.core import (
    SessionHeader,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    Violation,
)
from turnfork.shell import JsonlSessionStore, Session, SessionLoadError
from turnfork.shell.store import SessionLockedError, SessionRepairWarning, SessionWriteError


def _turn(session: Session) -> None:
    turn = session.trace.next_turn
    session.append(TurnStartEvent, TurnStartData(turn=turn))
    session.append(TurnEndEvent, TurnEndData(turn=turn, reason=TurnCompleted()))


def _stored(root: Path, session_id: str = "s1", turns: int = 3) -> Path:
    store = JsonlSessionStore(root)
    session = store.create(SessionHeader(id=session_id, created_at=0, cwd="/w"))
    for _ in range(turns):
        _turn(session)
    store.release(session_id)
    return store.path_for(session.header)


def test_a_delete_the_disk_refuses_names_the_file_and_keeps_the_session_loadable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The session file may not be removed (an append-only or immutable file, a read-only
    mount): the error names it, and the session stays whole and loadable in this store
    (before: a bare ``PermissionError: 'session.jsonl'``, and the writer lock stayed held,
    so this very store then called the session open in another process)."""
    path = _stored(tmp_path)
    before = path.read_bytes()
    unlink = os.unlink

    def refusing(name: Any, *args: Any, **kwargs: Any) -> None:
        if name == path.name:
            raise PermissionError(1, "Operation not permitted", name)
        unlink(name, *args, **kwargs)

    store = JsonlSessionStore(tmp_path)
    monkeypatch.setattr(os, "unlink", refusing)
    with pytest.raises(SessionWriteError, match="Operation not permitted") as raised:
        store.delete("s1")
    assert str(path) in str(raised.value)
    assert raised.value.errno == 1
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert store.load("s1").trace.next_turn == 4  # three turns, loaded by this very store
    with monkeypatch.context() as patched:  # and a live one
        patched.setattr(os, "unlink", refusing)
        with pytest.raises(SessionWriteError, match="Operation not permitted"):
            store.delete("s1")
    assert JsonlSessionStore(tmp_path).load("s1").trace.next_turn == 4
    assert path.read_bytes() == before


def _edit_line(path: Path, number: int, old: bytes, new: bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    assert old in lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new)
    path.write_bytes(b"\n".join(lines))


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_broken_rule_in_a_loaded_file_names_its_line_and_seq(
        tmp_path: Path, compression: str) -> None:
    """A seq edited by hand in the middle of a file: ``load`` names the file, the line, the
    seq and the type, as ``turnfork check`` does (before: ``<path>: seq 3: …``, no line), and
    the problem stays the trace's :class:`Violation`."""
    store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    session = store.create(SessionHeader(id="s1", created_at=0, cwd="/w"))
    for _ in range(3):
        _turn(session)
    store.release("s1")
    path = store.path_for(session.header)
    if compression == "none":
        _edit_line(path, 5, b'"seq":3,', b'"seq":30,')  # the header is line 1: seq 3 on 5
    else:
        data, text = path.read_bytes(), b""
        while data:  # a frame per batch
            frame = zstandard.ZstdDecompressor().decompressobj()
            text += frame.decompress(data)
            data = frame.unused_data
        lines = text.split(b"\n")
        lines[4] = lines[4].replace(b'"seq":3,', b'"seq":30,')
        path.write_bytes(zstandard.ZstdCompressor().compress(b"\n".join(lines)))
    before = path.read_bytes()
    with pytest.raises(SessionLoadError) as raised:
        JsonlSessionStore(tmp_path, compression=compression).load(  # type: ignore[arg-type]
            "s1")
    assert str(raised.value) == (
        f"{path}: line 5: seq 3: event at position 3 has seq 30; seq must equal "
        "the event's position, counting from 0")
    assert isinstance(raised.value.problem, Violation) and raised.value.problem.seq == 3
    assert path.read_bytes() == before


def test_a_fork_childs_file_without_its_seed_record_names_line_2(tmp_path: Path) -> None:
    """The child's seed record removed by hand: its first own event is then at position 0
    with seq 16, named at line 2 of the child's file."""
    store = JsonlSessionStore(tmp_path)
    parent = store.create(SessionHeader(id="p", created_at=0, cwd="/w"))
    _turn(parent)
    prefix, trace = parent.completed_prefix()
    child = store.create(SessionHeader(id="c", created_at=0, cwd="/w", parent_session="p",
                                       seed_length=len(prefix)),
                         seed=prefix, seed_trace=trace)
    _turn(child)
    store.release("c")
    path = store.path_for(child.header)
    lines = path.read_bytes().split(b"\n")
    assert b"turnfork/seed" in lines[1]
    path.write_bytes(b"\n".join(lines[:1] + lines[2:]))
    with pytest.raises(SessionLoadError) as raised:
        JsonlSessionStore(tmp_path).load("c")
    assert str(raised.value).startswith(f"{path}: line 2: seq 0: event at "
                                        "position 0 has seq 2;")


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_header_refuses_a_header_line_naming_another_session(tmp_path: Path,
                                                             compression: str) -> None:
    """A session file whose header names another id (copied by hand from another session):
    ``header`` refuses it as ``inspect`` and ``load`` do (before: it returned the other
    session's header, so a listing placed this session under the other one's parent)."""
    store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    for session_id, parent in (("s1", "q"), ("s2", "p")):
        session = store.create(SessionHeader(id=session_id, created_at=0, cwd="/w",
                                             parent_session=parent))
        _turn(session)
        store.release(session_id)
    one = store.path_for(SessionHeader(id="s1", created_at=0, cwd="/w"))
    two = store.path_for(SessionHeader(id="s2", created_at=0, cwd="/w"))
    one.write_bytes(two.read_bytes())
    reader = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    words = f"{one}: line 1: header id 's2' is not 's1'"
    for read in (reader.header, reader.inspect, reader.load):
        with pytest.raises(SessionLoadError) as raised:
            read("s1")
        assert str(raised.value) == words
    assert reader.header("s2").parent_session == "p"


def test_a_directory_that_cannot_be_listed_is_named(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of descriptors (a user with many live sessions): ``create``, ``exists``, ``load``
    and ``list`` name the directory they could not list and why (before: a bare
    ``OSError: [Errno 24] Too many open files``)."""
    _stored(tmp_path)
    store = JsonlSessionStore(tmp_path)
    real = os.scandir

    def exhausted(path: Any = ".") -> Any:
        if isinstance(path, int):  # the store lists its directories by descriptor
            raise OSError(errno.EMFILE, "Too many open files")
        return real(path)

    monkeypatch.setattr(os, "scandir", exhausted)
    for attempt in (lambda: store.create(SessionHeader(id="s2", created_at=0)),
                    lambda: store.exists("s2"), lambda: store.load("s1"), store.list):
        with pytest.raises(OSError) as raised:
            attempt()
        assert str(raised.value) == f"{tmp_path} cannot be used: too many open files"
        assert raised.value.errno == errno.EMFILE


def test_a_session_directory_that_cannot_be_opened_for_want_of_descriptors_is_not_absent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Out of descriptors when the session's (or its project's) directory is opened: the
    session is not reported absent, so a host does not start a new session in its place
    (before: ``exists`` said ``False`` and ``list`` left the project out, silently)."""
    _stored(tmp_path)
    store = JsonlSessionStore(tmp_path)
    real = os.open

    def exhausted(path: Any, *args: Any, **kwargs: Any) -> int:
        if path in {"s1", "--w--"} and kwargs.get("dir_fd") is not None:
            raise OSError(errno.EMFILE, "Too many open files")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", exhausted)
    for attempt in (lambda: store.exists("s1"), store.list,
                    lambda: store.create(SessionHeader(id="s1", created_at=0, cwd="/w"))):
        with pytest.raises(OSError, match="too many open files") as raised:
            attempt()
        assert raised.value.errno == errno.EMFILE
        assert str(tmp_path / "--w--") in str(raised.value)
    monkeypatch.undo()
    assert store.exists("s1") and store.list() == ("s1",)


def test_a_load_that_cannot_repair_does_not_say_it_dropped_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """A torn tail and an open turn on a file that cannot be opened for writing (a read-only
    mount): the load fails naming why, the file is as it was, and no warning claims the tail
    was dropped or the turn closed (before: both were said, then the load failed)."""
    path = _stored(tmp_path)
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:-2]) + b'\n{"type":"turn/')  # turn 3 open, a torn tail
    before = path.read_bytes()
    real = os.open

    def read_only(name: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if name == path.name and flags & os.O_WRONLY:
            raise OSError(errno.EROFS, "Read-only file system", name)
        return real(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        with pytest.raises(SessionLoadError, match="cannot open for writing: Read-only"):
            JsonlSessionStore(tmp_path).load("s1")
    assert [str(warning.message) for warning in said] == []
    assert [record.getMessage() for record in caplog.records
            if record.name == "turnfork.shell.jsonl_store"] == []
    assert path.read_bytes() == before
    monkeypatch.undo()
    with pytest.warns(SessionRepairWarning, match="dropped a torn tail"):
        session = JsonlSessionStore(tmp_path).load("s1")
    assert session.trace.open_turn is None and session.trace.next_turn == 4
    assert any("closed turn 3" in record.getMessage() for record in caplog.records)


def test_a_fork_child_not_written_yet_does_not_keep_its_released_parent_locked(
        tmp_path: Path) -> None:
    """A fork child created (its seed the parent's file, by reference) but not written yet,
    and the parent released meanwhile: the parent can be loaded again, here and by another
    store, and the child's first write still links the parent's file (before: the child's
    hold on the parent's directory shared the parent's writer lock, so the parent stayed
    "open for writing in another process" until the child wrote)."""
    store = JsonlSessionStore(tmp_path)
    parent = store.create(SessionHeader(id="p", created_at=0, cwd="/w"))
    _turn(parent)
    prefix, trace = parent.completed_prefix()
    child = store.create(SessionHeader(id="c", created_at=0, cwd="/w", parent_session="p",
                                       seed_length=len(prefix)),
                         seed=prefix, seed_trace=trace)
    store.release("p")
    other = JsonlSessionStore(tmp_path)
    assert other.load("p").trace.next_turn == 2
    other.release("p")
    assert store.load("p").trace.next_turn == 2
    store.release("p")
    _turn(child)
    store.release("c")
    lines = store.path_for(child.header).read_bytes().split(b"\n")
    assert b'"type":"turnfork/seed"' in lines[1]
    assert JsonlSessionStore(tmp_path).load("c").trace.next_turn == 3


def test_a_session_another_store_of_this_process_writes_is_not_said_to_be_elsewhere(
        tmp_path: Path) -> None:
    """Two store objects on one root in one process (a server making a store per request):
    the second's refusal says the writer may be another store of this very process (before:
    only "in another process", sending the user to look for a process that is not there)."""
    _stored(tmp_path)
    first = JsonlSessionStore(tmp_path)
    first.load("s1")
    with pytest.raises(SessionLockedError) as raised:
        JsonlSessionStore(tmp_path).load("s1")
    assert "or by another store object in this one" in str(raised.value)
    assert str(tmp_path / "--w--" / "s1") in str(raised.value)


def test_a_load_error_quoting_the_file_shows_its_terminal_controls_escaped(
        tmp_path: Path) -> None:
    """A record whose type is an escape sequence (OSC 52 writes the clipboard, CSI 2J clears
    the screen): the error quoting it holds no raw control, so a traceback printed on a
    terminal does not act on it (before: the ESC and BEL bytes were in the message)."""
    path = _stored(tmp_path, turns=1)
    with path.open("ab") as handle:
        handle.write(b'{"type":"\\u001b]52;c;ZXZpbA==\\u0007\\u001b[2J\\u009b","seq":2,'
                     b'"time":0,"data":{}}\n{"type":"turn/start","seq":3,"time":0,'
                     b'"data":{"turn":2}}\n')
    for read in (JsonlSessionStore(tmp_path).inspect, JsonlSessionStore(tmp_path).load):
        with pytest.raises(SessionLoadError) as raised:
            read("s1")
        message = str(raised.value)
        assert message == (f"{path}: line 4 (seq 2, \\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x9b): "
                           'unknown event type "\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x9b" is not '
                           'marked "ignorable": true')
        assert not any(ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F for char in message)


def test_a_file_system_without_locks_is_named_with_the_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``flock`` refused by the file system (``ENOLCK``, some network file systems):
    ``load``, ``delete`` and a first append name the session directory and the cause, and
    leave no descriptor behind (before: a bare ``OSError: [Errno 37] No locks available``)."""
    path = _stored(tmp_path)
    store = JsonlSessionStore(tmp_path)

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    before = len(os.listdir("/proc/self/fd"))
    fresh = store.create(SessionHeader(id="s2", created_at=0, cwd="/w"))
    for attempt, directory in ((lambda: store.load("s1"), path.parent),
                               (lambda: store.delete("s1"), path.parent),
                               (lambda: _turn(fresh), path.parent.parent / "s2")):
        with pytest.raises(OSError) as raised:
            attempt()
        assert str(raised.value).startswith(f"{directory} cannot be used: no locks available")
        assert raised.value.errno == errno.ENOLCK
    assert len(os.listdir("/proc/self/fd")) == before
    monkeypatch.undo()
    assert store.load("s1").trace.next_turn == 4


def test_a_load_the_full_disk_refuses_leaves_no_descriptor_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load whose closers the disk refuses (full): retried, every attempt fails the same
    way and none leaves a descriptor behind (before: each leaked the session file's, so a
    host retrying until space came back ran out of descriptors); once space is back it
    loads."""
    path = _stored(tmp_path, turns=1)
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:-2]) + b"\n")  # turn 1 open: its closer is written
    store = JsonlSessionStore(tmp_path)
    real = os.write

    def full(fd: int, data: Any) -> int:
        if len(data) and os.fstat(fd).st_ino == path.stat().st_ino:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with pytest.raises(SessionWriteError, match="No space left on device"):
            store.load("s1")
    assert len(os.listdir("/proc/self/fd")) == before
    monkeypatch.undo()
    assert store.load("s1").trace.open_turn is None
