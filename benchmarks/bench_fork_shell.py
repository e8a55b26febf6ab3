"""Fork start through the shell: ``start()`` called → child published, at K = 10, 100, 1,000.

The parents are real agents built by the shell (:func:`benchmarks.workloads.shell_parent`), each
mid-turn (its model hangs in turn K+1). Contenders, interleaved round by round:

* **ours**: ``await host.subagents.start("fork", request, parent=agent)``; the awaited call
  returns once the child is published and prompted. The time at which the runtime's
  ``SubagentStart`` observer fires is recorded beside it.
* **naive** (what DSH does on every fork): the same start through a provider whose seed is a
  copy of the parent's completed prefix (``tuple(...)``) re-validated from scratch
  (``core.trace_log``); the child session is then created from the copy. Everything else in the
  start is identical, so the ratio isolates the copy and the replay.
* **full run** (context for DSH's ``fullChildRunMs``): ours, from ``start()`` to
  ``await run.result`` with the child's script (one tool call, one text reply) run through.

Each run is disposed after its sample, outside the timed region. Before timing, both forks of
each parent are run to completion once and must give the same seed, the same own events and the
same result.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from turnfork import core

from .harness import Row, Section, Settings, Target, Timing
from .workloads import (
    CHILD_OWN_EVENTS,
    ShellParent,
    child_request,
    shell_workbench,
)

__all__ = [
    "NAIVE_PROVIDER",
    "NAME",
    "TITLE",
    "AsyncContender",
    "fork_start_sample",
    "install_naive_fork",
    "measure_async",
    "run",
]

NAME = "fork-shell"
TITLE = "fork start through the shell: start() called -> child published, ours vs naive copy"

#: Where :func:`install_naive_fork` registers the baseline provider.
NAIVE_PROVIDER = "naive-fork"


def install_naive_fork(parent: ShellParent) -> None:
    """Register the naive-fork baseline provider on the parent's host (once)."""
    from turnfork.shell import ForkProvider

    class NaiveForkProvider(ForkProvider):
        """A fork that pays what a fork without views pays: it copies the parent's completed
        prefix and re-validates the copy before the child is built."""

        async def start(self, runtime: Any, request: Any, *, parent: Any, signal: Any) -> Any:
            prefix, _ = parent.session.completed_prefix()
            copy = tuple(prefix)
            if copy:
                core.trace_log(copy).unwrap()
            return await super().start(runtime, request, parent=parent, signal=signal)

    runtime = parent.host.subagents
    if runtime.get_provider(NAIVE_PROVIDER) is None:
        runtime.register_provider(NaiveForkProvider(NAIVE_PROVIDER))


# --------------------------------------------------------------------------- async timing


@dataclass(frozen=True)
class AsyncContender:
    """One side of an async comparison: ``sample()`` times itself and returns
    (wall ns, thread CPU ns, extra marks in ns) for one call; cleanup stays outside the clock."""

    name: str
    sample: Callable[[], Awaitable[tuple[float, float, dict[str, float]]]]


async def measure_async(contenders: Sequence[AsyncContender], *, rounds: int,
                        collect: bool = True) -> dict[str, Timing]:
    """:func:`benchmarks.harness.measure` for coroutines: one warm-up round, then ``rounds``
    interleaved rounds whose order rotates; GC stays on. With ``collect``, ``gc.collect()``
    runs before every sample (as in the rest of the suite); without it, every sample is
    preceded by one untimed call of the same contender instead, so that no sample pays for the
    garbage and the cache misses the previous contender left behind.

    Extra marks a sample returns become timings named ``"<contender> / <mark>"``.
    """
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    for contender in contenders:
        if collect:
            gc.collect()
        await contender.sample()
    walls: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    count = len(contenders)
    for round_no in range(rounds):
        shift = round_no % count
        for contender in (*contenders[shift:], *contenders[:shift]):
            if collect:
                gc.collect()
            else:
                await contender.sample()
            wall, cpu, marks = await contender.sample()
            walls.setdefault(contender.name, []).append(wall)
            cpus.setdefault(contender.name, []).append(cpu)
            for mark, value in marks.items():
                walls.setdefault(f"{contender.name} / {mark}", []).append(value)
                # A mark is a point inside the sample: its CPU figure is the sample's.
                cpus.setdefault(f"{contender.name} / {mark}", []).append(cpu)
    return {name: Timing(name=name, samples_ns=tuple(samples), cpu_samples_ns=tuple(cpus[name]))
            for name, samples in walls.items()}


# --------------------------------------------------------------------------- the forks


def fork_start_sample(parent: ShellParent, *, durable: bool = False,
                      ) -> Callable[[], Awaitable[tuple[float, float, dict[str, float]]]]:
    """A sample of ``runtime.start("fork", …)`` until the child is published; with ``durable``,
    the mark ``durable`` too: until the child's first batch is durable (``wait_durable()``).
    Each run is disposed outside the clock."""
    runtime = parent.host.subagents
    request = child_request()

    async def sample() -> tuple[float, float, dict[str, float]]:
        cpu_start, start = time.thread_time_ns(), time.perf_counter_ns()
        run = await runtime.start("fork", request, parent=parent.agent)
        published, cpu = time.perf_counter_ns() - start, time.thread_time_ns() - cpu_start
        if durable:
            await run.local_agent.session.wait_durable()
        marks = {"durable": time.perf_counter_ns() - start} if durable else {}
        await run.dispose()
        return published, cpu, marks

    return sample


class _Observed:
    """Records when the runtime's ``SubagentStart`` observer fires, by run id."""

    def __init__(self) -> None:
        self.at: dict[str, int] = {}

    def __call__(self, event: object) -> None:
        from turnfork.shell.subagents import SubagentStart

        if isinstance(event, SubagentStart):
            self.at[event.id] = time.perf_counter_ns()


def _fork_sample(parent: ShellParent, provider: str, observed: _Observed, *, full: bool,
                 ) -> Callable[[], Awaitable[tuple[float, float, dict[str, float]]]]:
    runtime = parent.host.subagents
    request = child_request()

    async def sample() -> tuple[float, float, dict[str, float]]:
        cpu_start, start = time.thread_time_ns(), time.perf_counter_ns()
        run = await runtime.start(provider, request, parent=parent.agent)
        if full:
            result = await run.result
        elapsed, cpu = time.perf_counter_ns() - start, time.thread_time_ns() - cpu_start
        seen = observed.at.pop(run.id) - start
        if full and result.stop_reason != "completed":
            raise AssertionError(f"child {run.id} stopped {result.stop_reason}")
        await run.dispose()
        return elapsed, cpu, {} if full else {"observer": seen}

    return sample


async def _same_children(parent: ShellParent) -> int:
    """Run one child of each fork to completion; they must agree. Returns the seed length."""
    runtime = parent.host.subagents
    ours = await runtime.start("fork", child_request(), parent=parent.agent)
    naive = await runtime.start(NAIVE_PROVIDER, child_request(), parent=parent.agent)
    try:
        results = await asyncio.gather(ours.result, naive.result)
        assert results[0] == results[1] and results[0].stop_reason == "completed", results
        cut = parent.cut
        assert ours.seed_length == naive.seed_length == cut
        ours_events = ours.local_agent.session.events
        naive_events = naive.local_agent.session.events
        assert tuple(ours_events[:cut]) == tuple(naive_events[:cut])
        assert tuple(ours_events[:cut]) == tuple(parent.agent.session.events[:cut])
        own = [type(event) for event in ours.own_events()]
        assert own == [type(event) for event in naive.own_events()]
        assert len(own) == CHILD_OWN_EVENTS, len(own)
        return cut
    finally:
        await asyncio.gather(ours.dispose(), naive.dispose())


async def _measure(parents: Sequence[ShellParent], rounds: int, full_rounds: int,
                   ) -> dict[str, dict[str, Timing]]:
    observed = _Observed()
    starts: list[AsyncContender] = []
    fulls: list[AsyncContender] = []
    for parent in parents:
        install_naive_fork(parent)
        # Enough script for every child the samples start (each warm sample starts two); a
        # timing benchmark keeps no record of the children's requests.
        parent.use_child_model(4 * (rounds + full_rounds + 4), record_requests=False)
        await _same_children(parent)
        parent.host.subagents.subscribe(observed)
        k = parent.completed_turns
        starts.append(AsyncContender(f"ours K={k}",
                                     _fork_sample(parent, "fork", observed, full=False)))
        starts.append(AsyncContender(f"naive K={k}",
                                     _fork_sample(parent, NAIVE_PROVIDER, observed, full=False)))
        fulls.append(AsyncContender(f"ours full run K={k}",
                                    _fork_sample(parent, "fork", observed, full=True)))
    return {"collected": await measure_async(starts, rounds=rounds),
            "warm": await measure_async(starts, rounds=rounds, collect=False),
            "full run": await measure_async(fulls, rounds=full_rounds)}


def _start_rows(parents: Sequence[ShellParent], timed: dict[str, Timing], mode: str,
                judged: bool) -> list[Row]:
    rows: list[Row] = []
    for parent in parents:
        k = parent.completed_turns
        ours, naive = timed[f"ours K={k}"], timed[f"naive K={k}"]
        target = Target("<=", 1e6, "(1 ms)") if judged and k == 1000 else None
        rows.append(Row(f"[{mode}] ours K={k} ({parent.events:,} events): start -> published",
                        ours.median_ns, "ns", target, ours.cpu_median_ns))
        # The observer fires inside the start: its time has no CPU figure of its own.
        rows.append(Row(f"[{mode}] ours K={k}: start -> SubagentStart observer",
                        timed[f"ours K={k} / observer"].median_ns, "ns"))
        rows.append(Row.time(f"[{mode}] naive K={k}: copy + re-validate, start -> published",
                             naive))
        rows.append(Row.ratio(f"[{mode}] speedup K={k}: naive / ours", naive, ours))
    first, last = parents[0].completed_turns, parents[-1].completed_turns
    rows.append(Row.ratio(f"[{mode}] flatness: ours K={last} / ours K={first}",
                          timed[f"ours K={last}"], timed[f"ours K={first}"],
                          Target("<=", 1.5) if judged else None))
    return rows


def run(settings: Settings) -> Section:
    sizes = (10, 100) if settings.quick else (10, 100, 1000)
    rounds = settings.rounds(full=41, quick=3)
    full_rounds = settings.rounds(full=21, quick=3)
    bench = shell_workbench()
    parents = [bench.parent(k) for k in sizes]
    timings = bench.run(_measure(parents, rounds, full_rounds))

    rows = [*_start_rows(parents, timings["collected"], "collected", judged=True),
            *_start_rows(parents, timings["warm"], "warm", judged=False)]
    full = timings["full run"]
    for parent in parents:
        k = parent.completed_turns
        rows.append(Row.time(f"ours K={k}: start -> result (child ran its script)",
                             full[f"ours full run K={k}"]))
    first, last = sizes[0], sizes[-1]
    rows.append(Row.ratio(f"full run: ours K={last} / ours K={first}",
                          full[f"ours full run K={last}"], full[f"ours full run K={first}"]))
    notes = (
        f"{rounds} interleaved rounds (full runs: {full_rounds}); GC on; [collected]: "
        "gc.collect() before every sample, as in the rest of the suite (targets judged "
        "here); [warm]: no forced collection, each sample right after an untimed start of "
        "the same fork; each run disposed after its sample, outside the clock",
        "parents built by the shell and the scripted model, mid-turn (model hanging); "
        f"child script: one tool call, one text reply ({CHILD_OWN_EVENTS} own events), "
        "played by a ScriptedModel(record_requests=False)",
        "both forks of each parent give the same seed, own events and result "
        "(checked before timing)",
    )
    return Section(
        name=NAME, title=TITLE, notes=notes, rows=tuple(rows), timings=timings,
        params={"completed_turns": list(sizes),
                "events": {str(p.completed_turns): p.events for p in parents},
                "seed_length": {str(p.completed_turns): p.cut for p in parents},
                "parent_build_seconds": {str(p.completed_turns): round(p.build_seconds, 3)
                                         for p in parents},
                "rounds": rounds, "full_rounds": full_rounds})
