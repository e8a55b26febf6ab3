"""The JSONL disk store: lazy files, header first, durable batches, round trips, list/delete."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import zstandard
from _shell_helpers import echo_tool, make_host, run, scripted

from turnfork.core import (
    AssistantChunkData,
    AssistantChunkEvent,
    SessionEndSeedEvent,
    SessionHeader,
    StepData,
    StepStartEvent,
    TextDelta,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    decode_session,
    encode_header_line,
)
from turnfork.shell import (
    JsonlSessionStore,
    ManualClock,
    Reply,
    Session,
    SessionExistsError,
    SessionLoadError,
)
from turnfork.shell.session import draft
from turnfork.shell.store import SessionNotFoundError


def _frames(data: bytes) -> list[bytes]:
    """Decompress each zstd frame of a file separately."""
    out: list[bytes] = []
    while data:
        stream = zstandard.ZstdDecompressor().decompressobj()
        out.append(stream.decompress(data))
        assert stream.eof
        data = stream.unused_data
    return out


def _plain_text(path: Path) -> bytes:
    data = path.read_bytes()
    return b"".join(_frames(data)) if path.name.endswith(".zstd") else data


def _turn(session: Session, turn: int) -> None:
    session.append(TurnStartEvent, TurnStartData(turn=turn))
    session.append(TurnEndEvent, TurnEndData(turn=turn, reason=TurnCompleted()))


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_file_appears_on_first_append_with_the_header_first(tmp_path: Path,
                                                            compression: str) -> None:
    """No file before the first append; then the header line, then the events."""
    store = JsonlSessionStore(tmp_path, compression=compression,  # type: ignore[arg-type]
                              clock=ManualClock(5))
    header = SessionHeader(id="s-1", created_at=3, cwd="/home/u/proj")
    session = store.create(header)
    path = store.path_for(header)
    assert path == tmp_path / "--home-u-proj--" / "s-1" / path.name
    assert not path.exists() and not (tmp_path / "--home-u-proj--").exists()
    _turn(session, 1)
    text = _plain_text(path)
    assert text.split(b"\n")[0] == encode_header_line(header)
    decoded_header, events = decode_session(text).unwrap()
    assert decoded_header == msgspec_replace_depth(header)
    assert list(events) == list(session.events)


def msgspec_replace_depth(header: SessionHeader) -> SessionHeader:
    """On disk the header always carries delegationDepth (0 when absent in memory)."""
    return msgspec.structs.replace(header, delegation_depth=0)


def test_zstd_writes_the_header_frame_then_one_frame_per_batch(tmp_path: Path) -> None:
    """Frame 1 holds exactly the header line; each append batch is one more frame."""
    store = JsonlSessionStore(tmp_path, compression="zstd")
    header = SessionHeader(id="z", created_at=0)
    session = store.create(header)
    _turn(session, 1)  # two batches
    session.append_many([draft(TurnStartEvent, TurnStartData(turn=2)),
                         draft(TurnEndEvent, TurnEndData(turn=2, reason=TurnCompleted()))])
    frames = _frames(store.path_for(header).read_bytes())
    assert frames[0] == encode_header_line(header) + b"\n"
    assert [frame.count(b"\n") for frame in frames[1:]] == [1, 1, 2]
    assert store.path_for(header).parent.parent.name == "_no-cwd"


def test_fork_child_writes_its_seed_with_its_first_append(tmp_path: Path) -> None:
    """A seeded session's first batch carries the seed and session/end-seed."""
    store = JsonlSessionStore(tmp_path)
    parent = store.create(SessionHeader(id="p", created_at=0))
    _turn(parent, 1)
    prefix, trace = parent.completed_prefix()
    child = store.create(SessionHeader(id="c", created_at=0, seed_length=2), seed=prefix,
                         seed_trace=trace)
    assert not store.path_for(child.header).exists()
    child.append(TurnStartEvent, TurnStartData(turn=2))
    _, events = decode_session(store.path_for(child.header).read_bytes()).unwrap()
    assert [type(e) for e in events] == [TurnStartEvent, TurnEndEvent, SessionEndSeedEvent,
                                         TurnStartEvent]


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_agent_run_round_trips_through_the_disk(tmp_path: Path, compression: str) -> None:
    """An agent's log, reloaded from disk after disposal, is the same log."""

    async def main() -> None:
        store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
        host = make_host(store)
        host.tools.register(echo_tool())
        agent, _ = scripted(host, [Reply.tool_call("echo", {"text": "x"}, usage=(3, 4)),
                                   Reply.text("done", reasoning="hmm"),
                                   Reply.text("second")], cwd="/work/project")
        agent.followup("one")
        await agent.when_idle()
        agent.followup("two")
        await agent.when_idle()
        written = list(agent.session.events)
        header = agent.session.header
        await agent.dispose()
        assert store.get(agent.id) is None
        loaded = store.load(agent.id)
        assert loaded.header == msgspec_replace_depth(header)
        assert list(loaded.events)[:-1] == written
        assert isinstance(loaded.events[-1], SessionEndSeedEvent)

    run(main)


def test_pack_chunks_writes_packed_rows_that_load_back(tmp_path: Path) -> None:
    """With pack_chunks, three or more deltas of one batch become one packed row."""
    store = JsonlSessionStore(tmp_path, pack_chunks=True)
    session = store.create(SessionHeader(id="p", created_at=0))
    session.append(TurnStartEvent, TurnStartData(turn=1))
    session.append(StepStartEvent, StepData(turn=1, step=1))
    session.append_many([
        draft(AssistantChunkEvent, AssistantChunkData(turn=1, step=1,
                                                      chunk=TextDelta(index=0, text=t)))
        for t in ("a", "b", "c")])
    lines = store.path_for(session.header).read_bytes().splitlines()
    assert b'"type":"text-chunks"' in lines[-1] and len(lines) == 4
    store.release("p")
    assert list(store.load("p").events)[:5] == list(session.events)


def test_list_and_delete(tmp_path: Path) -> None:
    """list() names live and persisted sessions; delete() removes the files and dirs."""
    store = JsonlSessionStore(tmp_path)
    a = store.create(SessionHeader(id="a/b", created_at=0, cwd="/w"))
    store.create(SessionHeader(id="never-written", created_at=0))
    _turn(a, 1)
    store.release("a/b")
    store.release("never-written")
    assert store.list() == ("a/b",)
    assert store.exists("a/b") and not store.exists("never-written")
    store.delete("a/b")
    assert store.list() == () and not (tmp_path / "--w--").exists()
    with pytest.raises(SessionNotFoundError):
        store.load("a/b")
    with pytest.raises(SessionNotFoundError):
        store.delete("a/b")


def test_create_refuses_an_id_already_on_disk(tmp_path: Path) -> None:
    """A persisted id cannot be created again, live or not."""
    store = JsonlSessionStore(tmp_path)
    _turn(store.create(SessionHeader(id="dup", created_at=0)), 1)
    with pytest.raises(SessionExistsError):
        store.create(SessionHeader(id="dup", created_at=0))
    store.release("dup")
    with pytest.raises(SessionExistsError):
        store.create(SessionHeader(id="dup", created_at=0))


def test_a_root_holds_one_encoding(tmp_path: Path) -> None:
    """A zstd store refuses a plain session file in its root, naming the file."""
    _turn(JsonlSessionStore(tmp_path).create(SessionHeader(id="plain", created_at=0)), 1)
    with pytest.raises(SessionLoadError, match=r"session\.jsonl: this store's root holds 'zstd'"):
        JsonlSessionStore(tmp_path, compression="zstd").load("plain")
