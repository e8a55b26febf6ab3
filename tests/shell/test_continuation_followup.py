"""Following up a continuable child (DSH continuation.spec.ts, "SubagentRuntime.followup
residency routing" and "continuable child ownership"): FIFO turns in a running child, cold
resume of a settled one, a waiting parent woken, and the refusals in DSH's words."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _continuation_helpers import (
    continuable_host,
    eventually,
    finish,
    gated,
    manager,
    settle,
    start,
    turn_reasons,
    user_texts,
)
from _shell_helpers import run

from turnfork.core import AgentOptions, StartRequest, SubagentDescriptorEvent, TextBlock
from turnfork.core.continuation import ContinuableStart
from turnfork.shell import Agent, Reply, ScriptedModel, Tool, ToolContext
from turnfork.shell.subagents import SubagentError


def test_follow_ups_queue_as_later_turns_of_the_same_agent(tmp_path: Path) -> None:
    """Ensures that two follow-ups sent while the first turn runs get distinct ids, reach the
    same agent, and each becomes its own later turn, in order."""

    async def main() -> None:
        gate = asyncio.Event()
        host, parent, model, lifecycle = continuable_host(tmp_path)
        model.add(gated(Reply.text("one"), gate))
        model.add(Reply.text("two"))
        model.add(Reply.text("three"))
        model.add(Reply.text("parent noted"))
        child_id = await start(host, parent)
        child = host.agents.get(child_id)
        first = await manager(host).followup(parent, child_id, "first follow-up")
        second = await manager(host).followup(parent, child_id, "second follow-up")
        assert first != second and host.agents.get(child_id) is child
        gate.set()
        await settle(lifecycle, child_id)
        assert child is not None
        assert user_texts(child.session.events) == ["child task", "first follow-up",
                                                    "second follow-up"]
        assert turn_reasons(child.session.events) == ["completed"] * 3
        followed = [e.data.source for e in child.session.events
                    if type(e).__name__ == "UserMessageEvent" and e.data.id == first]
        assert followed[0].items == (("kind", "coordinator"), ("form", "relay"),
                                     ("senderSessionId", parent.id))
        await parent.when_idle()
        await finish(host, parent, child)

    run(main)


def test_a_settled_child_is_resumed_from_its_log(tmp_path: Path) -> None:
    """Ensures that a follow-up to a settled child cold-resumes it into a new epoch of the same
    conversation: one descriptor, the texts in order, a second start/end pair carrying the
    descriptor's provider even after that provider was unregistered (DSH "cold-resumes a
    settled child", "cold-resumes after the initial provider unregisters")."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        for text in ("first answer", "parent noted", "second answer", "parent noted again"):
            model.add(Reply.text(text))
        child_id = await start(host, parent)
        await settle(lifecycle, child_id)
        await parent.when_idle()
        host.subagents.unregister_provider("spawn")
        await manager(host).followup(parent, child_id, "continue please")
        end = await settle(lifecycle, child_id, epochs=2)
        await parent.when_idle()
        child = host.sessions.load(child_id)
        events = list(child.events)
        assert user_texts(events) == ["child task", "continue please"]
        assert sum(isinstance(e, SubagentDescriptorEvent) for e in events) == 1
        starts, ends = lifecycle.starts(child_id), lifecycle.ends(child_id)
        assert [s.provider for s in starts] == ["spawn", "spawn"]
        assert [e.run_id for e in ends] == [s.run_id for s in starts]
        assert len({s.run_id for s in starts}) == 2
        assert (end.stop_reason, end.last_assistant_message) == (
            "completed", (TextBlock(text="second answer"),))
        host.sessions.release(child_id)
        await finish(host, parent)

    run(main)


def test_a_waiting_child_is_woken_not_resumed(tmp_path: Path) -> None:
    """Ensures that a child idle while a continuable grandchild of its own still runs stays
    resident (waiting), takes a follow-up in the same agent, and settles only after the
    grandchild has, having been told of it (DSH "wakes a waiting Activation instead of
    cold-resuming it", "keeps a parent Activation waiting until its child completes
    disposal")."""

    async def main() -> None:
        gate = asyncio.Event()
        host, parent, model, lifecycle = continuable_host(tmp_path)
        leaves: list[str] = []

        async def delegate(args: dict[str, Any], ctx: ToolContext) -> str:
            assert isinstance(ctx.agent, Agent)
            started = await manager(host).start_continuable(
                "spawn", ContinuableStart(prompt=(TextBlock(text="leaf task"),), label="leaf",
                                          agent_options=AgentOptions(provider="leaf")),
                parent=ctx.agent)
            leaves.append(started.child_id)
            return f"started subagent {started.child_id}"

        host.tools.register(Tool("delegate", "start a leaf", {"type": "object"}, delegate))
        host.models.register("leaf", ScriptedModel([gated(Reply.text("leaf answer"), gate)]))
        host.models.register("middle", ScriptedModel([
            Reply.tool_call("delegate", {}), Reply.text("middle answer"),
            Reply.text("while waiting answer"), Reply.text("middle noted the leaf")]))
        model.add(Reply.text("parent noted"))
        child_id = await start(host, parent, "middle task",
                               agent_options=AgentOptions(provider="middle"))
        middle = host.agents.get(child_id)
        assert middle is not None
        await eventually(lambda: bool(leaves) and not middle.running)
        await asyncio.sleep(0.01)
        assert host.agents.get(child_id) is middle  # waiting, not settled
        await manager(host).followup(parent, child_id, "while waiting")
        await eventually(lambda: len(turn_reasons(middle.session.events)) == 2)
        await middle.when_idle()
        assert host.agents.get(child_id) is middle and lifecycle.ends(child_id) == []
        gate.set()
        await settle(lifecycle, leaves[0])
        await settle(lifecycle, child_id)
        texts = user_texts(middle.session.events)
        assert texts[:2] == ["middle task", "while waiting"]
        assert "finished and will do no further work" in texts[2]
        assert lifecycle.ends(leaves[0])[0].stop_reason == "completed"
        await parent.when_idle()
        await finish(host, parent, middle)

    run(main)


def test_follow_up_refusals(tmp_path: Path) -> None:
    """Ensures DSH's refusals: another parent (belongs to another parent session), an unknown
    id (NOT_RESUMABLE, unavailable), a one-shot child (no supported continuation state)."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        model.add(Reply.text("ok"))
        model.add(Reply.text("parent noted"))
        child_id = await start(host, parent)
        stranger = host.create_agent(provider="parent", model="test-model")
        with pytest.raises(SubagentError) as caught:
            await manager(host).followup(stranger, child_id, "hi")
        assert (caught.value.code, str(caught.value)) == (
            "UNAUTHORIZED", f'subagent "{child_id}" belongs to another parent session')
        unknown = "22222222-2222-4222-8222-222222222222"
        with pytest.raises(SubagentError) as caught:
            await manager(host).followup(parent, unknown, "Please continue.")
        assert (caught.value.code, str(caught.value)) == (
            "NOT_RESUMABLE", f'subagent "{unknown}" is unavailable')
        model.add(Reply.text("one-shot answer"))
        one_shot = await host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="once"),)), parent=parent)
        await one_shot.result
        await one_shot.dispose()
        with pytest.raises(SubagentError) as caught:
            await manager(host).followup(parent, one_shot.id, "again")
        assert str(caught.value) == (f'subagent "{one_shot.id}" has no supported continuation '
                                     "state and cannot be resumed; do not retry send_message "
                                     "with this id")
        await settle(lifecycle, child_id)
        await parent.when_idle()
        await finish(host, parent, stranger)

    run(main)
