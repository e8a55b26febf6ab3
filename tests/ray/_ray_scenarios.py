"""Bad cluster states, each in a process of its own (``python _ray_scenarios.py NAME DIR``):
the test cluster is left alone, and Ray's handling of a lost GCS (it ends the process) cannot
take the test run with it. Each prints one JSON line: what the parent saw and what its host
holds. The test that runs them is test_ray_cluster_states.py.

* ``no-cluster``: Ray is never started; the parent delegates.
* ``full-store``: a cluster whose 80 MiB object store is filled with pinned objects and whose
  disk fallback is refused; the parent forks, then forks again once the objects are freed.
* ``cluster-dies``: the parent delegates two hanging children, and the cluster's GCS is
  killed; the parent's turn must go on, and the logs on disk must be balanced.
* ``worker-dies``: a child's worker is killed mid-run; what Ray tells every driver about it
  must not reach this process's output. Reports the ``RAY_*`` variables the process had
  before the cluster and after it shut down.
* ``interrupted``: two children hang on two workers until the test interrupts this process
  (SIGINT), as a user's Ctrl-C does; then every log on disk must be balanced.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import _ray_rules
from _ray_env import worker_environment
from msgspec import UnsetType
from returns.result import Success

from turnfork.core import ToolResultEvent, check_balance, final_assistant_output
from turnfork.shell import Agent, Host, JsonlSessionStore, SubagentTool


def _texts(blocks: Any) -> str:
    return "".join(getattr(block, "text", "") for block in blocks or ())


def _balanced(events: Any) -> bool:
    result = check_balance(events)
    return isinstance(result, Success) and result.unwrap().is_closed


def _tool_results(agent: Agent) -> list[dict[str, Any]]:
    found = []
    for event in agent.session.events:
        if isinstance(event, ToolResultEvent):
            block = event.data.message.content[0]
            error = event.data.error
            found.append({"text": _texts(getattr(block, "content", ())),
                          "error": None if isinstance(error, UnsetType) else error.code})
    return found


def _host(pool: Any, store: Any = None) -> tuple[Host, Agent]:
    from turnfork.shell.ray import RayForkProvider, RaySpawnProvider

    host = Host(store=store)
    _ray_rules.configure(host)
    host.subagents.register_provider(RayForkProvider(pool))
    host.subagents.register_provider(RaySpawnProvider(pool))
    SubagentTool(provider="ray-fork").install(host)
    return host, host.create_agent(provider=_ray_rules.PROVIDER, model="m-parent")


async def _turn(agent: Agent, task: str) -> str:
    agent.followup(task)
    await agent.when_idle()
    return _texts(final_assistant_output(agent.session.events))


def _start(directory: Path, *, own_variables: bool = True, **system_config: Any) -> None:
    """A local cluster; ``own_variables=False``: with only the variables start_local_cluster
    sets (the private home and the import path aside)."""
    from turnfork.shell.ray import start_local_cluster

    environment = worker_environment(directory / "home")
    if not own_variables:
        environment = {name: value for name, value in environment.items()
                       if not name.startswith("RAY_")}
    os.environ.update(environment)
    start_local_cluster(num_cpus=1, object_store_memory=80 * 2**20,
                        temp_dir=str(directory / "t"), _system_config=system_config)


async def no_cluster(directory: Path) -> dict[str, Any]:
    from turnfork.shell.ray import RayWorkerPool

    pool = RayWorkerPool(_ray_rules.configure, size=1)
    host, parent = _host(pool)
    answer = await _turn(parent, "delegate 1 say hi")
    summary = {"answer": answer, "results": _tool_results(parent),
               "sessions": list(host.sessions.list()), "parent_balanced":
               _balanced(parent.session.events)}
    await host.aclose()
    return summary


async def full_store(directory: Path) -> dict[str, Any]:
    from turnfork.shell.ray import RayWorkerPool
    from turnfork.shell.ray._ray import exceptions, ray

    # No disk fallback: a full store refuses puts (OutOfDiskError) instead of spilling.
    _start(directory, local_fs_capacity_threshold=0.0)
    pool = RayWorkerPool(_ray_rules.configure, size=1)
    host, parent = _host(pool)
    await _turn(parent, "say first")
    warm = await _turn(parent, "delegate 1 recall")  # the worker is up, one seed stored
    pinned = []
    refusals = []
    for size in (8 * 2**20, 2**20, 64 * 2**10, 4 * 2**10):  # until not even 4 KiB fit
        try:
            while True:
                pinned.append(ray.put(b"x" * size))
        except (exceptions.OutOfDiskError, exceptions.ObjectStoreFullError) as full:
            refusals.append(type(full).__name__)
    filled = f"{sorted(set(refusals))} after {len(pinned)} puts"
    refused = await _turn(parent, "delegate 1 recall")
    sessions_after_refusal = list(host.sessions.list())
    pinned.clear()
    async with asyncio.timeout(20):  # Ray frees unreferenced objects shortly after
        while True:
            try:
                ray.put(b"z" * 2**20)
                break
            except (exceptions.OutOfDiskError, exceptions.ObjectStoreFullError):
                await asyncio.sleep(0.05)
    await _turn(parent, "say freed")
    accepted = await _turn(parent, "delegate 1 recall")
    summary = {"warm": warm, "filled": filled, "refused": refused, "accepted": accepted,
               "results": _tool_results(parent), "sessions": sessions_after_refusal,
               "parent": parent.id, "parent_balanced": _balanced(parent.session.events),
               "live": list(await pool.live_children())}
    await host.aclose()
    pool.close()
    ray.shutdown()
    return summary


async def cluster_dies(directory: Path) -> dict[str, Any]:
    import psutil

    from turnfork.shell.ray import RayWorkerPool

    _start(directory)
    me = psutil.Process()
    print(json.dumps({"ray_pids": [child.pid for child in me.children(recursive=True)]}),
          flush=True)
    pool = RayWorkerPool(_ray_rules.configure, size=2)
    store = JsonlSessionStore(directory / "sessions")
    host, parent = _host(pool, store)
    await _turn(parent, "say first")
    started: list[Any] = []
    host.subagents.subscribe(lambda event: started.append(event.run)
                             if type(event).__name__ == "SubagentStart" else None)
    parent.followup("delegate-each hang|hang")
    async with asyncio.timeout(30):
        while len(started) < 2 or any(len(run.own_events()) < 5 for run in started):
            await asyncio.sleep(0.01)
    gcs = [child for child in me.children(recursive=True) if "gcs_server" in child.name()]
    print(json.dumps({"ray_pids": [child.pid for child in me.children(recursive=True)]}),
          flush=True)
    for process in gcs:
        os.kill(process.pid, signal.SIGKILL)
    async with asyncio.timeout(30):
        await parent.when_idle()
    results = [await run.result for run in started]
    summary = {"answer": _texts(final_assistant_output(parent.session.events)),
               "stops": [result.stop_reason for result in results],
               "diagnostics": [result.diagnostic for result in results],
               "parent": parent.id, "children": [run.id for run in started]}
    await host.aclose()
    return summary


def _ray_variables() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name.startswith("RAY_")}


async def worker_dies(directory: Path) -> dict[str, Any]:
    from turnfork.shell.ray import RayWorkerPool
    from turnfork.shell.ray._ray import ray

    before = _ray_variables()
    _start(directory, own_variables=False)
    pool = RayWorkerPool(_ray_rules.configure, size=1)
    host, parent = _host(pool)
    await _turn(parent, "say first")
    started: list[Any] = []
    host.subagents.subscribe(lambda event: started.append(event.run)
                             if type(event).__name__ == "SubagentStart" else None)
    parent.followup("delegate 1 hang")
    async with asyncio.timeout(30):
        while not started or len(started[0].own_events()) < 5:
            await asyncio.sleep(0.01)
    os.kill(pool.workers[0].pid, signal.SIGKILL)
    async with asyncio.timeout(30):
        await parent.when_idle()
    stop = (await started[0].result).stop_reason
    await asyncio.sleep(2)  # what Ray publishes about the dead worker arrives meanwhile
    await host.aclose()
    pool.close()
    ray.shutdown()
    return {"stop": stop, "before": before, "after": _ray_variables()}


async def interrupted(directory: Path) -> dict[str, Any]:
    from turnfork.shell.ray import RayWorkerPool

    _start(directory)
    pool = RayWorkerPool(_ray_rules.configure, size=2)
    store = JsonlSessionStore(directory / "sessions")
    host, parent = _host(pool, store)
    await pool.wait_ready()
    await _turn(parent, "say first")
    started: list[Any] = []
    host.subagents.subscribe(lambda event: started.append(event.run)
                             if type(event).__name__ == "SubagentStart" else None)
    parent.followup("delegate 2 hang")
    async with asyncio.timeout(30):
        while len(started) < 2 or any(len(run.own_events()) < 5 for run in started):
            await asyncio.sleep(0.01)
    _INTERRUPTED.update(runs=started, parent=parent)
    print(json.dumps({"running": [run.id for run in started], "parent": parent.id}),
          flush=True)
    await asyncio.Event().wait()  # until interrupted
    return {}


#: What ``interrupted`` left in memory, read once the interrupt has ended the event loop.
_INTERRUPTED: dict[str, Any] = {}


def _acknowledged() -> dict[str, int]:
    """Events each session of ``interrupted`` held in memory at the end."""
    sessions = [_INTERRUPTED["parent"].session,
                *(run.child.session for run in _INTERRUPTED.get("runs", ()))]
    return {session.id: len(session) for session in sessions}


def main() -> int:
    name, directory = sys.argv[1], Path(sys.argv[2])
    scenario = {"no-cluster": no_cluster, "full-store": full_store,
                "cluster-dies": cluster_dies, "worker-dies": worker_dies,
                "interrupted": interrupted}[name]
    try:
        summary = asyncio.run(scenario(directory))
    except KeyboardInterrupt:
        summary = {"interrupted": True,
                   "acknowledged": _acknowledged() if _INTERRUPTED else {}}
    print(json.dumps(summary), flush=True)
    # Ray ends a process whose GCS is gone at its own pace; this one is done now.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
