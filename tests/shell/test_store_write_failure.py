"""A write the disk refuses (full, over a size limit, a failing commit) loses nothing
acknowledged, leaves the session equal to its file, and a later append works once space is
back (issue 14.10, the store's side).

Run as a script, this file is the writer of the real-disk tests:
``python test_store_write_failure.py ROOT FILLER``.
"""

from __future__ import annotations

import asyncio
import errno
import os
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from turnfork.core import (
    AssistantChunkData,
    AssistantChunkEvent,
    Event,
    SessionHeader,
    StepData,
    StepStartEvent,
    TextDelta,
    TurnInterrupted,
    TurnStartData,
    TurnStartEvent,
    close_open_turn,
    decode_session,
)
from turnfork.shell import JsonlSessionStore, Session
from turnfork.shell.store import SessionWriteError

BIG = "x" * 8000


class _FullDisk:
    """A sink that refuses every write with ENOSPC until told there is space again."""

    def __init__(self) -> None:
        self.full = False
        self.events: list[Event] = []

    def write(self, header: SessionHeader, events: Sequence[Event]) -> None:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.events.extend(events)

    @property
    def durable_length(self) -> int:
        return len(self.events)

    def commit(self) -> None:
        pass

    async def wait_durable(self, length: int) -> None:
        pass


def _chunk(turn: int, text: str = BIG) -> AssistantChunkData:
    return AssistantChunkData(turn=turn, step=1, chunk=TextDelta(index=0, text=text))


def test_a_refused_batch_leaves_the_session_as_it_was() -> None:
    """The session holds exactly what its sink took; the open turn is closed once it can."""
    sink = _FullDisk()
    session = Session(SessionHeader(id="s", created_at=0), sink=sink)
    session.append(TurnStartEvent, TurnStartData(turn=1))
    session.append(StepStartEvent, StepData(turn=1, step=1))
    sink.full = True
    trace = session.trace
    closers = close_open_turn(session.trace, session.events, TurnInterrupted())
    with pytest.raises(OSError, match="No space left"):
        session.extend(closers)
    assert session.trace is trace and list(session.events) == sink.events
    assert session.trace.open_turn == 1  # what the agent reads to retry
    sink.full = False
    session.extend(close_open_turn(session.trace, session.events, TurnInterrupted()))
    assert session.trace.is_closed and list(session.events) == sink.events


# --------------------------------------------------------------------------- real disks


def _write_until_refused(root: str, filler: str) -> None:
    """Append big chunks until the disk refuses one; check; make room; close the turn."""
    store = JsonlSessionStore(root)
    session = store.create(SessionHeader(id="full", created_at=0))
    session.append(TurnStartEvent, TurnStartData(turn=1))
    session.append(StepStartEvent, StepData(turn=1, step=1))
    session.flush()
    path = store.path_for(session.header)
    refused: OSError | None = None
    for size in (8000, 1000, 100, 1):  # until even the smallest chunk does not fit
        for _ in range(10_000):
            before, length = path.read_bytes(), len(session)
            try:
                session.append(AssistantChunkEvent, _chunk(1, "x" * size))
            except SessionWriteError as exc:
                refused = exc
                break
    assert refused is not None, "the disk never filled up"
    # Nothing half-written; memory equals the file; everything written is still there.
    assert path.read_bytes() == before, "the refused batch left bytes behind"
    assert len(session) == length
    _, on_disk = decode_session(path.read_bytes()).unwrap()
    assert list(on_disk) == list(session.events)
    closers = close_open_turn(session.trace, session.events, TurnInterrupted())
    try:
        session.extend(closers)
    except SessionWriteError:
        pass  # still full: the turn stays open, the session unchanged
    else:
        raise AssertionError("closing the turn succeeded on a full disk")
    assert session.trace.open_turn == 1
    os.unlink(filler)  # space is back
    resource.setrlimit(resource.RLIMIT_FSIZE, resource.getrlimit(resource.RLIMIT_FSIZE)[1:] * 2)
    session.extend(close_open_turn(session.trace, session.events, TurnInterrupted()))
    session.append(TurnStartEvent, TurnStartData(turn=2))
    asyncio.run(session.wait_durable())
    store.release("full")
    loaded = JsonlSessionStore(root).load("full")
    assert list(loaded.events)[:len(session)] == list(session.events)
    print(f"refused errno {refused.errno} after {length} events: {refused}", flush=True)


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_a_full_disk_refuses_a_batch_whole_and_the_next_turn_works(tmp_path: Path) -> None:
    """On a 256 KiB tmpfs (a mount namespace of its own): ENOSPC on the append that does not
    fit, the file as before it, and once a filler file is removed the turn closes."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    script = (f"mount -t tmpfs -o size=256k tmpfs {mount} && "
              f"dd if=/dev/zero of={mount}/filler bs=1k count=64 status=none && "
              f"exec {sys.executable} {__file__} {mount}/root {mount}/filler")
    if shutil.which("unshare") is None:
        pytest.skip("no unshare command here: a private tmpfs cannot be mounted")
    done = _run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script])
    if done.returncode != 0 and done.stderr.startswith(("unshare:", "mount:", "sh:")):
        pytest.skip(f"no private tmpfs here (user and mount namespaces): {done.stderr[:200]}")
    assert done.returncode == 0, done.stderr
    assert f"refused errno {errno.ENOSPC} " in done.stdout, done.stdout


def test_a_file_size_limit_cuts_a_write_short_and_nothing_is_left_of_it(
        tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes the kernel write part of a batch, then refuse (EFBIG): the part is
    cut back off, and raising the limit lets the turn close."""
    filler = tmp_path / "filler"
    filler.write_bytes(b"")
    code = ("import resource, signal, runpy, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN);"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, resource.RLIM_INFINITY));"
            f"sys.argv = [{__file__!r}, {str(tmp_path / 'root')!r}, {str(filler)!r}];"
            f"runpy.run_path({__file__!r}, run_name='__main__')")
    done = _run([sys.executable, "-c", code])
    assert done.returncode == 0, done.stderr
    assert f"refused errno {errno.EFBIG} " in done.stdout, done.stdout


def test_a_failed_commit_is_reported_and_nothing_is_written_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync failing (EIO): the waiter gets the error, durable_length stays, further appends
    are refused (what the disk holds is not known); a new load reads everything written."""
    store = JsonlSessionStore(tmp_path)
    session = store.create(SessionHeader(id="c", created_at=0))
    session.append(TurnStartEvent, TurnStartData(turn=1))
    session.flush()
    durable = session.durable_length

    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", broken)
    monkeypatch.setattr(os, "fsync", broken)
    session.append(StepStartEvent, StepData(turn=1, step=1))
    with pytest.raises(SessionWriteError, match=r"commit \(fsync\) failed"):
        asyncio.run(session.wait_durable())
    assert session.durable_length == durable
    with pytest.raises(SessionWriteError, match=r"an earlier write or commit \(fsync\) failed"):
        session.append(AssistantChunkEvent, _chunk(1, "late"))
    monkeypatch.undo()
    store.release("c")
    loaded = JsonlSessionStore(tmp_path).load("c")
    assert list(loaded.events)[:2] == list(session.events)


if __name__ == "__main__":
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _write_until_refused(*sys.argv[1:])
