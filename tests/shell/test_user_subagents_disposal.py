"""Disposing a parent while its foreground child is still winding down: the parent's disposal
waits for the child, however the call that started it was interrupted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _shell_helpers import assert_balanced, run
from _subagent_helpers import request, subagent_host

from turnfork.shell import Reply, Tool, ToolContext
from turnfork.shell.subagents import SubagentTool


def _slow_to_stop(started: asyncio.Event) -> Tool:
    """A tool that runs until cancelled, then needs several loop turns to clean up."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            for _ in range(20):
                await asyncio.sleep(0)
            raise
        return "unreachable"

    return Tool("slow", "runs until cancelled", {"type": "object"}, handler)


def test_disposing_a_parent_after_cancelling_it_waits_for_its_winding_down_child() -> None:
    """The parent's turn is cancelled while its child runs a tool that is slow to stop, then
    the parent is disposed: the second cancellation interrupts the tool call's wait for the
    child's disposal, and the parent's disposal still waits for the child to be quiet,
    unregistered and its log closed."""

    async def main() -> None:
        started = asyncio.Event()
        host, parent, _, recorder = subagent_host([
            Reply.tool_call("subagent", {"description": "d", "prompt": "p"}),
            Reply.tool_call("slow", {})])
        host.tools.register(_slow_to_stop(started))
        SubagentTool(provider="spawn").install(host)
        turn = asyncio.ensure_future(parent.run("go"))
        await started.wait()
        child = recorder.child()
        parent.cancel()
        while not child.disposed:  # the tool call began disposing its child
            await asyncio.sleep(0)
        await parent.dispose()
        assert not child.running
        assert host.agents.list() == ()
        assert host.subagents.runs() == ()
        assert_balanced(child.session.events)
        assert (await turn).stop_reason == "aborted"
        assert_balanced(parent.session.events)
        await host.aclose()

    run(main)


def test_closing_the_runtime_waits_for_a_disposal_already_under_way() -> None:
    """``aclose()`` disposes every run not yet disposed, a run whose disposal another caller
    began included: when it returns, that child is quiet too."""

    async def main() -> None:
        started = asyncio.Event()
        host, parent, _, recorder = subagent_host([Reply.tool_call("slow", {})])
        host.tools.register(_slow_to_stop(started))
        started_run = await host.subagents.start("spawn", request("p"), parent=parent)
        await started.wait()
        elsewhere = asyncio.ensure_future(started_run.dispose())
        while not started_run.disposed:
            await asyncio.sleep(0)
        await host.subagents.aclose()
        child = recorder.child()
        assert not child.running
        assert child.id not in host.agents
        assert_balanced(child.session.events)
        await elsewhere
        await host.aclose()

    run(main)



def test_a_child_whose_disposal_fails_is_still_released_and_forgotten() -> None:
    """The child's own disposal raises (a remote child's host unreachable, say): the run's
    ``dispose()`` raises that error once its result settled, and the run is forgotten all the
    same, so that a later release or close neither lists nor disposes it again."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("done")])
        started = await host.subagents.start("spawn", request("p"), parent=parent)
        assert (await started.result).stop_reason == "completed"
        child = recorder.child()
        dispose_child = child.dispose

        async def failing_dispose() -> None:
            await dispose_child()
            raise RuntimeError("the child's host is unreachable")

        child.dispose = failing_dispose  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="unreachable"):
            await started.dispose()
        assert host.subagents.runs() == ()
        await parent.dispose()
        await host.subagents.aclose()
        await host.aclose()

    run(main)
