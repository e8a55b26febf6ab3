"""What a child gets of the cluster is what its pool's workers have (docs/ray.md, "Resources,
placement and growth"): a pool whose workers need a CPU each and run one child each gives
every child a CPU of its own and grows up to ``max_size``; a start that finds every worker
full waits for a free slot rather than for a worker the cluster cannot place; a provider
with named pools runs each child on the pool its request is routed to, with that pool's
``runtime_env``."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

import _ray_rules
from _ray_host import close, contract_host, request, run, text
from test_ray_cancel import turn_started, until

from turnfork.core import AgentOptions


def test_one_cpu_per_child_grows_the_pool_and_never_waits_for_an_unplaceable_worker(
        ray_cluster: str) -> None:
    """Workers of one CPU each, one child each, on a cluster of two CPUs: two children get a
    worker each (the pool grew from one); the third start spawns a worker the cluster cannot
    place and waits, and takes the first slot that frees."""
    from turnfork.shell.ray import RayWorkerPool

    elastic = RayWorkerPool(_ray_rules.configure, size=1, max_size=3, max_children=1,
                            start_timeout=60, actor_options={"num_cpus": 1})

    async def main() -> None:
        host, parent, _ = contract_host(elastic)
        first = await host.subagents.start("ray-spawn", request("hang"), parent=parent)
        second = await host.subagents.start("ray-spawn", request("hang"), parent=parent)
        await until(turn_started(first))
        await until(turn_started(second))
        assert first.child.worker is not second.child.worker
        assert len(elastic.workers) == 2
        third = asyncio.ensure_future(host.subagents.start("ray-spawn", request("say third"),
                                                           parent=parent))
        await until(lambda: len(elastic.workers) == 3)  # grew toward max_size
        pending = [worker for worker in elastic.workers if not worker.started]
        assert len(pending) == 1 and not third.done()
        await first.dispose()
        async with asyncio.timeout(20):  # the freed slot, not the pending worker
            started = await third
        assert started.child.worker is first.child.worker
        assert text((await started.result).output) == "third"
        assert not pending[0].started
        await close(host)

    try:
        run(main)
    finally:
        elastic.close()


def test_named_pools_route_children_by_their_request(ray_cluster: str) -> None:
    """A provider with two pools: a child whose route names the model provider "env" runs on
    the pool named "env" (whose workers' runtime_env sets a variable); the others on the
    default pool, where the variable is unset."""
    from turnfork.shell.ray import RaySpawnProvider, RayWorkerPool

    plain = RayWorkerPool(_ray_rules.env_setup, size=1, name="plain")
    marked = RayWorkerPool(_ray_rules.env_setup, size=1, name="env",
                           actor_options={"runtime_env": {"env_vars": {"TF_POOL": "env"}}})

    async def main() -> None:
        host, parent, _ = contract_host(plain)
        _ray_rules.add_env(host)
        host.subagents.register_provider(RaySpawnProvider({"default": plain, "env": marked},
                                                          "pools"))
        task = 'tool env {"text":"TF_POOL"}'
        routed = await host.subagents.start(
            "pools", request(task, agent_options=AgentOptions(provider="env")), parent=parent)
        default = await host.subagents.start("pools", request(task), parent=parent)
        assert text((await routed.result).output) == "tool said: env"
        assert text((await default.result).output) == "tool said: <unset>"
        assert routed.child.pool is marked and default.child.pool is plain
        assert routed.child.worker.name == "env-0"
        await close(host)

    try:
        run(main, timeout=120)
    finally:
        plain.close()
        marked.close()
