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
* **building**: the large agent (10,000 turns) is built side by side with one of a tenth of
  its turns, in ten interleaved steps: building is linear in N when a turn costs the same in
  both builds;
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


async def _build(turns: int) -> ShellSession:
    session = await shell_session()
    for _ in range(turns):
        await session.turn()
    return session


async def _build_side_by_side(short: int, long: int, steps: int,
                              ) -> tuple[ShellSession, ShellSession, list[tuple[float, ...]]]:
    """Build a ``short``-turn and a ``long``-turn agent in ``steps`` interleaved steps (each
    step runs 1/steps of each build, the order alternating), so that drift of the machine hits
    both alike. Returns both and, per step, (short wall, short CPU, long wall, long CPU) ns."""
    sessions = (await shell_session(), await shell_session())
    per_step = (short // steps, long // steps)
    timed: list[tuple[float, ...]] = []
    for step in range(steps):
        figures: dict[int, tuple[int, int]] = {}
        for which in ((0, 1) if step % 2 == 0 else (1, 0)):
            cpu_start, start = time.process_time_ns(), time.perf_counter_ns()
            for _ in range(per_step[which]):
                await sessions[which].turn()
            figures[which] = (time.perf_counter_ns() - start, time.process_time_ns() - cpu_start)
        timed.append((*figures[0], *figures[1]))
    return sessions[0], sessions[1], timed


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
    rounds = settings.rounds(full=41, quick=3)
    fork_rounds = settings.rounds(full=21, quick=3)
    # Enough turns that the amortized growth of the session's lists (a resize adds ~1/8 of a
    # list's length at once) averages out: < 1 KB per turn at K = 10,000.
    memory_turns = 50 if settings.quick else 500
    bench = shell_workbench()
    rss_start = rss()
    short = bench.run(_build(small))
    built_short, long, built = bench.run(_build_side_by_side(large // 10, large, 10))
    bench.run(built_short.host.aclose())
    del built_short
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
    shorter = large // 10
    # Per turn: a step of the long build runs 10 times as many turns as one of the short.
    short_steps = _block_timing(f"building {shorter:,} turns: per turn",
                                [(w / (shorter / 10), c / (shorter / 10))
                                 for w, c, _, _ in built])
    long_steps = _block_timing(f"building {large:,} turns: per turn",
                               [(w / (large / 10), c / (large / 10)) for _, _, w, c in built])
    rows += [
        Row(f"building K={shorter:,}: all turns", sum(b[0] for b in built), "ns",
            cpu_value=sum(b[1] for b in built)),
        Row(f"building K={large:,}: all turns", sum(b[2] for b in built), "ns",
            cpu_value=sum(b[3] for b in built)),
        Row.time(f"building K={shorter:,}: per turn (median of the 10 steps)", short_steps),
        Row.time(f"building K={large:,}: per turn (median of the 10 steps)", long_steps),
        Row(f"building: per turn, K={large:,} / K={shorter:,} (linear: ~1)",
            (sum(b[2] for b in built) / large) / (sum(b[0] for b in built) / shorter), "x",
            None if settings.quick else Target("<=", 1.3),
            (sum(b[3] for b in built) / large) / (sum(b[1] for b in built) / shorter)),
        size_row(f"RSS growth: building K={small}, K={shorter:,} (disposed) and K={large:,}",
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
        f"building K={large // 10:,} and K={large:,} side by side in 10 interleaved steps "
        f"(each step: {large // 100:,} turns of the one, {large // 10:,} of the other); per-step "
        "ratio of the per-turn cost, long / short: "
        + ", ".join(f"{(b[2] / 10) / b[0]:.2f}" for b in built),
    )
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows),
                   timings={"collected": measured["collected"], "warm": measured["warm"],
                            "fork": fork, "building": {"short": short_steps, "long": long_steps}},
                   params={"small": small, "large": large, "rounds": rounds,
                           "fork_rounds": fork_rounds, "memory_turns": memory_turns,
                           "retained_bytes_per_turn": retained,
                           "rss_growth_building": rss_built - rss_start})
