"""The control tools (DSH tool-subagent-control.spec.ts and list-agents.spec.ts): the schemas
as DSH pins them, ``send_message`` queuing the next turn and its refusals, ``interrupt_agent``
parking the queue, ``list_agents`` with registry statuses; driven by a scripted parent model."""

from __future__ import annotations

import json
from pathlib import Path

from _continuation_helpers import continuable_host, eventually, finish, settle, user_texts
from _shell_helpers import of_type, run
from _subagent_helpers import result_texts

from turnfork.core import AgentOptions, ToolErrorInfo, ToolResultEvent
from turnfork.shell import Reply, ScriptedModel, SubagentTool
from turnfork.shell.subagents import SubagentControlTools


def _call(name: str, **args: object) -> Reply:
    return Reply.tool_call(name, args)


def _parameters(host: object, name: str) -> dict[str, object]:
    tool = host.tools.get(name)  # type: ignore[attr-defined]
    assert tool is not None
    parameters: dict[str, object] = json.loads(bytes(tool.schema.parameters))
    return parameters


def test_schemas_are_dshs(tmp_path: Path) -> None:
    """Ensures the three global tools with DSH's parameters: send_message (subagent_id,
    message, both required), interrupt_agent (agent_id), list_agents (an optional scope enum);
    their descriptions mention what DSH's specs pin."""

    async def main() -> None:
        host, parent, _, _ = continuable_host(tmp_path)
        SubagentControlTools().install(host)
        assert _parameters(host, "send_message")["required"] == ["subagent_id", "message"]
        assert _parameters(host, "interrupt_agent")["required"] == ["agent_id"]
        listing = _parameters(host, "list_agents")
        assert "required" not in listing
        assert listing["properties"] == {"scope": {
            "type": "string", "description": "children (default) lists direct children only; "
                                             "descendants walks the complete tree below you.",
            "enum": ["children", "descendants"]}}
        send = host.tools.get("send_message")
        assert send is not None and "next turn" in send.description
        assert "job_output" not in send.description
        interrupt = host.tools.get("interrupt_agent")
        assert interrupt is not None and "current turn" in interrupt.description
        listed = host.tools.get("list_agents")
        assert listed is not None and "you are told when one finishes" in listed.description
        await finish(host, parent)

    run(main)


def test_a_parent_model_starts_continues_lists_and_interrupts(tmp_path: Path) -> None:
    """Ensures the parent model's view, as DSH's subagent-continuable and subagent-list-agents
    scenarios show it: ``started subagent <id>``, two ``message queued as the next turn for
    subagent <id>`` results, an unknown id refused with NOT_RESUMABLE, a listing line
    ``<id> [<status>] — <label>``, and an accepted interrupt."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path, approval=True)
        SubagentControlTools().install(host)
        SubagentTool(provider="spawn", background_mode="continuable", max_depth=1,
                     agent_options=AgentOptions(provider="child")).install(host)
        child_model = ScriptedModel()
        host.models.register("child", child_model)
        ids: list[str] = []

        def started(request: object) -> Reply:
            text = result_texts(parent.session.events)[-1]
            ids.append(text.removeprefix("started subagent "))
            return _call("send_message", subagent_id=ids[0],
                         message="Now reply with exactly SECOND_OK.")

        unknown = "22222222-2222-4222-8222-222222222222"
        child_gate: list[bool] = []

        async def child_first(request: object) -> Reply:
            await eventually(lambda: bool(child_gate))
            return Reply.text("CHILD_OK")

        model.add(_call("subagent", description="Reply with CHILD_OK",
                        prompt="Reply with exactly the word CHILD_OK and nothing else.",
                        run_in_background=True))
        child_model.add(child_first)
        model.add(started)
        model.add(lambda request: _call("send_message", subagent_id=unknown,
                                        message="Please continue."))
        model.add(lambda request: _call("list_agents"))
        model.add(lambda request: _call("interrupt_agent", agent_id=unknown))
        model.add(lambda request: (child_gate.append(True), Reply.text("DONE"))[1])
        child_model.add(Reply.text("SECOND_OK"))
        model.add(Reply.text("SUBAGENT_SETTLED_NOTED"))
        parent.followup("Follow these steps exactly, then stop.")
        await eventually(lambda: bool(child_gate))
        await parent.when_idle()
        await settle(lifecycle, ids[0])
        await eventually(lambda: len(user_texts(parent.session.events)) == 2)
        await parent.when_idle()
        texts = result_texts(parent.session.events)
        assert texts == [
            f"started subagent {ids[0]}",
            f"message queued as the next turn for subagent {ids[0]}",
            f'Error: subagent "{unknown}" is unavailable',
            f"{ids[0]} [running] — Reply with CHILD_OK",
            f"interrupt requested for agent {unknown}"]
        refused = of_type(parent.session.events, ToolResultEvent)[2]
        assert refused.data.error == ToolErrorInfo(name="SubagentError", code="NOT_RESUMABLE")
        notice = user_texts(parent.session.events)[1]
        assert notice.startswith(f"Background subagent {ids[0]} finished")
        assert notice.endswith("Its closing message:\nSECOND_OK")
        await finish(host, parent)

    run(main)


def test_interrupt_agent_parks_the_childs_queue(tmp_path: Path) -> None:
    """Ensures that interrupt_agent stops a running child's turn with cause parent and keeps
    its queued follow-up parked, and that a later send_message runs the parked one first
    (DSH "interrupts a running direct child with the parent cause, parking its queue")."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        SubagentControlTools().install(host)
        SubagentTool(provider="spawn", background_mode="continuable",
                     agent_options=AgentOptions(provider="child")).install(host)
        child_model = ScriptedModel([Reply.hang("working")])
        host.models.register("child", child_model)
        ids: list[str] = []

        def started(request: object) -> Reply:
            ids.append(result_texts(parent.session.events)[-1].removeprefix("started subagent "))
            return _call("send_message", subagent_id=ids[0], message="parked follow-up")

        model.add(_call("subagent", description="long work", prompt="long work"))
        model.add(started)
        model.add(lambda request: _call("interrupt_agent", agent_id=ids[0]))
        model.add(Reply.text("interrupted it"))
        parent.followup("start, queue, interrupt")
        await parent.when_idle()
        child = host.agents.get(ids[0])
        assert child is not None
        await child.when_idle()
        assert len(child.pending) == 1 and host.agents.get(ids[0]) is child
        child_model.add(Reply.text("parked answer"))
        child_model.add(Reply.text("wake answer"))
        model.add(lambda request: _call("send_message", subagent_id=ids[0], message="wake up"))
        model.add(Reply.text("sent"))
        model.add(Reply.text("parent noted"))
        parent.followup("wake it")
        await settle(lifecycle, ids[0])
        assert user_texts(child.session.events) == ["long work", "parked follow-up", "wake up"]
        await eventually(lambda: model.calls == 7)
        await parent.when_idle()
        await finish(host, parent)

    run(main)
