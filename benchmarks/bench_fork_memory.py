"""Memory per fork child, measured with tracemalloc over N concurrent forks (N = 100).

For each parent (built by the shell, mid-turn; K = 10 and 1,000) and each fork (ours, and the
naive copy + re-validate baseline of :mod:`benchmarks.bench_fork_shell`), tracemalloc runs while
N children are started concurrently and measured in three states. The children's model is a
:class:`shell.ScriptedModel` as made by default (it records every request it receives), fresh
for each measurement:

1. **in flight**: every child published and held at its first model call (the child script's
   gate is closed), so each holds its model request (the history it would send);
2. **run to completion**: the gate opened and every ``run.result`` awaited, runs not yet
   disposed (the state DSH measured as "heap per fork after results"). The targets are judged
   here and in flight (a live child, all of it, ≤ 50 KB at K = 1,000) and on
   (traced memory - baseline) / N minus the child's own events;
3. **disposed**: every run disposed and ``gc.collect()`` run: what is left, with the model's
   record of the children's requests, and once more after that record is dropped.

A child's own events are sized separately: a walk over ``run.own_events()`` (the events and
everything they reference) that sums ``sys.getsizeof`` of every object tracemalloc saw being
allocated after tracing started, each object once (objects shared with the parent, interned or
allocated before the forks are not counted: they are not the child's). Memory is in bytes;
1 KB = 1,000 bytes and 1 MB = 10^6 bytes, as in DSH's figures.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tracemalloc
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import msgspec

from .bench_fork_shell import NAIVE_PROVIDER, install_naive_fork
from .harness import Row, Section, Settings, Target, format_bytes
from .workloads import (
    CHILD_CALLS,
    CHILD_OWN_EVENTS,
    ShellParent,
    child_request,
    shell_workbench,
)

__all__ = ["NAME", "TITLE", "SizeRow", "format_bytes", "run", "settle", "size_row", "traced_size"]

NAME = "fork-memory"
TITLE = "memory per fork child beyond its own events (tracemalloc, concurrent forks)"

#: How many allocation sites the JSON lists for our largest K (run to completion).
_TOP_SITES = 12


@dataclass(frozen=True)
class SizeRow(Row):
    """A row whose figure is a size in bytes (the harness's unit ``B``: shown as KB/MB,
    ``"unit": "B"`` in the JSON)."""


def size_row(label: str, value: float, target: Target | None = None) -> SizeRow:
    return SizeRow(label, value, "B", target)


def traced_size(roots: Iterable[object], seen: set[int]) -> int:
    """Bytes of the objects reachable from ``roots`` that tracemalloc saw allocated.

    Objects whose id is in ``seen`` are skipped (and every object visited is added), so one
    ``seen`` set shared across calls counts each object once.
    """
    total = 0
    stack = list(roots)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if tracemalloc.get_object_traceback(obj) is None:
            continue  # allocated before tracing: shared, interned or a singleton
        total += sys.getsizeof(obj)
        if isinstance(obj, msgspec.Struct):
            stack.extend(getattr(obj, name) for name in obj.__struct_fields__)
        elif isinstance(obj, tuple | list | set | frozenset):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj)
            stack.extend(obj.values())
    return total


@dataclass(frozen=True)
class Measured:
    """What N concurrent children of one parent cost, in bytes (totals, not per child)."""

    children: int
    in_flight: int
    completed: int
    own_events: int
    after_dispose: int
    #: After dispose, once the child model's record of requests was dropped too.
    after_record_dropped: int
    peak: int
    top_sites: tuple[tuple[str, int], ...] = ()

    def per_child(self, total: int) -> float:
        return total / self.children


async def settle() -> None:
    """Let the loop finish its bookkeeping of the tasks just awaited (a finished
    ``gather`` keeps its child tasks until the loop has moved on)."""
    for _ in range(3):
        await asyncio.sleep(0)


def _traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def _children(parent: ShellParent, provider: str, count: int, *, sites: bool,
                    ) -> Measured:
    runtime, script = parent.host.subagents, parent.child_script
    # A fresh ScriptedModel as made by default: it records every request (by reference).
    model = parent.use_child_model(count)
    request = child_request()
    gate = asyncio.Event()
    script.gate = gate
    try:
        baseline_snapshot = tracemalloc.take_snapshot() if sites else None
        base = _traced()
        tracemalloc.reset_peak()
        runs = await asyncio.gather(*(runtime.start(provider, request, parent=parent.agent)
                                      for _ in range(count)))
        for _ in range(10_000):  # until every child waits at its first model call
            if script.waiting == count:
                break
            await asyncio.sleep(0)
        assert script.waiting == count, (script.waiting, count)
        in_flight = _traced() - base
        gate.set()
        results = await asyncio.gather(*(run.result for run in runs))
    finally:
        script.gate = None
    assert all(result.stop_reason == "completed" for result in results)
    assert all(len(run.own_events()) == CHILD_OWN_EVENTS for run in runs)
    assert len(model.requests) == CHILD_CALLS * count
    completed = _traced() - base
    top: tuple[tuple[str, int], ...] = ()
    if baseline_snapshot is not None:
        snapshot = tracemalloc.take_snapshot()
        top = tuple((str(stat.traceback[0]), stat.size_diff)
                    for stat in snapshot.compare_to(baseline_snapshot, "lineno")[:_TOP_SITES])
        del snapshot
    seen: set[int] = set()
    own = sum(traced_size(run.own_events(), seen) for run in runs)
    del seen
    await asyncio.gather(*(run.dispose() for run in runs))
    del runs, results
    await settle()
    after = _traced() - base
    model.requests.clear()  # what the record kept alive of the disposed children
    after_record = _traced() - base
    peak = tracemalloc.get_traced_memory()[1] - base
    return Measured(children=count, in_flight=in_flight, completed=completed, own_events=own,
                    after_dispose=after, after_record_dropped=after_record, peak=peak,
                    top_sites=top)


async def _warm_up(parents: Sequence[ShellParent], count: int, naive_count: int) -> None:
    """Run the forks once before tracing: one-time costs (caches, registries grown to hold
    ``count`` runs) are then in the baseline, not in what the children leave behind."""
    for parent in parents:
        install_naive_fork(parent)
        parent.use_child_model(count + naive_count)
        runtime = parent.host.subagents
        for provider, how_many in (("fork", count), (NAIVE_PROVIDER, naive_count)):
            runs = await asyncio.gather(*(runtime.start(provider, child_request(),
                                                        parent=parent.agent)
                                          for _ in range(how_many)))
            await asyncio.gather(*(run.result for run in runs))
            await asyncio.gather(*(run.dispose() for run in runs))


async def _measure(parents: Sequence[ShellParent], count: int, naive_count: int,
                   ) -> dict[tuple[int, str], Measured]:
    measured: dict[tuple[int, str], Measured] = {}
    for parent in parents:
        k = parent.completed_turns
        largest = parent is parents[-1]
        measured[k, "ours"] = await _children(parent, "fork", count, sites=largest)
        measured[k, "naive"] = await _children(parent, NAIVE_PROVIDER, naive_count,
                                               sites=False)
    return measured


def _rows(parents: Sequence[ShellParent], measured: dict[tuple[int, str], Measured],
          ) -> list[Row]:
    rows: list[Row] = []
    beyond: dict[int, float] = {}
    for parent in parents:
        k = parent.completed_turns
        ours, naive = measured[k, "ours"], measured[k, "naive"]
        beyond[k] = ours.per_child(ours.completed - ours.own_events)
        target = Target("<=", 50e3, "(50 KB)") if k == 1000 else None
        rows += [
            size_row(f"ours K={k}: per child, run to completion (all)",
                     ours.per_child(ours.completed), target),
            size_row(f"ours K={k}: per child, its own events ({CHILD_OWN_EVENTS})",
                     ours.per_child(ours.own_events)),
            size_row(f"ours K={k}: per child beyond its own events", beyond[k], target),
            size_row(f"ours K={k}: per child in flight (first model call held)",
                     ours.per_child(ours.in_flight), target),
            size_row(f"ours K={k}: left after dispose + gc (all {ours.children}), the "
                     "model's record of their requests included", ours.after_dispose),
            size_row(f"ours K={k}: left after dispose + gc (all {ours.children}), that "
                     "record dropped", ours.after_record_dropped),
            size_row(f"naive K={k}: per child, run to completion (all)",
                     naive.per_child(naive.completed)),
            size_row(f"naive K={k}: per child in flight", naive.per_child(naive.in_flight)),
            Row(f"naive / ours K={k}: per child, run to completion",
                naive.per_child(naive.completed) / ours.per_child(ours.completed), "x"),
        ]
    first, last = parents[0].completed_turns, parents[-1].completed_turns
    rows.append(Row(f"flatness: beyond own events, ours K={last} / K={first}",
                    beyond[last] / beyond[first], "x"))
    return rows


def run(settings: Settings) -> Section:
    sizes = (10, 100) if settings.quick else (10, 1000)
    count = 20 if settings.quick else 100
    # The naive children are sized the same way, fewer of them: each replays the parent.
    naive_count = 5 if settings.quick else 20
    bench = shell_workbench()
    parents = [bench.parent(k) for k in sizes]
    bench.run(_warm_up(parents, count, naive_count))
    gc.collect()
    tracemalloc.start()
    try:
        measured = bench.run(_measure(parents, count, naive_count))
    finally:
        tracemalloc.stop()
    rows = _rows(parents, measured)
    largest = measured[sizes[-1], "ours"]
    notes = (
        f"tracemalloc over {count} concurrent forks per parent ({naive_count} for the naive "
        "fork); traced memory after gc.collect(), minus the baseline taken just before the "
        "forks; the same forks ran once untraced before (warm-up)",
        "run to completion: every result awaited, runs not yet disposed (target judged here); "
        "in flight: every child held at its first model call",
        "own events sized by walking each child's own events (objects allocated after tracing "
        "started, each counted once)",
        f"top allocation sites, ours K={sizes[-1]}, per child: " + "; ".join(
            f"{site.rsplit('/', 1)[-1]} {format_bytes(size / count)}"
            for site, size in largest.top_sites[:5]),
    )
    return Section(
        name=NAME, title=TITLE, notes=notes, rows=tuple(rows),
        params={"completed_turns": list(sizes), "children": count,
                "naive_children": naive_count,
                "bytes": {f"{fork} K={k}": {
                    "in_flight": m.in_flight, "completed": m.completed,
                    "own_events": m.own_events, "after_dispose": m.after_dispose,
                    "after_record_dropped": m.after_record_dropped, "peak": m.peak}
                    for (k, fork), m in measured.items()},
                "top_sites": [{"site": site, "bytes": size, "per_child": size / count}
                              for site, size in largest.top_sites]})
