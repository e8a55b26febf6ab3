"""The disk store beside the memory store: fork start flat in K, and group-commit throughput.

* **Fork start on disk** (issue 15.3). Parents built by the shell (:func:`benchmarks.workloads.
  shell_parent`, mid-turn) on a :class:`shell.JsonlSessionStore` at K = 10, 1,000 and 10,000
  completed turns, and on the memory store at K = 1,000, all in one run, interleaved. Each
  sample: ``await runtime.start("fork", …)`` until the child is published (the fork start of
  ``bench_fork_shell``), then ``await child.session.wait_durable()``: the child's first batch —
  its seed (a reference to the parent's file) and what it has appended — written and
  committed. The children's model waits at a gate, so no child runs its script; each run is
  disposed after its sample, outside the clock. Beside them the same start with
  ``fork_seeds="inline"`` (every seed written in full, DSH's own layout) at K = 1,000, to show
  what the reference saves.
* **Append throughput** (issue 15.4). One event stream — the events of a 100-turn parent of
  DSH's shape (:func:`benchmarks.workloads.parent_events`) — appended as the agent appends a
  turn machine's outputs: every stream chunk its own batch, the other events of a step
  together, until every event is durable. The same stream into the memory store and the disk
  store (plain and zstd), all interleaved; beside them (full runs) the disk store with the
  agent's durability waits too (``await session.wait_durable()`` before a step's tools run and
  at each ``turn/end``: with no model to wait for, fsync latency sets its pace) and the disk
  store committing every batch (``flush()`` after each: one fsync per batch, what the store
  did before group commit).
"""

from __future__ import annotations

import asyncio
import gc
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from .bench_fork_shell import AsyncContender, fork_start_sample, measure_async
from .harness import Row, Section, Settings, Target, Timing
from .workloads import ShellParent, child_request, parent_events, shell_parent

__all__ = ["NAME", "TITLE", "agent_batches", "run"]

NAME = "store"
TITLE = "the disk store: fork start flat in K and group-commit throughput, beside the memory store"

_THROUGHPUT_TURNS = 100
_QUICK_THROUGHPUT_TURNS = 20


# --------------------------------------------------------------------------- fork start


async def _parent(k: int, store: Any) -> ShellParent:
    parent = await shell_parent(k, store=store, child_runs=1)
    parent.child_script.gate = asyncio.Event()  # children wait at their first model call
    return parent


async def _fork_timings(parents: dict[str, ShellParent], rounds: int) -> dict[str, Timing]:
    for parent in parents.values():  # every fork works before it is timed
        run = await parent.host.subagents.start("fork", child_request(), parent=parent.agent)
        assert run.seed_length == parent.cut, (run.seed_length, parent.cut)
        await run.local_agent.session.wait_durable()
        await run.dispose()
    contenders = [AsyncContender(name, fork_start_sample(parent, durable=True))
                  for name, parent in parents.items()]
    return await measure_async(contenders, rounds=rounds)


def _fork_rows(timed: dict[str, Timing], sizes: Sequence[int], judged: bool) -> list[Row]:
    first, last, middle = sizes[0], sizes[-1], sizes[len(sizes) // 2]
    rows: list[Row] = []
    for name, timing in timed.items():
        if " / " in name:
            continue
        rows.append(Row.time(f"{name}: start -> published", timing))
        rows.append(Row(f"{name}: start -> child's first batch durable",
                        timed[f"{name} / durable"].median_ns, "ns"))
    disk_first, disk_last = timed[f"disk K={first}"], timed[f"disk K={last}"]
    rows.append(Row.ratio(f"flatness: disk K={last} / disk K={first} (published)",
                          disk_last, disk_first, Target("<=", 1.5) if judged else None))
    rows.append(Row(f"flatness: disk K={last} / disk K={first} (first batch durable)",
                    timed[f"disk K={last} / durable"].median_ns
                    / timed[f"disk K={first} / durable"].median_ns, "x",
                    Target("<=", 1.5) if judged else None))
    rows.append(Row.ratio(f"disk / memory at K={middle} (published)",
                          timed[f"disk K={middle}"], timed[f"memory K={middle}"],
                          Target("<=", 2.0) if judged else None))
    for k in sizes[1:]:
        if f"inline seeds K={k} / durable" in timed:
            rows.append(Row(f"inline seeds / reference at K={k} (first batch durable)",
                            timed[f"inline seeds K={k} / durable"].median_ns
                            / timed[f"disk K={k} / durable"].median_ns, "x"))
    return rows


# --------------------------------------------------------------------------- throughput


def agent_batches(events: Sequence[Any]) -> list[tuple[tuple[Any, ...], bool]]:
    """``events`` cut as the agent appends them: (batch, whether the agent then waits for it
    to be durable). Every stream chunk is a batch of its own; the other events of a step go
    together; a batch ends after a tool call (its tools run next) and after a ``turn/end``."""
    from turnfork.core import AssistantChunkEvent, ToolCallEvent, TurnEndEvent

    batches: list[tuple[tuple[Any, ...], bool]] = []
    current: list[Any] = []
    for event in events:
        if isinstance(event, AssistantChunkEvent):
            if current:
                batches.append((tuple(current), False))
                current = []
            batches.append(((event,), False))
            continue
        current.append(event)
        if isinstance(event, ToolCallEvent | TurnEndEvent):
            batches.append((tuple(current), True))
            current = []
    if current:
        batches.append((tuple(current), True))
    return batches


def _turn_blocks(events: Sequence[Any], turns: int) -> list[tuple[Any, ...]]:
    """``events`` cut after every ``turns``-th ``turn/end``."""
    from turnfork.core import TurnEndEvent

    blocks: list[tuple[Any, ...]] = []
    start, ended = 0, 0
    for index, event in enumerate(events):
        if isinstance(event, TurnEndEvent):
            ended += 1
            if ended % turns == 0:
                blocks.append(tuple(events[start:index + 1]))
                start = index + 1
    return blocks


def _replay_sample(store: Any, blocks: Sequence[tuple[Any, ...]], *, waits: str,
                   ) -> Callable[[], Awaitable[tuple[float, float, dict[str, float]]]]:
    """Each sample appends the next block of turns to one long-lived session, as the agent's
    batches, until all of it is durable. ``waits``: ``"end"`` (durable once, at the end: the
    store's own pace), ``"agent"`` (also where the agent waits) or ``"every"`` (``flush()``
    after every batch: one fsync each)."""
    from turnfork.core import SessionHeader

    session = store.create(SessionHeader(id=f"replay-{waits}", created_at=0))
    queue = [agent_batches(block) for block in blocks]

    async def sample() -> tuple[float, float, dict[str, float]]:
        batches = queue.pop(0)
        cpu_start, start = time.thread_time_ns(), time.perf_counter_ns()
        for batch, wait in batches:
            session.extend(batch)
            if waits == "every":
                session.flush()
            elif wait and waits == "agent":
                await session.wait_durable()
        await session.wait_durable()
        return time.perf_counter_ns() - start, time.thread_time_ns() - cpu_start, {}

    return sample


async def _throughput_timings(root: Path, rounds: int, turns: int, *, full: bool,
                              ) -> tuple[dict[str, Timing], int, int]:
    from turnfork.shell import JsonlSessionStore, MemorySessionStore

    # One block per sample (a warm-up, then the rounds), numbered on from the one before.
    blocks = _turn_blocks(parent_events(turns * (rounds + 1), in_flight=False), turns)
    sample_events = len(blocks[-1])
    plain = JsonlSessionStore(root / "replay")
    zstd = JsonlSessionStore(root / "replay-zstd", compression="zstd")
    contenders = [
        AsyncContender("memory store", _replay_sample(MemorySessionStore(), blocks,
                                                      waits="end")),
        AsyncContender("disk store", _replay_sample(plain, blocks, waits="end")),
        AsyncContender("disk store, zstd", _replay_sample(zstd, blocks, waits="end")),
    ]
    if full:
        contenders += [
            AsyncContender("disk store, the agent's waits", _replay_sample(
                plain, blocks, waits="agent")),
            AsyncContender("disk store, fsync every batch", _replay_sample(
                plain, blocks, waits="every")),
        ]
    return (await measure_async(contenders, rounds=rounds), sample_events,
            len(agent_batches(blocks[-1])))


def _throughput_rows(timed: dict[str, Timing], events: int, judged: bool) -> list[Row]:
    rows: list[Row] = []
    for name, timing in timed.items():
        rows.append(Row.time(f"{name}: {events:,} events", timing))
    memory = timed["memory store"]
    for name, timing in timed.items():
        if name != "memory store":
            rows.append(Row.ratio(f"throughput {name} / memory store", memory, timing,
                                  Target(">=", 0.2) if judged and name == "disk store"
                                  else None))
    return rows


# --------------------------------------------------------------------------- the run


def run(settings: Settings) -> Section:
    from turnfork.shell import JsonlSessionStore, MemorySessionStore

    sizes = (10, 30, 100) if settings.quick else (10, 1000, 10000)
    middle = sizes[len(sizes) // 2]
    rounds = settings.rounds(full=31, quick=3)
    root = Path(tempfile.mkdtemp(prefix="turnfork-bench-store-"))
    loop = asyncio.new_event_loop()
    parents: dict[str, ShellParent] = {}
    build: dict[str, float] = {}
    try:
        for k in sizes:
            started = time.perf_counter()
            parents[f"disk K={k}"] = loop.run_until_complete(
                _parent(k, JsonlSessionStore(root / f"disk-{k}")))
            build[f"disk K={k}"] = round(time.perf_counter() - started, 2)
        parents[f"memory K={middle}"] = loop.run_until_complete(
            _parent(middle, MemorySessionStore()))
        # Inline seeds at the middle K only: every one of their samples writes the whole
        # seed (at K = 10,000, 42 MB and about a second each).
        parents[f"inline seeds K={middle}"] = loop.run_until_complete(
            _parent(middle, JsonlSessionStore(root / f"inline-{middle}", fork_seeds="inline")))
        gc.collect()
        forks = loop.run_until_complete(_fork_timings(parents, rounds))
        turns = _QUICK_THROUGHPUT_TURNS if settings.quick else _THROUGHPUT_TURNS
        throughput, events, batches = loop.run_until_complete(
            _throughput_timings(root, settings.rounds(full=11, quick=3), turns,
                                full=not settings.quick))
        parent_bytes = {name: sum(f.stat().st_size for f in (root / f"disk-{name[7:]}").rglob(
            "session.jsonl")) for name in parents if name.startswith("disk")}
    finally:
        for parent in parents.values():
            loop.run_until_complete(parent.host.aclose())
        loop.close()
        shutil.rmtree(root, ignore_errors=True)
    judged = not settings.quick
    rows = [*_fork_rows(forks, sizes, judged), *_throughput_rows(throughput, events, judged)]
    notes = (
        f"fork start: {rounds} interleaved rounds, gc.collect() before every sample; parents "
        f"mid-turn, built by the shell on each store (disk under {tempfile.gettempdir()}, "
        f"{_filesystem(Path(tempfile.gettempdir()))}); children held at their first model "
        "call; disposed outside the clock",
        "published: the fork start of bench_fork_shell; first batch durable: until the child's "
        "session/end-seed and whatever it appended are in its file and fsynced (for the "
        "memory store: nothing to wait for)",
        f"throughput: each sample appends the next {turns} turns ({events:,} events in "
        f"{batches:,} batches, as the agent appends them: chunks alone) to one long-lived "
        "session per contender, until all are durable; the agent's waits: also durable "
        "before each step's tools run and at each turn/end (fsync latency, not the store's "
        "pace, sets that one)",
    )
    return Section(
        name=NAME, title=TITLE, notes=notes, rows=tuple(rows),
        timings={"fork start": forks, "throughput": throughput},
        params={"completed_turns": list(sizes), "rounds": rounds,
                "parent_events": {name: p.events for name, p in parents.items()},
                "parent_file_bytes": parent_bytes, "parent_build_seconds": build,
                "throughput_events": events, "throughput_batches": batches})


def _filesystem(path: Path) -> str:
    """The type of the file system holding ``path`` (from /proc/mounts), or ``unknown``."""
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return "file system unknown"
    best, kind = "", "unknown"
    resolved = str(path.resolve())
    for line in mounts:
        fields = line.split()
        if len(fields) >= 3 and resolved.startswith(fields[1]) and len(fields[1]) > len(best):
            best, kind = fields[1], fields[2]
    return f"{kind} file system"

