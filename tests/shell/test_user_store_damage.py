"""A demanding user's store: files damaged by hand or by the system, a delete the disk
refuses, errors that must name the file, the line and the seq."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from turnfork.core import (
    SessionHeader,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
)
from turnfork.shell import JsonlSessionStore, Session
from turnfork.shell.store import SessionWriteError


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
