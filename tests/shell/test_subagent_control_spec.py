"""DSH ``packages/subagent/tool-subagent-control/tests/tool-subagent-control.spec.ts`` (lines
102–390) and ``list-agents.spec.ts`` (103–357), case by case: each test names the line of the
case it ports. The tools are called as the agent loop calls them (``execute_call`` with a
``ToolContext``)."""

from __future__ import annotations

import asyncio
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from _continuation_spec import (
    Spec,
    eventually,
    gate,
    no_activation,
    observe_cancel,
    park,
    persisted,
    spec_host,
    start,
    user_texts,
)
from _shell_helpers import of_type, run

from turnfork.core import (
    CancelParent,
    StartRequest,
    TextBlock,
    ToolOutcome,
    UserMessageEvent,
)
from turnfork.core.control import AgentListDiagnostic, AgentListEntry, AgentStatus
from turnfork.shell import Agent, Reply
from turnfork.shell.subagents import ListedChild, ListedDiagnostic, SubagentControlTools
from turnfork.shell.tools import ToolContext, execute_call

_calls = [0]


async def _call(spec: Spec, name: str, args: dict[str, Any], agent: Agent | None) -> ToolOutcome:
    """DSH's ``callTool``: one call of a registered tool by ``agent`` (``None``: no agent)."""
    _calls[0] += 1
    tool = spec.host.tools.get(name)
    assert tool is not None
    arguments = json.dumps(args)
    return await execute_call(tool, arguments, ToolContext(
        agent=agent, call_id=f"call-{_calls[0]}", tool_name=name, turn=1, step=1,  # type: ignore[arg-type]
        arguments=arguments))


def _controlled(tmp_path: Path, script: Any = ()) -> Spec:
    spec = spec_host(tmp_path, script)
    SubagentControlTools().install(spec.host)
    park(spec.parent)
    return spec


def _properties(spec: Spec, name: str) -> dict[str, Any]:
    tool = spec.host.tools.get(name)
    assert tool is not None
    parameters: dict[str, Any] = json.loads(bytes(tool.schema.parameters))
    return parameters


# --------------------------------------------------------------------------- send_message


def test_send_message_is_one_global_tool_with_two_required_parameters(tmp_path: Path) -> None:
    """DSH tool-subagent-control.spec.ts:103 — ``message`` and ``subagent_id``; the description
    promises no job (no ``job_output``, no job id) and says the message is the next turn."""

    async def main() -> None:
        spec = _controlled(tmp_path)
        parameters = _properties(spec, "send_message")
        assert sorted(parameters["properties"]) == ["message", "subagent_id"]
        assert parameters["required"] == ["subagent_id", "message"]
        tool = spec.host.tools.get("send_message")
        assert tool is not None
        assert "job_output" not in tool.description and "job id" not in tool.description
        assert "next turn" in tool.description
        await spec.host.aclose()

    run(main)


def test_send_message_cold_resumes_a_settled_child(tmp_path: Path) -> None:
    """DSH tool-subagent-control.spec.ts:116 — ``message queued as the next turn for subagent
    <id>``; the child resumes, and its logged follow-up names the calling agent as its source
    (``coordinator``/``relay``, ``senderSessionId``) without granting it anything."""

    async def main() -> None:
        spec = _controlled(tmp_path, [Reply.text("first answer"), Reply.text("second answer")])
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        result = await _call(spec, "send_message", {"subagent_id": started.child_id,
                                                    "message": "and then?"}, spec.parent)
        assert not result.is_error
        assert result.text == f"message queued as the next turn for subagent {started.child_id}"
        await no_activation(spec.host, started.child_id)
        last = of_type(persisted(spec.host, started.child_id), UserMessageEvent)
        follow_up = [e for e in last if e.data.source.kind != "plugin"][-1]
        assert follow_up.data.source.items == (("kind", "coordinator"), ("form", "relay"),
                                               ("senderSessionId", spec.parent.id))
        await spec.host.aclose()

    run(main)


def test_send_message_queues_behind_an_open_turn(tmp_path: Path) -> None:
    """DSH tool-subagent-control.spec.ts:145 — sent while the child's turn runs, the message
    becomes its own later turn, never steering inside the first."""

    async def main() -> None:
        entry, release = gate(Reply.text("first"))
        spec = _controlled(tmp_path, [entry, Reply.text("second")])
        started = await start(spec, prompt="long work", label="long work")
        await eventually(lambda: spec.model.calls == 1)
        result = await _call(spec, "send_message", {"subagent_id": started.child_id,
                                                    "message": "also consider Y"}, spec.parent)
        assert not result.is_error
        release.set()
        await no_activation(spec.host, started.child_id)
        assert user_texts(persisted(spec.host, started.child_id)) == ["long work",
                                                                     "also consider Y"]
        await spec.host.aclose()

    run(main)


def test_a_delivery_failure_is_an_error_result(tmp_path: Path) -> None:
    """DSH tool-subagent-control.spec.ts:170 — an unknown child: an error result saying it is
    unavailable (the message was not delivered)."""

    async def main() -> None:
        spec = _controlled(tmp_path)
        result = await _call(spec, "send_message", {"subagent_id": "no-such-child",
                                                    "message": "hello?"}, spec.parent)
        assert result.is_error and "unavailable" in result.text
        await spec.host.aclose()

    run(main)


def test_send_message_from_another_agent_is_refused(tmp_path: Path) -> None:
    """DSH tool-subagent-control.spec.ts:180 — a caller that is not the child's durable
    parent: an error result (``another parent session``)."""

    async def main() -> None:
        spec = _controlled(tmp_path, [Reply.text("first")])
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        stranger = spec.host.create_agent("stranger", provider="mock", model="mock")
        result = await _call(spec, "send_message", {"subagent_id": started.child_id,
                                                    "message": "mine now"}, stranger)
        assert result.is_error and "another parent session" in result.text
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize(("line", "name", "args"), [
    ("tool-subagent-control.spec.ts:199", "send_message", {"subagent_id": "x", "message": "y"}),
    ("tool-subagent-control.spec.ts:384", "interrupt_agent", {"agent_id": "x"}),
    ("list-agents.spec.ts:239", "list_agents", {})])
def test_a_control_tool_called_without_an_agent_fails(tmp_path: Path, line: str, name: str,
                                                      args: dict[str, Any]) -> None:
    """DSH tool-subagent-control.spec.ts:199 (``send_message``), :384 (``interrupt_agent``) and
    list-agents.spec.ts:239 (``list_agents``): a call with no calling agent is an error
    result, ``… requires a calling agent``."""

    async def main() -> None:
        spec = _controlled(tmp_path)
        result = await _call(spec, name, args, None)
        assert result.is_error and "requires a calling agent" in result.text
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("line", ["tool-subagent-control.spec.ts:206", "list-agents.spec.ts:246"])
def test_uninstalling_withdraws_the_tools(tmp_path: Path, line: str) -> None:
    """DSH tool-subagent-control.spec.ts:206 and list-agents.spec.ts:246 (DSH: the plugin's
    fiber disposed): after ``uninstall`` neither ``send_message``, ``interrupt_agent`` nor
    ``list_agents`` is offered."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        tools = SubagentControlTools()
        tools.install(spec.host)
        names = ("send_message", "interrupt_agent", "list_agents")
        assert all(name in spec.host.tools for name in names)
        tools.uninstall()
        assert not any(name in spec.host.tools for name in names)
        await spec.host.aclose()

    run(main)


# --------------------------------------------------------------------------- interrupt_agent


def test_interrupt_agent_has_one_parameter_and_current_turn_wording(tmp_path: Path) -> None:
    """DSH tool-subagent-control.spec.ts:228 — ``agent_id`` only; the description speaks of the
    current turn and of ``send_message``."""

    async def main() -> None:
        spec = _controlled(tmp_path)
        assert list(_properties(spec, "interrupt_agent")["properties"]) == ["agent_id"]
        tool = spec.host.tools.get("interrupt_agent")
        assert tool is not None
        assert "current turn" in tool.description and "send_message" in tool.description
        await spec.host.aclose()

    run(main)


def test_interrupt_agent_stops_a_running_child_and_parks_its_queue(tmp_path: Path) -> None:
    """DSH tool-subagent-control.spec.ts:238 — ``interrupt requested for agent <id>``, one
    cancel (cause ``parent``, queue kept); the queued follow-up waits (no model call) until a
    waking ``send_message``, then both run."""

    async def main() -> None:
        entry, release = gate(Reply.text("held"))
        spec = _controlled(tmp_path, [entry, Reply.text("parked answer"),
                                      Reply.text("waking answer")])
        started = await start(spec, prompt="long work", label="long work")
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        queued = await _call(spec, "send_message", {"subagent_id": started.child_id,
                                                    "message": "parked follow-up"}, spec.parent)
        assert not queued.is_error
        calls: list[tuple[object, bool]] = []
        observe_cancel(child, lambda cause, keep: calls.append((cause, keep)), every=True)
        result = await _call(spec, "interrupt_agent", {"agent_id": started.child_id},
                             spec.parent)
        assert (result.is_error, result.text) == (
            False, f"interrupt requested for agent {started.child_id}")
        assert calls == [(CancelParent(), True)]
        release.set()
        await child.when_idle()
        assert spec.model.calls == 1 and len(child.pending) == 1
        waking = await _call(spec, "send_message", {"subagent_id": started.child_id,
                                                    "message": "wake up"}, spec.parent)
        assert not waking.is_error
        await no_activation(spec.host, started.child_id)
        assert user_texts(persisted(spec.host, started.child_id)) == [
            "long work", "parked follow-up", "wake up"]
        await spec.host.aclose()

    run(main)


def test_a_deep_live_ancestor_interrupts_a_descendant(tmp_path: Path) -> None:
    """DSH tool-subagent-control.spec.ts:285 — the root interrupts a grandchild it did not start
    itself: one cancel, cause ``parent``, queue kept."""

    async def main() -> None:
        child_entry, release_child = gate(Reply.text("child"))
        grand_entry, release_grand = gate(Reply.text("grandchild"))
        spec = _controlled(tmp_path, [child_entry, grand_entry, Reply.text("noted")])
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        grandchild = await start(spec, child)
        await eventually(lambda: spec.model.calls == 2)
        grand_agent = spec.host.agents.get(grandchild.child_id)
        assert grand_agent is not None
        calls: list[tuple[object, bool]] = []
        observe_cancel(grand_agent, lambda cause, keep: calls.append((cause, keep)), every=True)
        result = await _call(spec, "interrupt_agent", {"agent_id": grandchild.child_id},
                             spec.parent)
        assert not result.is_error and calls == [(CancelParent(), True)]
        release_child.set()
        release_grand.set()
        await no_activation(spec.host, grandchild.child_id)
        await no_activation(spec.host, started.child_id)
        await spec.host.aclose()

    run(main)


def test_interrupt_agent_refuses_self_sibling_and_unrelated_callers(tmp_path: Path) -> None:
    """DSH tool-subagent-control.spec.ts:321 — error results ``cannot interrupt itself`` and
    ``not a live descendant`` (twice); the target is never cancelled."""

    async def main() -> None:
        a_entry, release_a = gate(Reply.text("a"))
        b_entry, release_b = gate(Reply.text("b"))
        spec = _controlled(tmp_path, [a_entry, b_entry])
        target = await start(spec, prompt="a", label="target")
        await eventually(lambda: spec.model.calls == 1)
        sibling = await start(spec, prompt="b", label="sibling")
        await eventually(lambda: spec.model.calls == 2)
        target_agent = spec.host.agents.get(target.child_id)
        sibling_agent = spec.host.agents.get(sibling.child_id)
        assert target_agent is not None and sibling_agent is not None
        stranger = spec.host.create_agent("stranger", provider="mock", model="mock")
        calls: list[object] = []
        observe_cancel(target_agent, lambda cause, keep: calls.append(cause), every=True)
        for caller, text in ((target_agent, "cannot interrupt itself"),
                             (sibling_agent, "not a live descendant"),
                             (stranger, "not a live descendant")):
            result = await _call(spec, "interrupt_agent", {"agent_id": target.child_id}, caller)
            assert result.is_error and text in result.text
        assert calls == []
        release_a.set()
        release_b.set()
        await no_activation(spec.host, target.child_id)
        await no_activation(spec.host, sibling.child_id)
        await spec.host.aclose()

    run(main)


def test_interrupt_agent_on_an_absent_target_is_a_no_op_that_resumes_nothing(
        tmp_path: Path) -> None:
    """DSH tool-subagent-control.spec.ts:365 — a settled child and an unknown id: both accepted
    (``interrupt requested for agent <id>``); the settled child is not resumed."""

    async def main() -> None:
        spec = _controlled(tmp_path, [Reply.text("done")])
        started = await start(spec, prompt="child work", label="settled child")
        await no_activation(spec.host, started.child_id)
        settled = await _call(spec, "interrupt_agent", {"agent_id": started.child_id},
                              spec.parent)
        assert (settled.is_error, settled.text) == (
            False, f"interrupt requested for agent {started.child_id}")
        unknown = await _call(spec, "interrupt_agent", {"agent_id": "no-such-agent"},
                              spec.parent)
        assert not unknown.is_error
        assert spec.host.agents.get(started.child_id) is None
        await spec.host.aclose()

    run(main)


# --------------------------------------------------------------------------- list_agents


def test_list_agents_has_only_the_optional_scope(tmp_path: Path) -> None:
    """DSH list-agents.spec.ts:104 — one global ``list_agents`` whose only parameter is the
    optional ``scope`` (``children`` or ``descendants``); its description names
    ``send_message`` and ``interrupt_agent``."""

    async def main() -> None:
        spec = _controlled(tmp_path)
        parameters = _properties(spec, "list_agents")
        assert list(parameters["properties"]) == ["scope"]
        assert parameters["properties"]["scope"]["enum"] == ["children", "descendants"]
        assert parameters.get("required", []) == []
        tool = spec.host.tools.get("list_agents")
        assert tool is not None
        assert "send_message" in tool.description and "interrupt_agent" in tool.description
        await spec.host.aclose()

    run(main)


def test_an_empty_listing_renders_no_subagents(tmp_path: Path) -> None:
    """DSH list-agents.spec.ts:119 — ``(no subagents)``, not an error."""

    async def main() -> None:
        spec = _controlled(tmp_path)
        result = await _call(spec, "list_agents", {}, spec.parent)
        assert (result.is_error, result.text) == (False, "(no subagents)")
        await spec.host.aclose()

    run(main)


class _Status:
    def __init__(self, running: bool) -> None:
        self.running = running


def test_rows_render_in_order_with_statuses_from_the_live_registry(tmp_path: Path) -> None:
    """DSH list-agents.spec.ts:127 — the rows as the listing gives them: a one-shot child left
    out, a child only in storage ``ready``, a running agent ``running``, an idle one ``idle``
    (whatever the listing's own activity says), a diagnostic ``[diagnostic: corrupt]``."""

    async def main() -> None:
        spec = _controlled(tmp_path, [Reply.text("done")])
        started = await start(spec, label="real child")
        await no_activation(spec.host, started.child_id)
        rows: list[ListedChild | ListedDiagnostic] = [
            ListedChild(id="one-shot-child", mode="one-shot", label="finished once",
                        live=False, parent="parent", depth=1, created_at=1),
            ListedChild(id=started.child_id, mode="continuable", label="real child",
                        live=False, parent="parent", depth=1, created_at=2),
            ListedChild(id="running-child", mode="continuable", label="still working",
                        live=True, parent="parent", depth=1, created_at=3, has_children=True),
            ListedChild(id="waiting-child", mode="continuable",
                        label="waiting on descendants", live=True, parent="parent", depth=1,
                        created_at=4, has_children=True),
            ListedDiagnostic(id="broken-child", reason="corrupt", parent="parent", depth=1,
                             created_at=5)]

        async def listing(parent_id: str, **options: Any) -> Any:
            return rows

        spec.manager.list_children = listing  # type: ignore[method-assign]
        agents = {"running-child": _Status(True), "waiting-child": _Status(False)}
        real_get = spec.host.agents.get
        spec.host.agents.get = lambda agent_id: agents.get(agent_id) or real_get(agent_id)  # type: ignore[method-assign,assignment,return-value]
        result = await _call(spec, "list_agents", {}, spec.parent)
        del spec.host.agents.get  # type: ignore[attr-defined]
        assert not result.is_error
        assert result.text == (f"{started.child_id} [ready] — real child\n"
                               "running-child [running] — still working\n"
                               "waiting-child [idle] — waiting on descendants\n"
                               "broken-child [diagnostic: corrupt]")
        assert result.value == (
            AgentListEntry(id=started.child_id, label="real child", status="ready"),
            AgentListEntry(id="running-child", label="still working", status="running"),
            AgentListEntry(id="waiting-child", label="waiting on descendants", status="idle"),
            AgentListDiagnostic(id="broken-child", reason="corrupt"))
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize(("line", "args"), [("list-agents.spec.ts:192", {}),
                                            ("list-agents.spec.ts:347",
                                             {"scope": "descendants"})])
def test_the_scope_chooses_the_listing_and_a_cancelled_call_cancels_its_read(
        tmp_path: Path, line: str, args: dict[str, Any]) -> None:
    """DSH list-agents.spec.ts:192 (no scope: the children of the caller) and :347 (an explicit
    ``descendants``): the caller's listing is the one asked for, and the call's cancellation
    (its turn cancelled) reaches the store read in flight (DSH forwards the tool's signal)."""

    async def main() -> None:
        spec = _controlled(tmp_path)
        asked: list[tuple[str, str]] = []
        for kind in ("list_children", "list_descendants"):
            original = getattr(spec.manager, kind)

            async def recording(parent_id: str, *, kind: str = kind, original: Any = original,
                                **options: Any) -> Any:
                asked.append((kind, parent_id))
                return await original(parent_id, **options)

            setattr(spec.manager, kind, recording)
        entered = asyncio.Event()
        cancelled: list[bool] = []

        async def hanging() -> Any:
            entered.set()
            try:
                await asyncio.get_running_loop().create_future()
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        spec.host.sessions.list = hanging  # type: ignore[method-assign]
        call = asyncio.ensure_future(_call(spec, "list_agents", args, spec.parent))
        await entered.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        expected = "list_descendants" if args else "list_children"
        assert asked == [(expected, spec.parent.id)] and cancelled == [True]
        del spec.host.sessions.list  # type: ignore[attr-defined]
        await spec.host.aclose()

    run(main)


def test_a_settled_continuable_child_is_listed_and_a_one_shot_sibling_is_not(
        tmp_path: Path) -> None:
    """DSH list-agents.spec.ts:203 — real children: ``<id> [ready] — summarize the doc`` only."""

    async def main() -> None:
        spec = _controlled(tmp_path, [Reply.text("once"), Reply.text("done")])
        one_shot = await spec.host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="one-shot task"),),
                                  label="finished once"), parent=spec.parent)
        await one_shot.result
        await one_shot.dispose()
        started = await start(spec, label="summarize the doc")
        await no_activation(spec.host, started.child_id)
        result = await _call(spec, "list_agents", {}, spec.parent)
        assert (result.is_error, result.text) == (
            False, f"{started.child_id} [ready] — summarize the doc")
        await spec.host.aclose()

    run(main)


def test_ready_is_described_as_resumable_and_the_statuses_are_closed(tmp_path: Path) -> None:
    """DSH list-agents.spec.ts:225 — the description says ``you are told when one finishes``
    and ``resumable, not terminal``; the status vocabulary is exactly ``running``, ``idle``,
    ``ready`` (DSH pins it in its output schema; ours is the typed value's ``AgentStatus``)."""

    async def main() -> None:
        spec = _controlled(tmp_path)
        tool = spec.host.tools.get("list_agents")
        assert tool is not None
        assert "you are told when one finishes" in tool.description
        assert "resumable, not terminal" in tool.description
        assert typing.get_args(AgentStatus) == ("running", "idle", "ready")
        await spec.host.aclose()

    run(main)


def test_the_descendant_tree_renders_in_pre_order_with_parent_and_depth(tmp_path: Path) -> None:
    """DSH list-agents.spec.ts:264 — a child idle while its grandchild runs: ``<id> [idle]
    parent=<root> depth=1 — waiting branch``, then the grandchild ``[running] … depth=2``."""

    async def main() -> None:
        child_entry, release_child = gate(Reply.text("child"))
        grand_entry, release_grand = gate(Reply.text("grandchild"))
        spec = _controlled(tmp_path, [child_entry, grand_entry, Reply.text("noted")])
        started = await start(spec, prompt="branch work", label="waiting branch")
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        grandchild = await start(spec, child, prompt="leaf work", label="nested leaf")
        await eventually(lambda: spec.model.calls == 2)
        release_child.set()
        await eventually(lambda: not child.running)
        result = await _call(spec, "list_agents", {"scope": "descendants"}, spec.parent)
        assert not result.is_error
        assert result.text == (
            f"{started.child_id} [idle] parent={spec.parent.id} depth=1 — waiting branch\n"
            f"{grandchild.child_id} [running] parent={started.child_id} depth=2 — nested leaf")
        release_grand.set()
        await no_activation(spec.host, grandchild.child_id)
        await no_activation(spec.host, started.child_id)
        await spec.host.aclose()

    run(main)


def test_one_shot_intermediates_are_left_out_but_what_they_own_is_shown(
        tmp_path: Path) -> None:
    """DSH list-agents.spec.ts:306 — a one-shot intermediate is not rendered, its continuable
    child is (``ready``, with its parent and depth), and so is a positioned diagnostic."""

    async def main() -> None:
        spec = _controlled(tmp_path)
        rows: list[ListedChild | ListedDiagnostic] = [
            ListedChild(id="one-shot-mid", mode="one-shot", label="one-shot intermediate",
                        live=False, parent=spec.parent.id, depth=1, created_at=1,
                        has_children=True),
            ListedChild(id="deep-leaf", mode="continuable", label="deep leaf", live=False,
                        parent="one-shot-mid", depth=2, created_at=2),
            ListedDiagnostic(id="broken-node", reason="unavailable", parent=spec.parent.id,
                             depth=1, created_at=3)]

        async def listing(root_id: str, **options: Any) -> Any:
            return rows

        spec.manager.list_descendants = listing  # type: ignore[method-assign]
        result = await _call(spec, "list_agents", {"scope": "descendants"}, spec.parent)
        assert (result.is_error, result.text) == (
            False, "deep-leaf [ready] parent=one-shot-mid depth=2 — deep leaf\n"
                   f"broken-node [diagnostic: unavailable] parent={spec.parent.id} depth=1")
        await spec.host.aclose()

    run(main)
