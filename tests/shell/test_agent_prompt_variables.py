"""What a step tells the model of the agent, as DSH composes it: prompt variables
(``{{provider}}``, ``{{model}}``, ``{{cwd}}``, DSH's system-prompt plugin and agent loop), the
harness identity section (order −100) composed as a host section, and the sandbox policy's
workspace for a session without a cwd (DSH's ``workspaceRoot``: session cwd, then the
configured root, then the process's cwd)."""

from __future__ import annotations

import os
from pathlib import Path

from _shell_helpers import make_host, of_type, run, scripted

from turnfork.core import (
    HARNESS_IDENTITY,
    AgentOptions,
    PromptSection,
    TextBlock,
    TurnEndEvent,
    TurnError,
    UserMessageEvent,
)
from turnfork.core.continuation import ContinuableStart
from turnfork.shell import (
    Agent,
    Host,
    JsonlSessionStore,
    Reply,
    ScriptedModel,
    SpawnProvider,
    SubagentRuntime,
)


def _snapshot(agent: Agent) -> str:
    found = [e.data.content[0] for e in of_type(agent.session.events, UserMessageEvent)
             if e.data.source.kind == "plugin"]
    assert found and isinstance(found[-1], TextBlock)
    return found[-1].text


def test_prompt_variables_are_filled_for_the_agent() -> None:
    """A persona naming ``{{model}}`` and ``{{provider}}``, and a runtime-context contribution
    naming ``{{cwd}}``: the model is sent the agent's own values; a lone ``{{`` stays prose."""

    async def main() -> None:
        host = make_host()
        host.prompt_sections.add(PromptSection(name="where", order=130, kind="context",
                                               text="Work in {{cwd}}."))
        agent, model = scripted(host, [Reply.text("ok")], system="You run {{model}} via "
                                                                 "{{provider}}; {{ is prose.",
                                cwd="/srv/project")
        agent.followup("hi")
        await agent.when_idle()
        request = model.requests[0]
        assert request.system == "You run test-model via scripted; {{ is prose."
        assert _snapshot(agent).endswith("Work in /srv/project.")
        await host.aclose()

    run(main)


def test_an_unknown_or_valueless_variable_fails_the_step_in_dshs_words() -> None:
    """An unknown name (DSH: ``unknown prompt variable … registered variables: …``) or
    ``{{cwd}}`` for a session without a cwd (``… has no value for this assembly``) fails the
    step before any model call: the turn ends ``error`` with that text."""

    async def main() -> None:
        host = make_host()
        agent, model = scripted(host, [Reply.text("unused")], system="Hi {{nope}}.")
        agent.followup("hi")
        await agent.when_idle()
        (end,) = of_type(agent.session.events, TurnEndEvent)
        assert isinstance(end.data.reason, TurnError) and model.calls == 0
        assert end.data.reason.error.message == (
            'unknown prompt variable "{{nope}}" in section "deployment:persona"; registered '
            "variables: provider, model, cwd")
        other, _ = scripted(host, [Reply.text("unused")], provider="other",
                            system="In {{cwd}}.")
        other.followup("hi")
        await other.when_idle()
        (end,) = of_type(other.session.events, TurnEndEvent)
        assert isinstance(end.data.reason, TurnError)
        assert end.data.reason.error.message == (
            'prompt variable "{{cwd}}" has no value for this assembly (section '
            '"deployment:persona")')
        await host.aclose()

    run(main)


def test_a_child_persona_is_filled_with_the_childs_own_route(tmp_path: Path) -> None:
    """A continuable child's persona naming ``{{model}}`` is filled with the child's model (its
    own route), not the parent's."""

    async def main() -> None:
        host = make_host(JsonlSessionStore(tmp_path))
        SubagentRuntime(host).register_provider(SpawnProvider())
        parent, _ = scripted(host, [Reply.text("parent ack")])
        child_model = ScriptedModel([Reply.text("child answer")])
        host.models.register("child", child_model)
        started = await host.subagents.continuation.start_continuable(
            "spawn", ContinuableStart(prompt=(TextBlock(text="go"),), label="go",
                                      persona="You are {{model}}.",
                                      agent_options=AgentOptions(provider="child",
                                                                 model="child-model")),
            parent=parent)
        child = host.agents.get(started.child_id)
        assert child is not None
        assert child.system_prompt() == "You are child-model."
        await host.subagents.aclose()
        await host.aclose()

    run(main)


def test_the_harness_identity_opens_every_prompt_and_a_child_keeps_its_persona(
        tmp_path: Path) -> None:
    """DSH's system prompt opens with its harness identity (order −100) before the persona
    (order 0): composed as a host section, it opens the parent's prompt and a continuable
    child's, which keeps its own persona after it."""

    async def main() -> None:
        host = make_host(JsonlSessionStore(tmp_path))
        host.prompt_sections.add(HARNESS_IDENTITY)
        SubagentRuntime(host).register_provider(SpawnProvider())
        parent, _ = scripted(host, [Reply.text("parent ack")], system="You are the parent.")
        assert parent.system_prompt() == ("You are an AI agent powered by DeepSeek Harness."
                                          "\n\nYou are the parent.")
        started = await host.subagents.continuation.start_continuable(
            "spawn", ContinuableStart(prompt=(TextBlock(text="go"),), label="go",
                                      persona="You are a reviewer."), parent=parent)
        child = host.agents.get(started.child_id)
        assert child is not None
        assert child.system_prompt() == ("You are an AI agent powered by DeepSeek Harness."
                                         "\n\nYou are a reviewer.")
        await host.subagents.aclose()
        await host.aclose()

    run(main)


def test_the_file_policy_workspace_is_the_cwd_then_the_root_then_the_process() -> None:
    """The ``workspace-write`` sentence names the session's cwd when it has one, else the
    host's ``workspace_root`` (DSH's ``workspaceRoot: '/srv/workspace'``), else the process's
    working directory."""

    async def main() -> None:
        def sentence(host: Host, **options: object) -> str:
            agent, _ = scripted(host, [Reply.text("ok")], provider=f"p{len(host.agents)}",
                                **options)  # type: ignore[arg-type]
            (section,) = [s for s in agent.runtime_context() if s.name == "sandbox:policy"]
            return section.text

        rooted = Host(sandbox_mode="workspace-write", workspace_root="/srv/workspace")
        assert 'session workspace: "/srv/workspace".' in sentence(rooted)
        assert 'session workspace: "/srv/project".' in sentence(rooted, cwd="/srv/project")
        plain = Host(sandbox_mode="workspace-write")
        assert f'session workspace: "{os.getcwd()}".' in sentence(plain)
        await rooted.aclose()
        await plain.aclose()

    run(main)
