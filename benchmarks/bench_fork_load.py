"""1,000 concurrent fork children of the K = 1,000 parent, each running its script to the end.

Runs in a fresh subprocess (``python -m benchmarks.bench_fork_load --worker ...``), so its peak
RSS is its own. The worker builds the parent with the shell (mid-turn, as in the other fork
benchmarks), then for each round:

* starts N children concurrently (``asyncio.gather`` of N ``host.subagents.start`` calls) and
  times "all published" (the gather returned) and "all done" (every ``run.result`` awaited;
  each must be ``completed`` with its 27 own events);
* disposes every run, drops them, runs ``gc.collect()`` and reads the memory again.

Memory: RSS (``psutil``) and the interpreter's live allocations (``sys.getallocatedblocks()``:
every block the object allocator holds, whatever its size) before the first round (after the
parent was built and ``gc.collect()``) and after the last disposal; peak RSS is the process's
high-water mark ``VmHWM`` (it includes building the parent). The process CPU time of each round
is recorded beside its wall time. No tracemalloc here: it slows the children down several times.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import gc
import importlib
import json
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .bench_fork_memory import settle, size_row
from .harness import Row, Section, Settings, Target, Timing
from .workloads import CHILD_OWN_EVENTS, child_request, shell_parent

__all__ = ["NAME", "TITLE", "rss", "run", "worker"]

NAME = "fork-load"
TITLE = "concurrent fork children of one parent, each run to completion (fresh subprocess)"

_ROOT = Path(__file__).resolve().parents[1]


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


async def _rounds(completed_turns: int, children: int, rounds: int) -> dict[str, Any]:
    parent = await shell_parent(completed_turns)
    host = parent.host
    runtime = host.subagents
    request = child_request()
    gc.collect()
    before = {"rss": rss(), "blocks": sys.getallocatedblocks(), "peak_rss": _peak_rss()}
    measured: list[dict[str, float]] = []
    for _ in range(rounds):
        gc.collect()
        cpu_start, start = time.process_time_ns(), time.perf_counter_ns()
        runs = await asyncio.gather(*(runtime.start("fork", request, parent=parent.agent)
                                      for _ in range(children)))
        published = time.perf_counter_ns() - start
        results = await asyncio.gather(*(run.result for run in runs))
        done, cpu = time.perf_counter_ns() - start, time.process_time_ns() - cpu_start
        stops = {result.stop_reason for result in results}
        assert stops == {"completed"}, stops
        assert all(len(run.own_events()) == CHILD_OWN_EVENTS for run in runs)
        rss_done = rss()
        await asyncio.gather(*(run.dispose() for run in runs))
        del runs, results
        await settle()
        gc.collect()
        measured.append({"published_ns": published, "done_ns": done, "cpu_ns": cpu,
                         "rss_done": rss_done, "rss_after": rss(),
                         "blocks_after": sys.getallocatedblocks()})
    # Nothing of the children is left registered anywhere.
    assert runtime.runs() == () and host.agents.list() == (parent.agent,)
    assert host.sessions.list() == (parent.agent.id,)
    after = {"rss": rss(), "blocks": sys.getallocatedblocks(), "rss_trimmed": _trimmed_rss()}
    figures = {"completed_turns": completed_turns, "events": parent.events,
               "seed_length": parent.cut, "children": children,
               "parent_build_seconds": parent.build_seconds, "before": before, "after": after,
               "rounds": measured, "peak_rss": _peak_rss()}
    await host.aclose()
    return figures


def worker(argv: Sequence[str]) -> int:
    """The subprocess's entry: run the rounds and print the figures as one JSON line."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_fork_load")
    parser.add_argument("--worker", action="store_true", required=True)
    parser.add_argument("--turns", type=int, required=True)
    parser.add_argument("--children", type=int, required=True)
    parser.add_argument("--rounds", type=int, required=True)
    args = parser.parse_args(argv)
    figures = asyncio.run(_rounds(args.turns, args.children, args.rounds))
    print(json.dumps(figures))
    return 0


def _timing(name: str, rounds: Sequence[dict[str, float]], key: str) -> Timing:
    return Timing(name=name, inner=1, gc="on", samples_ns=tuple(r[key] for r in rounds),
                  cpu_samples_ns=tuple(r["cpu_ns"] for r in rounds))


def run(settings: Settings) -> Section:
    turns, children = (100, 100) if settings.quick else (1000, 1000)
    rounds = settings.rounds(full=3, quick=1)
    command = [sys.executable, "-m", "benchmarks.bench_fork_load", "--worker",
               "--turns", str(turns), "--children", str(children), "--rounds", str(rounds)]
    done = subprocess.run(command, cwd=_ROOT, capture_output=True, text=True, timeout=600,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the fork-load worker failed ({done.returncode}):\n{done.stderr}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    measured = figures["rounds"]
    published = _timing("all published", measured, "published_ns")
    finished = _timing("all done", measured, "done_ns")
    before, after = figures["before"], figures["after"]
    judged = turns == 1000 and children == 1000
    label = f"{children:,} children of K={turns:,} ({figures['events']:,} events)"
    rows: list[Row] = [
        # Publication is a point inside the round: its CPU time is not measured apart.
        Row(f"{label}: all published", published.median_ns, "ns"),
        Row(f"{label}: all done", finished.median_ns, "ns",
            Target("<=", 5e9, "(5 s)") if judged else None, finished.cpu_median_ns),
        Row(f"per child: all done / {children:,}", finished.median_ns / children, "ns",
            cpu_value=finished.cpu_median_ns / children),
        size_row("peak RSS of the process (VmHWM)", figures["peak_rss"],
                 Target("<=", 500e6, "(500 MB)") if judged else None),
        size_row("RSS before the children (parent built)", before["rss"]),
        size_row("RSS with all children done (median)",
                 sorted(r["rss_done"] for r in measured)[len(measured) // 2]),
        size_row("RSS after dispose + gc.collect() (last round)", after["rss"]),
        Row("RSS after dispose / before", after["rss"] / before["rss"], "x",
            Target("<=", 1.10, "(baseline + 10%)") if judged else None),
        Row("live allocator blocks after dispose / before", after["blocks"] / before["blocks"],
            "x", Target("<=", 1.10, "(baseline + 10%)") if judged else None),
    ]
    if after["rss_trimmed"] is not None:
        rows.append(Row("diagnostic: RSS after dispose + malloc_trim(0) / before",
                        after["rss_trimmed"] / before["rss"], "x"))
    blocks = [r["blocks_after"] for r in measured]
    growth = (blocks[-1] - blocks[0]) / (len(blocks) - 1) if len(blocks) > 1 else None
    notes = (
        f"fresh subprocess; {rounds} round(s) of {children:,} concurrent forks, each child "
        f"run to completion ({CHILD_OWN_EVENTS} own events), then all disposed; "
        "times are medians over the rounds, cpu = process CPU time",
        f"parent built by the shell in {figures['parent_build_seconds']:.1f} s; RSS by "
        "psutil; live blocks by sys.getallocatedblocks(); peak RSS includes the parent build",
        "live blocks after each round: " + ", ".join(f"{b:,}" for b in blocks)
        + ("" if growth is None else f" (growth per round after the first: {growth:+,.0f})"),
    )
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows),
                   timings={"rounds": {"all published": published, "all done": finished}},
                   params={"completed_turns": turns, "children": children, "rounds": rounds,
                           "worker": figures})


if __name__ == "__main__":
    sys.exit(worker(sys.argv[1:]))
