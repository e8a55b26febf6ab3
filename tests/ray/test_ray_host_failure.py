"""A batch of a Ray child's events that the parent's host cannot write stops the child on its
worker and rejects its result, as a failing write does in process (in-process test:
test_subagent_cancel.py's test_a_prompt_that_cannot_be_delivered_fails_the_result)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import assert_balanced, close, contract_host, request, run

from turnfork.core import Event, SessionHeader
from turnfork.shell import AgentLoopError
from turnfork.shell.subagents import SubagentEnd


class _FlakySink:
    """A sink that refuses ``failures`` writes, then takes them (a disk that recovers)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures

    def write(self, header: SessionHeader, events: Sequence[Event]) -> None:
        if self.failures:
            self.failures -= 1
            raise OSError("disk full")


def test_a_batch_the_host_cannot_write_fails_the_result(pool: Any) -> None:
    """The host's store refuses the child's first batch: the result rejects naming the
    failure, subagent/end says error, the child stops on its worker, the log is balanced."""

    async def main() -> None:
        host, parent, recorder = contract_host(pool)
        run_ = await host.subagents.start("ray-spawn", request("slow 200 late"), parent=parent)
        run_.child.session._sink = _FlakySink(1)
        with pytest.raises(AgentLoopError, match="disk full"):
            await run_.result
        end = recorder.events[-1]
        assert isinstance(end, SubagentEnd) and end.stop_reason == "error"
        assert isinstance(end.failure, AgentLoopError)
        await run_.dispose()
        assert_balanced(run_.child.session.events, "child")
        async with asyncio.timeout(10):  # Ray's cancellation reaches the worker shortly
            while await pool.live_children():
                await asyncio.sleep(0.01)
        await close(host)

    run(main)
