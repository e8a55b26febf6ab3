"""The worker pool as a Ray user relies on it (issue 27): a dead worker is noticed before a child
is sent to it (D3); a start never waits for a worker the cluster cannot place while another is
ready, and leaves no unread future behind (D4); control calls answer however many children a
worker runs (D6); the Ray options the pool owns are refused or honoured, never silently
replaced (D7); a worker Ray calls transiently unavailable keeps its children and loses none of
their events (before, the pool killed it, failing every child on it); the dashboard tells the
workers and the children's calls apart by name."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

import _ray_rules
from _ray_host import assert_balanced, close, contract_host, request, run, text, turn_ends
from test_ray_cancel import turn_started, until

from turnfork.core import CancelDisposed, TurnAborted, TurnInterrupted
from turnfork.shell import Tool


async def results_of(host: Any, parent: Any, tasks: list[str], kind: str = "spawn") -> list[Any]:
    runs = [await host.subagents.start(f"ray-{kind}", request(task), parent=parent)
            for task in tasks]
    results = [await run_.result for run_ in runs]
    for run_ in runs:
        await run_.dispose()
    return list(zip(runs, results, strict=True))


@pytest.fixture
def unread_futures() -> Iterator[list[str]]:
    """What the event loops report as never retrieved (asyncio's unread-future warnings)."""
    found: list[str] = []
    original = asyncio.BaseEventLoop.call_exception_handler

    def handler(self: asyncio.BaseEventLoop, context: dict[str, Any]) -> None:
        found.append(str(context.get("message")))
        original(self, context)

    asyncio.BaseEventLoop.call_exception_handler = handler  # type: ignore[method-assign]
    try:
        yield found
    finally:
        asyncio.BaseEventLoop.call_exception_handler = original  # type: ignore[method-assign]


def test_a_dead_worker_is_noticed_before_children_are_sent_to_it(pool: Any) -> None:
    """A worker with no child is killed: the pool drops it by itself, and the next children
    all run on live workers (one replaces it) and complete."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        victim, _ = await pool.wait_ready()
        os.kill(victim.pid, signal.SIGKILL)
        await until(lambda: victim not in pool.workers)  # no child had to fail first
        assert "died" in victim.problem
        done = await results_of(host, parent, ["pid"] * 4)
        assert [result.stop_reason for _, result in done] == ["completed"] * 4
        assert all(run_.child.worker is not victim for run_, _ in done)
        assert str(victim.pid) not in {text(result.output) for _, result in done}
        await close(host)

    run(main)


def test_a_start_never_waits_for_a_worker_that_cannot_be_placed(
        ray_cluster: str, unread_futures: list[str]) -> None:
    """Two workers that each need both CPUs of the cluster: one starts, the other stays
    pending. Starts go to the started one at once (well inside start_timeout), and no future
    is left unread."""
    from turnfork.shell.ray import RayWorkerPool

    greedy = RayWorkerPool(_ray_rules.configure, size=2, start_timeout=60,
                           actor_options={"num_cpus": 2})

    async def main() -> None:
        host, parent, _ = contract_host(greedy)
        async with asyncio.timeout(30):
            done = await results_of(host, parent, ["say one", "say two", "say three"])
        assert [text(result.output) for _, result in done] == ["one", "two", "three"]
        placed = {run_.child.worker.index for run_, _ in done}
        pending = [worker for worker in greedy.workers if not worker.started]
        assert len(placed) == 1 and len(pending) == 1 and pending[0].index not in placed
        await close(host)

    try:
        run(main)
    finally:
        greedy.close()
    gc.collect()
    assert unread_futures == []


def test_control_calls_answer_while_a_worker_runs_more_children_than_its_calls(
        ray_cluster: str) -> None:
    """A worker that runs two calls at once takes five hanging children: the pool lists all
    five, and disposal cancels each through its own turn machine (aborted, disposed), not by
    losing it."""
    from turnfork.shell.ray import RayWorkerPool

    narrow = RayWorkerPool(_ray_rules.configure, size=1, max_concurrency=2, stop_timeout=5)

    async def main() -> None:
        host, parent, _ = contract_host(narrow)
        runs = [await host.subagents.start("ray-spawn", request("hang"), parent=parent)
                for _ in range(5)]
        for run_ in runs:
            await until(turn_started(run_))
        async with asyncio.timeout(10):
            live = await narrow.live_children()
        assert sorted(live) == sorted(run_.id for run_ in runs)
        await asyncio.gather(*(run_.dispose() for run_ in runs))
        for run_ in runs:
            assert turn_ends(run_.own_events()) == [TurnAborted(reason=CancelDisposed())]
            assert run_.child.diagnostic is None
        assert await narrow.live_children() == ()
        await close(host)

    try:
        run(main)
    finally:
        narrow.close()


@pytest.mark.parametrize(("options", "named"), [
    ({"max_concurrency": 5}, "RayWorkerPool(max_concurrency=...)"),
    ({"max_task_retries": 2}, "a model turn is not replayed"),
    ({"name": "mine"}, "RayWorkerPool(name=...)"),
    ({"concurrency_groups": {"io": 2}}, "concurrency_groups"),
])
def test_options_the_pool_owns_are_refused_with_what_to_use(options: dict[str, Any],
                                                            named: str) -> None:
    """An option the pool sets itself is refused, naming it and what to use instead."""
    from turnfork.shell.ray import RayWorkerPool

    with pytest.raises(ValueError, match=r"actor_options\[") as refused:
        RayWorkerPool(actor_options=options)
    assert named in str(refused.value)


def test_max_restarts_is_honoured(ray_cluster: str) -> None:
    """With max_restarts=1 Ray restarts a killed worker: the child it ran is lost (its log
    closed here, the diagnostic says the worker was restarted), the pool keeps the worker,
    and the next child runs in its new process."""
    from turnfork.shell.ray import RayWorkerPool

    restarting = RayWorkerPool(_ray_rules.configure, size=1,
                               actor_options={"max_restarts": 1})

    async def main() -> None:
        host, parent, _ = contract_host(restarting)
        (worker,) = await restarting.wait_ready()
        first = worker.pid
        victim = await host.subagents.start("ray-spawn", request("hang"), parent=parent)
        await until(turn_started(victim))
        os.kill(first, signal.SIGKILL)
        result = await asyncio.wait_for(victim.result, 60)
        assert result.stop_reason == "error"
        assert turn_ends(victim.own_events()) == [TurnInterrupted()]
        assert_balanced(victim.child.session.events, "lost child")
        assert restarting.workers == (worker,)
        ((again, answer),) = await results_of(host, parent, ["pid"])
        assert answer.stop_reason == "completed" and again.child.worker is worker
        await until(lambda: worker.pid != first)  # what the pool knows of it follows
        assert text(answer.output) == str(worker.pid)
        await victim.dispose()
        await close(host)

    try:
        run(main, timeout=120)
    finally:
        restarting.close()


class _LosesAnswers:
    """A worker handle whose polls lose their answers on the way, as Ray reports a transient
    loss of the worker (``ActorUnavailableError``: "the task may or may not have been
    executed"): the poll runs on the worker, and its caller gets the error instead."""

    def __init__(self, handle: Any, failures: int, unavailable: Callable[[], Any]) -> None:
        self._handle = handle
        self.failures = failures
        self._unavailable = unavailable

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._handle, name)
        return _Method(self, method) if name == "poll" else method


class _Method:
    def __init__(self, owner: _LosesAnswers, method: Any) -> None:
        self._owner, self._method = owner, method

    def options(self, **options: Any) -> _Method:
        return _Method(self._owner, self._method.options(**options))

    def remote(self, *args: Any) -> Any:
        answered = self._method.remote(*args)
        owner = self._owner
        if owner.failures and args[1] > 0:  # after the first batch: events are in flight
            owner.failures -= 1
            return owner._unavailable()
        return answered


@pytest.mark.parametrize("kind", ["spawn", "fork"])
def test_a_transiently_unavailable_worker_keeps_its_children(pool: Any, kind: str) -> None:
    """Mid-run, two polls of each worker lose their answers to ActorUnavailableError: the
    workers stay in the pool, and each child completes with the log it has in process (the
    lost batches come again, nothing twice)."""
    from turnfork.shell.ray._ray import exceptions, ray

    @ray.remote
    def unavailable() -> None:
        raise exceptions.ActorUnavailableError("injected: the connection was lost", None)

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        await results_of(host, parent, ["say warm"], kind)
        workers = await pool.wait_ready()
        handles = [worker.handle for worker in workers]
        for worker in workers:
            worker.handle = _LosesAnswers(worker.handle, 2, unavailable.remote)
        try:
            tasks = ["slow 400 late answer", "slow 300 sibling"]
            done = await results_of(host, parent, tasks, kind)
            assert [worker.handle.failures for worker in workers] == [0, 0]  # all happened
        finally:
            for worker, handle in zip(workers, handles, strict=True):
                worker.handle = handle
        assert [text(result.output) for _, result in done] == ["late answer", "sibling"]
        assert {run_.child.worker for run_, _ in done} == set(workers)
        assert all(worker in pool.workers and worker.reachable for worker in workers)
        ((local, _),) = await results_of(host, parent, tasks[:1], kind)
        remote = done[0][0]
        assert [type(e) for e in remote.own_events()] == [type(e) for e in local.own_events()]
        assert_balanced(remote.child.session.events, "child")
        await close(host)

    run(main)


def test_the_dashboard_tells_workers_and_children_apart(ray_cluster: str) -> None:
    """A pool's worker is the named actor ``<pool>-<i>``; the call that started a child is
    named after it, and a batch's after its first and last child."""
    from turnfork.shell.ray import RayWorkerPool
    from turnfork.shell.ray._ray import ray

    named = RayWorkerPool(_ray_rules.naming_setup, size=1, name="named")

    async def main() -> None:
        host, parent, _ = contract_host(named)
        host.tools.register(Tool("task", "the Ray task's name", {"type": "object"},
                                 _ray_rules._task_name))
        (worker,) = await named.wait_ready()
        assert worker.name == "named-0" and ray.get_actor("named-0") is not None
        ((alone, answer),) = await results_of(host, parent, ["tool task {}"])
        assert text(answer.output) == f"tool said: start child {alone.id}"
        batch = await asyncio.gather(*(host.subagents.start("ray-spawn",
                                                            request("tool task {}"),
                                                            parent=parent)
                                       for _ in range(3)))
        names = {text((await run_.result).output) for run_ in batch}
        assert names == {f"tool said: start 3 children: {batch[0].id} … {batch[-1].id}"}
        await close(host)

    try:
        run(main)
    finally:
        named.close()
