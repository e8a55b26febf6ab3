"""The subagent tool's continuable background mode (DSH tool-subagent.spec.ts, "dsh-tool-subagent
continuable background mode"): background by default, the durable id at once, the instance's
guidance section, a foreground one-shot run when asked, and the provider capability check."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _continuation_helpers import continuable_host, eventually, finish, settle
from _shell_helpers import echo_tool, run, types
from _subagent_helpers import result_texts

from turnfork.core import AgentOptions, SubagentDescriptorEvent, ToolRestriction
from turnfork.core.continuation import ContinuableStart
from turnfork.shell import Reply, ScriptedModel, SubagentTool
from turnfork.shell.subagents import ALL_CAPABILITIES


class NoContinuation:
    """A provider offering one-shot children only (no prepare_continuable)."""

    provider_name = "plain"
    inherits_parent_context = False

    capabilities = ALL_CAPABILITIES

    async def start(self, *args: object, **kwargs: object) -> object:
        raise AssertionError("never called")


def test_background_by_default_returns_only_the_durable_id(tmp_path: Path) -> None:
    """Ensures the continuable instance's wording (no job_output, send_message, ``runs in the
    background by default``; ``Defaults to true``), its ``tool:subagent`` section, and a call
    without ``run_in_background`` answering ``started subagent <id>`` while the child goes
    on to its own answer."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        host.models.register("child", ScriptedModel([Reply.text("child answer")]))
        SubagentTool(provider="spawn", background_mode="continuable",
                     agent_options=AgentOptions(provider="child")).install(host)
        tool = host.tools.get("subagent")
        assert tool is not None
        assert "job_output" not in tool.description and "job_kill" not in tool.description
        assert "send_message" in tool.description
        assert "runs in the background by default" in tool.description
        background = json.loads(bytes(tool.schema.parameters))["properties"]["run_in_background"]
        assert "Defaults to true" in background["description"]
        section = host.prompt_sections.get("tool:subagent")
        assert section is not None and section.order == 116.5
        assert "Use subagent in the background by default" in section.text
        assert "runtime sends you a notice containing its outcome" in section.text
        model.add(Reply.tool_call("subagent", {"description": "d", "prompt": "p"}))
        model.add(Reply.text("started it"))
        model.add(Reply.text("noted"))
        parent.followup("go")
        await parent.when_idle()
        (text,) = result_texts(parent.session.events)
        found = re.fullmatch(r"started subagent (\S+)", text)
        assert found is not None
        await settle(lifecycle, found.group(1))
        child = host.sessions.load(found.group(1))
        assert isinstance(child.events[0], SubagentDescriptorEvent)
        assert "assistant/message" in types(child.events)
        host.sessions.release(found.group(1))
        await eventually(lambda: model.calls == 3)
        await parent.when_idle()
        await finish(host, parent)

    run(main)


def test_run_in_background_false_waits_for_a_one_shot_answer(tmp_path: Path) -> None:
    """Ensures that ``run_in_background: false`` on a continuable instance runs a foreground
    one-shot child and returns its answer (DSH "waits for a continuable provider only when
    run_in_background is explicitly false")."""

    async def main() -> None:
        host, parent, model, _lifecycle = continuable_host(tmp_path)
        host.models.register("child", ScriptedModel([Reply.text("continuable answer")]))
        SubagentTool(provider="spawn", background_mode="continuable",
                     agent_options=AgentOptions(provider="child")).install(host)
        model.add(Reply.tool_call("subagent", {"description": "d", "prompt": "p",
                                               "run_in_background": False}))
        model.add(Reply.text("done"))
        parent.followup("go")
        await parent.when_idle()
        assert result_texts(parent.session.events) == ["continuable answer"]
        assert host.subagents.continuation.activations() == ()
        await finish(host, parent)

    run(main)


def test_the_guidance_is_empty_for_a_child_that_cannot_see_the_tool(tmp_path: Path) -> None:
    """Ensures that a continuable child whose tool filter hides ``subagent`` gets the
    ``tool:subagent`` guidance empty (DSH "hides continuable guidance when the current agent
    cannot see the tool")."""

    async def main() -> None:
        host, parent, model, _lifecycle = continuable_host(tmp_path)
        host.tools.register(echo_tool())
        SubagentTool(provider="spawn", background_mode="continuable",
                     tool_filter=ToolRestriction(deny=("subagent",))).install(host)
        model.add(Reply.hang("thinking"))
        started = await host.subagents.continuation.start_continuable(
            "spawn", ContinuableStart(prompt=(), label="x",
                                      tool_filter=ToolRestriction(deny=("subagent",))),
            parent=parent)
        child = host.agents.get(started.child_id)
        assert child is not None
        assert "Use subagent in the background" in parent.system_prompt()
        assert "Use subagent in the background" not in child.system_prompt()
        await finish(host, parent)

    run(main)


def test_a_provider_without_continuable_children_is_refused_at_mount(tmp_path: Path) -> None:
    """Ensures DSH's mount-time refusal of ``background_mode="continuable"`` on a provider
    without ``prepare_continuable``."""

    async def main() -> None:
        host, parent, _, _ = continuable_host(tmp_path)
        host.subagents.register_provider(NoContinuation())  # type: ignore[arg-type]
        with pytest.raises(ValueError, match='tool-subagent: provider "plain" does not support '
                                             "`backgroundMode: continuable`"):
            SubagentTool(provider="plain", background_mode="continuable").install(host)
        assert "subagent" not in host.tools
        await finish(host, parent)

    run(main)
