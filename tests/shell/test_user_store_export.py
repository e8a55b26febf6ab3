"""A demanding user's ``JsonlSessionStore.export``: a destination a live store writes, or one
that is not a regular file, is never replaced."""

from __future__ import annotations

import os
import stat
from pathlib import Path

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


def _turn(session: Session) -> None:
    turn = session.trace.next_turn
    session.append(TurnStartEvent, TurnStartData(turn=turn))
    session.append(TurnEndEvent, TurnEndData(turn=turn, reason=TurnCompleted()))


def test_export_over_a_live_sessions_file_is_refused_and_loses_nothing(tmp_path: Path) -> None:
    """``export`` into the file (or the directory) of a session a store is writing, its own
    or another's, this store's or another store's: refused naming the file, the live file
    untouched, and every event appended after it on disk (before: the file was replaced
    under its writer, whose later appends went to the unlinked file and were lost; a
    directory given got the other session's file)."""
    store = JsonlSessionStore(tmp_path / "root")
    one = store.create(SessionHeader(id="a", created_at=0))
    _turn(one)
    two = store.create(SessionHeader(id="b", created_at=0))
    _turn(two)
    own, other = store.path_for(one.header), store.path_for(two.header)
    kept = other.read_bytes()
    for destination in (own, own.parent, other, other.parent):
        with pytest.raises(OSError, match="writer lock is held") as raised:
            store.export("a", destination)
        assert str(destination) in str(raised.value)
    with pytest.raises(OSError, match="writer lock is held"):
        JsonlSessionStore(tmp_path / "root").export("a", other)  # another store, same refusal
    assert other.read_bytes() == kept
    assert not [name for name in os.listdir(other.parent) if name.startswith(".")]
    _turn(one)
    _turn(two)
    store.release("a")
    store.release("b")
    reader = JsonlSessionStore(tmp_path / "root")
    assert reader.load("a").trace.next_turn == 3
    assert reader.load("b").trace.next_turn == 3
    reader.release("b")
    out = reader.export("a", other)  # a released session's file may be replaced
    assert out == other and reader.inspect("a").events == reader.inspect("a").events


def test_export_never_replaces_what_is_not_a_regular_file(tmp_path: Path) -> None:
    """A FIFO as the destination: refused naming it, and it is still a FIFO (before: renamed
    over, as a character device would be)."""
    store = JsonlSessionStore(tmp_path / "root")
    _turn(store.create(SessionHeader(id="a", created_at=0)))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file") as raised:
        store.export("a", fifo)
    assert str(fifo) in str(raised.value)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [name for name in os.listdir(tmp_path) if name != "root"] == ["pipe"]
