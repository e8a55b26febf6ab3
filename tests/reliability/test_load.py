"""Load (issue 8, item 4): many concurrent fork children of a parent with completed turns start,
are all in flight at once, finish and are disposed without error, and the process's memory
returns to its baseline.

CI runs ``CI_CHILDREN`` children per batch; ``TURNFORK_LOAD_CHILDREN=1000`` runs the full-size
load. Memory is measured with ``tracemalloc`` (what Python objects still hold, not timings): a
first batch of the same size warms every cache and high-water mark (interned strings, dict tables
that grew to hold N entries and never shrink), the baseline is taken after it, and after a second
batch has come and gone the traced memory must be back within ``ABSOLUTE_SLACK`` plus
``RELATIVE_SLACK`` of the baseline; the second batch's peak must exceed the baseline by far more
than that slack (so the measurement does see the children).
"""

from __future__ import annotations

import asyncio
import gc
import os
import tracemalloc
from dataclasses import dataclass

import pytest
from _runtime_helpers import (
    CountingTool,
    assert_balanced,
    bounded,
    make_host,
    request,
    scripted_parent,
    text_of,
    wait_for,
)

from core import AgentOptions, ToolResultMessage, TurnEndEvent, UserMessage
from shell import Agent, Host, ModelRequest, Reply, ScriptedModel, SubagentRun

LOAD_ENV = "TURNFORK_LOAD_CHILDREN"
CI_CHILDREN = 200
#: Memory a finished batch may leave behind, whatever its size (a leak of more than about
#: ``ABSOLUTE_SLACK / CI_CHILDREN`` bytes per child fails the CI run).
ABSOLUTE_SLACK = 64 * 1024
RELATIVE_SLACK = 0.01
#: A safety bound for one batch (a hang fails instead of blocking the suite): not a target.
BATCH_SECONDS = 300.0


def _children() -> int:
    return int(os.environ.get(LOAD_ENV) or CI_CHILDREN)


def _prompt(request_: ModelRequest) -> str:
    for message in reversed(request_.messages):
        if isinstance(message, UserMessage):
            return text_of(message.content)
    raise AssertionError("the child's request has no user message")


@dataclass(frozen=True)
class Batch:
    children: int
    tool_calls: int


async def _parent_with_history(host: Host) -> Agent:
    """A parent with three completed turns, one of them with a tool call."""
    parent, _ = scripted_parent(host, [
        Reply.text("noted"), Reply.tool_call("echo", {"text": "look"}), Reply.text("looked"),
        Reply.text("ready")])
    for prompt in ("remember BLUE", "look around", "get ready"):
        parent.followup(prompt)
        await parent.when_idle()
    return parent


async def _batch(host: Host, parent: Agent, echo: CountingTool, children: int,
                 label: str) -> Batch:
    """Start ``children`` fork children at once, hold them all in flight, let them finish
    (every third one calls a tool first), check them, and dispose them all."""
    gate = asyncio.Event()

    async def respond(request_: ModelRequest) -> Reply:
        prompt = _prompt(request_)
        last = request_.messages[-1]
        if isinstance(last, ToolResultMessage):
            return Reply.text(f"done: {prompt} after {text_of(last.content[0].content)}")  # type: ignore[union-attr]
        await gate.wait()
        if int(prompt.rsplit(" ", 1)[1]) % 3 == 0:
            return Reply.tool_call("echo", {"text": prompt})
        return Reply.text(f"done: {prompt}")

    tool_children = len(range(0, children, 3))
    model = ScriptedModel([respond] * (children + tool_children))
    host.models.register("load", model)
    options = AgentOptions(provider="load")
    echo_calls = echo.calls
    runs: list[SubagentRun] = list(await asyncio.gather(*(
        host.subagents.start("fork", request(f"{label} {i}", agent_options=options),
                             parent=parent) for i in range(children))))
    # every child is published and waiting in its model call: all of them at once
    await wait_for(lambda: model.calls == children, limit=100 * children)
    assert len(host.agents) == children + 1 and len(host.subagents.runs()) == children
    assert not any(run.done for run in runs)
    gate.set()
    results = await asyncio.gather(*(run.result for run in runs))
    cut = max(event.seq + 1 for event in parent.session.events
              if isinstance(event, TurnEndEvent))
    for i, (run, result) in enumerate(zip(runs, results, strict=True)):
        prompt = f"{label} {i}"
        expected = (f"done: {prompt} after echo:{prompt}" if i % 3 == 0
                    else f"done: {prompt}")
        assert (result.stop_reason, text_of(result.output)) == ("completed", expected)
        assert run.seed_length == cut
        assert_balanced(run.local_agent.session.events, run.id)
    assert echo.calls - echo_calls == tool_children
    assert model.calls == children + tool_children
    await asyncio.gather(*(run.dispose() for run in runs))
    assert host.agents.list() == (parent,) and host.sessions.list() == (parent.id,)
    assert host.subagents.runs() == ()
    host.models.unregister("load")
    return Batch(children=children, tool_calls=tool_children)


def _traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


@pytest.mark.slow
def test_concurrent_fork_children_finish_and_memory_returns_to_baseline() -> None:
    """N fork children at once start, finish, are disposed; traced memory returns to the
    baseline (N = 200 in CI, TURNFORK_LOAD_CHILDREN for the full run)."""
    children = _children()

    async def main() -> tuple[int, int, int]:
        host = make_host()
        echo = CountingTool("echo", pauses=1)
        host.tools.register(echo.tool)
        parent = await _parent_with_history(host)
        await bounded(_batch(host, parent, echo, children, "warm-up"), BATCH_SECONDS)
        baseline = _traced()
        tracemalloc.reset_peak()
        batch = await bounded(_batch(host, parent, echo, children, "task"), BATCH_SECONDS)
        assert batch.children == children
        peak = tracemalloc.get_traced_memory()[1]
        after = _traced()
        await parent.dispose()
        await host.aclose()
        leftover = asyncio.all_tasks() - {asyncio.current_task()}
        assert not leftover, f"tasks left behind: {leftover}"
        return baseline, peak, after

    tracemalloc.start()
    try:
        baseline, peak, after = asyncio.run(main())
    finally:
        tracemalloc.stop()
    slack = ABSOLUTE_SLACK + int(RELATIVE_SLACK * baseline)
    print(f"load: {children} children; baseline {baseline} B, peak +{peak - baseline} B, "
          f"after {after - baseline:+} B (slack {slack} B)")
    assert peak - baseline > 10 * slack, "the measurement did not see the children"
    assert after - baseline <= slack, (
        f"{after - baseline} bytes still held after {children} children were disposed "
        f"(baseline {baseline}, slack {slack})")
