"""The benchmark suite runs, its workloads are what they claim, its baselines really check.

No timing is asserted anywhere here: figures are only required to be well formed.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from benchmarks import baseline_dicts, bench_fork_shell
from benchmarks.bench_fork_memory import traced_size
from benchmarks.bench_prefix import check_long_log
from benchmarks.checks import Outcome, outcome_of_trace
from benchmarks.harness import Row, worker_parser
from benchmarks.workloads import (
    CHILD_OWN_EVENTS,
    IN_FLIGHT_EVENTS,
    parent_log,
    repeated_log,
    shell_parent,
)
from turnfork import core

ROOT = Path(__file__).resolve().parents[2]
K10_FIXTURE = ROOT / "tests" / "fixtures" / "dsh" / "generated" / "K10-parent.events.jsonl"
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _without_times_and_ids(jsonl: bytes) -> bytes:
    return _UUID.sub(b"<id>", re.sub(rb'"time":\d+', b'"time":0', jsonl))


def _check_rows(section: dict[str, Any]) -> None:
    assert section["rows"], "a benchmark that ran must report rows"
    for row in section["rows"]:
        assert isinstance(row["label"], str) and row["label"]
        assert row["unit"] in ("ns", "x", "B", "%", "tokens")
        assert isinstance(row["value"], float | int)
        # A size may be zero or negative (memory left after disposal), a share or a token
        # count zero; times and ratios not.
        assert row["unit"] in ("B", "%", "tokens") or row["value"] > 0
        assert row["unit"] == "B" or row["value"] >= 0
        # Sizes, and points inside a timed call, have no CPU figure.
        has_cpu = row["cpu_value"] is not None
        assert not has_cpu or (isinstance(row["cpu_value"], float | int)
                               and row["cpu_value"] > 0)
        if row["target"] is None:
            assert row["status"] is None and row["cpu_status"] is None
        else:
            assert row["status"] in ("MET", "MISSED")
            assert row["cpu_status"] in (("MET", "MISSED") if has_cpu else (None,))
    for by_name in section["timings"].values():
        for timing in by_name.values():
            samples = timing["samples_ns"]
            assert len(samples) == len(timing["cpu_samples_ns"]) == timing["rounds"] >= 1
            assert timing["cpu_median_ns"] > 0
            assert min(samples) == timing["min_ns"] > 0
            assert timing["min_ns"] <= timing["median_ns"] <= timing["max_ns"]
            assert timing["gc"] in ("on", "off")


@pytest.mark.slow
def test_quick_run_prints_a_table_and_writes_well_formed_json(tmp_path: Path) -> None:
    """`python -m benchmarks --quick` exits 0, prints every section and writes complete JSON."""
    output = tmp_path / "quick.json"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--output", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    results = json.loads(output.read_text(encoding="utf-8"))
    meta = results["meta"]
    assert meta["mode"] == "quick"
    assert meta["machine"]["cpus"] >= 1 and meta["machine"]["cpu"]
    assert meta["versions"]["python"] and meta["versions"]["msgspec"]
    assert meta["core_beartype"] == "on"
    assert set(results["benchmarks"]) == {"startup", "codec", "prefix", "surface",
                                          "fork-core", "fork-shell", "fork-floor",
                                          "fork-memory", "fork-load", "store", "formats",
                                          "large-logs", "prompt-cache", "turns"}
    for name, section in results["benchmarks"].items():
        assert f"== {name}:" in done.stdout
        assert section["unavailable"] is None
        _check_rows(section)
    large = {row["label"] for row in results["benchmarks"]["large-logs"]["rows"]}
    assert {"turnfork check / msgspec decode_lines", "turnfork show / msgspec decode_lines",
            "turnfork seed -o: peak RSS / file size"} <= large
    codec_rows = {row["label"] for row in results["benchmarks"]["codec"]["rows"]}
    assert "[gc on] ratio: ours / msgspec plain" in codec_rows
    units = {row["label"]: row["unit"] for row in results["benchmarks"]["fork-memory"]["rows"]}
    assert units["ours K=100: per child beyond its own events"] == "B"
    turns = {row["label"] for row in results["benchmarks"]["turns"]["rows"]}
    assert "[collected] one turn: K=1000 / K=10" in turns
    workers = results["benchmarks"]["fork-load"]["params"]["workers"]
    worker = workers["100 children of K=100"]
    assert worker["children"] == 100 and len(worker["rounds"]) == 1
    assert worker["peak_rss"] >= worker["before"]["rss"] > 0
    assert worker["after"]["rss_pins_released"] > 0
    traced = workers["300 children of K=100, traced"]
    assert traced["traced"] and len(traced["rounds"]) == 2
    assert traced["before"]["traced"] > 0


def test_k10_workload_is_dsh_fixture_shape() -> None:
    """The K=10 parent encodes to DSH's generated K10 log, up to times and message ids."""
    ours = parent_log(10).jsonl
    assert _without_times_and_ids(ours) == _without_times_and_ids(K10_FIXTURE.read_bytes())


def test_repeated_log_is_balanced_and_in_flight() -> None:
    """The long-log builder yields a balanced prefix and one open turn after it."""
    events = repeated_log(5_000)
    assert len(events) >= 5_000
    cut = check_long_log(events)
    assert cut == len(events) - IN_FLIGHT_EVENTS
    trace = core.trace_log(events).unwrap()
    assert trace.open_turn == trace.next_turn and trace.completed_prefix_length == cut


def _breakages() -> dict[str, Callable[[bytes], bytes]]:
    """Ways to break the K=3 parent's bytes, each caught by the core's trace."""
    return {
        "seq gap": lambda b: b.replace(b'"seq":40,', b'"seq":41,', 1),
        "chunk outside its step": lambda b: b.replace(b'"step":2,"chunk"', b'"step":3,"chunk"',
                                                      1),
        "result without call": lambda b: b.replace(b'"callId":"call-1","name"',
                                                   b'"callId":"call-x","name"', 1),
        "citation not earlier": lambda b: b.replace(b'"sourceEventSeqs":[12]',
                                                    b'"sourceEventSeqs":[99]', 1),
        "turn numbered twice": lambda b: b.replace(b'{"turn":3}', b'{"turn":2}', 1),
    }


def _pydantic_check(data: bytes) -> Outcome:
    from benchmarks import baseline_pydantic  # needs pydantic, which the test extra installs

    return baseline_pydantic.decode_and_check(data)


@pytest.mark.parametrize("breakage", sorted(_breakages()))
@pytest.mark.parametrize("checker", ["dicts", "pydantic"])
def test_baselines_find_what_the_core_finds(checker: str, breakage: str) -> None:
    """Each baseline checker flags a broken log at the seq where core.trace_log does."""
    good = parent_log(3).jsonl
    bad = _breakages()[breakage](good)
    assert bad != good
    check = baseline_dicts.decode_and_check if checker == "dicts" else _pydantic_check
    expected = outcome_of_trace(core.trace_log(core.decode_log(good).unwrap()).unwrap())
    assert check(good) == expected
    violation = core.trace_log(core.decode_log(bad).unwrap()).failure()
    found = check(bad)
    assert found.problem is not None
    assert found.length == violation.seq


def test_plain_msgspec_reads_as_many_records_as_the_core() -> None:
    """The practical-limit contender decodes the same number of records the core does."""
    log = parent_log(5)
    assert len(msgspec.json.Decoder().decode_lines(log.jsonl)) == len(log.events)


def _shape(events: Any) -> list[tuple[str, str | None]]:
    """Event types, with the chunk type for ``assistant/chunk``."""
    shape = []
    for event in events:
        record = json.loads(core.encode_log((event,)))
        chunk = record.get("data", {}).get("chunk") if record["type"] == "assistant/chunk" else None
        shape.append((record["type"], None if chunk is None else chunk["type"]))
    return shape


def test_shell_built_parent_has_dsh_turn_shape_and_is_mid_turn() -> None:
    """The shell-built K=10 parent is DSH's K10 log event for event, but for the one
    tool-call-delta chunk per call that our scripted model streams."""
    async def build() -> tuple[int, list[tuple[str, str | None]]]:
        parent = await shell_parent(10)
        shape = _shape(parent.agent.session.events)
        assert parent.agent.running and parent.agent.session.trace.open_turn == 11
        cut = parent.cut
        await parent.host.aclose()
        return cut, shape

    cut, ours = asyncio.run(build())
    dsh = _shape(core.decode_log(K10_FIXTURE.read_bytes()).unwrap())
    # Ours streams the call's arguments as one tool-call-delta (DSH's mock adapter streams none).
    assert ours.count(("assistant/chunk", "tool-call-delta")) == 10
    assert [s for s in ours if s != ("assistant/chunk", "tool-call-delta")] == dsh
    assert cut == 24 * 10 + 2


def test_fork_children_of_shell_parent_run_the_script_alike() -> None:
    """Ours and the naive fork give one K=3 parent's children the same seed, events, result."""
    async def check() -> int:
        parent = await shell_parent(3)
        bench_fork_shell.install_naive_fork(parent)
        try:
            return await bench_fork_shell._same_children(parent)
        finally:
            await parent.host.aclose()

    assert asyncio.run(check()) == 24 * 3 + 2
    assert CHILD_OWN_EVENTS == 29


def test_traced_size_counts_only_new_objects_once() -> None:
    """traced_size sums objects allocated while tracing, skipping older and already seen ones."""
    old = _fresh_text("o", 1000)
    tracemalloc.start()
    try:
        new = _fresh_text("n", 1000)
        # 32 slots: no tuple free list reuses memory allocated before tracing started.
        holder = (new, old, *([None] * 30))
        seen: set[int] = set()
        assert traced_size([holder], seen) == sys.getsizeof(holder) + sys.getsizeof(new)
        assert traced_size([holder, new], seen) == 0
    finally:
        tracemalloc.stop()


def _fresh_text(char: str, count: int) -> str:
    """A string allocated now (not a constant folded at compile time)."""
    return char * count


@pytest.mark.parametrize(("unit", "value", "shown"), [
    ("ns", 999.0, "999 ns"), ("ns", 1_500.0, "1.5 us"), ("ns", 2.5e6, "2.5 ms"),
    ("ns", 3e9, "3 s"), ("x", 1.234, "1.23x"), ("B", 12.4, "12 B"), ("B", 1_500.0, "1.5 KB"),
    ("B", -2.5e6, "-2.5 MB"), ("B", 3e9, "3 GB"), ("%", 0.9951, "99.51 %"),
    ("tokens", 12_345.4, "12,345 tok"),
])
def test_each_unit_shows_in_the_table_and_names_itself_in_the_json(
        unit: Any, value: float, shown: str) -> None:
    row = Row("figure", value, unit)
    assert row.shown() == shown
    assert row.shown(value) == shown
    assert row.as_json()["unit"] == unit


def test_worker_parser_takes_the_workload_and_requires_all_of_it() -> None:
    args = worker_parser("worker").parse_args(
        ["--worker", "--turns", "3", "--children", "2", "--rounds", "1"])
    assert (args.worker, args.turns, args.children, args.rounds) == (True, 3, 2, 1)
    with pytest.raises(SystemExit):
        worker_parser("worker").parse_args(["--worker", "--turns", "3", "--children", "2"])
