"""Sibling delegations in one assistant message run in parallel and settle independently."""

from __future__ import annotations

import asyncio

from _shell_helpers import run, types
from _subagent_helpers import (
    assert_all_balanced,
    last_user_text,
    result_texts,
    subagent_host,
)

from turnfork.core import AgentOptions, SubagentDescriptorEvent
from turnfork.shell import ModelRequest, Reply, ScriptedModel, SubagentTool
from turnfork.shell.subagents import SubagentEnd


def _delegations(*prompts: str) -> Reply:
    return Reply.tool_calls([("subagent", {"description": f"job {p}", "prompt": p})
                             for p in prompts])


def test_two_siblings_overlap_and_commit_in_model_order() -> None:
    """tool/call A, tool/call B, result A, result B; A can only finish because B ran too."""

    async def main() -> None:
        b_started = asyncio.Event()

        async def reply(request: ModelRequest) -> Reply:
            if last_user_text(request) == "A":
                await b_started.wait()  # would deadlock if the siblings ran one by one
                return Reply.text("answer A")
            b_started.set()
            return Reply.text("answer B")

        host, parent, _, recorder = subagent_host([_delegations("A", "B"), Reply.text("ok")])
        host.models.register("child", ScriptedModel([reply, reply]))
        SubagentTool(provider="spawn",
                     agent_options=AgentOptions(provider="child")).install(host)
        parent.followup("go")
        await parent.when_idle()
        step = [t for t in types(parent.session.events) if t in ("tool/call", "tool/result")]
        assert step == ["tool/call", "tool/call", "tool/result", "tool/result"]
        assert result_texts(parent.session.events) == ["answer A", "answer B"]
        ends = [e.run.label for e in recorder.events if isinstance(e, SubagentEnd)]
        assert ends == ["job B", "job A"]
        await parent.dispose()
        assert_all_balanced(parent, *recorder.children.values())

    run(main)


def test_ten_sibling_forks_one_failing() -> None:
    """Ten forks from one message: every result is its own child's answer, the failing one is
    rendered as a failure, and every child was seeded with the same completed turn."""

    async def main() -> None:
        def reply(request: ModelRequest) -> Reply:
            prompt = last_user_text(request)
            if prompt == "task 7":
                return Reply.error("AUTH", "bad key")
            return Reply.text(f"answer {prompt.removeprefix('task ')}")

        prompts = [f"task {n}" for n in range(10)]
        host, parent, _, recorder = subagent_host([
            Reply.text("first turn done"), _delegations(*prompts), Reply.text("all done")])
        host.models.register("child", ScriptedModel([reply] * 10))
        SubagentTool(provider="fork", agent_options=AgentOptions(provider="child")).install(host)
        parent.followup("first")
        await parent.when_idle()
        seed_length = len(parent.session.events)
        parent.followup("fan out")
        await parent.when_idle()
        expected = [f"answer {n}" for n in range(10)]
        expected[7] = "Error: subagent run failed\nDiagnostic: AUTH: bad key"
        assert result_texts(parent.session.events) == expected
        children = list(recorder.children.values())
        assert len(children) == 10 and len(host.agents) == 1
        labels = sorted(str(e.data.label) for c in children for e in c.session.events
                        if isinstance(e, SubagentDescriptorEvent))
        assert labels == sorted(f"job {p}" for p in prompts)
        for child in children:
            assert child.session.header.seed_length == seed_length
            assert child.session.events[seed_length - 1] is parent.session.events[
                seed_length - 1]
        stops = sorted(e.stop_reason for e in recorder.events if isinstance(e, SubagentEnd))
        assert stops == ["completed"] * 9 + ["error"]
        await parent.dispose()
        assert_all_balanced(parent, *children)

    run(main)
