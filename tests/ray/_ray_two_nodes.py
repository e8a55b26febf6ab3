"""Two nodes on loopback (``ray.cluster_utils.Cluster``: a head and a worker node, one CPU
each), in a process of its own (``python _ray_two_nodes.py DIR``): the three ways to join a
running cluster, then the pool across both nodes. Prints one JSON line; the test that runs it
is test_ray_two_nodes.py.

* ``env``: ``connect_cluster()`` with ``RAY_ADDRESS`` set; a fork child runs.
* ``client``: ``connect_cluster("ray://…")`` through the head's Ray Client server; a fork
  and a spawn child run.
* ``auto``: ``connect_cluster("auto")`` (the cluster this machine started last); a pool
  placed with ``STRICT_SPREAD`` has one worker per node; 20 children spread over both; then
  the worker node is removed while a child hangs on each node: the one on the lost node
  resumes on the head's worker (``recover=1``), the other goes on.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import _ray_rules
from _ray_env import worker_environment
from _ray_host import contract_host, one_turn, request, text
from test_ray_cancel import turn_started, until

from turnfork.core import check_balance


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _join_through_client(connect_cluster: Any, shutdown: Any, client_port: int) -> str:
    """Join through the head's Ray Client server. That server starts a server process per
    client, and on a fresh, loaded machine Ray has been seen to give up on that process (its
    log says why: the fixture prints it); a second client gets a new one. Three tries."""
    address = f"ray://127.0.0.1:{client_port}"
    for attempt in (1, 2):
        try:
            return str(connect_cluster(address))
        except ConnectionAbortedError as error:
            last = str(error).strip().splitlines()[-1:]
            print(f"Ray Client join {attempt} refused: {last}", file=sys.stderr, flush=True)
            shutdown()
    return str(connect_cluster(address))


async def _one_of_each(kinds: tuple[str, ...]) -> dict[str, Any]:
    from turnfork.shell.ray import RayWorkerPool

    pool = RayWorkerPool(_ray_rules.configure, size=1)
    host, parent, _ = contract_host(pool)
    await one_turn(parent, "say Remember TEAL")
    answers = {}
    for kind in kinds:
        run = await host.subagents.start(f"ray-{kind}", request("recall"), parent=parent)
        result = await run.result
        answers[kind] = [result.stop_reason, text(result.output)]
        await run.dispose()
    await host.aclose()
    pool.close()
    return answers


async def _across_nodes(cluster: Any, worker_node: Any) -> dict[str, Any]:
    from turnfork.shell.ray import RayWorkerPool

    pool = RayWorkerPool(_ray_rules.configure, size=2, placement="STRICT_SPREAD", recover=1)
    host, parent, _ = contract_host(pool)
    workers = await pool.wait_ready()
    nodes = {worker.name: worker.info.node_id for worker in workers if worker.info}
    runs = [await host.subagents.start("ray-spawn", request(f"say {number}"), parent=parent)
            for number in range(20)]
    spread: dict[str, int] = {}
    for run in runs:
        assert (await run.result).stop_reason == "completed"
        node = run.child.worker.info.node_id
        spread[node] = spread.get(node, 0) + 1
        await run.dispose()
    hanging = [await host.subagents.start("ray-spawn", request("hang-then recovered"),
                                          parent=parent) for _ in range(2)]
    for run in hanging:
        await until(turn_started(run), 60)
    lost_node = worker_node.node_id
    on_lost = [run for run in hanging if run.child.worker.info.node_id == lost_node]
    kept = [run for run in hanging if run not in on_lost]
    cluster.remove_node(worker_node, allow_graceful=False)
    result = await asyncio.wait_for(on_lost[0].result, 120)
    recovered = on_lost[0].child
    summary = {
        "nodes": nodes, "head": cluster.head_node.node_id, "lost_node": lost_node,
        "spread": spread, "stop": result.stop_reason, "answer": text(result.output),
        "recoveries": recovered.recoveries,
        "resumed_on": recovered.worker.info.node_id,
        "balanced": bool(check_balance(recovered.session.events).unwrap().is_closed),
        "kept_running": not kept[0].done,
    }
    await host.aclose()
    pool.close()
    return summary


def main() -> int:
    from ray.cluster_utils import Cluster

    from turnfork.shell.ray import connect_cluster
    from turnfork.shell.ray._ray import ray

    directory = Path(sys.argv[1])
    os.environ.update(worker_environment(directory / "home"))
    # Where "auto" looks for the cluster this machine started last: this run's, not /tmp/ray.
    os.environ["RAY_TMPDIR"] = str(directory)
    (directory / "ray").mkdir(exist_ok=True)
    # A Ray Client server starts a server process per client; on a loaded machine that may
    # take longer than the 30 s Ray allows by default.
    os.environ["RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S"] = "180"
    client_port = _free_port()
    fast_health = {"health_check_period_ms": 500, "health_check_failure_threshold": 4,
                   "health_check_initial_delay_ms": 500}
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "temp_dir": str(directory / "t"), "include_dashboard": False,
        "ray_client_server_port": client_port, "object_store_memory": 80 * 2**20,
        "_system_config": fast_health})
    worker_node = cluster.add_node(num_cpus=1, object_store_memory=80 * 2**20)
    cluster.wait_for_nodes()
    summary: dict[str, Any] = {}
    try:
        os.environ["RAY_ADDRESS"] = cluster.address
        summary["env_joined"] = connect_cluster()
        summary["env"] = asyncio.run(_one_of_each(("fork",)))
        ray.shutdown()
        del os.environ["RAY_ADDRESS"]
        summary["client_joined"] = _join_through_client(connect_cluster, ray.shutdown, client_port)
        summary["client"] = asyncio.run(_one_of_each(("fork", "spawn")))
        ray.shutdown()
        summary["auto_joined"] = connect_cluster("auto")
        summary["address"] = cluster.address
        summary["auto"] = asyncio.run(_across_nodes(cluster, worker_node))
        ray.shutdown()
    finally:
        ray.shutdown()
        cluster.shutdown()
    print(json.dumps(summary), flush=True)
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
