"""Ids and paths: ids the store cannot persist are refused at create; no symbolic link inside
the root is ever followed, to read, write (the first append makes the directories) or delete
(issue 14.11); the real cause is named (issue 14.13)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from turnfork.core import (
    SessionHeader,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    encode_header_line,
)
from turnfork.shell import JsonlSessionStore, Session, SessionLoadError
from turnfork.shell.jsonl_store import SessionPathError
from turnfork.shell.store import InvalidSessionIdError, encode_segment

SECRET = b"do not touch\n"


def _turn(session: Session) -> None:
    turn = session.trace.next_turn
    session.append(TurnStartEvent, TurnStartData(turn=turn))
    session.append(TurnEndEvent, TurnEndData(turn=turn, reason=TurnCompleted()))


@pytest.mark.parametrize(("session_id", "words"), [
    ("x" * 256, "too long for a file name once encoded (256 bytes > 255)"),
    ("é" * 60, "too long for a file name once encoded (300 bytes > 255)"),
    ("ok\ud800", "lone surrogate (U+D800 at index 2)"),
    ("", "must not be empty"),
])
def test_ids_the_store_cannot_persist_are_refused_at_create(
        tmp_path: Path, session_id: str, words: str) -> None:
    """Refused before anything is made, with the reason; a 255-byte name is fine."""
    store = JsonlSessionStore(tmp_path)
    with pytest.raises(InvalidSessionIdError, match=re.escape(words)):
        store.create(SessionHeader(id=session_id, created_at=0))
    assert store.list() == () and not store.exists(session_id or "x")
    assert not any(tmp_path.glob("*/*"))
    _turn(store.create(SessionHeader(id="y" * 255, created_at=0)))


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    return outside


def test_a_project_directory_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    """create, load, list and delete refuse or skip a linked project directory."""
    outside = _outside(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    (root / "_no-cwd").symlink_to(outside, target_is_directory=True)
    store = JsonlSessionStore(root)
    session = store.create(SessionHeader(id="s", created_at=0))
    with pytest.raises(SessionPathError, match="is a symbolic link or not a directory"):
        _turn(session)  # the first append makes the directory: refused, nothing written
    assert len(session) == 0
    store.release("s")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    # A session planted behind the link is neither listed nor loaded.
    planted = outside / "s"
    planted.mkdir()
    (planted / "session.jsonl").write_bytes(
        encode_header_line(SessionHeader(id="s", created_at=0)) + b"\n")
    assert store.list() == () and not store.exists("s")
    with pytest.raises(LookupError):
        store.load("s")
    with pytest.raises(LookupError):
        store.delete("s")
    assert (planted / "session.jsonl").exists()


def test_a_session_file_that_is_a_symlink_is_never_read_written_or_followed(
        tmp_path: Path) -> None:
    """A session file replaced by a link to a file outside: load refuses naming the link,
    delete removes the link only, the target keeps every byte."""
    outside = _outside(tmp_path)
    store = JsonlSessionStore(tmp_path / "root")
    _turn(store.create(SessionHeader(id="s", created_at=0)))
    store.release("s")
    path = tmp_path / "root" / "_no-cwd" / "s" / "session.jsonl"
    path.unlink()
    path.symlink_to(outside / "secret.txt")
    with pytest.raises(SessionLoadError, match="symbolic link"):
        store.load("s")
    with pytest.raises(SessionLoadError, match="symbolic link"):
        store.inspect("s")
    store.delete("s")
    assert not path.parent.exists()
    assert (outside / "secret.txt").read_bytes() == SECRET


def test_a_session_directory_that_is_a_symlink_is_not_entered(tmp_path: Path) -> None:
    """A session directory linked elsewhere is not a session of this root."""
    outside = _outside(tmp_path)
    store = JsonlSessionStore(tmp_path / "root")
    _turn(store.create(SessionHeader(id="s", created_at=0)))
    store.release("s")
    session_dir = tmp_path / "root" / "_no-cwd" / encode_segment("t")
    session_dir.symlink_to(outside, target_is_directory=True)
    (outside / "session.jsonl").write_bytes(
        encode_header_line(SessionHeader(id="t", created_at=0)) + b"\n")
    assert store.list() == ("s",)
    assert not store.exists("t")
    session = store.create(SessionHeader(id="t", created_at=0))
    with pytest.raises(SessionPathError):
        _turn(session)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt", "session.jsonl"]


def test_permission_denied_and_fifos_are_named(tmp_path: Path) -> None:
    """A session file that is a FIFO is refused without blocking, naming it a FIFO."""
    store = JsonlSessionStore(tmp_path)
    _turn(store.create(SessionHeader(id="s", created_at=0)))
    store.release("s")
    path = tmp_path / "_no-cwd" / "s" / "session.jsonl"
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(SessionLoadError, match=r"it is a FIFO \(named pipe\)"):
        store.load("s")



def test_permission_denied_is_named_with_its_path(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A root the writer may not write to: the first append says which path and why (as
    root, which writes anyway, the refusal is the system's answer played back)."""
    root = tmp_path / "root"
    root.mkdir(mode=0o555)
    if os.geteuid() == 0:
        def refused(path: object, *args: object, **kwargs: object) -> None:
            raise PermissionError(13, "Permission denied", path)

        monkeypatch.setattr(os, "mkdir", refused)
    session = JsonlSessionStore(root).create(SessionHeader(id="s", created_at=0))
    with pytest.raises(SessionPathError) as caught:
        session.append(TurnStartEvent, TurnStartData(turn=1))
    assert str(caught.value) == f"{root / '_no-cwd'} cannot be used: permission denied"
    assert caught.value.errno == 13 and len(session) == 0
