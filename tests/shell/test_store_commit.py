"""Group commit: an append returns once its batch is written; batches become durable
together, within the store's window or at once when asked, and ``durable_length`` says which
(issue 15.4)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from turnfork.core import (
    AssistantChunkData,
    AssistantChunkEvent,
    SessionHeader,
    StepData,
    StepStartEvent,
    TextDelta,
    TurnStartData,
    TurnStartEvent,
    decode_session,
)
from turnfork.shell import JsonlSessionStore, Session


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the fsyncs (of any kind) from here on."""
    calls: list[str] = []
    for name in ("fsync", "fdatasync"):
        real: Callable[[int], None] = getattr(os, name)

        def counted(fd: int, real: Callable[[int], None] = real, name: str = name) -> None:
            calls.append(name)
            real(fd)

        monkeypatch.setattr(os, name, counted)
    return calls


def _chunk(session: Session, text: str) -> None:
    session.append(AssistantChunkEvent, AssistantChunkData(
        turn=1, step=1, chunk=TextDelta(index=0, text=text)))


def _open(tmp_path: Path, window: float) -> tuple[JsonlSessionStore, Session]:
    store = JsonlSessionStore(tmp_path, commit_window=window)
    session = store.create(SessionHeader(id="g", created_at=0))
    session.append(TurnStartEvent, TurnStartData(turn=1))
    session.append(StepStartEvent, StepData(turn=1, step=1))
    return store, session


def test_an_append_is_written_at_once_and_durable_within_the_window(tmp_path: Path) -> None:
    """The file holds the batch when append returns; the committer makes it durable soon
    after without being asked."""
    store, session = _open(tmp_path, 0.02)
    _chunk(session, "a")
    _, on_disk = decode_session(store.path_for(session.header).read_bytes()).unwrap()
    assert list(on_disk) == list(session.events)
    deadline = time.monotonic() + 10
    while session.durable_length < len(session) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert session.durable_length == len(session) == 3


def test_many_small_batches_share_one_commit(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """200 one-chunk batches, then one wait: a few fsyncs, not 200."""
    _store, session = _open(tmp_path, 60.0)  # the window never fires in this test
    session.flush()
    calls = _counting(monkeypatch)
    for index in range(200):
        _chunk(session, f"c{index}")
    assert session.durable_length == 2
    asyncio.run(session.wait_durable())
    assert session.durable_length == len(session) == 202
    assert 1 <= len(calls) <= 2, calls


def test_concurrent_waiters_are_served_by_one_commit(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks that append and wait at once are made durable together."""
    _store, session = _open(tmp_path, 60.0)
    session.flush()
    calls = _counting(monkeypatch)

    async def writer(index: int) -> bool:
        _chunk(session, f"t{index}")
        mine = len(session)
        await session.wait_durable()
        return session.durable_length >= mine

    async def main() -> list[bool]:
        return await asyncio.gather(*(writer(index) for index in range(20)))

    assert all(asyncio.run(main())) and session.durable_length == 22
    assert len(calls) < 20, calls


def test_flush_commits_before_it_returns(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """flush() is the blocking commit: durable on return, one fsync."""
    _store, session = _open(tmp_path, 60.0)
    session.flush()
    calls = _counting(monkeypatch)
    _chunk(session, "x")
    _chunk(session, "y")
    session.flush()
    assert session.durable_length == len(session) and calls == ["fdatasync"]
    session.flush()  # nothing new: no fsync
    assert calls == ["fdatasync"]


def test_release_commits_what_was_written(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A released session is durable: release commits before it closes the file."""
    store, session = _open(tmp_path, 60.0)
    session.flush()
    calls = _counting(monkeypatch)
    _chunk(session, "last")
    store.release("g")
    assert calls == ["fdatasync"] and session.durable_length == len(session)


def test_a_memory_session_is_durable_at_once() -> None:
    """Without a store there is nothing to wait for."""
    session = Session(SessionHeader(id="m", created_at=0))
    session.append(TurnStartEvent, TurnStartData(turn=1))
    assert session.durable_length == 1
    asyncio.run(session.wait_durable())
    session.flush()


def test_a_new_sessions_first_wait_writes_its_seed(tmp_path: Path) -> None:
    """wait_durable on a session that never appended writes (and commits) its seed."""
    store = JsonlSessionStore(tmp_path)
    session = store.create(SessionHeader(id="n", created_at=0), seed=())
    assert not store.path_for(session.header).exists()
    asyncio.run(session.wait_durable())
    assert session.durable_length == 1
    assert len(decode_session(store.path_for(session.header).read_bytes()).unwrap()[1]) == 1
