"""Abort and disposal of a Ray child keep the in-process contracts: an abort before publication
leaves nothing anywhere, one after it ends the child's turn with cause ``parent``, disposal is
idempotent and concurrent-safe and leaves nothing running on the cluster, siblings are
independent, and cancelling the parent's turn cancels its remote children (in-process tests:
test_subagent_cancel.py, test_subagent_tool.py's cancellation case)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import (
    WHERE,
    assert_balanced,
    close,
    contract_host,
    one_turn,
    provider,
    request,
    run,
    text,
    turn_ends,
)

from turnfork.core import (
    CancelDisposed,
    CancelParent,
    ToolCallEvent,
    TurnAborted,
    TurnCompleted,
    TurnStartEvent,
    final_assistant_output,
)
from turnfork.shell import AbortController, SubagentTool
from turnfork.shell.subagents import SubagentAbortedError


async def until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


def turn_started(run_: Any) -> Callable[[], bool]:
    return lambda: any(isinstance(e, TurnStartEvent) for e in run_.own_events())


async def nothing_on_the_cluster(pool: Any) -> None:
    assert await pool.live_children() == ()


@pytest.mark.parametrize("where", WHERE)
def test_an_abort_before_publication_leaves_nothing(pool: Any, where: str) -> None:
    """An aborted signal, or one aborted inside the setup window, fails the start; no session
    is left on the host and no child ran on the cluster."""

    async def main() -> None:
        host, parent, recorder = contract_host(pool)
        await one_turn(parent, "say one")
        before = host.sessions.list()
        controller = AbortController()
        controller.abort()
        with pytest.raises(SubagentAbortedError):
            await host.subagents.start(provider(where), request("say hi"), parent=parent,
                                       signal=controller.signal)
        controller = AbortController()
        starting = asyncio.ensure_future(host.subagents.start(
            provider(where), request("say hi"), parent=parent, signal=controller.signal))
        await asyncio.sleep(0)
        controller.abort()
        with pytest.raises(SubagentAbortedError):
            await starting
        assert host.sessions.list() == before and recorder.events == []
        await nothing_on_the_cluster(pool)
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_an_abort_after_publication_ends_the_turn_with_cause_parent(pool: Any,
                                                                     where: str) -> None:
    """The running child's turn ends aborted {parent} (closed where it ran, its closing
    events on the host); the result is aborted."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        controller = AbortController()
        run_ = await host.subagents.start(provider(where), request("hang"), parent=parent,
                                          signal=controller.signal)
        await until(turn_started(run_))
        controller.abort()
        result = await run_.result
        assert result.stop_reason == "aborted"
        assert turn_ends(run_.own_events()) == [TurnAborted(reason=CancelParent())]
        assert_balanced(run_.child.session.events, "child")
        await run_.dispose()
        await nothing_on_the_cluster(pool)
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_an_abort_after_the_turn_completed_changes_nothing(pool: Any, where: str) -> None:
    """Once the child's turn completed, an abort leaves the result completed."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        controller = AbortController()
        run_ = await host.subagents.start(provider(where), request("say done"), parent=parent,
                                          signal=controller.signal)
        result = await run_.result
        controller.abort()
        await run_.dispose()
        assert (result.stop_reason, text(result.output)) == ("completed", "done")
        assert turn_ends(run_.own_events()) == [TurnCompleted()]
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_dispose_mid_run_is_idempotent_and_concurrent_safe(pool: Any, where: str) -> None:
    """Disposing a running child (three times at once, then again) ends its turn aborted
    {disposed}; the result says aborted; nothing of it runs or is live afterwards."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        run_ = await host.subagents.start(provider(where), request("hang"), parent=parent)
        await until(turn_started(run_))
        await asyncio.gather(run_.dispose(), run_.dispose(), run_.dispose())
        await run_.dispose()
        assert run_.disposed and (await run_.result).stop_reason == "aborted"
        assert turn_ends(run_.own_events()) == [TurnAborted(reason=CancelDisposed())]
        assert host.sessions.get(run_.id) is None and run_ not in host.subagents.runs()
        await nothing_on_the_cluster(pool)
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_dispose_before_the_child_ran_reports_aborted(pool: Any, where: str) -> None:
    """Disposed right after start: no turn ran, the result is aborted."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        run_ = await host.subagents.start(provider(where), request("say hi"), parent=parent)
        await run_.dispose()
        assert (await run_.result).stop_reason == "aborted"
        assert_balanced(run_.child.session.events, "child")
        await nothing_on_the_cluster(pool)
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_siblings_are_independent(pool: Any, where: str) -> None:
    """Disposing one running child and aborting another never settles the third."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        controllers = [AbortController() for _ in range(3)]
        runs = [await host.subagents.start(provider(where), request(task), parent=parent,
                                           signal=controller.signal)
                for task, controller in zip(("hang", "hang", "slow 300 third"), controllers,
                                            strict=True)]
        await until(turn_started(runs[0]))
        await until(turn_started(runs[1]))
        await runs[0].dispose()
        controllers[1].abort()
        assert (await runs[1].result).stop_reason == "aborted"
        assert not runs[2].done
        third = await runs[2].result
        assert (third.stop_reason, text(third.output)) == ("completed", "third")
        await close(host)
        await nothing_on_the_cluster(pool)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_cancelling_the_parent_cancels_its_remote_children(pool: Any, where: str) -> None:
    """The parent delegates three hanging children at once and its turn is cancelled: each
    child's turn ends aborted {parent}, the parent's log is balanced, nothing runs on the
    cluster, and the parent can take its next turn."""

    async def main() -> None:
        host, parent, recorder = contract_host(pool)
        SubagentTool(provider=provider(where)).install(host)
        parent.followup("delegate 3 hang")
        await until(lambda: len(recorder.starts()) == 3)
        for start in recorder.starts():
            await until(turn_started(start.run))
        parent.cancel()
        await parent.when_idle()
        for start in recorder.starts():
            assert start.run.disposed
            assert turn_ends(start.run.own_events()) == [TurnAborted(reason=CancelParent())]
            assert_balanced(start.run.child.session.events, "child")
        assert_balanced(parent.session.events, "parent")
        await nothing_on_the_cluster(pool)
        await one_turn(parent, "say again")
        assert text(final_assistant_output(parent.session.events) or ()) == "again"
        await close(host)

    run(main)


def test_a_child_that_will_not_stop_is_given_up_on(ray_cluster: str) -> None:
    """A child stuck in a tool that swallows its cancellation: after stop_timeout Ray cancels
    it, after another the host gives up; the run says so, the log on the host is balanced,
    the result is aborted; closing the pool kills what still runs there."""
    import _ray_rules

    from turnfork.shell.ray import RayWorkerPool

    stubborn = RayWorkerPool(_ray_rules.stubborn_setup, size=1, stop_timeout=0.5)

    async def main() -> None:
        host, parent, _ = contract_host(stubborn)
        run_ = await host.subagents.start("ray-fork", request("tool stubborn {}"),
                                          parent=parent)
        await until(lambda: any(isinstance(e, ToolCallEvent) for e in run_.own_events()))
        await run_.dispose()
        result = await run_.result
        assert result.stop_reason == "aborted"
        assert "did not stop within 1 s of being cancelled and was given up on" in \
            result.diagnostic
        assert_balanced(run_.child.session.events, "child")
        assert await stubborn.live_children() == (run_.id,)  # honestly still there
        await close(host)

    try:
        run(main)
    finally:
        stubborn.close()
