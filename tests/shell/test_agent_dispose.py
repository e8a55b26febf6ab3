"""Disposal: idempotent, concurrent-safe, leaves registries clean and the log closed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _shell_helpers import assert_balanced, make_host, of_type, run, scripted, types, wait_for

from turnfork.core import CancelDisposed, TurnAborted, TurnEndEvent
from turnfork.shell import AgentDisposedError, JsonlSessionStore, Reply


def test_dispose_removes_the_agent_and_its_session() -> None:
    """After dispose the host knows neither the agent nor its live session."""

    async def main() -> None:
        host = make_host()
        agent, _ = scripted(host, [Reply.text("a")])
        agent.followup("go")
        await agent.when_idle()
        assert host.agents.get(agent.id) is agent and host.sessions.get(agent.id) is not None
        await agent.dispose()
        assert host.agents.get(agent.id) is None and host.agents.list() == ()
        assert host.sessions.get(agent.id) is None
        assert agent.disposed

    run(main)


def test_dispose_twice_and_concurrently_mid_turn() -> None:
    """Two sequential and three concurrent disposals close the turn once, aborted(disposed)."""

    async def main() -> None:
        host = make_host()
        agent, _ = scripted(host, [Reply.hang("working")])
        agent.followup("go")
        await wait_for(lambda: "assistant/chunk" in types(agent.session.events))
        await asyncio.gather(agent.dispose(), agent.dispose(), agent.dispose())
        await agent.dispose()
        ends = of_type(agent.session.events, TurnEndEvent)
        assert [e.data.reason for e in ends] == [TurnAborted(reason=CancelDisposed())]
        assert_balanced(agent.session.events)
        assert len(host.agents) == 0

    run(main)


def test_followup_after_dispose_is_refused() -> None:
    """A disposed agent takes no input."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [])
        await agent.dispose()
        with pytest.raises(AgentDisposedError):
            agent.followup("late")

    run(main)


def test_a_cancelled_dispose_still_finishes_disposing() -> None:
    """Cancelling the caller of dispose() cannot stop the agent leaving the registries."""

    async def main() -> None:
        host = make_host()
        agent, _ = scripted(host, [Reply.hang("x")])
        agent.followup("go")
        await wait_for(lambda: "assistant/chunk" in types(agent.session.events))
        disposing = asyncio.create_task(agent.dispose())
        await asyncio.sleep(0)
        disposing.cancel()
        await asyncio.wait([disposing])
        await wait_for(lambda: host.agents.get(agent.id) is None)
        assert not agent.running
        assert_balanced(agent.session.events)

    run(main)


def test_dispose_keeps_persisted_files(tmp_path: Path) -> None:
    """With the disk store, dispose forgets the live session but its file stays loadable."""

    async def main() -> None:
        store = JsonlSessionStore(tmp_path)
        host = make_host(store)
        agent, _ = scripted(host, [Reply.text("a")])
        agent.followup("go")
        await agent.when_idle()
        await agent.dispose()
        assert store.get(agent.id) is None
        assert store.list() == (agent.id,)
        assert len(store.load(agent.id).events) == len(agent.session.events) + 1

    run(main)


def test_host_aclose_disposes_every_agent() -> None:
    """Host.aclose() disposes all live agents, running or idle."""

    async def main() -> None:
        host = make_host()
        busy, _ = scripted(host, [Reply.hang("x")], provider="one")
        idle, _ = scripted(host, [], provider="two")
        busy.followup("go")
        await wait_for(lambda: "assistant/chunk" in types(busy.session.events))
        await host.aclose()
        assert len(host.agents) == 0 and busy.disposed and idle.disposed
        assert_balanced(busy.session.events)

    run(main)
