"""DSH's ACP snapshot ``subagent-report`` (examples/acp-agent/tests/snapshots/subagent-report,
config subagent-report.cordis.yml; spec packages/subagent/subagent/tests/continuation.spec.ts
"wakes an idle parent for a next-step report"): a background child calls ``report``; the
parent's next turn claims the ``subagent-report`` relay and the settlement notice, and a later
turn repeats the report."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from _replay import acp_recorded, assert_replays, run_acp

from turnfork.core import Event, InboxSplicedEvent, TurnEndEvent
from turnfork.shell import Agent, Host, Session, SubagentRuntime

#: The child the authored scenario names (DSH's projection writes its live child so).
CHILD_ID = "33333333-3333-4333-8333-333333333333"
RECORDING = acp_recorded("subagent-report", children=1)
#: The relay's id in DSH's parent log, and the id its child's tool result names instead.
RELAY_ID = "ec024a7a-5506-4ebf-a9d8-82ce01dc88b4"
RELAY_ID_AS_AUTHORED = "87627538-d804-4d36-bb10-4768b6fcfb65"
PROMPTS = (
    "Follow these steps exactly, then stop. 1. Call the subagent tool once with "
    "run_in_background set to true, description 'Report a finding', and prompt 'Call the report "
    "tool once with output exactly CHILD_REPORT_OK, then stop.'. 2. Reply with the single word "
    "STARTED. Do not use the bash tool.",
    "Repeat back, verbatim, the exact output the background subagent reported to you. Reply "
    "with only that text. Do not use any tools.",
)


def report_fence(host: Host, runtime: SubagentRuntime) -> None:
    """What DSH's fixture plugin (examples/acp-agent/tests/fixtures/subagent-report-fence.ts)
    does, at the same seams of ours: the parent's turn-1 step 2 waits until the child is at
    its first step; once the parent's turn 1 has ended and it is idle, it runs maintenance
    (``run_maintenance``) until the child's settlement notice is in its inbox, so its next
    turn claims the report and the notice together. The child's steps wait until the parent
    is held. (DSH's child waits for the parent's turn-1 end and relies on its ``agent/status``
    listener entering maintenance synchronously at idle; ours has no status event, so the
    child waits for the hold itself: the same order, without the race.)"""
    child_ready, parent_held, settled = asyncio.Event(), asyncio.Event(), asyncio.Event()
    build = host.build_agent

    async def hold_parent(parent: Agent) -> None:
        await parent.when_idle()

        async def until_settled() -> None:
            parent_held.set()
            await settled.wait()

        await parent.run_maintenance(until_settled)

    def watch_parent(parent: Agent, events: Sequence[Event]) -> None:
        for event in events:
            if isinstance(event, TurnEndEvent) and event.data.turn == 1:
                asyncio.get_running_loop().create_task(hold_parent(parent))
            if isinstance(event, InboxSplicedEvent) and any(
                    message.source is not None and message.source.kind == "subagent-settled"
                    for message in event.data.inserted):
                settled.set()

    async def child_fence(agent: Agent, turn: int, step: int) -> None:
        child_ready.set()
        await parent_held.wait()

    async def parent_fence(agent: Agent, turn: int, step: int) -> None:
        if turn == 1 and step == 2:
            await child_ready.wait()

    def build_fenced(session: Session, **options: Any) -> Agent:
        agent = build(session, **options)
        if isinstance(session.header.parent_session, str):
            agent.pre_step_hooks.append(child_fence)
        else:
            session.listeners.append(lambda events: watch_parent(agent, events))
            agent.pre_step_hooks.append(parent_fence)
        return agent

    host.build_agent = build_fenced  # type: ignore[method-assign]


def test_subagent_report_logs_equal_dsh() -> None:
    """Our parent's three turns and the reporting child equal DSH's logs: turn 2 claims the
    report relay (next-step) and the settlement notice (next-turn) together, turn 3 repeats
    the report.

    The scenario is authored (``recorded: false`` in examples/acp-agent/tests/acp.snapshot.ts),
    and its author's child is told ``report accepted … as message 87627538-…`` (child seq 19)
    while the relay its parent claims has id ``ec024a7a-…`` (parent seq 27); DSH's report tool
    returns the id of the message it sends (packages/subagent/subagent/src/continuation.ts,
    ``deliverReport``), as ours does, so the one id is compared as the other."""
    assert_replays(run_acp(RECORDING, PROMPTS, prepare=report_fence, child_ids=[CHILD_ID]),
                   RECORDING, recorded_aliases={RELAY_ID_AS_AUTHORED: RELAY_ID})
