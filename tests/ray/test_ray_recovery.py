"""Opt-in recovery of a lost child (``RayWorkerPool(recover=N)``): a child whose worker dies
mid-turn resumes on another worker from the events its host acknowledged — its interrupted
turn closed by the crash closers, then a new turn that answers ``RECOVERY_PROMPT`` — and its
run completes. Without it (the default) the child's result is the loss (test_ray_crash.py).
The resume rebuilds the child from its log, as a continuable child's cold resume does."""

from __future__ import annotations

import os
import signal

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

import _ray_rules
from _ray_host import assert_balanced, close, contract_host, one_turn, request, run, text, turn_ends
from test_ray_cancel import turn_started, until

from turnfork.core import (
    SessionEndSeedEvent,
    SubagentDescriptorEvent,
    TextBlock,
    TurnCompleted,
    TurnInterrupted,
    UserMessageEvent,
)


@pytest.mark.parametrize("kind", ["fork", "spawn"])
def test_a_child_whose_worker_dies_resumes_on_another(ray_cluster: str, kind: str) -> None:
    """Killed mid-turn, the child resumes on the other worker: its log keeps every event
    received, then the interrupted turn's closers, then a completed turn answering the
    recovery prompt; one descriptor; the run completes with the resumed turn's answer."""
    from turnfork.shell.ray import RECOVERY_PROMPT, RayWorkerPool

    pool = RayWorkerPool(_ray_rules.configure, size=2, recover=1)

    async def main() -> None:
        host, parent, _ = contract_host(pool)
        await pool.wait_ready()
        await one_turn(parent, "say the parent's turn")
        run_ = await host.subagents.start(f"ray-{kind}", request("hang-then recovered"),
                                          parent=parent)
        await until(turn_started(run_))
        await until(lambda: len(run_.own_events()) >= 8)
        lost = run_.child.worker
        received = list(run_.child.session.events)
        os.kill(lost.pid, signal.SIGKILL)
        result = await run_.result
        assert (result.stop_reason, text(result.output)) == ("completed", "recovered")
        child = run_.child
        assert child.worker is not lost and len(child.recoveries) == 1
        assert "died before it finished" in child.recoveries[0]
        events = child.session.events
        assert list(events[:len(received)]) == received
        assert turn_ends(run_.own_events()) == [TurnInterrupted(), TurnCompleted()]
        prompts = [event.data.content for event in run_.own_events()
                   if isinstance(event, UserMessageEvent)]
        assert prompts[-1] == (TextBlock(text=RECOVERY_PROMPT),)
        descriptors = [e for e in run_.own_events() if isinstance(e, SubagentDescriptorEvent)]
        assert len(descriptors) == 1
        assert sum(isinstance(e, SessionEndSeedEvent) for e in events) == (kind == "fork")
        assert_balanced(events, "recovered child")
        await run_.dispose()
        assert await pool.live_children() == ()
        await close(host)

    try:
        run(main)
    finally:
        pool.close()
