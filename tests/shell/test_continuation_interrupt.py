"""Interrupting a continuable child (DSH continuation.spec.ts, "SubagentRuntime.interrupt"):
the current turn ends aborted, queued follow-ups stay parked until a waking send, descendants
go on, and only an exact live ancestor (or the durable parent's address) may interrupt."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _continuation_helpers import (
    continuable_host,
    eventually,
    finish,
    manager,
    settle,
    start,
    turn_reasons,
    user_texts,
)
from _shell_helpers import run

from turnfork.core import CancelParent, CancelUser, TurnAborted, TurnEndEvent
from turnfork.shell import Reply
from turnfork.shell.subagents import AncestorAuthority, SubagentError, UserAuthority


def test_interrupt_parks_follow_ups_until_a_waking_send(tmp_path: Path) -> None:
    """Ensures that an interrupt aborts the running turn (cause parent), leaves the two queued
    follow-ups parked in the same idle agent, and that the next follow-up runs them first, in
    order: turns aborted, completed, completed, completed."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        model.add(Reply.hang("working"))
        child_id = await start(host, parent)
        child = host.agents.get(child_id)
        assert child is not None
        await eventually(lambda: model.calls == 1)
        await manager(host).followup(parent, child_id, "parked B")
        await manager(host).followup(parent, child_id, "parked C")
        manager(host).interrupt(child_id, AncestorAuthority(parent))
        await child.when_idle()
        await asyncio.sleep(0.01)
        assert host.agents.get(child_id) is child and len(child.pending) == 2
        assert model.calls == 1 and lifecycle.ends(child_id) == []
        ends = [e.data.reason for e in child.session.events if isinstance(e, TurnEndEvent)]
        assert ends == [TurnAborted(reason=CancelParent())]
        for text in ("B", "C", "D", "parent noted"):
            model.add(Reply.text(text))
        await manager(host).followup(parent, child_id, "waking D")
        await settle(lifecycle, child_id)
        assert user_texts(child.session.events) == ["child task", "parked B", "parked C",
                                                    "waking D"]
        assert turn_reasons(child.session.events) == ["aborted", "completed", "completed",
                                                      "completed"]
        await parent.when_idle()
        await finish(host, parent, child)

    run(main)


def test_interrupt_authority(tmp_path: Path) -> None:
    """Ensures DSH's refusals, none touching the target: the target itself, a sibling, a
    stranger, a human address naming another parent; and that absent and settled targets are
    accepted no-ops that resume nothing, while the durable parent's address interrupts with
    cause user."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        model.add(Reply.hang("working"))
        child_id = await start(host, parent)
        child = host.agents.get(child_id)
        assert child is not None
        await eventually(lambda: model.calls == 1)  # its turn claimed the prompt
        stranger = host.create_agent(provider="parent", model="test-model")
        with pytest.raises(SubagentError, match=f'agent "{child_id}" cannot interrupt itself'):
            manager(host).interrupt(child_id, AncestorAuthority(child))
        with pytest.raises(SubagentError) as caught:
            manager(host).interrupt(child_id, AncestorAuthority(stranger))
        assert str(caught.value) == (f'subagent "{child_id}" is not a live descendant of agent '
                                     f'"{stranger.id}"')
        with pytest.raises(SubagentError, match="belongs to another parent session"):
            manager(host).interrupt(child_id, UserAuthority(stranger.id))
        await stranger.dispose()
        with pytest.raises(SubagentError, match='interrupting "missing" requires the exact '
                                                "live ancestor agent"):
            manager(host).interrupt("missing", AncestorAuthority(stranger))
        manager(host).interrupt("missing", AncestorAuthority(parent))  # an accepted no-op
        assert child.running and child.cancel_cause is None
        model.add(Reply.text("parent noted"))
        manager(host).interrupt(child_id, UserAuthority(parent.id))
        end = await settle(lifecycle, child_id)
        ends = [e.data.reason for e in child.session.events if isinstance(e, TurnEndEvent)]
        assert ends == [TurnAborted(reason=CancelUser())] and end.stop_reason == "aborted"
        manager(host).interrupt(child_id, AncestorAuthority(parent))  # settled: a no-op
        assert child_id not in host.agents
        await parent.when_idle()
        await finish(host, parent)

    run(main)
