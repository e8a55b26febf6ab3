"""The agent waits for the store's commit where an acknowledgement depends on it (issue 15.4):
``when_idle`` returns once the closed log is durable, and a step's tool calls are durable
before any tool runs. A long commit window shows the waits are the agent's, not the store's
timer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _shell_helpers import make_host, run, scripted

from turnfork.core import AssistantMessageEvent
from turnfork.shell import Agent, JsonlSessionStore, Reply, Tool, ToolContext

#: Longer than any test here runs: nothing becomes durable by the committer's timer alone.
WINDOW = 60.0


def test_when_idle_returns_once_the_closed_log_is_durable(tmp_path: Path) -> None:
    """After ``when_idle`` every event of the turn is durable."""

    async def main() -> None:
        host = make_host(JsonlSessionStore(tmp_path, commit_window=WINDOW))
        agent, _ = scripted(host, [Reply.text("done")])
        agent.followup("go")
        await agent.when_idle()
        assert agent.session.durable_length == len(agent.session.events) > 0
        await host.aclose()

    run(main)


def test_a_steps_tool_calls_are_durable_before_a_tool_runs(tmp_path: Path) -> None:
    """The assistant message holding the calls is durable when the tool starts."""
    seen: list[tuple[int, int]] = []
    holder: list[Agent] = []

    async def probe(args: dict[str, Any], ctx: ToolContext) -> str:
        session = holder[0].session
        message = max(i for i, event in enumerate(session.events)
                      if isinstance(event, AssistantMessageEvent))
        seen.append((session.durable_length, message))
        return "ok"

    async def main() -> None:
        host = make_host(JsonlSessionStore(tmp_path, commit_window=WINDOW))
        host.tools.register(Tool("probe", "probe the log", {"type": "object"}, probe))
        agent, _ = scripted(host, [Reply.tool_call("probe", {}), Reply.text("done")])
        holder.append(agent)
        agent.followup("go")
        await agent.when_idle()
        await host.aclose()

    run(main)
    assert len(seen) == 1
    durable, message = seen[0]
    assert durable > message
