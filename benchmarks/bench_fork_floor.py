"""Fork start against its floor: the least any Python fork must do, in the same run (issue 28).

The parents are :mod:`benchmarks.bench_fork_shell`'s (real agents built by the shell,
mid-turn), at K = 10 and 1,000 (10 and 100 with ``--quick``). Contenders, interleaved round by
round:

* **real**: ``await host.subagents.start("fork", request, parent=agent)`` → the child is
  published, as ``fork-shell`` measures it;
* **floor**: what no fork can skip, with the shell's own pieces and nothing else: a child
  session over a view of the parent's log (``host.sessions.create`` with the parent's
  completed-turn prefix and its trace at the cut: the header, the view, ``session/end-seed``),
  an agent object over it (``host.build_agent``), and a scheduled task (the task that will run
  the child). No plan, no descriptor, no policy events, no prompt sections, no checkpoint, no
  publication, no observers, no run object.

Both are measured ``[collected]`` (``gc.collect()`` before every sample) and ``[warm]`` (each
sample right after an untimed one of the same contender). Target: real ≤ 2× floor, both ways, at
both K. Each child is disposed (the floor's: its task awaited, its session deleted) outside the
clock.

``python -m benchmarks.bench_fork_floor --profile`` prints a cProfile of the real start at
K = 1,000 (top entries by cumulative and by own time).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys
import time
from collections.abc import Awaitable, Callable, Sequence

from turnfork import core
from turnfork.shell.subagents.providers import discard_child

from .bench_fork_shell import AsyncContender, fork_start_sample, measure_async
from .harness import Row, Section, Settings, Target, Timing, report_section
from .workloads import CHILD_PROVIDER, ShellParent, child_request, shell_workbench

__all__ = ["NAME", "TITLE", "profile", "run"]

NAME = "fork-floor"
TITLE = "fork start against its floor (session over a view, agent object, scheduled task)"


async def _nothing() -> None:
    return None


def _floor_sample(parent: ShellParent,
                  ) -> Callable[[], Awaitable[tuple[float, float, dict[str, float]]]]:
    host = parent.host
    agent = parent.agent

    async def sample() -> tuple[float, float, dict[str, float]]:
        cpu_start, start = time.thread_time_ns(), time.perf_counter_ns()
        prefix, trace = agent.session.completed_prefix()
        header = core.child_header(agent.session.header, child_id=host.ids(),
                                   created_at=host.clock(), depth=1, seed_length=len(prefix))
        session = host.sessions.create(header, seed=prefix, seed_trace=trace, clock=host.clock)
        child = host.build_agent(session, provider=CHILD_PROVIDER, model="m")
        task = asyncio.get_running_loop().create_task(_nothing())
        elapsed, cpu = time.perf_counter_ns() - start, time.thread_time_ns() - cpu_start
        await task
        await child.dispose()
        discard_child(host, session.id)
        return elapsed, cpu, {}

    return sample


async def _measure(parents: Sequence[ShellParent], rounds: int) -> dict[str, dict[str, Timing]]:
    contenders: list[AsyncContender] = []
    for parent in parents:
        parent.use_child_model(4 * (rounds + 4), record_requests=False)
        k = parent.completed_turns
        contenders.append(AsyncContender(f"real K={k}", fork_start_sample(parent)))
        contenders.append(AsyncContender(f"floor K={k}", _floor_sample(parent)))
    return {"collected": await measure_async(contenders, rounds=rounds),
            "warm": await measure_async(contenders, rounds=rounds, collect=False)}


def run(settings: Settings) -> Section:
    sizes = (10, 100) if settings.quick else (10, 1000)
    rounds = settings.rounds(full=41, quick=3)
    bench = shell_workbench()
    parents = [bench.parent(k) for k in sizes]
    timings = bench.run(_measure(parents, rounds))
    rows: list[Row] = []
    for mode in ("collected", "warm"):
        timed = timings[mode]
        for parent in parents:
            k = parent.completed_turns
            real, floor = timed[f"real K={k}"], timed[f"floor K={k}"]
            rows += [Row.time(f"[{mode}] real K={k}: start -> published", real),
                     Row.time(f"[{mode}] floor K={k}: session over a view + agent + task",
                              floor),
                     Row.ratio(f"[{mode}] real / floor K={k}", real, floor,
                               Target("<=", 2.0, "(issue 28)"))]
    notes = (f"{rounds} interleaved rounds; GC on; [collected]: gc.collect() before every "
             "sample; [warm]: each sample right after an untimed one of the same contender",
             "parents as fork-shell's (built by the shell, mid-turn); every child disposed "
             "outside the clock")
    return Section(NAME, TITLE, notes, tuple(rows), timings=timings,
                   params={"completed_turns": list(sizes), "rounds": rounds})


def profile(starts: int = 2000, top: int = 25) -> str:
    """cProfile of ``starts`` real fork starts at K = 1,000 (each run disposed, inside the
    profile too: the report names what a start costs; disposal shows apart)."""
    bench = shell_workbench()
    parent = bench.parent(1000)
    parent.use_child_model(4 * (starts + 4), record_requests=False)
    runtime = parent.host.subagents
    request = child_request()

    async def starts_only(profiler: cProfile.Profile) -> None:
        for _ in range(starts):
            profiler.enable()
            run = await runtime.start("fork", request, parent=parent.agent)
            profiler.disable()
            await run.dispose()

    profiler = cProfile.Profile()
    bench.run(starts_only(profiler))
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_fork_floor")
    parser.add_argument("--quick", action="store_true", help="few rounds")
    parser.add_argument("--profile", action="store_true",
                        help="print a cProfile of the real start at K = 1,000 instead")
    args = parser.parse_args(argv)
    if args.profile:
        print(profile())
        return 0
    return report_section(run, args.quick)


if __name__ == "__main__":
    sys.exit(main())

