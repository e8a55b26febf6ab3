"""DSH's ACP snapshot ``subagent-continuable`` (examples/acp-agent/tests/snapshots/
subagent-continuable, config subagent-durability-failure.cordis.yml; spec
packages/subagent/subagent/tests/continuation.spec.ts "enqueues in the same Activation while it
is running, preserving one inbox FIFO", "logs a failed final flush after every listener
settles"): a background child, two ``send_message`` follow-ups into its inbox, one to an
unknown id refused ``NOT_RESUMABLE``, the child's third turn failing its checkpoint, and the
parent's settlement-notice turn."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from _replay import acp_recorded, assert_replays, run_acp

from turnfork.core import Event, InboxSplicedEvent, TurnEndEvent
from turnfork.shell import Agent, Host, Session, SubagentRuntime

#: The child the authored scenario names (DSH's fixture maps it to its live child).
CHILD_ID = "33333333-3333-4333-8333-333333333333"
RECORDING = acp_recorded("subagent-continuable", children=1)
PROMPTS = ("Follow these steps exactly, then stop. 1. Call the subagent tool once with "
           "run_in_background set to true, description 'Reply with CHILD_OK', and prompt 'Reply "
           "with exactly the word CHILD_OK and nothing else.'. 2. Call send_message twice in a "
           "row, both with the subagent id from step 1: first with message 'Now reply with "
           "exactly SECOND_OK.', then with message 'Now reply with exactly THIRD_OK.'. 3. Call "
           "send_message with subagent_id exactly '22222222-2222-4222-8222-222222222222' (a "
           "subagent that does not exist) and message 'Please continue.', and observe that it "
           "fails. 4. Reply with the single word DONE. Do not use the bash tool.",)
#: The child turn whose durability checkpoint DSH's fixture fails.
FAILED_CHECKPOINT_TURN = 3


def durability_failure(host: Host, runtime: SubagentRuntime) -> None:
    """What DSH's fixture plugin (examples/acp-agent/tests/fixtures/
    subagent-durability-failure.ts, without ``DSH_SUBAGENT_PUBLISHED_FAILURE``) does, at the
    same seams of ours: a child's steps wait (``agent/pre-step``) until its initial prompt and
    both follow-ups are in its inbox and the parent's turn 1 has ended; the checkpoint DSH's
    checkpoint policy takes before each of a child's steps (session-checkpoint-policy, an
    ``agent/pre-step`` listener) fails in the child's turn 3 with ``snapshot disk full``."""
    accepted, parent_closed = asyncio.Event(), asyncio.Event()
    inserted = 0
    build = host.build_agent

    def count_inserted(events: Sequence[Event]) -> None:
        nonlocal inserted
        inserted += sum(1 for e in events if isinstance(e, InboxSplicedEvent) and e.data.inserted)
        if inserted >= 3:
            accepted.set()

    def watch_parent(events: Sequence[Event]) -> None:
        if any(isinstance(e, TurnEndEvent) and e.data.turn == 1 for e in events):
            parent_closed.set()

    async def fence(agent: Agent, turn: int, step: int) -> None:
        await accepted.wait()
        await parent_closed.wait()

    def checkpoint(agent: Agent, turn: int, step: int) -> None:
        if turn == FAILED_CHECKPOINT_TURN:
            raise RuntimeError("snapshot disk full")

    def build_fenced(session: Session, **options: Any) -> Agent:
        agent = build(session, **options)
        if isinstance(session.header.parent_session, str):
            session.listeners.append(count_inserted)
            agent.pre_step_hooks.extend([fence, checkpoint])
        else:
            session.listeners.append(watch_parent)
        return agent

    host.build_agent = build_fenced  # type: ignore[method-assign]


def test_subagent_continuable_logs_equal_dsh() -> None:
    """Our parent (start, two follow-ups, the refused unknown id, ``DONE``, the notice turn)
    and the continuable child (three turns, the third failing before its first step) equal
    DSH's logs."""
    assert_replays(run_acp(RECORDING, PROMPTS, prepare=durability_failure,
                           child_ids=[CHILD_ID]), RECORDING)
