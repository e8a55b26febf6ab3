"""A fork child on disk keeps its seed in its parent's file: a hard link and a seed record, so
starting it costs the same whatever the parent's size; it loads, the CLI's reader reads it,
and an export is a self-contained DSH file (issue 15.3)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from turnfork.core import (
    SessionEndSeedEvent,
    SessionHeader,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    check_balance,
    decode_session,
)
from turnfork.shell import JsonlSessionStore, Session, SessionLoadError
from turnfork.shell.logfile import read_log

COMPRESSIONS = ["none", "zstd"]


def _turn(session: Session) -> None:
    turn = session.trace.next_turn
    session.append(TurnStartEvent, TurnStartData(turn=turn))
    session.append(TurnEndEvent, TurnEndData(turn=turn, reason=TurnCompleted()))


def _parent(store: JsonlSessionStore, turns: int, session_id: str = "parent") -> Session:
    parent = store.create(SessionHeader(id=session_id, created_at=0, cwd="/w"))
    for _ in range(turns):
        _turn(parent)
    parent.append(TurnStartEvent, TurnStartData(turn=parent.trace.next_turn))  # in flight
    return parent


def _fork(store: JsonlSessionStore, parent: Session, child_id: str = "child") -> Session:
    prefix, trace = parent.completed_prefix()
    header = SessionHeader(id=child_id, created_at=1, cwd="/w", parent_session=parent.id,
                           seed_length=len(prefix), origin="subagent", delegation_depth=1)
    return store.create(header, seed=prefix, seed_trace=trace)


def _dir(store: JsonlSessionStore, session: Session) -> Path:
    return store.path_for(session.header).parent


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_the_child_links_its_parents_file_instead_of_copying_the_seed(
        tmp_path: Path, compression: str) -> None:
    """The child's directory holds a hard link to the parent's file and a file of its own
    events; the same for a 3-turn and a 60-turn parent."""
    store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    sizes = []
    for turns in (3, 60):
        parent = _parent(store, turns, f"p{turns}")
        child = _fork(store, parent, f"c{turns}")
        _turn(child)
        directory = _dir(store, child)
        suffix = ".zstd" if compression == "zstd" else ""
        seed_file = directory / f"seed-0.jsonl{suffix}"
        assert seed_file.stat().st_ino == store.path_for(parent.header).stat().st_ino
        sizes.append(store.path_for(child.header).stat().st_size)
        store.release(child.id)
        loaded = store.load(child.id)
        assert list(loaded.events)[:len(child)] == list(child.events)
        assert check_balance(loaded.events).unwrap().is_closed
    # The same size but for the digits of the ids and counts: not the 57 more turns.
    assert abs(sizes[1] - sizes[0]) <= 32 and max(sizes) < 1024, sizes


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_the_shared_reader_and_the_cli_read_a_child_with_its_seed(
        tmp_path: Path, compression: str) -> None:
    """read_log resolves the seed record: the whole log, described as a fork child."""
    store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    parent = _parent(store, 4)
    child = _fork(store, parent)
    _turn(child)
    for path in (store.path_for(child.header), _dir(store, child)):
        log = read_log(path).unwrap()
        assert list(log.events) == list(child.events)
        assert log.seed is not None and log.seed.events == len(parent.completed_prefix()[0])
        assert "seed of 8 events from seed-0.jsonl" in log.description
        assert log.line_of(3) == 2 and log.line_of(8) == 3  # the seed, then end-seed


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_an_export_is_a_self_contained_dsh_file(tmp_path: Path, compression: str) -> None:
    """export() writes the seed in full: a plain DSH session file, equal to the session."""
    store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    parent = _parent(store, 2)
    child = _fork(store, parent)
    _turn(child)
    out = store.export(child.id, tmp_path / "out.jsonl", compression="none")
    assert b"turnfork/seed" not in out.read_bytes()
    header, events = decode_session(out.read_bytes()).unwrap()
    assert header.id == "child" and list(events) == list(child.events)
    again = read_log(store.export(child.id, tmp_path / "out2", compression=compression)
                     if (tmp_path / "out2").mkdir() is None else out).unwrap()
    assert again.seed is None and list(again.events) == list(child.events)


def test_deleting_the_parent_keeps_the_childs_seed(tmp_path: Path) -> None:
    """The link holds the parent's bytes: the child loads after the parent is gone."""
    store = JsonlSessionStore(tmp_path)
    parent = _parent(store, 3)
    child = _fork(store, parent)
    _turn(child)
    expected = list(child.events)
    store.delete(parent.id)
    store.release(child.id)
    assert not store.exists(parent.id)
    assert list(store.load(child.id).events)[:len(expected)] == expected


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_grandchildren_chain_their_seed_files(tmp_path: Path, compression: str) -> None:
    """A child of a child links both ancestors' files; forked before or after the child's
    own first turn; each loads whole, and later parent appends change nothing."""
    store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    parent = _parent(store, 2)
    child = _fork(store, parent)
    child.append(TurnStartEvent, TurnStartData(turn=child.trace.next_turn))
    early = _fork(store, child, "early")  # the child's cut is its seed: end-seed excluded
    _turn(early)
    child.append(TurnEndEvent, TurnEndData(turn=child.trace.open_turn or 0,
                                           reason=TurnCompleted()))
    late = _fork(store, child, "late")
    _turn(late)
    parent.append(TurnEndEvent, TurnEndData(turn=parent.trace.open_turn or 0,
                                            reason=TurnCompleted()))
    _turn(parent)
    suffix = ".zstd" if compression == "zstd" else ""
    assert sorted(p.name for p in _dir(store, late).iterdir()) == sorted(
        [f"seed-0.jsonl{suffix}", f"seed-1.jsonl{suffix}", store.file_name])
    for session in (early, late):
        expected = list(session.events)
        store.release(session.id)
        loaded = store.load(session.id)
        assert list(loaded.events)[:len(expected)] == expected, session.id
        assert check_balance(loaded.events).unwrap().is_closed


def test_a_seed_that_is_not_the_parents_prefix_is_written_in_full(tmp_path: Path) -> None:
    """A copied seed, or fork_seeds="inline", puts the seed in the child's own file."""
    for store, copy in ((JsonlSessionStore(tmp_path / "a"), True),
                        (JsonlSessionStore(tmp_path / "b", fork_seeds="inline"), False)):
        parent = _parent(store, 2)
        prefix, trace = parent.completed_prefix()
        header = SessionHeader(id="child", created_at=1, parent_session=parent.id,
                               seed_length=len(prefix))
        child = store.create(header, seed=tuple(prefix) if copy else prefix,
                             seed_trace=None if copy else trace)
        _turn(child)
        _, events = decode_session(store.path_for(child.header).read_bytes()).unwrap()
        assert list(events) == list(child.events)
        assert isinstance(events[len(prefix)], SessionEndSeedEvent)
        assert not any(p.name.startswith("seed-") for p in _dir(store, child).iterdir())


def test_a_broken_seed_reference_is_refused_at_its_line(tmp_path: Path) -> None:
    """A seed file that does not hold what the record says fails the load at line 2, and
    nothing is written."""
    store = JsonlSessionStore(tmp_path)
    parent = _parent(store, 2)
    child = _fork(store, parent)
    _turn(child)
    store.release(child.id)
    seed_file = _dir(store, child) / "seed-0.jsonl"
    seed_file.unlink()
    seed_file.write_bytes(b'{"type":"session","version":0,"id":"parent","createdAt":0}\n')
    before = store.path_for(child.header).read_bytes()
    with pytest.raises(SessionLoadError, match=r"line 2 \(turnfork/seed\): seed seed-0.jsonl"):
        store.load(child.id)
    assert store.path_for(child.header).read_bytes() == before
    os.unlink(seed_file)
    with pytest.raises(SessionLoadError, match="no such file"):
        store.load(child.id)
