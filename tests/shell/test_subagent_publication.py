"""Child creation order: seed, end-seed, delegated policy, publication, prompt, descriptor."""

from __future__ import annotations

import asyncio
from typing import Any

from _shell_helpers import make_host, of_type, run, types
from _subagent_helpers import assert_all_balanced, finish, request, result_texts, subagent_host
from msgspec import UNSET

from turnfork.core import (
    ApprovalPolicyData,
    ApprovalPolicyEvent,
    InboxSplicedEvent,
    SandboxModeData,
    SandboxModeEvent,
    SubagentDescriptorData,
    SubagentDescriptorEvent,
    TextBlock,
    UserMessageEvent,
)
from turnfork.shell import Reply, ScriptedModel, SpawnProvider, SubagentRuntime, Tool, ToolContext
from turnfork.shell.subagents import SubagentEnd, SubagentEvent, SubagentStart


def test_subagent_start_fires_only_after_the_seeded_child_is_published() -> None:
    """At subagent/start the child is in host.agents with its seed, end-seed and policy
    written, and its prompt not yet delivered."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("one"), Reply.text("child")],
                                                  approval=True)
        parent.followup("one")
        await parent.when_idle()
        seen: list[Any] = []

        def on_event(event: SubagentEvent) -> None:
            if isinstance(event, SubagentStart):
                child = event.run.local_agent
                seen.append((event.child_id in host.agents, types(child.session.events)[
                    event.seed_length:], child.running))

        host.subagents.subscribe(on_event)
        forked = await host.subagents.start("fork", request("task", label="Do it"),
                                            parent=parent)
        assert seen == [(True, ["session/end-seed", "approval/policy"], False)]
        start = recorder.events[0]
        assert isinstance(start, SubagentStart)
        assert (start.child_id, start.parent_id, start.provider, start.label, start.local) == (
            forked.id, parent.id, "fork", "Do it", True)
        assert start.run_id != forked.id  # a fresh id per run (DSH lifecycle runId)
        assert start.seed_length == forked.seed_length > 0
        await forked.result
        end = recorder.events[1]
        assert isinstance(end, SubagentEnd)
        assert (end.run_id, end.stop_reason, end.failure) == (start.run_id, "completed", None)
        assert end.last_assistant_message == (TextBlock(text="child"),)
        await forked.dispose()
        await finish(parent, recorder)

    run(main)


def test_child_log_order_and_descriptor_placement() -> None:
    """Spawn child: policy at seq 0, prompt splice, turn/start, claim, descriptor, step/start,
    the prompt verbatim as its user message, its runtime-context snapshot, its title, the
    header and the request context (DSH's subagent-spawn-in-process session.1.jsonl order)."""

    async def main() -> None:
        host, parent, _, _ = subagent_host([Reply.text("ok")], approval=True)
        spawned = await host.subagents.start("spawn", request("exact  prompt\n", label="L"),
                                             parent=parent)
        await spawned.result
        events = list(spawned.local_agent.session.events)
        assert types(events)[:11] == ["approval/policy", "agent/inbox/spliced", "turn/start",
                                      "agent/inbox/spliced", "subagent/descriptor",
                                      "step/start", "user/message", "user/message",
                                      "session/title", "request/header", "request/context"]
        (descriptor,) = of_type(events, SubagentDescriptorEvent)
        assert descriptor.data == SubagentDescriptorData(version=2, mode="one-shot",
                                                         provider="spawn", label="L")
        message, snapshot = of_type(events, UserMessageEvent)
        assert message.data.content == (TextBlock(text="exact  prompt\n"),)
        assert snapshot.data.source.plugin == "@deepseek-ai/dsh-system-prompt"
        assert of_type(events, InboxSplicedEvent)[0].data.inserted == (message.data,)
        header = spawned.local_agent.session.header
        assert (header.parent_session, header.origin, header.delegation_depth) == (
            parent.id, "subagent", 1)
        assert spawned.local_agent.subagent_depth == 1
        await spawned.dispose()
        assert_all_balanced(parent, spawned.local_agent)

    run(main)


def test_no_label_means_no_descriptor_label_and_no_approval_event_without_service() -> None:
    """Without an approval service no approval/policy event is written (policy is still never)."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("ok")])
        spawned = await host.subagents.start("spawn", request("p"), parent=parent)
        await spawned.result
        events = list(spawned.local_agent.session.events)
        assert types(events)[0] == "agent/inbox/spliced"
        assert of_type(events, SubagentDescriptorEvent)[0].data.label is UNSET
        assert spawned.local_agent.approval_policy == "never"
        await spawned.dispose()
        await finish(parent, recorder)

    run(main)


def test_parent_sandbox_override_is_copied_and_approval_is_refused_in_the_child() -> None:
    """Fork child: end-seed, sandbox/mode (delegation), approval/policy never; an approval
    ask inside the child is refused without asking anyone."""

    async def main() -> None:
        asked: list[str] = []

        async def needs_approval(args: dict[str, Any], ctx: ToolContext) -> str:
            await ctx.request_approval("rm -rf build")
            return "removed"

        host, parent, _, _ = subagent_host([
            Reply.text("one"), Reply.tool_call("clean", {}), Reply.text("could not")],
            approval=True)
        host.tools.register(Tool("clean", "", {"type": "object"}, needs_approval))

        async def approver(*args: Any) -> bool:
            asked.append("asked")
            return True

        host.approver = approver
        parent.session.append(SandboxModeEvent, SandboxModeData(mode="read-only"))
        parent.followup("one")
        await parent.when_idle()
        forked = await host.subagents.start("fork", request("clean up"), parent=parent)
        result = await forked.result
        own = forked.own_events()
        assert types(own)[:3] == ["session/end-seed", "sandbox/mode", "approval/policy"]
        assert of_type(own, SandboxModeEvent)[0].data == SandboxModeData(
            mode="read-only", source="delegation")
        assert of_type(own, ApprovalPolicyEvent)[0].data == ApprovalPolicyData(
            policy="never", source="delegation")
        (text,) = result_texts(own)
        assert text.startswith("Error: clean needs approval (rm -rf build), but approval "
                               "prompts are disabled")
        assert asked == [] and result.stop_reason == "completed"
        assert parent.approval_policy == "ask"
        await forked.dispose()
        await parent.dispose()
        assert_all_balanced(parent, forked.local_agent)

    run(main)


def test_an_observer_that_raises_does_not_break_the_run() -> None:
    """A failing listener is reported to the loop; the run and other listeners go on."""

    async def main() -> None:
        host = make_host()
        runtime = SubagentRuntime(host)
        runtime.register_provider(SpawnProvider())
        host.models.register("scripted", ScriptedModel([Reply.text("ok")]))
        parent = host.create_agent(provider="scripted", model="m")
        reported: list[Any] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: reported.append(context))
        seen: list[str] = []

        def broken(event: SubagentEvent) -> None:
            raise RuntimeError("observer bug")

        runtime.subscribe(broken)
        unsubscribe = runtime.subscribe(lambda event: seen.append(type(event).__name__))
        spawned = await runtime.start("spawn", request("p"), parent=parent)
        result = await spawned.result
        await spawned.dispose()
        assert result.stop_reason == "completed"
        assert seen == ["SubagentStart", "SubagentEnd"]
        assert [str(c["exception"]) for c in reported] == ["observer bug"] * 2
        unsubscribe()
        unsubscribe()
        assert_all_balanced(parent, spawned.local_agent)

    run(main)
