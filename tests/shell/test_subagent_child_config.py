"""What a child is given: persona, tool filter, a fresh scope, and the parent's model route."""

from __future__ import annotations

from typing import Any

from _shell_helpers import echo_tool, run
from _subagent_helpers import assert_all_balanced, finish, request, result_texts, subagent_host

from turnfork.core import (
    SUBAGENT_DELEGATION_CONTEXT,
    AgentOptions,
    LlmCallConfig,
    ToolRestriction,
)
from turnfork.shell import Reply, ScriptedModel, SubagentTool, Tool, ToolContext


def _call(prompt: str = "p") -> Reply:
    return Reply.tool_call("subagent", {"description": "d", "prompt": prompt})


def test_persona_and_tool_filter_apply_to_the_child_only() -> None:
    """The child's persona shadows the deployment persona in its system prompt; the delegation
    statement reaches it as its runtime-context snapshot, not in the system prompt; a denied
    tool is absent from its request and unknown if called; the parent keeps both (DSH
    subagent-spawn-in-process.spec.ts "a per-child persona shadows the deployment persona in the
    child request only", "toolFilter hides denied tools from the child prompt AND refuses their
    execution")."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([
            _call(), Reply.tool_call("echo", {"text": "x"}), Reply.text("child done"),
            Reply.text("parent done")], system="You are the lead.")
        host.tools.register(echo_tool())
        SubagentTool(provider="spawn", persona="You are a careful reviewer.",
                     tool_filter=ToolRestriction(deny=("echo",))).install(host)
        parent.followup("go")
        await parent.when_idle()
        parent_request, child_request = model.requests[0], model.requests[1]
        assert child_request.system == "You are a careful reviewer."
        snapshot = child_request.messages[-1]
        assert snapshot.source.plugin == "@deepseek-ai/dsh-system-prompt"
        assert snapshot.content[0].text.endswith(SUBAGENT_DELEGATION_CONTEXT)
        assert [tool.name for tool in child_request.tools] == ["subagent"]
        assert result_texts(recorder.child().session.events) == [
            'Error: unknown tool "echo"']
        assert parent_request.system == "You are the lead."
        assert [tool.name for tool in parent_request.tools] == ["echo", "subagent"]
        assert SUBAGENT_DELEGATION_CONTEXT not in repr(parent_request.messages)
        assert result_texts(parent.session.events) == ["child done"]
        await parent.dispose()
        assert_all_balanced(parent, recorder.child())

    run(main)


def test_the_child_gets_a_fresh_scope_not_the_parents() -> None:
    """The parent's restrictions and scope-only tools are not inherited."""

    async def private(args: dict[str, Any], ctx: ToolContext) -> str:
        return "private"

    async def main() -> None:
        host, parent, model, recorder = subagent_host([Reply.text("ok")])
        host.tools.register(echo_tool())
        host.tools.register(echo_tool("shout"))
        parent.tools.restrict(ToolRestriction(allow=("echo",)))
        parent.tools.add(Tool("private", "", {"type": "object"}, private))
        spawned = await host.subagents.start("spawn", request("p"), parent=parent)
        await spawned.result
        assert [tool.name for tool in model.requests[0].tools] == ["echo", "shout"]
        assert spawned.local_agent.tools is not parent.tools
        await spawned.dispose()
        await finish(parent, recorder)

    run(main)


def test_model_route_is_inherited_from_the_parent() -> None:
    """Without agent_options the child uses the parent's provider, model and max_tokens."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([_call(), Reply.text("c"), Reply.text("p")],
                                               max_tokens=77)
        SubagentTool(provider="fork").install(host)
        parent.followup("go")
        await parent.when_idle()
        expected = LlmCallConfig(provider="scripted", model="test-model", max_tokens=77)
        assert [request_.config for request_ in model.requests] == [expected] * 3
        await finish(parent, recorder)

    run(main)


def test_agent_options_override_the_route() -> None:
    """agent_options replace provider, model and max_tokens for the children only."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([_call(), Reply.text("p")], max_tokens=77)
        other = ScriptedModel([Reply.text("from other")])
        host.models.register("other", other)
        SubagentTool(provider="spawn", agent_options=AgentOptions(
            provider="other", model="big", max_tokens=5)).install(host)
        parent.followup("go")
        await parent.when_idle()
        assert other.requests[0].config == LlmCallConfig(provider="other", model="big",
                                                         max_tokens=5)
        assert {r.config.provider for r in model.requests} == {"scripted"}
        assert result_texts(parent.session.events) == ["from other"]
        await finish(parent, recorder)

    run(main)


def test_partial_override_keeps_the_other_fields() -> None:
    """Overriding only the model keeps the parent's provider and max_tokens."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([Reply.text("c")], max_tokens=9)
        spawned = await host.subagents.start(
            "spawn", request("p", agent_options=AgentOptions(model="small")), parent=parent)
        await spawned.result
        assert model.requests[0].config == LlmCallConfig(provider="scripted", model="small",
                                                         max_tokens=9)
        assert (spawned.local_agent.provider, spawned.local_agent.model) == ("scripted",
                                                                             "small")
        await spawned.dispose()
        await finish(parent, recorder)

    run(main)
