"""Approval: asks are refused under policy never, decided by an approver under ask."""

from __future__ import annotations

from typing import Any

from _shell_helpers import make_host, of_type, run, scripted
from msgspec import UNSET

from turnfork.core import (
    ApprovalPolicyData,
    ApprovalPolicyEvent,
    TextBlock,
    ToolResultBlock,
    ToolResultEvent,
)
from turnfork.shell import Agent, Reply, Tool, ToolContext


async def _needs_approval(args: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.request_approval("write /etc/passwd")
    return "written"


def _result_text(agent: Agent) -> tuple[str, Any]:
    result = of_type(agent.session.events, ToolResultEvent)[0]
    block = result.data.message.content[0]
    assert isinstance(block, ToolResultBlock)
    inner = block.content[0]
    assert isinstance(inner, TextBlock)
    return inner.text, result.data.error


def _run_with(approval: bool, policy: str | None = None, answer: bool | None = None,
              ) -> tuple[Agent, list[str]]:
    asked: list[str] = []

    async def main() -> Agent:
        host = make_host()
        host.tools.register(Tool("write", "", {"type": "object"}, _needs_approval))
        agent, _ = scripted(host, [Reply.tool_call("write", {}), Reply.text("done")],
                            approval=approval)
        if policy is not None:
            agent.set_approval_policy(policy, source="delegation")  # type: ignore[arg-type]
        if answer is not None:
            async def approver(agent: Agent, tool: str, detail: str) -> bool:
                asked.append(f"{tool}: {detail}")
                return answer

            agent.approver = approver
        agent.followup("go")
        await agent.when_idle()
        return agent

    return run(main), asked


def test_policy_never_refuses_without_error_info() -> None:
    """A child pinned to never gets an Error: result with no error key, nobody is asked."""
    agent, asked = _run_with(approval=True, policy="never", answer=True)
    text, error = _result_text(agent)
    assert text.startswith("Error: write needs approval (write /etc/passwd), but approval "
                           "prompts are disabled")
    assert error is UNSET and asked == []
    (policy,) = of_type(agent.session.events, ApprovalPolicyEvent)
    assert policy.data == ApprovalPolicyData(policy="never", source="delegation")
    assert agent.approval_policy == "never"


def test_without_an_approval_service_asks_are_refused() -> None:
    """approval=False means policy never."""
    agent, _ = _run_with(approval=False)
    assert agent.approval_policy == "never"
    assert "approval prompts are disabled" in _result_text(agent)[0]


def test_policy_ask_uses_the_approver() -> None:
    """Under ask the approver decides: granted runs the tool, denied is an Error: result."""
    granted, asked = _run_with(approval=True, answer=True)
    assert _result_text(granted)[0] == "written"
    assert asked == ["write: write /etc/passwd"]
    denied, _ = _run_with(approval=True, answer=False)
    assert _result_text(denied)[0] == "Error: write was not approved (write /etc/passwd)"


def test_policy_ask_without_approver_is_refused() -> None:
    """Nobody to ask is a refusal, not a hang."""
    agent, _ = _run_with(approval=True)
    assert "no approver is available" in _result_text(agent)[0]
