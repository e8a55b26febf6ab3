"""Fork children of the K = 1,000 parent on a local Ray cluster, beside the same children in
process: ``python -m benchmarks --only ray`` (optional: it needs the ``ray`` extra).

Ray's head contacts cloud metadata servers whenever it starts, so each measurement runs in a
fresh subprocess with no outside network (``.ci/no-network python -m benchmarks.bench_ray
--worker ...``, or directly when this process already sees only loopback); when no network
namespace can be made the section says so and nothing runs. Two subprocesses, one after the
other:

* one node: a local cluster (2 CPUs, a 512 MiB object store) and a pool of two workers;
* two nodes: a ``ray.cluster_utils.Cluster`` on loopback (a head and a worker node, one CPU
  each) and a pool of two workers placed ``STRICT_SPREAD``, one per node.

Each builds the parent with the shell (mid-turn, as in the other fork benchmarks); the
workers' setup registers what the host has: the children's ``ScriptedModel`` playing
``ChildScript`` and the ``echo`` tool. Then rounds alternate, in process (``ForkProvider``)
and on Ray (``RayForkProvider``), each: N forks started at once (``asyncio.gather`` of
``start``), every result awaited (``completed``, 29 own events each, on the host), every run
disposed.

Per round: wall time; the host process's CPU time (its Ray driver threads included); on Ray,
each worker process's CPU time (psutil; on two nodes, summed per node), the seeds the pool put
into the object store and their bytes, and ``/dev/shm`` in use before and after (the object
store's shared memory: what N children cost there beyond the seed). The load average before
and after each subprocess is recorded (the machine may be shared). Derived: the ratios Ray /
in process (targets: at most 2x, wall and host CPU, one node), the per-child overhead and each
side's CPU per child.

``python -m benchmarks.bench_ray --profile`` profiles the host's CPU during one Ray round on
one node instead (cProfile with a CPU clock) and prints where it goes by part of the code
(:func:`profile_parts`; docs/ray.md has the table before and after batching).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .bench_fork_load import run_children
from .bench_fork_memory import settle, size_row
from .harness import Row, Section, Settings, Target, rounds_timing, worker_parser
from .workloads import (
    _ECHO_PARAMETERS,
    CHILD_CALLS,
    CHILD_OWN_EVENTS,
    ChildScript,
    ShellParent,
    _echo,
    install_child_model,
    shell_parent,
)

__all__ = ["NAME", "TITLE", "profile_parts", "run", "worker", "worker_setup"]

NAME = "ray"
TITLE = ("1,000 fork children of a 1,000-turn parent on a local Ray cluster (one node, then "
         "two) vs in process (optional: the ray extra, no outside network)")

_ROOT = Path(__file__).resolve().parents[1]
_NO_NETWORK = _ROOT / ".ci" / "no-network"
#: Children each worker's scripted model can serve (its script is a list of references).
_WORKER_CHILDREN = 100_000
_WORKERS = 2
#: Children run each way before the timed rounds.
_WARM_UP = 10
_OBJECT_STORE_BYTES = 512 * 2**20
_NODE_STORE_BYTES = 256 * 2**20
#: The most Ray may take, as a multiple of in process (wall, and the host's CPU), on one node.
_TARGET_RATIO = 2.0


def worker_setup(host: Any) -> None:
    """A pool worker's setup: the children's model and the ``echo`` tool, as on the host."""
    from turnfork.shell import Tool

    install_child_model(host, ChildScript(), _WORKER_CHILDREN, record_requests=False)
    host.tools.register(Tool("echo", "echo the given text", _ECHO_PARAMETERS, _echo,
                             concurrency_safe=True))


def _shm_used() -> int:
    return shutil.disk_usage("/dev/shm").used


def _cpu_seconds(pids: Sequence[int]) -> float:
    import psutil

    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def _nodes(pool: Any) -> dict[str, list[int]]:
    """The pool's started workers' pids, by node."""
    found: dict[str, list[int]] = {}
    for worker in pool.workers:
        if worker.info is not None:
            found.setdefault(worker.info.node_id, []).append(worker.info.pid)
    return found


async def _round(parent: ShellParent, provider: str, children: int,
                 pool: Any) -> dict[str, Any]:
    nodes = _nodes(pool) if provider != "fork" else {}
    gc.collect()
    shm, stored, stored_bytes = _shm_used(), pool.seeds_stored, pool.seed_bytes_stored
    node_cpu = {node: _cpu_seconds(pids) for node, pids in nodes.items()}
    runs, results, published, done, cpu = await run_children(parent, provider, children)
    per_node = {node: (_cpu_seconds(pids) - node_cpu[node]) * 1e9
                for node, pids in nodes.items()}
    figures: dict[str, Any] = {
        "published_ns": published, "done_ns": done, "cpu_ns": cpu,
        "worker_cpu_ns": sum(per_node.values()), "node_cpu_ns": per_node,
        "seeds_stored": pool.seeds_stored - stored,
        "seed_bytes": pool.seed_bytes_stored - stored_bytes,
        "shm_delta": _shm_used() - shm}
    await asyncio.gather(*(run.dispose() for run in runs))
    del runs, results
    await settle()
    assert await pool.live_children() == ()
    return figures


def _isolated_environment(directory: Path) -> None:
    """What the cluster's processes inherit: this repository on the path (the workers import
    ``benchmarks``), a private home holding ``ray_bootstrap_config.yaml`` (Ray then skips its
    cloud probes), quiet Ray."""
    home = directory / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "ray_bootstrap_config.yaml").write_text("{}\n", encoding="utf-8")
    os.environ.update({"HOME": str(home), "PYTHONPATH": str(_ROOT),
                       "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"})


async def _rounds(turns: int, children: int, rounds: int, *, nodes: int,
                  profile: str | None = None) -> dict[str, Any]:
    from turnfork.shell.ray import RayForkProvider, RayWorkerPool, network_isolated

    if not network_isolated():
        raise RuntimeError("refusing to start Ray with outside network (run under "
                           ".ci/no-network)")
    parent = await shell_parent(turns)
    parent.use_child_model(children * (rounds + 1) + 10, record_requests=False)
    pool = RayWorkerPool(worker_setup, size=_WORKERS,
                         placement="STRICT_SPREAD" if nodes > 1 else None)
    parent.host.subagents.register_provider(RayForkProvider(pool))
    await pool.wait_ready()
    # Warm up both: the workers start, the code imported on first use is loaded, one seed
    # of this cut is stored (as a parent forking again at its cut reuses it).
    for provider in ("fork", "ray-fork"):
        await _round(parent, provider, _WARM_UP, pool)
    measured: dict[str, list[dict[str, Any]]] = {"fork": [], "ray-fork": []}
    if profile is not None:
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        measured["ray-fork"].append(await _round(parent, "ray-fork", children, pool))
        profiler.disable()
        profiler.dump_stats(profile)
    for index in range(rounds):
        order = ("fork", "ray-fork") if index % 2 == 0 else ("ray-fork", "fork")
        for provider in order:
            measured[provider].append(await _round(parent, provider, children, pool))
    workers = [{"pid": worker.pid, "node": worker.info.node_id if worker.info else None}
               for worker in pool.workers]
    figures = {"turns": turns, "children": children, "events": parent.events,
               "seed_length": parent.cut, "build_seconds": parent.build_seconds,
               "workers": workers, "rounds": measured, "nodes": nodes,
               "warm_up_seed_bytes": pool.seed_bytes_stored}
    await parent.host.aclose()
    pool.close()
    return figures


def _start_cluster(directory: Path, nodes: int) -> Any:
    """One node: a local cluster; two: a head and a worker node on loopback (returned, to be
    shut down)."""
    from turnfork.shell.ray import connect_cluster, start_local_cluster

    if nodes == 1:
        start_local_cluster(num_cpus=2, object_store_memory=_OBJECT_STORE_BYTES,
                            temp_dir=str(directory / "t"))
        return None
    from ray.cluster_utils import Cluster

    # The cluster's address file goes under RAY_TMPDIR, never a shared /tmp/ray.
    os.environ["RAY_TMPDIR"] = str(directory)
    (directory / "ray").mkdir(exist_ok=True)
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "temp_dir": str(directory / "t"), "include_dashboard": False,
        "object_store_memory": _NODE_STORE_BYTES})
    cluster.add_node(num_cpus=1, object_store_memory=_NODE_STORE_BYTES)
    cluster.wait_for_nodes()
    connect_cluster(cluster.address)
    return cluster


def worker(argv: Sequence[str]) -> int:
    """The subprocess's entry: start the cluster, run the rounds, print one JSON line."""
    parser = worker_parser("python -m benchmarks.bench_ray")
    parser.add_argument("--nodes", type=int, choices=(1, 2), default=1)
    parser.add_argument("--profile", help="dump a CPU profile of one Ray round here")
    args = parser.parse_args(argv)
    from turnfork.shell.ray._ray import ray

    directory = Path(tempfile.mkdtemp(prefix="tf-ray-bench-"))
    cluster = None
    try:
        _isolated_environment(directory)
        load_before = os.getloadavg()
        started = time.perf_counter()
        cluster = _start_cluster(directory, args.nodes)
        cluster_seconds = time.perf_counter() - started
        figures = asyncio.run(_rounds(args.turns, args.children, args.rounds,
                                      nodes=args.nodes, profile=args.profile))
        figures["cluster_start_seconds"] = cluster_seconds
        figures["load_average"] = [list(load_before), list(os.getloadavg())]
        ray.shutdown()
    finally:
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(directory, ignore_errors=True)
    print(json.dumps(figures))
    return 0


def _isolation_command() -> list[str] | str:
    """How to run the worker with no outside network, or why that is impossible."""
    from turnfork.shell.ray import network_isolated

    if network_isolated():
        return []
    probe = subprocess.run([str(_NO_NETWORK), "true"], capture_output=True, text=True,
                           check=False)
    if probe.returncode != 0:
        return (probe.stderr.strip().splitlines() or ["no network namespace"])[-1]
    return [str(_NO_NETWORK)]


def _median(rounds: Sequence[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rounds)


def _measure(isolation: list[str], turns: int, children: int, rounds: int, nodes: int,
             *extra: str) -> dict[str, Any]:
    command = [*isolation, sys.executable, "-m", "benchmarks.bench_ray", "--worker",
               "--turns", str(turns), "--children", str(children), "--rounds", str(rounds),
               "--nodes", str(nodes), *extra]
    done = subprocess.run(command, cwd=_ROOT, capture_output=True, text=True, timeout=1800,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the ray benchmark's worker failed ({done.returncode}):\n"
                           f"{done.stderr}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def run(settings: Settings) -> Section:
    try:
        import ray.actor  # noqa: F401
    except ImportError:
        return Section(name=NAME, title=TITLE, notes=(), rows=(),
                       unavailable="needs the ray extra: pip install -e '.[ray]'")
    isolation = _isolation_command()
    if isinstance(isolation, str):
        return Section(name=NAME, title=TITLE, notes=(), rows=(),
                       unavailable=f"Ray must run with no outside network here: {isolation}")
    turns, children = (100, 100) if settings.quick else (1000, 1000)
    rounds = settings.rounds(full=3, quick=1)
    one = _measure(isolation, turns, children, rounds, 1)
    two = _measure(isolation, turns, children, rounds, 2)
    return _section(one, two, rounds)


# ---------------------------------------------------------------------------- the profile

#: Parts of the host's code, by where a function is defined (first match wins).
_PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Ray's driver (calls, serialization, replies)", ("site-packages/ray/", "_raylet",
                                                      "cloudpickle", "Pickler", "/pickle.py",
                                                      "copyreg", "msgpack")),
    ("the codec (decoding and encoding events)", ("core/codec.py", "msgspec")),
    ("the trace and the session (appending, checking)", (
        "core/trace.py", "core/balance", "shell/session.py", "core/seed.py", "beartype",
        "core/_checking", "returns/", "core/events.py", "core/closers.py", "core/history")),
    ("the Ray provider (links, remote children)", ("shell/ray/",)),
    ("planning and publishing a child", ("core/", "shell/")),
    ("asyncio and threads", ("asyncio/", "_asyncio", "selectors", "select.epoll",
                             "contextvars", "concurrent/futures", "threading.py")),
)


def profile_parts(stats: pstats.Stats) -> dict[str, float]:
    """Seconds of self time per part of the code (:data:`_PARTS`, then ``other``)."""
    parts = {name: 0.0 for name, _ in _PARTS}
    parts["other"] = 0.0
    for (path, _line, function), entry in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{path}:{function}"
        self_time = entry[2]
        name = next((part for part, needles in _PARTS
                     if any(needle in where for needle in needles)), "other")
        parts[name] += self_time
    return parts


def _print_profile(path: str, children: int) -> None:
    stats = pstats.Stats(path)
    parts = profile_parts(stats)
    total = sum(parts.values())
    print(f"host CPU of one Ray round of {children:,} children, under cProfile (CPU clock): "
          f"{total:.2f} s")
    for name, seconds in sorted(parts.items(), key=lambda item: -item[1]):
        print(f"  {name:<52} {seconds * 1e3 / children:6.2f} ms per child "
              f"({100 * seconds / total:4.1f} %)")


def profile(argv: Sequence[str]) -> int:
    """``--profile [--children N --turns K]``: one profiled Ray round on one node."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_ray --profile")
    parser.add_argument("--profile", action="store_true", required=True)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--children", type=int, default=1000)
    parser.add_argument("--output", default=str(Path(tempfile.gettempdir())
                                                / "turnfork-ray-host.prof"))
    args = parser.parse_args(argv)
    isolation = _isolation_command()
    if isinstance(isolation, str):
        print(f"Ray must run with no outside network here: {isolation}", file=sys.stderr)
        return 1
    _measure(isolation, args.turns, args.children, 0, 1, "--profile", args.output)
    _print_profile(args.output, args.children)
    return 0


# ---------------------------------------------------------------------------- the section


def _node_rows(label: str, local: Sequence[dict[str, Any]], remote: Sequence[dict[str, Any]],
               children: int, head: str | None) -> list[Row]:
    """Each node's share of the workers' CPU (the head's first)."""
    totals: dict[str, list[float]] = {}
    for figures in remote:
        for node, cpu in figures["node_cpu_ns"].items():
            totals.setdefault(node, []).append(cpu)
    nodes = sorted(totals, key=lambda node: (node != head, node))
    all_cpu = sum(statistics.median(totals[node]) for node in nodes) or 1.0
    rows = []
    for number, node in enumerate(nodes, 1):
        cpu = statistics.median(totals[node])
        rows.append(Row(f"{label}: worker CPU per child on node {number} "
                        f"({100 * cpu / all_cpu:.0f} % of the workers')", cpu / children,
                        "ns"))
    return rows


def _section(one: dict[str, Any], two: dict[str, Any], rounds: int) -> Section:
    local, remote = one["rounds"]["fork"], one["rounds"]["ray-fork"]
    children, turns = one["children"], one["turns"]
    label = f"{children:,} fork children of K={turns:,}"
    in_process = rounds_timing("in process", local, "done_ns")
    on_ray = rounds_timing("on Ray", remote, "done_ns")
    per_child_ns = (on_ray.median_ns - in_process.median_ns) / children
    host_local = _median(local, "cpu_ns") / children
    host_ray = _median(remote, "cpu_ns") / children
    worker_ray = _median(remote, "worker_cpu_ns") / children
    seeds = sum(r["seeds_stored"] for r in remote)
    seed_bytes = one["warm_up_seed_bytes"]
    target = Target("<=", _TARGET_RATIO, "(2x, wall and host CPU)")
    rows = [
        Row(f"{label} in process: all done", in_process.median_ns, "ns",
            cpu_value=in_process.cpu_median_ns),
        Row(f"{label} on Ray, 1 node ({_WORKERS} workers): all done", on_ray.median_ns, "ns",
            cpu_value=on_ray.cpu_median_ns),
        Row(f"{label}: Ray (1 node) / in process, all done",
            on_ray.median_ns / in_process.median_ns, "x", target,
            cpu_value=on_ray.cpu_median_ns / in_process.cpu_median_ns),
        Row(f"{label} on Ray, 1 node: all published", _median(remote, "published_ns"), "ns"),
        Row(f"{label}: per-child overhead on Ray, (Ray − in process) / N",
            max(per_child_ns, 1.0), "ns"),
        Row(f"{label}: host CPU per child, in process", host_local, "ns"),
        Row(f"{label}: host CPU per child, on Ray", host_ray, "ns"),
        Row(f"{label}: worker CPU per child, on Ray (both workers)", worker_ray, "ns"),
        size_row(f"{label}: the seed in the object store (once per fork point)", seed_bytes),
        size_row(f"{label}: seed bytes put per child, on Ray (seeds put in the timed "
                 f"rounds: {seeds})", sum(r["seed_bytes"] for r in remote) / (
                     children * len(remote))),
        size_row(f"{label}: /dev/shm grown per child during a Ray round (median)",
                 _median(remote, "shm_delta") / children),
    ]
    ray_children = children * len(remote) + _WARM_UP
    rows.insert(-1, size_row(f"{label}: object-store bytes per Ray child of this fork point "
                             f"(1 seed for all {ray_children:,})", seed_bytes / ray_children))
    local2, remote2 = two["rounds"]["fork"], two["rounds"]["ray-fork"]
    in_process2 = rounds_timing("in process", local2, "done_ns")
    on_two = rounds_timing("on Ray, 2 nodes", remote2, "done_ns")
    head = next((w["node"] for w in two["workers"] if w["node"]), None)
    rows += [
        Row(f"{label} on Ray, 2 nodes (1 worker each): all done", on_two.median_ns, "ns",
            cpu_value=on_two.cpu_median_ns),
        Row(f"{label}: Ray (2 nodes) / in process (same run), all done",
            on_two.median_ns / in_process2.median_ns, "x",
            cpu_value=on_two.cpu_median_ns / in_process2.cpu_median_ns),
        Row(f"{label}: host CPU per child, on Ray, 2 nodes", _median(remote2, "cpu_ns")
            / children, "ns"),
        *_node_rows(f"{label}, 2 nodes", local2, remote2, children, head),
    ]
    model_call_s = 1.0
    child_wait_s = CHILD_CALLS * model_call_s
    child_cpu_s = (host_ray + worker_ray) / 1e9
    (before1, after1), (before2, after2) = one["load_average"], two["load_average"]
    notes = (
        f"parent: {one['events']:,} events, seed {one['seed_length']:,} events "
        f"({seed_bytes / 1e6:.2f} MB as JSONL), built in {one['build_seconds']:.1f} s; "
        f"one node: a local cluster started in {one['cluster_start_seconds']:.1f} s, "
        f"{_WORKERS} workers (pids " + ", ".join(str(w["pid"]) for w in one["workers"])
        + f"); two nodes: a loopback Cluster started in {two['cluster_start_seconds']:.1f} s, "
        f"one worker per node (STRICT_SPREAD); {rounds} timed round(s) each way, "
        f"interleaved, after {_WARM_UP} warm-up children each (the Ray warm-up puts this fork "
        "point's seed); times are medians, cpu = the host process's CPU time",
        f"load average (1/5/15 min) before and after: one node {_loads(before1)} -> "
        f"{_loads(after1)}, two nodes {_loads(before2)} -> {_loads(after2)}: the machine "
        "may be shared, and Ray's figures, spread over more processes, suffer more from it",
        f"each child: {CHILD_CALLS} scripted model calls (an echo call, then 'ok'), "
        f"{CHILD_OWN_EVENTS} own events sent back to the host in batches and appended to its "
        "session there; children started on one tick go to a worker in one call, the seed's "
        "reference nested in it, and each worker fetches and decodes the seed once",
        f"scaling across nodes: here a child's work is all CPU (the scripted model answers at "
        f"once). In process the host spends {host_local / 1e6:.2f} ms per child: one core, "
        f"at most ~{1e9 / host_local:,.0f} children/s. On Ray the host keeps "
        f"{host_ray / 1e6:.2f} ms per child (planning, the Ray calls, taking its events: at "
        f"most ~{1e9 / host_ray:,.0f} children started/s by one host, however many nodes) and "
        f"the workers spend {worker_ray / 1e6:.2f} ms per child, spread over every node's "
        f"cores (~{1e9 / worker_ray:,.0f} children/s per core). With real model calls, say "
        f"{CHILD_CALLS} of {model_call_s:g} s, a child waits {child_wait_s:g} s and computes "
        f"{child_cpu_s * 1e3:.1f} ms: the model calls are "
        f"{100 * child_wait_s / (child_wait_s + child_cpu_s):.1f} % of its time, and "
        f"{children:,} children finish in about {child_wait_s:g} s plus the host's share, "
        f"{children * host_ray / 1e9:.1f} s on Ray ({children * host_local / 1e9:.1f} s in "
        "process). Ray pays off where one process runs out: children whose own CPU (tools, "
        "the turn machine) times their number outgrows a core, or whose memory outgrows a "
        "machine",
    )
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows),
                   timings={"rounds": {"in process": in_process, "on Ray": on_ray,
                                       "on Ray, 2 nodes": on_two}},
                   params={"figures": {"one node": one, "two nodes": two}})


def _loads(values: Sequence[float]) -> str:
    return "/".join(f"{value:.1f}" for value in values)


if __name__ == "__main__":
    sys.exit(profile(sys.argv[1:]) if "--profile" in sys.argv[1:2] else worker(sys.argv[1:]))
