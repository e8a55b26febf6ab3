"""Malformed and ill-typed depth values met by a real start: a parent whose runtime depth is
NaN, 1.5, -0 or a string cannot delegate, a request whose cap is malformed is refused, both in
DSH's words and before anything exists; an integral float counts as the integer it equals.

Ports DSH's
``packages/subagent/subagent-in-process-driver/tests/subagent-in-process-driver.spec.ts``
("rejects invalid and exceeded depth before publication") and
``packages/subagent/subagent/tests/service.spec.ts`` ("validates depth and schema semantics
before provider startup"); the parent's tool result follows DSH's depth-two-rejection fixture
(``Error: <message>``, no ``error`` key).
"""

from __future__ import annotations

from typing import Any

import pytest
from _shell_helpers import run
from _subagent_helpers import request, result_texts, subagent_host
from msgspec import UNSET

from turnfork.core import ToolResultBlock, ToolResultEvent
from turnfork.shell import Reply, SubagentStartError, SubagentTool

BAD_RUNTIME_DEPTH = "agent subagentDepth must be a non-negative safe integer"
BAD_MAX_DEPTH = "subagent maxDepth must be a non-negative safe integer"


@pytest.mark.parametrize("depth", [float("nan"), 1.5, -0.0, "1"],
                         ids=["NaN", "1.5", "-0", "a string"])
def test_a_parent_with_a_malformed_runtime_depth_cannot_delegate(depth: Any) -> None:
    """start() from such a parent: DEPTH with DSH's text, a plain error (no name), no child
    session, no lifecycle event, for both providers."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host(subagent_depth=depth)
        for provider in ("fork", "spawn"):
            with pytest.raises(SubagentStartError) as refused:
                await host.subagents.start(provider, request("x"), parent=parent)
            assert (refused.value.code, str(refused.value)) == ("DEPTH", BAD_RUNTIME_DEPTH)
            assert refused.value.error.name is None
        assert host.sessions.list() == (parent.id,) and recorder.events == []
        await parent.dispose()

    run(main)


@pytest.mark.parametrize("cap", [float("nan"), 1.5, -0.0, "1", float("inf")],
                         ids=["NaN", "1.5", "-0", "a string", "infinity"])
def test_a_request_with_a_malformed_cap_is_refused_before_the_provider(cap: Any) -> None:
    """A start request whose max_depth is not a non-negative safe integer: DSH's text."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host()
        with pytest.raises(SubagentStartError) as refused:
            await host.subagents.start("spawn", request("x", max_depth=cap), parent=parent)
        assert (refused.value.code, str(refused.value)) == ("DEPTH", BAD_MAX_DEPTH)
        assert host.sessions.list() == (parent.id,) and recorder.events == []
        await parent.dispose()

    run(main)


def test_the_parent_reads_the_refusal_as_a_plain_error_result() -> None:
    """Through the tool, a parent at depth NaN gets ``Error: <DSH's text>`` and no error key."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([
            Reply.tool_call("subagent", {"description": "d", "prompt": "p"}),
            Reply.text("could not delegate")], subagent_depth=float("nan"))
        SubagentTool(provider="spawn").install(host)
        parent.followup("delegate")
        await parent.when_idle()
        assert result_texts(parent.session.events) == [f"Error: {BAD_RUNTIME_DEPTH}"]
        (result,) = [event for event in parent.session.events
                     if isinstance(event, ToolResultEvent)]
        block = result.data.message.content[0]
        assert isinstance(block, ToolResultBlock)
        assert block.is_error is True and result.data.error is UNSET
        assert recorder.events == []
        await parent.dispose()

    run(main)


def test_integral_float_depths_count_as_their_integers() -> None:
    """A parent at runtime depth 2.0 makes a depth-3 child (header and options, ints); a cap
    of 2.0 refuses it as ``maxDepth 2``."""

    async def main() -> None:
        host, parent, _, _ = subagent_host([Reply.text("ok")], subagent_depth=2.0)
        with pytest.raises(SubagentStartError) as refused:
            await host.subagents.start("spawn", request("x", max_depth=2.0), parent=parent)
        assert str(refused.value) == "subagent depth 3 exceeds maxDepth 2"
        spawned = await host.subagents.start("spawn", request("x", max_depth=3.0),
                                             parent=parent)
        child = spawned.local_agent
        assert child is not None
        assert child.session.header.delegation_depth == 3 and child.subagent_depth == 3
        assert type(child.session.header.delegation_depth) is int
        await spawned.result
        await spawned.dispose()
        await parent.dispose()

    run(main)
