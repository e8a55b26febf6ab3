"""``Agent.run_maintenance`` (DSH's ``runMaintenance``, packages/core/agent-loop/src/agent.ts;
spec packages/core/agent-loop/tests/agent.spec.ts): a job runs while the agent is idle, input
queued meanwhile waits for the job's end, and the agent then wakes once for it."""

from __future__ import annotations

import asyncio

import pytest
from _shell_helpers import assert_balanced, make_host, of_type, run, scripted

from turnfork.core import TurnEndEvent
from turnfork.shell import AgentDisposedError, Reply


def test_input_queued_during_maintenance_waits_for_its_end() -> None:
    """A follow-up queued while the job runs starts no turn until the job returns; then one
    turn claims it, and ``when_idle`` waited for both."""

    async def main() -> None:
        agent, model = scripted(make_host(), [Reply.text("after")])
        release = asyncio.Event()
        seen: list[bool] = []

        async def job() -> str:
            agent.followup("queued during maintenance")
            await asyncio.sleep(0)
            seen.append(agent.running)
            await release.wait()
            return "done"

        maintenance = asyncio.ensure_future(agent.run_maintenance(job))
        await asyncio.sleep(0.01)
        assert model.calls == 0 and not agent.running and len(agent.pending) == 1
        release.set()
        assert await maintenance == "done"
        await agent.when_idle()
        assert seen == [False] and model.calls == 1 and agent.pending == ()
        assert len(of_type(agent.session.events, TurnEndEvent)) == 1
        assert_balanced(agent.session.events)

    run(main)


def test_when_idle_waits_for_the_job_and_the_turn_it_defers() -> None:
    """``when_idle`` called during maintenance returns only after the deferred turn ended."""

    async def main() -> None:
        agent, model = scripted(make_host(), [Reply.text("after")])

        async def job() -> None:
            agent.followup("later")
            await asyncio.sleep(0.01)

        maintenance = asyncio.ensure_future(agent.run_maintenance(job))
        await asyncio.sleep(0)
        await agent.when_idle()
        assert maintenance.done() and model.calls == 1
        assert len(of_type(agent.session.events, TurnEndEvent)) == 1

    run(main)


def test_maintenance_refuses_an_agent_with_active_work() -> None:
    """A running turn, or a second job, is active work (DSH's wording); a disposed agent
    refuses with its own error."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.text("one")])

        async def job() -> None:
            await asyncio.sleep(0)

        agent.followup("go")
        with pytest.raises(RuntimeError, match=f'agent "{agent.id}" already has active work'):
            await agent.run_maintenance(job)
        await agent.when_idle()
        hold = asyncio.Event()

        async def holding() -> None:
            await hold.wait()

        first = asyncio.ensure_future(agent.run_maintenance(holding))
        await asyncio.sleep(0)
        with pytest.raises(RuntimeError, match="already has active work"):
            await agent.run_maintenance(job)
        hold.set()
        await first
        await agent.dispose()
        with pytest.raises(AgentDisposedError):
            await agent.run_maintenance(job)

    run(main)


def test_cancel_and_dispose_cancel_the_job_and_start_nothing() -> None:
    """``cancel`` cancels the job (its caller sees the cancellation) and drops what was
    queued; ``dispose`` during a job ends it and no deferred turn starts."""

    async def main() -> None:
        agent, model = scripted(make_host(), [Reply.text("never")])

        async def forever() -> None:
            agent.followup("dropped")
            await asyncio.Event().wait()

        maintenance = asyncio.ensure_future(agent.run_maintenance(forever))
        await asyncio.sleep(0)
        agent.cancel()
        with pytest.raises(asyncio.CancelledError):
            await maintenance
        await agent.when_idle()
        assert model.calls == 0 and agent.pending == ()

        maintenance = asyncio.ensure_future(agent.run_maintenance(forever))
        await asyncio.sleep(0)
        await agent.dispose()
        with pytest.raises(asyncio.CancelledError):
            await maintenance
        assert model.calls == 0 and not agent.running
        assert_balanced(agent.session.events)

    run(main)
