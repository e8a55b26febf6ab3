"""The parent's subagent tool: end to end, visibility, depth errors, refusals, cancellation."""

from __future__ import annotations

import msgspec
from _shell_helpers import make_host, of_type, run, types, wait_for
from _subagent_helpers import (
    assert_all_balanced,
    finish,
    result_texts,
    subagent_host,
    turn_ends,
)
from msgspec import UNSET

from turnfork.core import (
    AgentOptions,
    CancelParent,
    CancelUser,
    Capabilities,
    ToolErrorInfo,
    ToolResultEvent,
    TurnAborted,
    TurnCompleted,
    TurnError,
    subagent_tool_schema,
)
from turnfork.shell import (
    ForkProvider,
    Reply,
    ScriptedModel,
    SpawnProvider,
    SubagentRuntime,
    SubagentTool,
)


def _call(description: str, prompt: str, name: str = "subagent") -> Reply:
    return Reply.tool_call(name, {"description": description, "prompt": prompt})


def test_end_to_end_fork_mid_turn() -> None:
    """The parent calls subagent mid-turn; the fork child answers; the parent's tool result is
    only the child's final text, and the child's log is seed + end-seed + policy + its turn."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([
            Reply.text("Noted: the codeword is MARMALADE."),
            _call("Recall project codeword", "What is the codeword? Reply with one word."),
            Reply.text("MARMALADE", reasoning="The user said MARMALADE earlier."),
            Reply.text("The child says MARMALADE.")], approval=True)
        tool = SubagentTool(provider="fork")
        tool.install(host)
        parent.followup("Remember the codeword MARMALADE.")
        await parent.when_idle()
        seed_length = len(parent.session.events)
        parent.followup("Ask a forked child for the codeword.")
        await parent.when_idle()
        parent_events = list(parent.session.events)
        assert result_texts(parent_events) == ["MARMALADE"]
        (result_event,) = of_type(parent_events, ToolResultEvent)
        assert result_event.data.error is UNSET
        assert result_event.data.message.content[0].is_error is False  # type: ignore[union-attr]
        assert turn_ends(parent_events) == [TurnCompleted(), TurnCompleted()]
        child = recorder.child()
        child_events = list(child.session.events)
        assert child.session.header.seed_length == seed_length
        assert all(child_events[i] is parent_events[i] for i in range(seed_length))
        own = types(child_events[seed_length:])
        # DSH's K10 child: the task, then the runtime-context snapshot; no title and no request
        # context of its own (its seed has the parent's).
        assert own[:9] == ["session/end-seed", "approval/policy", "agent/inbox/spliced",
                           "turn/start", "agent/inbox/spliced", "subagent/descriptor",
                           "step/start", "user/message", "user/message"]
        assert own[-3:] == ["assistant/message", "step/end", "turn/end"]
        assert set(own[9:-3]) == {"request/header", "assistant/chunk"}
        assert turn_ends(child_events[seed_length:]) == [TurnCompleted()]
        assert child.id not in host.agents and host.subagents.runs() == ()
        # the child model saw the parent's completed turn (with the parent's own snapshot: the
        # parent composes an approval service), its own prompt and its own snapshot
        kinds = [(m.role, m.source.kind) for m in model.requests[2].messages]
        assert kinds == [("user", "user"), ("user", "plugin"), ("assistant", "model"),
                         ("user", "user"), ("user", "plugin")]
        parent_snapshot, child_snapshot = (m.content[0].text  # type: ignore[union-attr]
                                           for m in model.requests[2].messages
                                           if m.source.kind == "plugin")
        assert parent_snapshot.endswith("Approval policy: ask. Operations that require approval "
                                        "may ask through the configured answerers; without an "
                                        "available answerer, the request fails closed.")
        assert "Approval prompts are disabled" in child_snapshot
        assert child_snapshot.endswith("so the delegating agent can handle it.")
        await parent.dispose()
        assert_all_balanced(parent, child)

    run(main)


def test_tool_schema_and_visibility_follow_the_provider() -> None:
    """The tool carries the core's schema, is listed only while its provider is registered, and
    a call that reaches a hidden instance is refused with NO_PROVIDER."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([_call("d", "p", "subagent_fork"),
                                                   Reply.text("done")])
        tool = SubagentTool(provider="fork", tool_name="subagent_fork")
        spawn_tool = SubagentTool(provider=SpawnProvider())  # a provider object not registered
        tool.install(host)
        spawn_tool.install(host)
        registered = host.tools.get("subagent_fork")
        assert registered is not None and host.tools.get("subagent") is None
        # DSH's default offers run_in_background (tool-subagent.spec.ts:103)
        assert registered.schema == subagent_tool_schema(True, "subagent_fork", "one-shot")
        assert registered.concurrency_safe
        host.subagents.unregister_provider("fork")
        assert "subagent_fork" not in host.tools and not tool.visible
        host.subagents.register_provider(ForkProvider())
        assert tool.visible and "subagent_fork" in host.tools
        # a hidden instance refuses to run even if a call reaches it
        host.subagents.unregister_provider("fork")
        host.tools.register(registered)
        parent.followup("go")
        await parent.when_idle()
        assert result_texts(parent.session.events) == [
            'Error: no subagent provider registered for "fork"']
        (event,) = of_type(parent.session.events, ToolResultEvent)
        assert event.data.error == ToolErrorInfo(name="SubagentError", code="NO_PROVIDER")
        tool.uninstall()
        spawn_tool.uninstall()
        await finish(parent, recorder)

    run(main)


def test_depth_cap_errors_through_the_tool() -> None:
    """A depth-3 agent with the default cap gets DSH's plain error (no error key)."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([_call("d", "p"), Reply.text("ok")],
                                                      subagent_depth=3)
        SubagentTool(provider="spawn").install(host)
        parent.followup("go")
        await parent.when_idle()
        assert result_texts(parent.session.events) == ["Error: subagent depth 4 exceeds "
                                                       "maxDepth 3"]
        (event,) = of_type(parent.session.events, ToolResultEvent)
        assert event.data.error is UNSET
        assert recorder.events == [] and model.calls == 2
        await finish(parent, recorder)

    run(main)


def test_capability_refusal_carries_subagent_error_info() -> None:
    """A tool with a persona bound to a provider without that capability: DSH's text and
    error key; no child is created."""

    class PlainSpawn(SpawnProvider):
        def __init__(self) -> None:
            super().__init__("plain")
            self.capabilities = Capabilities(depth_limit=True)

    async def main() -> None:
        host, parent, _, recorder = subagent_host([_call("d", "p"), Reply.text("ok")])
        host.subagents.register_provider(PlainSpawn())
        SubagentTool(provider="plain", persona="terse").install(host)
        parent.followup("go")
        await parent.when_idle()
        assert result_texts(parent.session.events) == [
            'Error: subagent provider "plain" does not support the "persona" capability']
        (event,) = of_type(parent.session.events, ToolResultEvent)
        assert event.data.error == ToolErrorInfo(name="SubagentError",
                                                 code="UNSUPPORTED_CAPABILITY")
        assert recorder.events == [] and host.sessions.list() == (parent.id,)
        await finish(parent, recorder)

    run(main)


def test_nested_delegation_stops_at_max_depth() -> None:
    """parent → child (depth 1) → grandchild (depth 2) whose own delegation is refused."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([
            _call("level 1", "delegate again"),
            _call("level 2", "and again"),
            _call("level 3", "too deep"),
            Reply.text("DEPTH_REJECTED"),
            Reply.text("child got DEPTH_REJECTED"),
            Reply.text("parent done")])
        SubagentTool(provider="spawn", max_depth=2).install(host)
        parent.followup("go")
        await parent.when_idle()
        child, grandchild = recorder.child(0), recorder.child(1)
        assert grandchild.session.header.parent_session == child.id
        assert grandchild.session.header.delegation_depth == 2
        assert result_texts(grandchild.session.events) == [
            "Error: subagent depth 3 exceeds maxDepth 2"]
        assert result_texts(child.session.events) == ["DEPTH_REJECTED"]
        assert result_texts(parent.session.events) == ["child got DEPTH_REJECTED"]
        await parent.dispose()
        assert_all_balanced(parent, child, grandchild)

    run(main)


def test_child_failure_is_rendered_with_partial_output() -> None:
    """A child that hits max-tokens: Error headline plus its partial text, no error key."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([_call("d", "p"), Reply.max_tokens("partial one"),
                                            Reply.text("ok")])
        SubagentTool(provider="spawn").install(host)
        parent.followup("go")
        await parent.when_idle()
        assert result_texts(parent.session.events) == [
            "Error: subagent run hit its token limit before finishing\nPartial output before "
            "the run ended:\npartial one"]
        (event,) = of_type(parent.session.events, ToolResultEvent)
        assert event.data.error is UNSET
        await finish(parent, recorder)

    run(main)


def test_a_child_route_without_a_model_fails_the_childs_turn() -> None:
    """A child model route no model serves is not refused up front: the child is created, its
    turn ends ``error`` naming the route, and the parent reads ``subagent run failed`` (DSH
    subagent-in-process-driver.spec.ts "stamps only the resolved depth when neither parent nor
    request declares a model route": the turn fails in the request, not the start), with the
    child's failure as its diagnostic (ours: DSH's in-process providers give none)."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([_call("d", "p"), Reply.text("ok")])
        SubagentTool(provider="spawn",
                     agent_options=AgentOptions(provider="missing")).install(host)
        parent.followup("go")
        await parent.when_idle()
        assert result_texts(parent.session.events) == [
            "Error: subagent run failed\nDiagnostic: UNKNOWN: no model registered for provider "
            "'missing'"]
        child = recorder.child()
        (reason,) = turn_ends(child.session.events)
        assert isinstance(reason, TurnError)
        assert reason.error.message == "no model registered for provider 'missing'"
        assert host.agents.list() == (parent,)
        await finish(parent, recorder)

    run(main)


def test_cancelling_the_parent_mid_delegation_aborts_the_child() -> None:
    """The parent's turn is cancelled while its child runs: the child's turn ends aborted
    {parent}, the child is disposed, and the parent's log closes normally."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([_call("d", "p"), Reply.hang("working")])
        SubagentTool(provider="spawn").install(host)
        parent.followup("go")
        await wait_for(lambda: len(recorder.children) == 1 and "assistant/chunk" in types(
            recorder.child().session.events))
        parent.cancel()
        await parent.when_idle()
        child = recorder.child()
        assert turn_ends(child.session.events) == [TurnAborted(reason=CancelParent())]
        assert turn_ends(parent.session.events) == [TurnAborted(reason=CancelUser())]
        assert result_texts(parent.session.events) == ["Error: tool call aborted"]
        assert child.id not in host.agents and host.subagents.runs() == ()
        assert [type(e).__name__ for e in recorder.events] == ["SubagentStart", "SubagentEnd"]
        await parent.dispose()
        assert_all_balanced(parent, child)

    run(main)


def test_install_needs_no_prior_runtime() -> None:
    """install() attaches a runtime when the host has none; the tool then stays hidden."""
    host = make_host()
    host.models.register("scripted", ScriptedModel())
    tool = SubagentTool(provider="fork")
    tool.install(host)
    assert isinstance(host.subagents, SubagentRuntime) and not tool.visible
    host.subagents.register_provider(ForkProvider())
    assert tool.visible
    registered = host.tools.get("subagent")
    assert registered is not None
    parameters = msgspec.json.decode(registered.schema.parameters)
    assert parameters["required"] == ["description", "prompt"]
