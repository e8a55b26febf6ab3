"""DSH's own logs load through the disk store: the runtime dumps and every committed fixture
rewritten as a raw on-disk session (envelopes restored), in both encodings."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
import zstandard

from turnfork.core import (
    SessionEndSeedEvent,
    SessionHeader,
    StepEndEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnInterrupted,
    check_balance,
    decode_log,
    decode_session,
    encode_session,
)
from turnfork.shell import JsonlSessionStore, ManualClock
from turnfork.shell.store import encode_segment, project_dir_name

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dsh"
GENERATED = sorted((FIXTURES / "generated").glob("*.events.jsonl"))
PROJECTED = sorted([*FIXTURES.glob("*.jsonl"), *(FIXTURES / "derived").glob("*.jsonl")])


def _place(root: Path, header: SessionHeader, text: bytes, compression: str) -> None:
    cwd = header.cwd if isinstance(header.cwd, str) else None
    directory = root / project_dir_name(cwd) / encode_segment(header.id)
    directory.mkdir(parents=True)
    if compression == "zstd":
        lines = text.split(b"\n", 1)
        compressor = zstandard.ZstdCompressor(write_checksum=True)
        data = compressor.compress(lines[0] + b"\n") + compressor.compress(lines[1])
        (directory / "session.jsonl.zstd").write_bytes(data)
    else:
        (directory / "session.jsonl").write_bytes(text)


def test_fixture_sets_are_present() -> None:
    """The test really covers the DSH logs (two runtime dumps, 19 committed sessions)."""
    assert len(GENERATED) == 2 and len(PROJECTED) == 19


@pytest.mark.parametrize("compression", ["none", "zstd"])
@pytest.mark.parametrize("events_path", GENERATED, ids=lambda p: p.name)
def test_generated_runtime_logs_load(tmp_path: Path, events_path: Path,
                                     compression: str) -> None:
    """A DSH runtime dump (header.json + events) placed in the layout loads unchanged."""
    header = msgspec.json.decode(
        events_path.with_name(events_path.name.replace(".events.jsonl", ".header.json"))
        .read_bytes(), type=SessionHeader)
    raw = events_path.read_bytes()
    original = decode_log(raw).unwrap()
    _place(tmp_path, header, encode_session(header, ()) + raw, compression)
    session = JsonlSessionStore(tmp_path, compression=compression).load(  # type: ignore[arg-type]
        header.id)
    events = list(session.events)
    assert events[:len(original)] == list(original)
    assert session.header.id == header.id and session.header.seed_length == header.seed_length
    assert check_balance(events).unwrap().is_closed
    if "parent" in events_path.name:  # ends inside turn 11: closed by crash repair
        closers = events[len(original):-1]
        assert [type(e) for e in closers] == [StepEndEvent, TurnEndEvent]
        assert isinstance(closers[-1], TurnEndEvent)
        assert closers[-1].data.reason == TurnInterrupted()
    else:
        assert len(events) == len(original) + 1
    assert isinstance(events[-1], SessionEndSeedEvent)


@pytest.mark.parametrize("compression", ["none", "zstd"])
@pytest.mark.parametrize("fixture", PROJECTED, ids=lambda p: p.name[:60])
def test_committed_fixtures_load_as_raw_sessions(tmp_path: Path, fixture: Path,
                                                 compression: str) -> None:
    """Every committed fixture, envelopes restored and written raw (packed as DSH does),
    loads through the store with the same events."""
    header, events = decode_session(fixture.read_bytes(), projected=True).unwrap()
    text = encode_session(header, events, pack_chunks=True)
    _place(tmp_path, header, text, compression)
    store = JsonlSessionStore(tmp_path, compression=compression,  # type: ignore[arg-type]
                              clock=ManualClock(7))
    session = store.load(header.id)
    loaded = list(session.events)
    assert loaded[:len(events)] == list(events)
    assert check_balance(loaded).unwrap().is_closed
    store.release(header.id)
    assert list(store.load(header.id).events)[:len(loaded)] == loaded  # repaired file is stable


def test_inflight_fork_parent_gets_the_documented_closers(tmp_path: Path) -> None:
    """The parent caught at its subagent call is closed as DSH's repair would (INDEX.md)."""
    fixture = FIXTURES / "derived" / "fork-parent-inflight-at-subagent-call.DERIVED.jsonl"
    header, events = decode_session(fixture.read_bytes(), projected=True).unwrap()
    _place(tmp_path, header, encode_session(header, events), "none")
    loaded = list(JsonlSessionStore(tmp_path).load(header.id).events)
    result, step_end, turn_end = loaded[159:162]
    assert isinstance(result, ToolResultEvent)
    assert result.data.message.id == ("interrupted-tool-result-call_00_sAtKUseRzHRBvL4CF7XF1334"
                                      "-159")
    assert result.source_event_seqs == (158,)
    assert (result.data.turn, result.data.step) == (2, 1)
    assert isinstance(step_end, StepEndEvent) and step_end.data.turn == 2
    assert isinstance(turn_end, TurnEndEvent) and turn_end.data.reason == TurnInterrupted()
