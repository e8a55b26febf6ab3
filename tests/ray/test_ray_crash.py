"""A Ray worker killed mid-child (its process SIGKILLed): that child's result is not completed
and says why, its log on the parent's host keeps every event received (on disk too) and is
closed by the crash closers, the parent's turn goes on balanced, a sibling on another worker is
unaffected, and the pool replaces the worker for later children."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import (
    assert_balanced,
    close,
    contract_host,
    one_turn,
    request,
    run,
    text,
    turn_ends,
)
from test_ray_cancel import turn_started, until

from turnfork.core import (
    TurnInterrupted,
    final_assistant_output,
)
from turnfork.shell import JsonlSessionStore, SubagentTool


def test_a_killed_worker_fails_only_its_children(pool: Any, tmp_path: Path) -> None:
    """The parent delegates a hanging child and a slow sibling, which land on different
    workers; the hanging child's worker is killed. The parent still completes its turn and sees
    the lost child's diagnostic beside the sibling's answer."""

    async def main() -> None:
        store = JsonlSessionStore(tmp_path / "sessions")
        host, parent, recorder = contract_host(pool, store=store)
        SubagentTool(provider="ray-fork").install(host)
        assert len(await pool.wait_ready()) == 2  # both up: one child goes to each
        await one_turn(parent, "say before")
        parent.followup("delegate-each hang|slow 1500 sibling done")
        await until(lambda: len(recorder.starts()) == 2)
        victim, sibling = (start.run for start in recorder.starts())
        await until(turn_started(victim))
        await until(lambda: len(victim.own_events()) >= 8)  # its streamed chunks arrived
        assert victim.child.worker is not sibling.child.worker
        received = list(victim.child.session.events)
        os.kill(victim.child.worker.pid, signal.SIGKILL)
        await parent.when_idle()

        result = await victim.result
        assert result.stop_reason == "error"
        assert "died before it finished" in result.diagnostic
        assert f"pid {victim.child.worker.pid}" in result.diagnostic
        events = victim.child.session.events
        assert list(events[:len(received)]) == received  # nothing received is lost
        assert turn_ends(victim.own_events()) == [TurnInterrupted()]
        assert_balanced(events, "lost child")
        assert list(store.inspect(victim.id).events) == list(events)  # and on disk

        answer = text(final_assistant_output(parent.session.events) or ())
        assert answer.startswith("parent saw: Error: subagent run failed\nDiagnostic: the Ray "
                                 "worker (pid ")
        assert answer.endswith("|sibling done")
        assert (await sibling.result).stop_reason == "completed"
        assert_balanced(parent.session.events, "parent")

        assert len(pool.workers) == 1  # the dead one is dropped, then replaced
        again = await host.subagents.start("ray-fork", request("pid"), parent=parent)
        replaced = await again.result
        assert replaced.stop_reason == "completed" and len(pool.workers) == 2
        await again.dispose()
        assert await pool.live_children() == ()
        await close(host)

    run(main)
