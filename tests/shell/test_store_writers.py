"""One writer per session, and reading never writes: real second processes against a live
session (issue 14.1), the loser of a create race (issue 14.11).

Run as a script, this file is the other process: ``python test_store_writers.py COMMAND …``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from turnfork.core import (
    SessionHeader,
    StepData,
    StepStartEvent,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnInterrupted,
    TurnStartData,
    TurnStartEvent,
    check_balance,
    decode_session,
)
from turnfork.shell import JsonlSessionStore, Session, SessionExistsError
from turnfork.shell.store import SessionLockedError

SESSION = "live-one"


def _turn(session: Session) -> None:
    turn = session.trace.next_turn
    session.append(TurnStartEvent, TurnStartData(turn=turn))
    session.append(TurnEndEvent, TurnEndData(turn=turn, reason=TurnCompleted()))


def _open_turn(session: Session) -> None:
    """A turn left in flight, inside its first step."""
    turn = session.trace.next_turn
    session.append(TurnStartEvent, TurnStartData(turn=turn))
    session.append(StepStartEvent, StepData(turn=turn, step=1))


# --------------------------------------------------------------------------- the other process


def _hold(root: str, mode: str) -> None:
    """Be the live writer: create the session, answer commands on stdin."""
    store = JsonlSessionStore(root)
    session = store.create(SessionHeader(id=SESSION, created_at=0))
    _turn(session)
    if mode == "open":
        _open_turn(session)
    session.flush()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "append":
            if session.trace.open_turn is None:
                _turn(session)
            session.flush()
            print(f"appended {len(session)}", flush=True)
        elif line.strip() == "exit":
            return


def _race(root: str, start: str) -> None:
    """Wait for the start signal, then try to create the session and write to it."""
    store = JsonlSessionStore(root)
    while not os.path.exists(start):
        time.sleep(0.0005)
    try:
        session = store.create(SessionHeader(id=SESSION, created_at=os.getpid()))
        _turn(session)
        session.flush()
    except SessionExistsError:
        print("exists", flush=True)
        return
    print("won", flush=True)


# --------------------------------------------------------------------------- the tests


class _Holder:
    """The live writer in another process."""

    def __init__(self, root: Path, mode: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "hold", str(root), mode], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    def say(self, command: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def stop(self, *, kill: bool = False) -> None:
        if kill:
            self.process.send_signal(signal.SIGKILL)
        elif self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write("exit\n")
            self.process.stdin.flush()
        self.process.wait(10)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


def _file(root: Path) -> Path:
    [path] = root.glob("*/*/session.jsonl")
    return path


def test_a_second_writer_process_is_refused_and_the_log_stays_whole(tmp_path: Path) -> None:
    """While one process writes a session, another cannot load it for writing; the first
    goes on, and the file holds its events only, loadable."""
    holder = _Holder(tmp_path, "closed")
    try:
        with pytest.raises(SessionLockedError, match="open for writing in another process"):
            JsonlSessionStore(tmp_path).load(SESSION)
        assert holder.say("append") == "appended 4"
    finally:
        holder.stop()
    session = JsonlSessionStore(tmp_path).load(SESSION)
    assert [event.seq for event in session.events] == [0, 1, 2, 3, 4]
    assert check_balance(session.events).unwrap().is_closed


def test_loading_a_live_open_session_from_another_process_writes_nothing(
        tmp_path: Path) -> None:
    """A live agent's open turn is not closed by someone else's load: the load is refused,
    the file keeps every byte, and inspect() reads it as it is."""
    holder = _Holder(tmp_path, "open")
    try:
        path = _file(tmp_path)
        before = path.read_bytes()
        store = JsonlSessionStore(tmp_path)
        with pytest.raises(SessionLockedError):
            store.load(SESSION)
        seen = store.inspect(SESSION)
        assert path.read_bytes() == before
        assert len(seen.events) == 4 and seen.torn is None
        assert "the log ends inside turn 2" in check_balance(seen.events).failure().message
        assert not isinstance(seen.events[-1], TurnEndEvent)  # still open: no closers
    finally:
        holder.stop()


def test_the_lock_dies_with_its_process(tmp_path: Path) -> None:
    """Killed, the writer leaves no lock behind: the next load takes it and closes the turn."""
    holder = _Holder(tmp_path, "open")
    holder.stop(kill=True)
    session = JsonlSessionStore(tmp_path).load(SESSION)
    last = session.events[-2]
    assert isinstance(last, TurnEndEvent) and last.data.reason == TurnInterrupted()
    _, on_disk = decode_session(_file(tmp_path).read_bytes()).unwrap()
    assert check_balance(on_disk).unwrap().is_closed


def test_a_second_store_in_the_same_process_is_refused_too(tmp_path: Path) -> None:
    """The lock is per open directory, not per process: two stores cannot both write."""
    first = JsonlSessionStore(tmp_path)
    _turn(first.create(SessionHeader(id=SESSION, created_at=0)))
    with pytest.raises(SessionLockedError):
        JsonlSessionStore(tmp_path).load(SESSION)
    with pytest.raises(SessionExistsError):
        JsonlSessionStore(tmp_path).create(SessionHeader(id=SESSION, created_at=0))
    first.release(SESSION)
    assert len(JsonlSessionStore(tmp_path).load(SESSION).events) == 3


def test_a_session_is_reserved_by_its_first_append(tmp_path: Path) -> None:
    """Nothing is on disk before the first append (as in DSH); two creators of one id both
    get a session, and the one whose first append comes second is told the id exists, with
    nothing of its batch written."""
    first, second = JsonlSessionStore(tmp_path), JsonlSessionStore(tmp_path)
    mine = first.create(SessionHeader(id=SESSION, created_at=0))
    theirs = second.create(SessionHeader(id=SESSION, created_at=1))
    assert not any(tmp_path.glob("*/*")) and not first.exists("other")
    _turn(mine)
    before = _file(tmp_path).read_bytes()
    with pytest.raises(SessionExistsError):
        _turn(theirs)
    assert len(theirs) == 0 and _file(tmp_path).read_bytes() == before
    first.release(SESSION)
    second.release(SESSION)
    assert len(JsonlSessionStore(tmp_path).load(SESSION).events) == 3


#: Races run; TURNFORK_RACE_ROUNDS=N runs N (each starts four processes).
RACE_ROUNDS = int(os.environ.get("TURNFORK_RACE_ROUNDS") or 1)


def test_the_loser_of_a_create_race_gets_session_exists(tmp_path: Path) -> None:
    """Processes racing to create one id and write to it: exactly one wins, every other one
    is told the session exists; the winner's file is whole."""
    for round_no in range(RACE_ROUNDS):
        root, start = tmp_path / f"root-{round_no}", tmp_path / f"go-{round_no}"
        racers = [subprocess.Popen([sys.executable, __file__, "race", str(root), str(start)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                  for _ in range(4)]
        time.sleep(1.0)  # let every racer import and wait at the line
        start.touch()
        outcomes = []
        for racer in racers:
            out, err = racer.communicate(timeout=60)
            assert racer.returncode == 0, err
            outcomes.append(out.strip())
        assert sorted(outcomes) == ["exists", "exists", "exists", "won"], (round_no, outcomes)
        session = JsonlSessionStore(root).load(SESSION)
        assert len(session.events) == 3


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    if command == "hold":
        _hold(*arguments)
    elif command == "race":
        _race(*arguments)
    else:
        raise SystemExit(f"unknown command {command!r}")
