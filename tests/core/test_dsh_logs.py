"""Real DSH session logs decode, re-encode line by line, trace, and seed forks (issue 2, item 7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from returns.result import Success

from turnfork.core import (
    Event,
    SessionEndSeedEvent,
    SessionHeader,
    ToolCallEvent,
    TurnStartEvent,
    check_balance,
    completed_turn_prefix,
    decode_log,
    decode_session,
    encode_log,
    encode_session,
    trace_log,
)
from turnfork.core.log import codec  # its private lanes, compared below

DSH = Path(__file__).resolve().parent.parent / "fixtures" / "dsh"
GENERATED = DSH / "generated"
PROJECTED = sorted(DSH.glob("*.jsonl")) + sorted((DSH / "derived").glob("*.jsonl"))
RAW_LOGS = sorted(GENERATED.glob("*.events.jsonl"))
FORK = "examples__acp-agent__tests__snapshots__subagent-fork-in-process__session"
DERIVED_PARENT = DSH / "derived" / "fork-parent-inflight-at-subagent-call.DERIVED.jsonl"
ENVELOPE_KEYS = ("seq", "time", "seq0", "time0")


def _short(path: Path) -> str:
    return path.name.removeprefix("examples__").removesuffix(".jsonl")


def _lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line.strip()]


def _pairs(line: bytes) -> Any:
    """The JSON value with every object as its list of (key, value) pairs, in order."""
    return json.loads(line, object_pairs_hook=list)


def _without_envelope(value: Any) -> Any:
    return [(key, item) for key, item in value if key not in ENVELOPE_KEYS]


def _projected(path: Path) -> tuple[SessionHeader, tuple[Event, ...]]:
    return decode_session(path.read_bytes(), projected=True).unwrap()


def _raw_header(name: str) -> SessionHeader:
    data = (GENERATED / f"{name}.header.json").read_bytes()
    return msgspec.json.decode(data, type=SessionHeader)


def test_every_fixture_is_present() -> None:
    """The fixture set is complete, so the parametrised tests below cannot pass vacuously."""
    assert len(PROJECTED) == 19
    assert [p.name for p in RAW_LOGS] == ["K10-child0.events.jsonl", "K10-parent.events.jsonl"]


@pytest.mark.parametrize("path", PROJECTED, ids=_short)
def test_projected_fixture_round_trips_line_by_line(path: Path) -> None:
    """A projected fixture decodes and re-encodes (packed) to the same JSON, line by line."""
    data = path.read_bytes()
    header, events = decode_session(data, projected=True).unwrap()
    encoded = encode_session(header, events, pack_chunks=True)
    original, ours = _lines(data), _lines(encoded)
    assert len(ours) == len(original)
    assert json.loads(ours[0]) == json.loads(original[0])
    for number, (theirs, mine) in enumerate(zip(original[1:], ours[1:], strict=True), start=2):
        expected, actual = json.loads(theirs), json.loads(mine)
        for key in ENVELOPE_KEYS:
            expected.pop(key, None)
            actual.pop(key, None)
        assert actual == expected, f"line {number}"
        # Same keys in DSH's order, too.
        assert _without_envelope(_pairs(mine)) == _without_envelope(_pairs(theirs)), number
    assert decode_session(encoded).unwrap() == (header, events)


@pytest.mark.parametrize("path", PROJECTED, ids=_short)
def test_projected_fixture_traces_without_violation(path: Path) -> None:
    """Every projected fixture satisfies the trace's rules; all but the derived one are closed."""
    _, events = _projected(path)
    trace = trace_log(events)
    assert isinstance(trace, Success), str(trace.failure())
    if path.parent == DSH:
        assert isinstance(check_balance(events), Success)


@pytest.mark.parametrize("path", RAW_LOGS, ids=lambda p: p.name)
def test_generated_log_round_trips_and_traces(path: Path) -> None:
    """A raw DSH runtime dump decodes, re-encodes to the same JSON line by line, and traces."""
    data = path.read_bytes()
    events = decode_log(data).unwrap()
    encoded = encode_log(events)
    original, ours = _lines(data), _lines(encoded)
    assert len(ours) == len(original) == len(events)
    for number, (theirs, mine) in enumerate(zip(original, ours, strict=True), start=1):
        assert json.loads(mine) == json.loads(theirs), f"line {number}"
        assert _pairs(mine) == _pairs(theirs), f"line {number}"
    trace = trace_log(events)
    assert isinstance(trace, Success), str(trace.failure())


def test_every_fork_child_is_covered() -> None:
    """Exactly the two fork children below carry a seedLength."""
    seeded = [p.name for p in PROJECTED if _projected(p)[0].seed_length is not msgspec.UNSET]
    assert seeded == [f"{FORK}.1.jsonl"]
    assert _raw_header("K10-child0").seed_length == 232
    assert _raw_header("K10-parent").seed_length is msgspec.UNSET


def test_projected_fork_child_seed_is_the_parents_prefix_at_the_fork() -> None:
    """The fork child's first seedLength events equal the in-flight parent's prefix (42)."""
    _, parent = _projected(DSH / f"{FORK}.jsonl")
    child_header, child = _projected(DSH / f"{FORK}.1.jsonl")
    _, in_flight = _projected(DERIVED_PARENT)
    # The derived log is the parent as it stood when it called subagent_fork.
    assert in_flight == parent[:len(in_flight)]
    last = in_flight[-1]
    assert isinstance(last, ToolCallEvent) and last.data.name == "subagent_fork"
    assert trace_log(in_flight).unwrap().open_turn == 2
    prefix = completed_turn_prefix(in_flight)
    assert len(prefix) == 42
    assert child_header.seed_length == len(prefix)
    assert list(child[:42]) == list(prefix)
    assert isinstance(child[42], SessionEndSeedEvent)
    # The full parent went on to finish turn 2, so its own prefix is the whole log.
    assert len(completed_turn_prefix(parent)) == len(parent)


def test_generated_fork_child_seed_is_the_parents_prefix() -> None:
    """K10: the child's first seedLength events equal the in-flight parent's prefix."""
    parent = decode_log((GENERATED / "K10-parent.events.jsonl").read_bytes()).unwrap()
    child = decode_log((GENERATED / "K10-child0.events.jsonl").read_bytes()).unwrap()
    seed_length = _raw_header("K10-child0").seed_length
    prefix = completed_turn_prefix(parent)
    assert len(prefix) == seed_length == 232
    assert list(child[:232]) == list(prefix)
    assert isinstance(child[232], SessionEndSeedEvent)
    # The child's first own turn takes the number of the parent's in-flight turn.
    open_turn = trace_log(parent).unwrap().open_turn
    first_own = next(e for e in child[232:] if isinstance(e, TurnStartEvent))
    assert first_own.data.turn == open_turn == 11


def _lane_agreement(data: bytes) -> None:
    fast = codec._decode_fast(data)
    lines = data.split(b"\n")
    assert fast is not None, "the common case must not need the line-by-line lane"
    assert Success(fast) == codec._decode_lines(lines, 1, False)


@pytest.mark.parametrize("path", PROJECTED + RAW_LOGS, ids=_short)
def test_both_decoding_lanes_read_every_dsh_log_alike(path: Path) -> None:
    """The whole-text lane and the line-by-line lane give the same events for every log we
    hold, packed or not (the fast lane never decides alone)."""
    if path in RAW_LOGS:
        _lane_agreement(path.read_bytes())
        return
    _, events = _projected(path)
    for pack in (False, True):
        _lane_agreement(encode_log(events, pack_chunks=pack))
