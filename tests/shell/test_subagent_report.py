"""The report tool (DSH tool-subagent-report.spec.ts; the subagent-report ACP scenario in our
words): only continuable children have it, a report reaches the direct parent as a
``subagent-report`` message at its next step, quiet reports do not wake it, and roots are
refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from _continuation_helpers import (
    continuable_host,
    eventually,
    finish,
    gated,
    manager,
    settle,
    splices,
    start,
    user_texts,
)
from _shell_helpers import echo_tool, of_type, run
from _subagent_helpers import result_texts

from turnfork.core import (
    AgentOptions,
    ToolErrorInfo,
    ToolRestriction,
    ToolResultEvent,
    UserMessageEvent,
)
from turnfork.shell import Reply, ScriptedModel, SubagentTool
from turnfork.shell.subagents import ReportTool


def _report(output: str) -> Reply:
    return Reply.tool_call("report", {"output": output})


def test_only_continuable_children_have_the_tool(tmp_path: Path) -> None:
    """Ensures that the report tool and its guidance are in each continuable child's own scope
    (even under ``allow: []``), never in the parent's or the global registry, nor in a one-shot
    child's (DSH "registers report only in continuable child scopes", "survives a global-tool
    allow-list")."""

    async def main() -> None:
        host, parent, model, _lifecycle = continuable_host(tmp_path)
        host.tools.register(echo_tool())
        ReportTool().install(host)
        model.add(Reply.hang("thinking"))
        child_id = await start(host, parent, tool_filter=ToolRestriction(allow=()))
        child = host.agents.get(child_id)
        assert child is not None
        assert [tool.name for tool in child.tools.tools()] == ["report"]
        parameters = json.loads(bytes(child.tools.tools()[0].schema.parameters))
        assert list(parameters["properties"]) == ["output"]
        assert "Deliver your result with the report tool before you finish" in \
            child.system_prompt()
        assert "report" not in host.tools and "report" not in [t.name for t in parent.tools.tools()]
        assert "Deliver your result" not in parent.system_prompt()
        await finish(host, parent)

    run(main)


def test_a_report_reaches_the_parent_before_the_notice(tmp_path: Path) -> None:
    """Ensures DSH's subagent-report scenario: the child reports CHILD_REPORT_OK (``report
    accepted by the agent that started you as message <id>``, the id of the parent's message),
    says ``Reported.``, settles; the parent receives ``Background subagent <id> reported:`` /
    ``CHILD_REPORT_OK`` from the child at its next step, then the settlement notice, and can
    repeat the report."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        ReportTool().install(host)
        child_model = ScriptedModel()
        host.models.register("child", child_model)
        SubagentTool(provider="spawn", background_mode="continuable",
                     agent_options=AgentOptions(provider="child")).install(host)
        turn_one = asyncio.Event()
        child_model.add(gated(_report("CHILD_REPORT_OK"), turn_one))
        child_model.add(Reply.text("Reported."))
        model.add(Reply.tool_call("subagent", {
            "description": "Report a finding", "run_in_background": True,
            "prompt": "Call the report tool once with output exactly CHILD_REPORT_OK, then "
                      "stop."}))
        model.add(Reply.text("STARTED"))
        model.add(Reply.text("SUBAGENT_SETTLED_NOTED"))
        model.add(Reply.text("SUBAGENT_SETTLED_NOTED"))
        parent.followup("Start a background subagent that reports.")
        await parent.when_idle()
        child_id = result_texts(parent.session.events)[0].removeprefix("started subagent ")
        turn_one.set()
        await settle(lifecycle, child_id)
        await eventually(lambda: not parent.running and model.calls >= 3)
        await parent.when_idle()
        reports = [e for e in of_type(parent.session.events, UserMessageEvent)
                   if e.data.source.kind == "subagent-report"]
        assert user_texts(reports) == [f"Background subagent {child_id} reported:\n"
                                       "CHILD_REPORT_OK"]
        assert reports[0].data.source.items == (("kind", "subagent-report"), ("form", "relay"),
                                                ("senderSessionId", child_id))
        child = host.sessions.load(child_id)
        assert result_texts(child.events) == [
            f"report accepted by the agent that started you as message {reports[0].data.id}"]
        texts = user_texts(parent.session.events)
        assert texts.index(user_texts(reports)[0]) < next(
            i for i, t in enumerate(texts) if "finished and will do no further work" in t)
        host.sessions.release(child_id)
        model.add(Reply.text("CHILD_REPORT_OK"))
        parent.followup("Repeat back, verbatim, the exact output the background subagent "
                        "reported to you.")
        await parent.when_idle()
        last = model.requests[-1].messages
        assert any("CHILD_REPORT_OK" in str(m) for m in last)
        await finish(host, parent)

    run(main)


def test_a_quiet_report_does_not_wake_the_parent(tmp_path: Path) -> None:
    """Ensures that with ``delivery="quiet"`` the report waits in the idle parent's next-step
    inbox without a model call (DSH "delivers quiet reports … without waking")."""

    async def main() -> None:
        host, parent, model, _lifecycle = continuable_host(tmp_path)
        ReportTool(delivery="quiet").install(host)
        child_model = ScriptedModel([_report("CHILD_FINDING"), Reply.hang("still working")])
        host.models.register("child", child_model)
        child_id = await start(host, parent, agent_options=AgentOptions(provider="child"))
        await eventually(lambda: child_model.calls == 2)
        (quiet,) = [s for s in splices(parent.session.events) if s.inserted]
        assert quiet.target == "next-step" and not parent.running and model.calls == 0
        assert child_id in host.agents
        await finish(host, parent)

    run(main)


def test_a_root_cannot_report(tmp_path: Path) -> None:
    """Ensures that an agent that is not a resident continuable child gets DSH's UNAUTHORIZED
    refusal (the tool offered to every agent, ``scope="global"``)."""

    async def main() -> None:
        host, parent, model, _ = continuable_host(tmp_path)
        ReportTool(scope="global").install(host)
        model.add(_report("nothing"))
        model.add(Reply.text("ok"))
        parent.followup("report")
        await parent.when_idle()
        assert result_texts(parent.session.events) == [
            f'Error: agent "{parent.id}" is not a live continuable subagent and cannot report']
        (event,) = of_type(parent.session.events, ToolResultEvent)
        assert event.data.error == ToolErrorInfo(name="SubagentError", code="UNAUTHORIZED")
        assert manager(host).activations() == ()
        await finish(host, parent)

    run(main)
