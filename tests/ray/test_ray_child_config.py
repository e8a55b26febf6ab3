"""A Ray child is configured by the shared driver's rules, as an in-process child is: persona,
tool filter, model route inherited or overridden, depth limit, structured output, delegated
policy (in-process tests: test_subagent_child_config.py, test_subagent_structured.py,
test_subagent_publication.py, test_subagent_tool.py's depth cases)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import (
    WHERE,
    assert_balanced,
    close,
    contract_host,
    one_turn,
    provider,
    request,
    run,
    text,
)

from turnfork.core import (
    DELEGATION_SECTION,
    AgentOptions,
    ApprovalPolicyData,
    SandboxModeData,
    SandboxModeEvent,
    ToolRestriction,
    UserMessageEvent,
)
from turnfork.shell import SubagentStartError


async def _answer(host: Any, parent: Any, where: str, task: str, kind: str = "fork",
                  **fields: Any) -> tuple[str, str, Any]:
    run_ = await host.subagents.start(provider(where, kind), request(task, **fields),
                                      parent=parent)
    result = await run_.result
    await run_.dispose()
    assert_balanced(run_.child.session.events, "child")
    return result.stop_reason, text(result.output), result


@pytest.mark.parametrize("where", WHERE)
def test_persona_and_deployment_sections_reach_the_childs_system_prompt(pool: Any,
                                                                        where: str) -> None:
    """The requested persona shadows the deployment persona; the host's other sections stay."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        host.prompt_sections.set("notes", "Be brief.", order=50)
        parent.prompt_sections.set("deployment:persona", "You are the parent.", order=0)
        stop, prompt, _ = await _answer(host, parent, where, "system?", persona="You review.")
        assert stop == "completed"
        assert prompt == "You review.\n\nBe brief."
        stop, prompt, _ = await _answer(host, parent, where, "system?")
        assert prompt == "You are the parent.\n\nBe brief."
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_the_tool_filter_applies_to_the_childs_own_scope(pool: Any, where: str) -> None:
    """allow/deny narrow the child's tools; without a filter it sees every global tool."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        _, tools, _ = await _answer(host, parent, where, "tools?")
        assert tools == "clean,echo,pid,read,write"
        _, tools, _ = await _answer(host, parent, where, "tools?",
                                    tool_filter=ToolRestriction(allow=("read", "echo")))
        assert tools == "echo,read"
        _, tools, _ = await _answer(host, parent, where, "tools?",
                                    tool_filter=ToolRestriction(deny=("write",)))
        assert tools == "clean,echo,pid,read"
        _, said, _ = await _answer(host, parent, where, "tool write {}",
                                   tool_filter=ToolRestriction(deny=("write",)))
        assert said.startswith("tool said: Error:") and "write" in said
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_the_model_route_is_inherited_or_overridden(pool: Any, where: str) -> None:
    """Without agent_options the child asks the parent's route; a model override replaces
    only the model."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        _, route, _ = await _answer(host, parent, where, "model?")
        assert route == "rules/m-parent"
        _, route, _ = await _answer(host, parent, where, "model?",
                                    agent_options=AgentOptions(model="m-child"))
        assert route == "rules/m-child"
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_a_route_no_worker_serves_fails_the_childs_turn(pool: Any, where: str) -> None:
    """A provider no model serves is not refused up front: the child's turn ends error."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        stop, _, _ = await _answer(host, parent, where, "say hi",
                                   agent_options=AgentOptions(provider="nowhere"))
        assert stop == "error"
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_the_depth_limit_is_the_drivers(pool: Any, where: str) -> None:
    """A child is stamped one deeper than its parent; past max_depth the start is refused
    before any child exists."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        run_ = await host.subagents.start(provider(where), request("say hi", max_depth=1),
                                          parent=parent)
        assert run_.child.session.header.delegation_depth == 1
        await run_.result
        await run_.dispose()
        deep = host.create_agent(provider="rules", model="m", subagent_depth=2)
        before = host.sessions.list()
        with pytest.raises(SubagentStartError) as refused:
            await host.subagents.start(provider(where), request("say hi", max_depth=2),
                                       parent=deep)
        assert refused.value.code == "DEPTH"
        assert host.sessions.list() == before
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_structured_output_is_captured(pool: Any, where: str) -> None:
    """The child's structured_output call is the result's value, exactly (and ends its turn);
    answering in plain text instead is a failure."""
    schema = b'{"type":"object","properties":{"colour":{"type":"string"}},"required":["colour"]}'

    async def main() -> None:
        import msgspec

        host, parent, _ = contract_host(pool)
        stop, _, result = await _answer(host, parent, where, 'structured {"colour": "BLUE"}',
                                        output_schema=msgspec.Raw(schema))
        assert stop == "completed"
        assert bytes(result.structured) == b'{"colour": "BLUE"}'
        stop, _, result = await _answer(host, parent, where, "say plain",
                                        output_schema=msgspec.Raw(schema))
        assert stop == "error"
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_the_delegated_policy_is_written_and_held(pool: Any, where: str) -> None:
    """A parent with a sandbox override and an approval service: the child's log carries
    sandbox/mode and approval/policy never (delegation), its context snapshot says it is
    delegated under the override, and an approval ask inside it is refused, asking nobody."""
    asked: list[str] = []

    async def approver(*args: Any) -> bool:
        asked.append("asked")
        return True

    async def main() -> None:
        host, _, _ = contract_host(pool, sandbox_mode="read-only", approver=approver)
        approving = host.create_agent(provider="rules", model="m", approval=True)
        approving.session.append(SandboxModeEvent, SandboxModeData(mode="workspace-write"))
        await one_turn(approving, "say hi")
        stop, said, _ = await _answer(host, approving, where, "tool clean {}")
        assert stop == "completed" and asked == []
        assert said.startswith("tool said: Error: clean needs approval (rm -rf build), but "
                               "approval prompts are disabled")
        run_ = await host.subagents.start(provider(where), request("say child"),
                                          parent=approving)
        await run_.result
        own = run_.own_events()
        assert own[1].data == SandboxModeData(mode="workspace-write", source="delegation")
        assert own[2].data == ApprovalPolicyData(policy="never", source="delegation")
        context = next(event for event in own if isinstance(event, UserMessageEvent)
                       and event.data.source.kind == "plugin")
        snapshot = text(context.data.content)
        assert DELEGATION_SECTION.text in snapshot and "workspace-write" in snapshot
        await run_.dispose()
        await close(host)

    run(main)
