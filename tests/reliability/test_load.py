"""Load (issue 8, item 4): many concurrent fork children of a parent with completed turns start,
are all in flight at once, finish and are disposed without error, and the process's memory
returns to its baseline.

CI runs ``CI_CHILDREN`` children per batch; ``TURNFORK_LOAD_CHILDREN=1000`` runs the full-size
load. Memory is what ``tracemalloc`` sees still allocated (memory, never time), measured between
loop runs after a full collection. A first batch of the same size sets the high-water marks (the
hash tables of ``host.agents``, the store and the runtime's runs grow to hold N entries and do
not shrink); the baseline is taken after it, and after a second batch has come and gone the
memory held must be back within ``ABSOLUTE_SLACK`` + ``RELATIVE_SLACK`` of it. The second
batch's peak must exceed the baseline by far more than that slack (the measurement does see the
children), and the first batch may leave at most ``HIGH_WATER_PER_CHILD`` bytes per child.
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

from turnfork.core import AgentOptions, ToolResultMessage, TurnEndEvent, UserMessage
from turnfork.shell import Agent, Host, ModelRequest, Reply, ScriptedModel, SubagentRun

#: The crash, fuzz and load families run after the README command (`.ci/run`), not in it.
pytestmark = pytest.mark.slow

LOAD_ENV = "TURNFORK_LOAD_CHILDREN"
CI_CHILDREN = 200
#: Memory a finished batch may leave behind, whatever its size (a leak of more than about
#: ``ABSOLUTE_SLACK / CI_CHILDREN`` bytes per child fails the CI run).
ABSOLUTE_SLACK = 4 * 1024
RELATIVE_SLACK = 0.01
#: What the first batch of N may leave per child: registries' hash tables sized for N entries.
HIGH_WATER_PER_CHILD = 512
#: A safety bound for one batch (a hang fails instead of blocking the suite): not a target.
BATCH_SECONDS = 300.0


def _children() -> int:
    return int(os.environ.get(LOAD_ENV) or CI_CHILDREN)


def _prompt(request_: ModelRequest) -> str:
    for message in reversed(request_.messages):
        if isinstance(message, UserMessage) and message.source.kind == "user":
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


#: Not Python objects the runtime holds: asyncio's global task registry (a weak set whose hash
#: table size follows the peak number of live tasks and the tasks' addresses) and tracemalloc.
_NOT_HELD = (tracemalloc.Filter(False, "*/_weakrefset.py"),
             tracemalloc.Filter(False, tracemalloc.__file__))


def _held() -> int:
    """Bytes of traced Python allocations still alive, measured between loop runs (no coroutine
    frame is running, so none can pin a finished batch)."""
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(_NOT_HELD)
    return sum(stat.size for stat in snapshot.statistics("filename"))


def test_concurrent_fork_children_finish_and_memory_returns_to_baseline() -> None:
    """N fork children at once start, finish, are disposed; traced memory returns to the
    baseline (N = 200 in CI, TURNFORK_LOAD_CHILDREN for the full run)."""
    children = _children()
    loop = asyncio.new_event_loop()
    tracemalloc.start()
    try:
        host = make_host()
        echo = CountingTool("echo", pauses=1)
        host.tools.register(echo.tool)
        parent = loop.run_until_complete(_parent_with_history(host))

        def batch(label: str, size: int) -> None:
            ran = loop.run_until_complete(
                bounded(_batch(host, parent, echo, size, label), BATCH_SECONDS))
            assert ran.children == size
            assert not asyncio.all_tasks(loop), "a batch left tasks behind"

        batch("first use", 3)  # lazy imports and first-call caches
        pristine = _held()
        batch("warm-up", children)
        baseline = _held()
        tracemalloc.reset_peak()
        batch("task", children)
        peak = tracemalloc.get_traced_memory()[1]
        after = _held()
        loop.run_until_complete(parent.dispose())
        loop.run_until_complete(host.aclose())
        assert not asyncio.all_tasks(loop)
    finally:
        tracemalloc.stop()
        loop.close()
    slack = ABSOLUTE_SLACK + int(RELATIVE_SLACK * baseline)
    print(f"load: {children} children per batch; held before {pristine} B, after the warm-up "
          f"{baseline} B, during the batch +{peak - baseline} B at peak, after it "
          f"{after - baseline:+} B (slack {slack} B)")
    assert peak - baseline > 10 * slack, "the measurement did not see the children"
    assert after - baseline <= slack, (
        f"{after - baseline} bytes still held after {children} children were disposed "
        f"(baseline {baseline}, slack {slack})")
    # The warm-up only grows hash tables to hold N entries (host.agents, the store, the
    # runtime's runs): a small fraction of what one child occupies.
    assert baseline - pristine <= HIGH_WATER_PER_CHILD * children + ABSOLUTE_SLACK, (
        f"the first batch left {baseline - pristine} bytes")
