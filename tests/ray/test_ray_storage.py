"""What a host keeps of its Ray children once they are disposed: nothing that grows with the
number of delegations. A parent that delegates at every turn holds one stored seed (its
latest fork point's), the runtime forgets disposed runs, finished children let go of their
seed references and calls, and a disposed parent's seed is dropped at once (issue 27, D1 and
D2: before, every disposed run kept its seed reference and stream, and the runtime kept the
runs until someone listed them; a disposed parent's seed stayed until the next fork)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import close, contract_host, one_turn, run, text

from turnfork.core import final_assistant_output
from turnfork.shell import SubagentTool


def held_objects() -> int:
    """Objects of the object store this process references (owned or borrowed)."""
    from turnfork.shell.ray._ray import ray

    counts = ray._private.worker.global_worker.core_worker.get_all_reference_counts()
    return sum(1 for count in counts.values() if count["local"] or count["submitted"])


async def settled_references(expected: int | None = None, timeout: float = 20.0) -> int:
    """The number of stored objects this process references once it stops changing (or, given
    `expected`, once it is that). Every reading collects garbage first: a reference let go by a
    control call answered after the last collection can sit in a reference cycle, and nothing
    else collects while this only sleeps."""
    readings: list[int] = []
    try:
        async with asyncio.timeout(timeout):
            while True:
                gc.collect()
                readings.append(held_objects())
                if expected is None and readings[-10:] == [readings[-1]] * 10:
                    return readings[-1]
                if readings[-1] == expected:
                    return expected
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(
            f"after {timeout:g} s this process still references {readings[-1]} stored "
            f"objects, not {expected} (readings, oldest first: {readings[:5]} … "
            f"{readings[-5:]})") from None


def test_delegating_every_turn_keeps_one_seed_and_no_disposed_run(pool: Any) -> None:
    """Four turns, each followed by a delegation of two fork children at a new cut: afterwards
    the provider holds one seed, the process references one more stored object than before
    (that seed), and every disposed run and remote child can be collected; once the parent is
    disposed, its seed is gone at once."""

    async def main() -> None:
        host, parent, recorder = contract_host(pool)
        SubagentTool(provider="ray-fork").install(host)
        provider = host.subagents.get_provider("ray-fork")
        await one_turn(parent, "say warm")
        await pool.wait_ready()
        before = await settled_references()
        stored = pool.seeds_stored
        runs: list[weakref.ref[Any]] = []
        children: list[weakref.ref[Any]] = []
        for turn in range(4):
            await one_turn(parent, f"say turn {turn}")
            await one_turn(parent, "delegate 2 recall")
            assert text(final_assistant_output(parent.session.events) or ()) == \
                "parent saw: say warm|say warm"
            assert all(start.run.disposed for start in recorder.starts())
            runs.extend(weakref.ref(start.run) for start in recorder.starts())
            children.extend(weakref.ref(start.run.child) for start in recorder.starts())
            recorder.events.clear()
        assert pool.seeds_stored == stored + 4  # one put per fork point
        gc.collect()
        assert provider.seeds_held() == 1
        # The latest fork point's seed, nothing per child (once the last control calls, in
        # flight a moment longer, are answered).
        await settled_references(before + 1)
        assert [ref() for ref in runs] == [None] * 8
        assert [ref() for ref in children] == [None] * 8
        assert host.subagents.runs() == ()

        await parent.dispose()
        assert provider.seeds_held() == 0  # at once, not at the provider's next fork
        await settled_references(before)
        await close(host)

    run(main, timeout=120.0)
