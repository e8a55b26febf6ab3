"""Regressions of defects found in continuable children (each failed before its fix):

* a resumed continuable fork child regained its parent's approval policy from its seed
  (finding G02 of the third red-team round);
* two follow-ups sent at once to a settled child: the second raised ``AgentExistsError`` from
  the cold-resume race (G06);
* an agent in ``run_maintenance`` that accepted a follow-up and was then cancelled lost the
  message without a record (DSH continuation.spec.ts:1881, reproduced on a root agent with no
  subagents);
* a continuable child whose parent was disposed in its creation window was refused with the
  parent's id where DSH's ``setup aborted`` text names the agent being set up, the child."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest
from _continuation_helpers import Lifecycle, eventually, user_texts
from _continuation_spec import no_activation, persisted
from _shell_helpers import make_host, of_type, run, scripted
from _subagent_helpers import result_texts
from msgspec import UNSET

from turnfork.core import ApprovalPolicyEvent, InboxSplicedEvent, TextBlock
from turnfork.core.continuation import ContinuableStart
from turnfork.shell import (
    Agent,
    ForkProvider,
    Host,
    JsonlSessionStore,
    Reply,
    ScriptedModel,
    SpawnProvider,
    SubagentRuntime,
    Tool,
    ToolContext,
)


def _host(root: Path, **options: Any) -> tuple[Host, Lifecycle]:
    host = make_host(JsonlSessionStore(root))
    for name, value in options.items():
        setattr(host, name, value)
    runtime = SubagentRuntime(host)
    runtime.register_provider(ForkProvider())
    runtime.register_provider(SpawnProvider())
    return host, Lifecycle(runtime)


def test_a_resumed_fork_child_does_not_regain_its_parents_approval_policy(
        tmp_path: Path) -> None:
    """G02: a parent set to ``ask`` in an interactive life, then a headless life of it (no
    approval service, so the delegation pins no policy) forks a continuable child whose seed
    holds the parent's ``ask``. Resumed as an agent with an approval service, or cold-resumed
    under an interactive parent, the child is ``never``: only its own events count (on earlier
    code it came out ``ask``, asked the host's approver and ran the approval-gated tool)."""

    asked: list[str] = []

    async def approver(agent: Agent, tool_name: str, detail: str) -> bool:
        asked.append(agent.id)
        return True

    async def gated(args: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.request_approval("write a file")
        return "ran the gated action"

    async def main() -> None:
        host, _ = _host(tmp_path)
        host.models.register("m", ScriptedModel([Reply.text("noted")]))
        parent = host.create_agent("parent", provider="m", model="m", approval=True)
        parent.set_approval_policy("ask")
        parent.followup("remember this")
        await parent.when_idle()
        await host.aclose()

        host, _ = _host(tmp_path)
        host.models.register("m", ScriptedModel([Reply.text("child answer")]))
        headless = host.create_agent("parent", provider="m", model="m", approval=False)
        headless.pre_step_hooks.append(lambda *_: False)
        started = await host.subagents.continuation.start_continuable(
            "fork", ContinuableStart(prompt=(TextBlock(text="fork task"),), label="fork task"),
            parent=headless)
        await no_activation(host, started.child_id)
        events = persisted(host, started.child_id)
        assert [e.data.policy for e in of_type(events, ApprovalPolicyEvent)] == ["ask"]
        await host.aclose()

        host, _ = _host(tmp_path)
        host.models.register("m", ScriptedModel())
        as_agent = host.create_agent(started.child_id, provider="m", model="m", approval=True)
        assert as_agent.approval_policy == "never"
        await host.aclose()

        host, _ = _host(tmp_path, approver=approver)
        host.tools.register(Tool("gated", "an approval-gated action", {"type": "object"},
                                 gated))
        host.models.register("m", ScriptedModel([Reply.tool_call("gated", {}),
                                                 Reply.text("refused, as it should be")]))
        interactive = host.create_agent("parent", provider="m", model="m", approval=True)
        interactive.pre_step_hooks.append(lambda *_: False)
        await host.subagents.continuation.followup(interactive, started.child_id, "do it")
        resumed = host.agents.get(started.child_id)
        assert resumed is not None and resumed.approval_policy == "never"
        await no_activation(host, started.child_id)
        assert asked == []
        (refused,) = result_texts(persisted(host, started.child_id))
        assert refused.startswith("Error: gated needs approval")
        await host.aclose()

    run(main)


def test_two_follow_ups_to_a_settled_child_are_both_queued(tmp_path: Path) -> None:
    """G06: two follow-ups sent at once to a settled continuable child: the second waits for
    the first one's cold resume and is queued behind it (on earlier code it raised
    ``AgentExistsError``, a ``ValueError``, from the resume race); both run, in order."""

    async def main() -> None:
        host, lifecycle = _host(tmp_path)
        host.models.register("m", ScriptedModel([Reply.text("first"), Reply.text("one"),
                                                 Reply.text("two")]))
        parent = host.create_agent("parent", provider="m", model="m")
        parent.pre_step_hooks.append(lambda *_: False)
        manager = host.subagents.continuation
        started = await manager.start_continuable(
            "spawn", ContinuableStart(prompt=(TextBlock(text="task"),), label="task"),
            parent=parent)
        await no_activation(host, started.child_id)
        first, second = await asyncio.gather(
            manager.followup(parent, started.child_id, "follow-up one"),
            manager.followup(parent, started.child_id, "follow-up two"))
        assert first != second
        await no_activation(host, started.child_id)
        assert user_texts(persisted(host, started.child_id)) == [
            "task", "follow-up one", "follow-up two"]
        assert len(lifecycle.starts(started.child_id)) == 2  # one resume for both
        await host.aclose()

    run(main)


@pytest.mark.parametrize("at_once", [2, 3, 4, 6, 8])
def test_many_follow_ups_at_once_to_a_settled_child_all_run_in_order(tmp_path: Path,
                                                                      at_once: int) -> None:
    """G06, wider: ``at_once`` follow-ups sent together to a settled child, three times over
    (the child settles between rounds): every one is accepted, one cold resume per round, and
    the child's log holds them all in the order they were sent."""

    async def main() -> None:
        host, lifecycle = _host(tmp_path)
        host.models.register("m", ScriptedModel([Reply.text(f"answer {i}")
                                                 for i in range(1 + 3 * at_once)]))
        parent = host.create_agent("parent", provider="m", model="m")
        parent.pre_step_hooks.append(lambda *_: False)
        manager = host.subagents.continuation
        started = await manager.start_continuable(
            "spawn", ContinuableStart(prompt=(TextBlock(text="task"),), label="task"),
            parent=parent)
        sent = ["task"]
        for round_ in range(3):
            await no_activation(host, started.child_id)
            texts = [f"round {round_} message {i}" for i in range(at_once)]
            ids = await asyncio.gather(*(manager.followup(parent, started.child_id, text)
                                         for text in texts))
            assert len(set(ids)) == at_once
            sent.extend(texts)
        await no_activation(host, started.child_id)
        assert user_texts(persisted(host, started.child_id)) == sent
        assert len(lifecycle.starts(started.child_id)) == 4
        await host.aclose()

    run(main)


def test_a_follow_up_queued_during_maintenance_is_dropped_on_record_when_cancelled() -> None:
    """DSH continuation.spec.ts:1881, on a root agent with no subagents: a follow-up queued
    while the agent runs maintenance (its wake deferred), then a cancellation: the message is
    dropped with a ``canceled`` splice, nothing is left pending, and the agent is idle and
    takes later input (on earlier code the machine stayed waiting for a stop that never came
    and the message vanished without a record)."""

    async def main() -> None:
        host = make_host()
        agent, model = scripted(host, [Reply.text("later answer")])
        hold = asyncio.Event()
        maintenance = asyncio.ensure_future(agent.run_maintenance(hold.wait))
        await asyncio.sleep(0)
        agent.followup("never runs")
        assert len(agent.pending) == 1 and not agent.running
        agent.cancel()
        assert agent.pending == ()
        splices = [e.data for e in of_type(agent.session.events, InboxSplicedEvent)]
        assert [(s.target, len(s.inserted), s.removed_count, s.outcome) for s in splices] == [
            ("next-turn", 1, UNSET, UNSET), ("next-turn", 0, 1, "canceled")]
        with contextlib.suppress(asyncio.CancelledError):
            await maintenance
        await asyncio.sleep(0)
        assert not agent.running and model.calls == 0
        agent.followup("later")
        await agent.when_idle()
        assert user_texts(agent.session.events) == ["later"]
        await host.aclose()

    run(main)


def test_an_interrupt_during_maintenance_keeps_the_queued_follow_up() -> None:
    """The interrupt counterpart of the case above (DSH keeps the inbox and its deferred wake):
    a follow-up queued during maintenance and then a cancellation that keeps the queue runs
    once the maintenance is over."""

    async def main() -> None:
        host = make_host()
        agent, model = scripted(host, [Reply.text("ran after maintenance")])
        hold = asyncio.Event()
        maintenance = asyncio.ensure_future(agent.run_maintenance(hold.wait))
        await asyncio.sleep(0)
        agent.followup("kept")
        agent.cancel(keep_queued=True)
        with contextlib.suppress(asyncio.CancelledError):
            await maintenance
        await eventually(lambda: model.calls == 1)
        await agent.when_idle()
        assert user_texts(agent.session.events) == ["kept"]
        await host.aclose()

    run(main)


def test_a_parent_disposed_in_the_creation_window_is_refused_naming_the_child(
        tmp_path: Path) -> None:
    """DSH's ``agent "<id>" setup aborted: owner disposed during setup`` names the agent being
    set up: for a continuable child, the child (as for a one-shot child), not its parent."""

    async def main() -> None:
        host, _ = _host(tmp_path)
        parent, _ = scripted(host, [Reply.text("never")])
        manager = host.subagents.continuation
        built: list[str] = []

        def dispose_parent(child: Agent) -> Any:
            built.append(child.id)
            asyncio.get_running_loop().create_task(parent.dispose())
            return lambda: None

        manager.register_setup(dispose_parent)
        with pytest.raises(Exception) as refused:
            await manager.start_continuable(
                "spawn", ContinuableStart(prompt=(TextBlock(text="hi"),), label="x"),
                parent=parent)
        (child_id,) = built
        assert getattr(refused.value, "code", None) == "OWNER_DISPOSED"
        assert str(refused.value) == (
            f'agent "{child_id}" setup aborted: owner disposed during setup')
        assert host.agents.get(child_id) is None and not host.sessions.exists(child_id)
        await host.aclose()

    run(main)
