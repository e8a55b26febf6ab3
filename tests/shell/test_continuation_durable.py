"""A continuable child survives a restart of the process (issue 16.5, DSH continuation.spec.ts
"cold-resumes …", continuation-inheritance.spec.ts "cold-resumes on the persisted snapshot
without re-capturing the parent"), and resuming any delegated child keeps the authority its
delegation took away (issue 14.8): the approval policy its log's last ``approval/policy``
governs, and its tool restriction."""

from __future__ import annotations

from pathlib import Path

import pytest
from _continuation_helpers import (
    continuable_host,
    eventually,
    finish,
    manager,
    settle,
    start,
    user_texts,
)
from _shell_helpers import echo_tool, make_host, of_type, run
from _subagent_helpers import result_texts

from turnfork.core import (
    ApprovalPolicyEvent,
    RequestHeaderEvent,
    SessionEndSeedEvent,
    StartRequest,
    TextBlock,
    ToolRestriction,
)
from turnfork.shell import (
    Host,
    JsonlSessionStore,
    Reply,
    ScriptedModel,
    SpawnProvider,
    SubagentRuntime,
)


def _restarted(root: Path, parent_id: str, script: list[Reply]) -> tuple[Host, ScriptedModel]:
    """A new process over the same store: the parent's provider and the global tools again."""
    host = make_host(JsonlSessionStore(root))
    SubagentRuntime(host).register_provider(SpawnProvider())
    host.tools.register(echo_tool())
    model = ScriptedModel(script)
    host.models.register("parent", model)
    return host, model


def _first_run(tmp_path: Path) -> tuple[str, str]:
    """Run a parent whose continuable child (echo denied) answers once; close the process."""
    ids: list[str] = []

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path, approval=True)
        host.tools.register(echo_tool())
        model.add(Reply.text("first answer"))
        model.add(Reply.text("parent noted"))
        child_id = await start(host, parent, label="durable task",
                               tool_filter=ToolRestriction(deny=("echo",)))
        await settle(lifecycle, child_id)
        await eventually(lambda: model.calls == 2)
        await parent.when_idle()
        ids.extend((parent.id, child_id))
        await finish(host, parent)

    run(main)
    return ids[0], ids[1]


def test_after_a_restart_the_parent_lists_and_continues_its_child(tmp_path: Path) -> None:
    """Ensures that in a new process the reloaded parent lists the child as ``ready`` under its
    label and a follow-up resumes it: the same conversation goes on, its tool restriction and
    its never-asking approval still bind, and no delegation policy is captured twice."""
    parent_id, child_id = _first_run(tmp_path)

    async def main() -> None:
        host, model = _restarted(tmp_path, parent_id, [
            Reply.tool_call("echo", {"text": "leak"}), Reply.text("second answer"),
            Reply.text("parent noted again")])
        parent = host.create_agent(parent_id, provider="parent", model="test-model",
                                   approval=True)
        (listed,) = await manager(host).list_children(parent.id)
        assert (listed.id, listed.label, listed.mode, listed.live) == (
            child_id, "durable task", "continuable", False)
        await manager(host).followup(parent, child_id, "continue please")
        child = host.agents.get(child_id)
        assert child is not None and child.approval_policy == "never"
        await eventually(lambda: child_id not in host.agents)
        await eventually(lambda: model.calls == 3)
        await parent.when_idle()
        events = list(child.session.events)
        assert user_texts(events) == ["child task", "continue please"]
        child_request = model.requests[0]
        assert "echo" not in [tool.name for tool in child_request.tools]
        assert result_texts(events) == ['Error: unknown tool "echo"']
        assert len(of_type(events, ApprovalPolicyEvent)) == 1
        assert [e.data.reason for e in of_type(events, RequestHeaderEvent)] == ["initial",
                                                                               "resume"]
        assert len(of_type(events, SessionEndSeedEvent)) == 2  # the reloaded log is a seed
        await finish(host, parent)

    run(main)


def test_resuming_a_delegated_child_as_an_agent_keeps_its_restrictions(tmp_path: Path) -> None:
    """Ensures that ``host.create_agent(session_id=…)`` over a continuable child restores its
    ``never`` approval policy (even when asked for approval) and its tool filter, and says it
    is a delegated subagent (issue 14.8; on earlier code the resumed child asked for approval
    and saw every tool)."""
    parent_id, child_id = _first_run(tmp_path)

    async def main() -> None:
        host, model = _restarted(tmp_path, parent_id, [Reply.text("ok")])
        child = host.create_agent(child_id, provider="parent", model="test-model",
                                  approval=True)
        assert child.approval_policy == "never"
        assert not child.tools.permits("echo")
        assert "subagent:delegation" in child.prompt_sections
        child.followup("anything else?")
        await child.when_idle()
        assert "echo" not in [tool.name for tool in model.requests[0].tools]
        await finish(host, child)

    run(main)


def test_a_later_policy_switch_in_the_child_governs_its_resume(tmp_path: Path) -> None:
    """Ensures that the last approval/policy event of the child's log governs: a switch the
    child's own session made after the delegation is what a resume restores."""
    parent_id, child_id = _first_run(tmp_path)

    async def main() -> None:
        host, _ = _restarted(tmp_path, parent_id, [])
        child = host.create_agent(child_id, provider="parent", model="test-model")
        child.set_approval_policy("ask")
        await child.dispose()
        again = host.create_agent(child_id, provider="parent", model="test-model")
        assert again.approval_policy == "ask"
        await finish(host, again)

    run(main)


def test_a_one_shot_child_is_not_resumed_as_an_agent(tmp_path: Path) -> None:
    """Ensures that resuming a one-shot child, whose log does not record its tool restriction,
    is refused with a clear error and leaves the session unlocked (issue 14.8)."""

    async def main() -> None:
        host, parent, model, _ = continuable_host(tmp_path)
        host.tools.register(echo_tool())
        model.add(Reply.text("once"))
        run_ = await host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="t"),),
                                  tool_filter=ToolRestriction(deny=("echo",))), parent=parent)
        await run_.result
        await run_.dispose()
        with pytest.raises(ValueError, match=r"one-shot subagent .* cannot be resumed"):
            host.create_agent(run_.id, provider="parent", model="test-model")
        assert host.sessions.get(run_.id) is None
        host.sessions.load(run_.id)  # not left locked
        host.sessions.release(run_.id)
        await finish(host, parent)

    run(main)
