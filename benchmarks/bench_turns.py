"""One agent turn late in a long session against one early in a short one, side by side.

Two agents are built by the shell on one host each (memory store, the agent's own
:class:`shell.ScriptedModel` as made by default, which records every request): one with
``small`` completed turns (100), one with ``large`` (10,000). Each turn has the parent turn's
shape (:meth:`benchmarks.workloads.ShellSession.turn`: 24 events, two model calls, one tool
call). Measured, interleaved round by round as everywhere in the suite:

* **one turn**: ``followup`` + ``when_idle`` on each agent (each sample adds a turn, so the
  agents stand at turn ``small + r`` and ``large + r`` in round ``r``), with ``gc.collect()``
  before every sample ([collected]) and without ([warm]: each sample after an untimed turn);
* **a fork child's run**: ``start`` → ``run.result`` of a fork of each (idle) agent, the child
  running the fork benchmarks' script (one tool call, one text reply);
* **building**: the large agent's turns timed in blocks of ``large / 10`` while it is built:
  building is linear in N when the last block costs what the first did;
* **memory per turn**: tracemalloc over ``memory_turns`` (500) more turns of each agent, what
  stays allocated per turn after ``gc.collect()`` (the turn's events, the history's and the
  model's records of them, the amortized growth of the lists holding them).
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .bench_fork_load import rss
from .bench_fork_memory import size_row
from .bench_fork_shell import AsyncContender, measure_async
from .harness import Row, Section, Settings, Target, Timing
from .workloads import CHILD_OWN_EVENTS, ShellSession, child_request, shell_session, shell_workbench

__all__ = ["NAME", "TITLE", "run"]

NAME = "turns"
TITLE = "one agent turn at turn 10,000 vs turn 100, building a session, a fork child's run"


async def _build(turns: int, blocks: int) -> tuple[ShellSession, list[tuple[float, float]]]:
    """An agent with ``turns`` completed turns, and the (wall, CPU) ns of each block."""
    session = await shell_session()
    per_block = max(1, turns // blocks)
    timed: list[tuple[float, float]] = []
    while session.completed_turns < turns:
        cpu_start, start = time.process_time_ns(), time.perf_counter_ns()
        for _ in range(min(per_block, turns - session.completed_turns)):
            await session.turn()
        timed.append((time.perf_counter_ns() - start, time.process_time_ns() - cpu_start))
    return session, timed


def _turn_sample(session: ShellSession,
                 ) -> Callable[[], Awaitable[tuple[float, float, dict[str, float]]]]:
    async def sample() -> tuple[float, float, dict[str, float]]:
        cpu_start, start = time.thread_time_ns(), time.perf_counter_ns()
        await session.turn()
        return time.perf_counter_ns() - start, time.thread_time_ns() - cpu_start, {}

    return sample


def _fork_sample(session: ShellSession,
                 ) -> Callable[[], Awaitable[tuple[float, float, dict[str, float]]]]:
    runtime, request = session.host.subagents, child_request()

    async def sample() -> tuple[float, float, dict[str, float]]:
        cpu_start, start = time.thread_time_ns(), time.perf_counter_ns()
        run = await runtime.start("fork", request, parent=session.agent)
        result = await run.result
        elapsed, cpu = time.perf_counter_ns() - start, time.thread_time_ns() - cpu_start
        assert result.stop_reason == "completed", result.stop_reason
        assert len(run.own_events()) == CHILD_OWN_EVENTS
        await run.dispose()
        return elapsed, cpu, {}

    return sample


async def _retained_per_turn(session: ShellSession, turns: int) -> float:
    """Bytes that stay allocated per turn (after ``gc.collect()``), traced over ``turns``."""
    gc.collect()
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(turns):
            await session.turn()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return (after - before) / turns


async def _measure(sessions: Sequence[tuple[str, ShellSession]], rounds: int,
                   fork_rounds: int, memory_turns: int) -> dict[str, Any]:
    turns = [AsyncContender(f"turn {label}", _turn_sample(s)) for label, s in sessions]
    forks = [AsyncContender(f"fork child run {label}", _fork_sample(s)) for label, s in sessions]
    for _, session in sessions:
        session.use_child_model(2 * fork_rounds + 4, record_requests=False)
    return {
        "collected": await measure_async(turns, rounds=rounds),
        "warm": await measure_async(turns, rounds=rounds, collect=False),
        "fork": await measure_async(forks, rounds=fork_rounds),
        "retained": {label: await _retained_per_turn(s, memory_turns) for label, s in sessions},
    }


def _block_timing(name: str, blocks: list[tuple[float, float]]) -> Timing:
    return Timing(name=name, inner=1, gc="on", samples_ns=tuple(w for w, _ in blocks),
                  cpu_samples_ns=tuple(c for _, c in blocks))


def run(settings: Settings) -> Section:
    small, large = (10, 1000) if settings.quick else (100, 10_000)
    blocks = 10
    rounds = settings.rounds(full=41, quick=3)
    fork_rounds = settings.rounds(full=21, quick=3)
    # Enough turns that the amortized growth of the session's lists (a resize adds ~1/8 of a
    # list's length at once) averages out: < 1 KB per turn at K = 10,000.
    memory_turns = 50 if settings.quick else 500
    bench = shell_workbench()
    rss_start = rss()
    short, _ = bench.run(_build(small, 1))
    long, built = bench.run(_build(large, blocks))
    gc.collect()
    rss_built = rss()
    labels = (f"K={small}", f"K={large}")
    try:
        measured = bench.run(_measure(list(zip(labels, (short, long), strict=True)),
                                      rounds, fork_rounds, memory_turns))
    finally:
        for session in (short, long):
            bench.run(session.host.aclose())
    first, last = labels
    rows: list[Row] = []
    for mode in ("collected", "warm"):
        timed = measured[mode]
        judged = mode == "collected" and not settings.quick
        rows += [Row.time(f"[{mode}] one turn of the K={small} agent", timed[f"turn {first}"]),
                 Row.time(f"[{mode}] one turn of the K={large} agent", timed[f"turn {last}"]),
                 Row.ratio(f"[{mode}] one turn: K={large} / K={small}", timed[f"turn {last}"],
                           timed[f"turn {first}"], Target("<=", 1.3) if judged else None)]
    fork = measured["fork"]
    rows += [Row.time(f"fork child run (start -> result) of the K={small} agent",
                      fork[f"fork child run {first}"]),
             Row.time(f"fork child run (start -> result) of the K={large} agent",
                      fork[f"fork child run {last}"]),
             Row.ratio(f"fork child run: K={large} / K={small}", fork[f"fork child run {last}"],
                       fork[f"fork child run {first}"])]
    block = large // blocks
    block_timings = [_block_timing(f"block {i + 1}", [b]) for i, b in enumerate(built)]
    whole = _block_timing("blocks", built)
    rows += [
        Row(f"building K={large}: all {large:,} turns", sum(w for w, _ in built), "ns",
            cpu_value=sum(c for _, c in built)),
        Row.time(f"building: turns 1-{block:,} (first block)", block_timings[0]),
        Row.time(f"building: turns {large - block + 1:,}-{large:,} (last block)",
                 block_timings[-1]),
        Row.ratio("building: last block / first block (linear: ~1)", block_timings[-1],
                  block_timings[0], None if settings.quick else Target("<=", 1.3)),
        size_row(f"RSS growth: building K={small} and K={large} (process RSS)",
                 rss_built - rss_start),
    ]
    retained = measured["retained"]
    rows += [size_row(f"memory kept per turn at K={small} (tracemalloc, {memory_turns} turns)",
                      retained[first]),
             size_row(f"memory kept per turn at K={large} (tracemalloc, {memory_turns} turns)",
                      retained[last]),
             Row(f"memory kept per turn: K={large} / K={small}",
                 retained[last] / retained[first], "x",
                 None if settings.quick else Target("<=", 1.3))]
    notes = (
        f"{rounds} interleaved rounds per mode (fork child runs: {fork_rounds}); each turn "
        "sample adds a turn; [collected]: gc.collect() before every sample (target judged "
        "here); [warm]: each sample right after an untimed turn of the same agent",
        "memory store; each agent's model a ScriptedModel recording every request (the "
        "default); the fork children's a ScriptedModel(record_requests=False)",
        f"building K={large}: {blocks} blocks of {block:,} turns, wall ms: "
        + ", ".join(f"{w / 1e6:.0f}" for w, _ in built)
        + f" (median {whole.median_ns / 1e6:.0f}, min {min(whole.samples_ns) / 1e6:.0f}, "
        f"max {max(whole.samples_ns) / 1e6:.0f})",
    )
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows),
                   timings={"collected": measured["collected"], "warm": measured["warm"],
                            "fork": fork, "building": {"blocks": whole}},
                   params={"small": small, "large": large, "rounds": rounds,
                           "fork_rounds": fork_rounds, "memory_turns": memory_turns,
                           "retained_bytes_per_turn": retained,
                           "rss_growth_building": rss_built - rss_start})
