"""The composition root: registries, deterministic ids and clock, create_agent's checks."""

from __future__ import annotations

import pytest
from _shell_helpers import make_host, run, scripted

from turnfork.core import SessionHeader
from turnfork.shell import Host, MemorySessionStore, ScriptedModel, SessionExistsError
from turnfork.shell.host import AgentExistsError, UnknownProviderError
from turnfork.shell.store import SessionNotFoundError


def test_models_register_by_provider() -> None:
    """A provider name maps to one model; unknown and duplicate names are refused."""
    host = Host()
    model = ScriptedModel()
    host.models.register("scripted", model)
    assert host.models.get("scripted") is model and host.models.list() == ("scripted",)
    with pytest.raises(ValueError, match="already registered"):
        host.models.register("scripted", ScriptedModel())
    with pytest.raises(UnknownProviderError, match="'nope'"):
        host.models.get("nope")
    with pytest.raises(UnknownProviderError):
        host.create_agent(provider="nope", model="m")


def test_create_agent_builds_the_header_from_meta() -> None:
    """Header meta and cwd land in the session header; ids and createdAt are deterministic."""
    host = make_host()
    agent, _ = scripted(host, cwd="/abs/work", header_meta={
        "parent_session": "p", "origin": "subagent", "delegation_depth": 2},
        subagent_depth=2)
    assert agent.session.header == SessionHeader(
        id="id-1", created_at=1_000, cwd="/abs/work", parent_session="p", origin="subagent",
        delegation_depth=2)
    assert agent.subagent_depth == 2 and agent.id == "id-1"
    assert host.agents.list() == (agent,)


def test_create_agent_refuses_bad_input() -> None:
    """Relative cwd, unknown meta keys and duplicate agent ids are refused."""
    host = make_host()
    host.models.register("s", ScriptedModel())
    with pytest.raises(ValueError, match="absolute path"):
        host.create_agent(provider="s", model="m", cwd="relative/dir")
    with pytest.raises(ValueError, match="unknown header field"):
        host.create_agent(provider="s", model="m", header_meta={"colour": "red"})
    host.create_agent("same", provider="s", model="m")
    with pytest.raises(AgentExistsError):
        host.create_agent("same", provider="s", model="m")
    host.sessions.create(SessionHeader(id="taken", created_at=0))
    with pytest.raises(SessionExistsError):
        host.create_agent("taken", provider="s", model="m", seed=())


def test_subagents_runtime_is_created_on_first_use() -> None:
    """host.subagents is a SubagentRuntime from the first access on, always the same one."""
    from turnfork.shell import SubagentRuntime

    host = Host()
    runtime = host.subagents
    assert isinstance(runtime, SubagentRuntime)
    assert host.subagents is runtime
    with pytest.raises(ValueError, match="already has a subagent runtime"):
        SubagentRuntime(host)


def test_memory_store_basics() -> None:
    """The memory store registers live sessions only; release forgets them."""
    store = MemorySessionStore()
    session = store.create(SessionHeader(id="a", created_at=0))
    assert store.get("a") is session and store.load("a") is session
    assert store.list() == ("a",) and store.exists("a")
    with pytest.raises(SessionExistsError):
        store.create(SessionHeader(id="a", created_at=0))
    store.release("a")
    assert store.get("a") is None and store.list() == ()
    with pytest.raises(SessionNotFoundError):
        store.load("a")


def test_resumed_agent_runs_on_the_same_live_session() -> None:
    """An id whose session is live (but agentless) is resumed, not recreated."""

    async def main() -> None:
        host = make_host()
        host.models.register("s", ScriptedModel())
        session = host.sessions.create(SessionHeader(id="live", created_at=0))
        agent = host.create_agent("live", provider="s", model="m")
        assert agent.session is session
        await agent.dispose()

    run(main)
