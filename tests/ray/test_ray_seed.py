"""A Ray child starts from what an in-process child starts from: a fork child from the parent's
completed-turn prefix (never its turn in flight), a spawn child from nothing, with the same
header and, event for event, the same log (in-process tests: test_subagent_fork_seed.py,
test_subagent_publication.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from msgspec import UnsetType

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
    types,
)

from turnfork.core import SessionEndSeedEvent, SubagentDescriptorEvent


@pytest.mark.parametrize("where", WHERE)
def test_a_fork_child_sees_the_completed_turns_only(pool: Any, where: str) -> None:
    """Forked while the parent's next turn is in flight, the child recalls the parent's first
    message, its seed is the completed-turn prefix, and its header says so."""

    async def main() -> None:
        host, parent, recorder = contract_host(pool)
        await one_turn(parent, "say Remember BLUE")
        cut = len(parent.session)
        parent.followup("hang")  # the parent's turn in flight
        while len(parent.session) < cut + 5:
            await asyncio.sleep(0)
        run_ = await host.subagents.start(provider(where), request("recall"), parent=parent)
        session = host.sessions.get(run_.id)
        assert session is not None and session.header.seed_length == cut
        assert session.header.parent_session == parent.id
        assert session.header.delegation_depth == 1
        result = await run_.result
        assert (result.stop_reason, text(result.output)) == ("completed", "say Remember BLUE")
        events = run_.child.session.events
        assert list(events[:cut]) == list(parent.session.events[:cut])
        assert isinstance(events[cut], SessionEndSeedEvent)
        assert_balanced(events, "child")
        start = recorder.starts()[0]
        assert (start.seed_length, start.local) == (cut, where == "in-process")
        await run_.dispose()
        parent.cancel()
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_a_spawn_child_starts_empty(pool: Any, where: str) -> None:
    """After completed turns a spawn child still has no seed and recalls nothing."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        await one_turn(parent, "say Remember BLUE")
        run_ = await host.subagents.start(provider(where, "spawn"), request("recall"),
                                          parent=parent)
        result = await run_.result
        assert text(result.output) == "nothing"
        assert run_.seed_length == 0
        assert isinstance(run_.child.session.header.seed_length, UnsetType)
        assert not any(isinstance(e, SessionEndSeedEvent) for e in run_.child.session.events)
        await close(host)

    run(main)


@pytest.mark.parametrize("kind", ["fork", "spawn"])
def test_the_ray_childs_log_is_the_in_process_childs(pool: Any, kind: str) -> None:
    """The same task in process and on Ray writes the same event types in the same order,
    the descriptor inside the first turn, and the same final message."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        await one_turn(parent, "say one")
        logs = []
        for where in WHERE:
            run_ = await host.subagents.start(provider(where, kind),
                                              request('tool echo {"text":"x"}'), parent=parent)
            result = await run_.result
            assert text(result.output) == "tool said: echo:x"
            logs.append(run_.own_events())
            await run_.dispose()
        local, remote = logs
        assert types(remote) == types(local)
        local_descriptor, = (e.data for e in local if isinstance(e, SubagentDescriptorEvent))
        remote_descriptor, = (e.data for e in remote if isinstance(e, SubagentDescriptorEvent))
        assert remote_descriptor == msgspec.structs.replace(local_descriptor,
                                                            provider="ray-" + kind)
        assert local[-2].data == remote[-2].data  # the final assistant message
        await close(host)

    run(main)


@pytest.mark.parametrize("where", WHERE)
def test_a_child_that_says_nothing_returns_empty_output(pool: Any, where: str) -> None:
    """A fork child whose only answer is empty returns "", never its seed's text (the result
    is read from its own events only)."""

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        await one_turn(parent, "say the parent's answer")
        run_ = await host.subagents.start(provider(where), request("say"), parent=parent)
        result = await run_.result
        assert (result.stop_reason, text(result.output)) == ("completed", "")
        await close(host)

    run(main)
