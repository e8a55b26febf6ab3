"""Tool scheduling: concurrency-safe calls start together, results commit in model order."""

from __future__ import annotations

import asyncio
from typing import Any

from _shell_helpers import assert_balanced, make_host, of_type, run, scripted, types

from turnfork.core import ToolCallEvent, ToolResultEvent
from turnfork.shell import Reply, Tool, ToolContext


def _rendezvous_tools(order: list[str]) -> list[Tool]:
    """A waits until B has started (deadlocks unless they overlap); B finishes first."""
    b_started = asyncio.Event()

    async def a(args: dict[str, Any], ctx: ToolContext) -> str:
        await b_started.wait()
        await asyncio.sleep(0)
        order.append("a done")
        return "A"

    async def b(args: dict[str, Any], ctx: ToolContext) -> str:
        b_started.set()
        order.append("b done")
        return "B"

    return [Tool("a", "", {"type": "object"}, a, concurrency_safe=True),
            Tool("b", "", {"type": "object"}, b, concurrency_safe=True)]


def test_safe_calls_overlap_and_commit_in_model_order() -> None:
    """call A, call B, result A, result B, although B finished first."""

    async def main() -> None:
        host = make_host()
        order: list[str] = []
        for tool in _rendezvous_tools(order):
            host.tools.register(tool)
        agent, _ = scripted(host, [Reply.tool_calls([("a", {}), ("b", {})]), Reply.text("ok")])
        agent.followup("go")
        await agent.when_idle()
        events = list(agent.session.events)
        step = [t for t in types(events) if t in ("tool/call", "tool/result")]
        assert step == ["tool/call", "tool/call", "tool/result", "tool/result"]
        results = of_type(events, ToolResultEvent)
        assert [r.data.message.source.call_id for r in results] == ["call_1_0", "call_1_1"]
        calls = of_type(events, ToolCallEvent)
        assert [r.source_event_seqs for r in results] == [(calls[0].seq,), (calls[1].seq,)]
        assert order == ["b done", "a done"]
        assert_balanced(events)

    run(main)


def test_unsafe_calls_run_one_at_a_time() -> None:
    """Without concurrency_safe, each call gets its result before the next starts."""

    async def main() -> None:
        host = make_host()
        running: list[str] = []
        overlaps: list[bool] = []

        async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
            overlaps.append(bool(running))
            running.append(ctx.call_id)
            await asyncio.sleep(0)
            running.remove(ctx.call_id)
            return ctx.call_id

        host.tools.register(Tool("u", "", {"type": "object"}, handler))
        agent, _ = scripted(host, [Reply.tool_calls([("u", {}), ("u", {})]), Reply.text("ok")])
        agent.followup("go")
        await agent.when_idle()
        step = [t for t in types(agent.session.events) if t in ("tool/call", "tool/result")]
        assert step == ["tool/call", "tool/result", "tool/call", "tool/result"]
        assert overlaps == [False, False]

    run(main)


def test_mixed_calls_group_consecutive_safe_ones() -> None:
    """safe, safe, unsafe, safe: the first two start together, then one by one."""

    async def main() -> None:
        host = make_host()

        async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
            return ctx.tool_name

        host.tools.register(Tool("s", "", {"type": "object"}, handler, concurrency_safe=True))
        host.tools.register(Tool("u", "", {"type": "object"}, handler))
        agent, _ = scripted(host, [
            Reply.tool_calls([("s", {}), ("s", {}), ("u", {}), ("s", {})]), Reply.text("ok")])
        agent.followup("go")
        await agent.when_idle()
        step = ["C" if t == "tool/call" else "R" for t in types(agent.session.events)
                if t in ("tool/call", "tool/result")]
        assert "".join(step) == "CCRRCRCR"
        assert_balanced(agent.session.events)

    run(main)
