"""A demanding user's store in a process that forks (a ``multiprocessing`` pool started with
``fork``, Linux's default): the forked process must not keep the sessions' writer locks."""

from __future__ import annotations

import os
from pathlib import Path

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


def test_a_forked_process_neither_keeps_the_lock_nor_writes_the_session(tmp_path: Path) -> None:
    """A process forked while a session is live (a worker pool): once the session is
    released here it loads again, here and in another store, while the forked process
    lives; the forked process's copy of the session refuses to write, naming why (before:
    the forked process held the writer lock until it exited, so the session could not be
    resumed, and its copy could append to the file beside the real writer)."""
    store = JsonlSessionStore(tmp_path)
    session = store.create(SessionHeader(id="s1", created_at=0))
    _turn(session)
    told_read, told_write = os.pipe()
    done_read, done_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the forked process: try to write, tell what happened, wait to be let go
        try:
            os.close(told_read)
            os.close(done_write)
            try:
                _turn(session)
                said = "appended"
            except Exception as error:
                said = f"{type(error).__name__}: {error}"
            os.write(told_write, said.encode())
            os.close(told_write)
            os.read(done_read, 1)
        finally:
            os._exit(0)
    os.close(told_write)
    os.close(done_read)
    try:
        said = b""
        while chunk := os.read(told_read, 4096):
            said += chunk
        assert said.decode().startswith("SessionWriteError: session s1: this process was "
                                        "forked from the one that writes the session"), said
        store.release("s1")
        other = JsonlSessionStore(tmp_path)
        again = other.load("s1")  # the forked process is alive: its copy holds no lock
        _turn(again)
        other.release("s1")
        assert store.load("s1").trace.next_turn == 3
        store.release("s1")
    finally:
        os.write(done_write, b"x")
        os.close(done_write)
        os.close(told_read)
        os.waitpid(pid, 0)
    events = JsonlSessionStore(tmp_path).inspect("s1").events
    assert [event.seq for event in events] == list(range(len(events)))
