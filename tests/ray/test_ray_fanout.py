"""A fan-out of 200 Ray fork children from one assistant message: every child answers from the
seed, which went into the object store once for all of them; the children spread over the
workers; nothing is left running and every log is balanced."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import (
    assert_balanced,
    close,
    contract_host,
    one_turn,
    run,
    text,
)

from turnfork.core import final_assistant_output
from turnfork.shell import SubagentTool

CHILDREN = 200


def test_two_hundred_children_share_one_stored_seed(pool: Any) -> None:
    """200 sibling forks: 200 completed recalls of the parent's first message, one seed put."""

    async def main() -> None:
        host, parent, recorder = contract_host(pool)
        # Both workers up before the fan-out (an earlier test may have restarted one): the
        # spread below is then the pool's choice, not which worker happened to be ready.
        assert len(await pool.wait_ready()) == 2
        SubagentTool(provider="ray-fork").install(host)
        await one_turn(parent, "say the codeword is MARMALADE")
        await one_turn(parent, "say noted")
        stored, stored_bytes = pool.seeds_stored, pool.seed_bytes_stored
        await one_turn(parent, f"delegate {CHILDREN} recall")
        starts = recorder.starts()
        assert len(starts) == CHILDREN
        assert pool.seeds_stored == stored + 1
        seed_bytes = pool.seed_bytes_stored - stored_bytes
        assert seed_bytes > 0
        answer = text(final_assistant_output(parent.session.events) or ())
        assert answer == "parent saw: " + "|".join(["say the codeword is MARMALADE"] * CHILDREN)
        results = [await start.run.result for start in starts]
        assert {result.stop_reason for result in results} == {"completed"}
        on_worker: dict[int, int] = {}
        for start in starts:
            assert start.run.disposed and start.seed_length == starts[0].seed_length
            assert_balanced(start.run.child.session.events, start.run.id)
            on_worker[start.run.child.worker.index] = \
                on_worker.get(start.run.child.worker.index, 0) + 1
        assert len(on_worker) == 2 and min(on_worker.values()) >= CHILDREN // 4
        assert_balanced(parent.session.events, "parent")
        assert await pool.live_children() == ()
        await close(host)

    run(main, timeout=120)
