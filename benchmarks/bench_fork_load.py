"""Concurrent fork children of the K = 1,000 parent, each running its script to the end.

Two workloads, each in a fresh subprocess (``python -m benchmarks.bench_fork_load --worker
...``), so that its peak RSS is its own: 1,000 children, three rounds (does a round leave the
process bigger than the one before?), and 10,000 children, one round; for the latter two more
subprocesses diagnose the memory: two rounds under tracemalloc from the start, and one round
with ``PYTHONMALLOC=malloc`` (every allocation served by glibc, so that ``malloc_trim`` can
return what was freed). The worker builds the parent with the shell (mid-turn, as in the other fork
benchmarks); every child's model is one shared ``ScriptedModel(record_requests=False)``. Each
round:

* starts N children concurrently (``asyncio.gather`` of N ``host.subagents.start`` calls) and
  times "all published" (the gather returned) and "all done" (every ``run.result`` awaited;
  each must be ``completed`` with its 27 own events);
* disposes every run, drops them, runs ``gc.collect()`` and reads the memory again.

Memory: RSS (``psutil``) and the interpreter's live allocations (``sys.getallocatedblocks()``)
before the first round (after the parent was built, ten warm-up children ran and
``gc.collect()``: code imported on first use is then in the baseline) and after each
disposal; peak RSS is the process's high-water mark ``VmHWM`` (it includes building the
parent); with ``--traced``, tracemalloc's traced memory before and after each round. The
process CPU time of each round is recorded beside its wall time. The timed rounds run without
tracemalloc: it slows the children down several times.

What is judged after a disposal is what the runtime controls: live allocator blocks and
traced memory. RSS after a disposal is shown as a diagnostic only: it is what CPython's and
glibc's allocators keep of freed memory (pymalloc frees an arena only when every block in it is
free), which no runtime decides.
"""

from __future__ import annotations

import asyncio
import ctypes
import dataclasses
import gc
import importlib
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .bench_fork_memory import settle, size_row
from .harness import Row, Section, Settings, Target, Timing, rounds_timing, worker_parser
from .workloads import CHILD_OWN_EVENTS, ShellParent, child_request, shell_parent

__all__ = ["NAME", "TITLE", "rss", "run", "run_children", "worker"]

NAME = "fork-load"
TITLE = ("1,000 and 10,000 concurrent fork children of one parent, each run to completion "
         "(fresh subprocesses)")

_ROOT = Path(__file__).resolve().parents[1]
#: Children run once before the baseline is read (see :func:`_rounds`).
_WARM_UP = 10


def rss() -> int:
    try:
        psutil = importlib.import_module("psutil")  # the bench extra (it ships no stubs)
    except ImportError:  # Linux without the bench extra: resident pages from /proc
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize()
    return int(psutil.Process().memory_info().rss)


def _trimmed_rss() -> int | None:
    """RSS after asking glibc to return its free memory (``malloc_trim(0)``); ``None``
    without glibc. A diagnostic: how much of the RSS is memory the allocator kept, not objects."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        return None
    return rss()


#: The length of the free list of awaiting objects that CPython's ``_asyncio`` keeps (its
#: ``FI_FREELIST_MAXLEN``): see :func:`_release_allocator_pins`.
_FUTURE_ITER_FREELIST = 255


async def _release_allocator_pins(model: Any) -> None:
    """A diagnostic, run after the measured rounds: release the few live blocks that keep
    pymalloc arenas of a round from being returned, so that the RSS left afterwards shows what
    those pins cost. Two are known: the shared model's ``last_request`` (the last child's
    request and, through its history view, that child's messages), and the up to 255 objects
    on ``_asyncio``'s free list of future iterators (one is made by every ``await`` of a future;
    the list keeps those freed while it had room, many of them allocated at the round's peak).
    The free list is emptied by holding 255 awaits, making 255 more, finishing the new ones
    first (they refill it) and the held ones last (the list is full: they are freed)."""
    model.last_request = None
    loop = asyncio.get_running_loop()

    async def wait(future: asyncio.Future[None]) -> None:
        await future

    async def hold(count: int) -> tuple[list[asyncio.Future[None]], list[asyncio.Task[None]]]:
        futures = [loop.create_future() for _ in range(count)]
        tasks = [loop.create_task(wait(future)) for future in futures]
        await asyncio.sleep(0)  # every task is now suspended on its future
        return futures, tasks

    async def finish(held: tuple[list[asyncio.Future[None]], list[asyncio.Task[None]]]) -> None:
        for future in held[0]:
            future.set_result(None)
        await asyncio.gather(*held[1])

    pinned = await hold(_FUTURE_ITER_FREELIST)
    fresh = await hold(_FUTURE_ITER_FREELIST)
    await finish(fresh)
    await finish(pinned)
    del pinned, fresh
    gc.collect()


def _peak_rss() -> int:
    """This process's peak RSS: ``VmHWM`` on Linux. (``ru_maxrss`` is not used there: across
    ``exec`` it keeps the high-water mark of the process that spawned the worker.)"""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


async def run_children(parent: ShellParent, provider: str, children: int,
                       ) -> tuple[list[Any], list[Any], float, float, float]:
    """Start ``children`` children of ``provider`` at once and await every result (each must
    be ``completed`` with its own events): the runs, their results, the ns until all were
    published and until all were done, and the process's CPU ns meanwhile."""
    runtime, request = parent.host.subagents, child_request()
    cpu_start, start = time.process_time_ns(), time.perf_counter_ns()
    runs = await asyncio.gather(*(runtime.start(provider, request, parent=parent.agent)
                                  for _ in range(children)))
    published = time.perf_counter_ns() - start
    results = await asyncio.gather(*(run.result for run in runs))
    done, cpu = time.perf_counter_ns() - start, time.process_time_ns() - cpu_start
    stops = {result.stop_reason for result in results}
    assert stops == {"completed"}, stops
    assert all(len(run.own_events()) == CHILD_OWN_EVENTS for run in runs)
    return runs, results, published, done, cpu


async def _round(parent: ShellParent, children: int) -> dict[str, float]:
    """Start ``children`` forks at once, await every result, dispose them all."""
    gc.collect()
    runs, results, published, done, cpu = await run_children(parent, "fork", children)
    rss_done = rss()
    await asyncio.gather(*(run.dispose() for run in runs))
    del runs, results
    await settle()
    gc.collect()
    return {"published_ns": published, "done_ns": done, "cpu_ns": cpu, "rss_done": rss_done,
            "rss_after": rss(), "blocks_after": sys.getallocatedblocks()}


async def _rounds(completed_turns: int, children: int, rounds: int, traced: bool,
                  ) -> dict[str, Any]:
    if traced:  # from the start, so that the baseline holds the parent (it slows the rounds)
        tracemalloc.start()
    parent = await shell_parent(completed_turns)
    # One ScriptedModel serves every child of every round: it keeps no record of them.
    model = parent.use_child_model(children * rounds + _WARM_UP, record_requests=False)
    host = parent.host
    # A few children first, so that code imported on first use and the caches every process
    # fills once are in the baseline (as in fork-memory), not counted against the children.
    await _round(parent, _WARM_UP)
    gc.collect()
    before = {"rss": rss(), "blocks": sys.getallocatedblocks(), "peak_rss": _peak_rss(),
              "traced": tracemalloc.get_traced_memory()[0]}
    tracemalloc.reset_peak()
    measured = []
    for _ in range(rounds):
        measured.append(await _round(parent, children))
        measured[-1]["traced_after"] = tracemalloc.get_traced_memory()[0]
    # Nothing of the children is left registered anywhere.
    runtime = host.subagents
    assert runtime.runs() == () and host.agents.list() == (parent.agent,)
    assert host.sessions.list() == (parent.agent.id,)
    after = {"rss": rss(), "blocks": sys.getallocatedblocks(),
             "traced_peak": tracemalloc.get_traced_memory()[1], "rss_trimmed": _trimmed_rss()}
    # A diagnostic after every measurement above (glibc's trim included): the same, once the
    # known pins of pymalloc's arenas are released.
    await _release_allocator_pins(model)
    after["rss_pins_released"] = _trimmed_rss() or rss()
    figures = {"completed_turns": completed_turns, "events": parent.events,
               "seed_length": parent.cut, "children": children, "traced": traced,
               "parent_build_seconds": parent.build_seconds, "before": before, "after": after,
               "rounds": measured, "peak_rss": _peak_rss()}
    tracemalloc.stop()
    await host.aclose()
    return figures


def worker(argv: Sequence[str]) -> int:
    """The subprocess's entry: run the rounds and print the figures as one JSON line."""
    parser = worker_parser("python -m benchmarks.bench_fork_load")
    parser.add_argument("--traced", action="store_true",
                        help="run under tracemalloc from the start (slower: not for timing)")
    args = parser.parse_args(argv)
    figures = asyncio.run(_rounds(args.turns, args.children, args.rounds, args.traced))
    print(json.dumps(figures))
    return 0


def _work(turns: int, children: int, rounds: int, traced: bool,
          allocator: str | None = None) -> dict[str, Any]:
    """Run a worker subprocess; ``allocator`` sets its ``PYTHONMALLOC``."""
    command = [sys.executable, "-m", "benchmarks.bench_fork_load", "--worker",
               "--turns", str(turns), "--children", str(children), "--rounds", str(rounds),
               *(["--traced"] if traced else [])]
    env = dict(os.environ)
    env.pop("PYTHONMALLOC", None)
    if allocator is not None:
        env["PYTHONMALLOC"] = allocator
    done = subprocess.run(command, cwd=_ROOT, capture_output=True, text=True, timeout=900,
                          check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"the fork-load worker failed ({done.returncode}):\n{done.stderr}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


@dataclass(frozen=True)
class _Load:
    """One workload of this benchmark and its targets (``None``: not judged)."""

    turns: int
    children: int
    rounds: int
    traced: bool
    done_within_s: float | None
    peak_rss_below: float | None
    judged: bool
    #: Subprocesses run for the rounds' RSS ratio (allocator state varies between processes):
    #: the ratio is their median; every other figure is the first one's.
    processes: int = 1
    #: Rounds of one more subprocess, a diagnostic: where RSS after dispose settles (0: none).
    long_rounds: int = 0


def _round_ratio(figures: dict[str, Any]) -> float:
    """RSS after the last round's dispose over RSS after the first's."""
    rounds = figures["rounds"]
    return float(rounds[-1]["rss_after"] / rounds[0]["rss_after"])


def _rows(load: _Load, all_figures: Sequence[dict[str, Any]], traced: dict[str, Any] | None,
          plain_malloc: dict[str, Any] | None, long_run: dict[str, Any] | None,
          ) -> tuple[list[Row], dict[str, Timing]]:
    figures = all_figures[0]
    measured = figures["rounds"]
    published = rounds_timing("all published", measured, "published_ns")
    finished = rounds_timing("all done", measured, "done_ns")
    before, after = figures["before"], figures["after"]
    children = load.children
    label = f"{children:,} children of K={load.turns:,}"
    judge = load.judged

    def target(op: Literal[">=", "<="], bound: float, note: str) -> Target | None:
        return Target(op, bound, note) if judge else None

    rows: list[Row] = [
        # Publication is a point inside the round: its CPU time is not measured apart.
        Row(f"{label} ({figures['events']:,} events): all published", published.median_ns,
            "ns"),
        Row(f"{label}: all done", finished.median_ns, "ns",
            None if load.done_within_s is None else
            target("<=", load.done_within_s * 1e9, f"({load.done_within_s:g} s)"),
            finished.cpu_median_ns),
        Row(f"{label}: per child, all done / {children:,}", finished.median_ns / children, "ns",
            cpu_value=finished.cpu_median_ns / children),
        size_row(f"{label}: peak RSS of the process (VmHWM)", figures["peak_rss"],
                 None if load.peak_rss_below is None else
                 target("<=", load.peak_rss_below, f"({load.peak_rss_below / 1e6:g} MB)")),
        size_row(f"{label}: RSS before the children (parent built)", before["rss"]),
        size_row(f"{label}: RSS with all children done (median)",
                 sorted(r["rss_done"] for r in measured)[len(measured) // 2]),
        size_row(f"{label}: RSS after dispose + gc.collect() (last round)",
                 measured[-1]["rss_after"]),
    ]
    if load.rounds > 1:
        ratios = sorted(_round_ratio(f) for f in all_figures)
        # The label stays the same from run to run; each process's ratio is in the notes.
        # RSS after a disposal is what CPython's and glibc's allocators keep, not what the
        # runtime holds: shown, not judged (traced memory and live blocks are judged below).
        rows += [Row(f"{label}: diagnostic: RSS after the last round / after round 1"
                     + (f" (median of {len(ratios)} processes)" if len(ratios) > 1 else ""),
                     ratios[len(ratios) // 2], "x"),
                 Row(f"{label}: RSS with all children done, last round / round 1",
                     measured[-1]["rss_done"] / measured[0]["rss_done"], "x")]
    rows += [
        Row(f"{label}: diagnostic: RSS after dispose / before",
            measured[-1]["rss_after"] / before["rss"], "x"),
        Row(f"{label}: live allocator blocks after dispose / before",
            measured[-1]["blocks_after"] / before["blocks"], "x",
            target("<=", 1.10, "(baseline + 10%)")),
    ]
    if after.get("rss_trimmed") is not None:
        rows.append(Row(f"{label}: diagnostic: RSS after dispose + malloc_trim(0) / before",
                        after["rss_trimmed"] / before["rss"], "x"))
    rows.append(Row(f"{label}: diagnostic: … and the known arena pins released (the model's "
                    "last request, asyncio's future-iterator free list) / before",
                    after["rss_pins_released"] / before["rss"], "x"))
    if traced is not None:
        base = traced["before"]["traced"]
        first, second = (r["traced_after"] for r in traced["rounds"])
        rows += [
            size_row(f"{label}: traced memory before the children (tracemalloc run)", base),
            size_row(f"{label}: traced memory left after round 1 (tables grown to hold N, "
                     "code imported on first use)", first - base),
            size_row(f"{label}: traced memory left by round 2 beyond round 1", second - first),
            Row(f"{label}: traced memory after round 2 / after round 1", second / first, "x",
                target("<=", 1.10, "(baseline + 10%)")),
            Row(f"{label}: diagnostic: traced memory after round 1 / before", first / base,
                "x"),
            size_row(f"{label}: traced peak above the baseline (tracemalloc run)",
                     traced["after"]["traced_peak"] - base),
        ]
    if long_run is not None:
        long_rounds = long_run["rounds"]
        rows += [
            Row(f"{label}: diagnostic, {len(long_rounds)} rounds: RSS after the last round / "
                "after round 1", _round_ratio(long_run), "x"),
            Row(f"{label}: diagnostic, {len(long_rounds)} rounds: highest RSS after a dispose / "
                "RSS with round 1's children all done",
                max(r["rss_after"] for r in long_rounds) / long_rounds[0]["rss_done"], "x"),
            Row(f"{label}: diagnostic, {len(long_rounds)} rounds: RSS with all children done, "
                "last round / round 1", long_rounds[-1]["rss_done"] / long_rounds[0]["rss_done"],
                "x"),
        ]
    if plain_malloc is not None and plain_malloc["after"]["rss_trimmed"] is not None:
        plain_before = plain_malloc["before"]["rss"]
        rows += [
            Row(f"{label}: diagnostic, PYTHONMALLOC=malloc: RSS after dispose / before",
                plain_malloc["rounds"][-1]["rss_after"] / plain_before, "x"),
            Row(f"{label}: diagnostic, PYTHONMALLOC=malloc: RSS after dispose + "
                "malloc_trim(0) / before", plain_malloc["after"]["rss_trimmed"] / plain_before,
                "x"),
        ]
    return rows, {f"{label}: all published": published, f"{label}: all done": finished}


def run(settings: Settings) -> Section:
    rounds = settings.rounds(full=3, quick=1)
    loads = ((_Load(100, 100, rounds, False, None, None, False),
              _Load(100, 300, 1, True, None, None, False)) if settings.quick else
             (_Load(1000, 1000, rounds, False, 5.0, 500e6, True, processes=5, long_rounds=8),
              _Load(1000, 10_000, settings.rounds(full=2, quick=1), True, 10.0, 1.5e9, True)))
    rows: list[Row] = []
    timings: dict[str, Timing] = {}
    workers: dict[str, Any] = {}
    notes: list[str] = []
    for load in loads:
        all_figures = [_work(load.turns, load.children, load.rounds, False)
                       for _ in range(load.processes)]
        figures = all_figures[0]
        # The memory diagnostics: two rounds under tracemalloc (the second shows what a round
        # leaves once the one-time costs are paid), and one round with every allocation
        # served by glibc (then malloc_trim can return what the children freed).
        traced = _work(load.turns, load.children, 2, True) if load.traced else None
        plain = (_work(load.turns, load.children, 1, False, allocator="malloc")
                 if load.traced else None)
        long_run = (_work(load.turns, load.children, load.long_rounds, False)
                    if load.long_rounds else None)
        load_rows, load_timings = _rows(load, all_figures, traced, plain, long_run)
        rows += load_rows
        timings.update(load_timings)
        name = f"{load.children} children of K={load.turns}"
        workers[name] = figures
        for index, more in enumerate(all_figures[1:], start=2):
            workers[f"{name}, process {index}"] = more
        if long_run is not None:
            workers[f"{name}, {load.long_rounds} rounds"] = long_run
        if traced is not None and plain is not None:
            workers[f"{name}, traced"] = traced
            workers[f"{name}, PYTHONMALLOC=malloc"] = plain
        blocks = [r["blocks_after"] for r in figures["rounds"]]
        notes.append(
            f"{name}: fresh subprocess, {load.rounds} timed round(s); parent built in "
            f"{figures['parent_build_seconds']:.1f} s; live blocks after each round: "
            + ", ".join(f"{b:,}" for b in blocks)
            + "; RSS after each round: "
            + "; ".join(", ".join(f"{r['rss_after'] / 1e6:.1f}" for r in f["rounds"])
                        for f in all_figures) + " MB"
            + ("" if load.processes == 1 else
               f" (each of {load.processes} processes; RSS after the last round / after "
               "round 1: " + ", ".join(f"{r:.3f}" for r in sorted(map(_round_ratio, all_figures)))
               + ")")
            + ("" if traced is None else
               "; then a second subprocess ran two rounds under tracemalloc from its start "
               f"(all done in {traced['rounds'][0]['done_ns'] / 1e9:.1f} s there) and a "
               "third one round with PYTHONMALLOC=malloc"))
    notes.insert(0, f"{_WARM_UP} warm-up children before the baseline; each round: N "
                    "concurrent forks (asyncio.gather of start), each child run "
                    f"to completion ({CHILD_OWN_EVENTS} own events) by one shared "
                    "ScriptedModel(record_requests=False), then all disposed and "
                    "gc.collect(); times are medians over the rounds, cpu = process CPU time; "
                    "RSS by psutil, peak = VmHWM (includes the parent build), live blocks by "
                    "sys.getallocatedblocks()")
    return Section(name=NAME, title=TITLE, notes=tuple(notes), rows=tuple(rows),
                   timings={"rounds": timings},
                   params={"loads": [dataclasses.asdict(load) for load in loads],
                           "workers": workers})


if __name__ == "__main__":
    sys.exit(worker(sys.argv[1:]))
