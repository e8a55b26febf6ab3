"""Disposing a parent disposes every child it started, however it was started (issue 14
point 12): a foreground run waiting in its tool call, a background job, a continuable child —
each is stopped and gone, and every log is balanced."""

from __future__ import annotations

import asyncio
from pathlib import Path

from _continuation_helpers import continuable_host, eventually, gated, start
from _shell_helpers import assert_balanced, run

from turnfork.core import AgentOptions
from turnfork.shell import Reply, ScriptedModel, SubagentTool
from turnfork.shell.subagents import BackgroundJobs, JobTools


def test_disposing_the_parent_disposes_children_of_every_kind(tmp_path: Path) -> None:
    """The parent has a foreground child mid-run, a background job and a continuable child;
    parent.dispose() leaves no child agent, no run, no job running."""

    async def main() -> None:
        gate = asyncio.Event()  # never opened: every child works until it is stopped
        host, parent, model, _ = continuable_host(tmp_path)
        jobs = BackgroundJobs(host)
        JobTools(jobs).install()
        host.models.register("child", ScriptedModel([gated(Reply.text("never"), gate)] * 3))
        SubagentTool(provider="spawn", enable_run_in_background=True, jobs=jobs,
                     agent_options=AgentOptions(provider="child")).install(host)
        model.add(Reply.tool_calls([
            ("subagent", {"description": "bg", "prompt": "p", "run_in_background": True}),
            ("subagent", {"description": "fg", "prompt": "p"})]))
        continuable = await start(host, parent, agent_options=AgentOptions(provider="child"))
        parent.followup("go")
        # the continuable child, the job's child and the foreground child all run
        await eventually(lambda: len(host.agents) == 4)
        children = [agent for agent in host.agents.list() if agent is not parent]
        assert continuable in {child.id for child in children}
        await parent.dispose()
        assert host.agents.list() == ()
        assert host.subagents.runs() == ()
        assert [job.status for job in jobs.list(parent)] == ["killed"]
        for agent in (parent, *children):
            assert agent.disposed
            assert_balanced(agent.session.events)
        await host.aclose()

    run(main)
