"""A delegated child's approval asks are refused by its pinned ``never`` policy, and each ask
and its decision are still logged: ``approval/asked`` then ``approval/decided {outcome:
"rejected"}``, between the tool's ``tool/call`` and its ``tool/result``, log-only.

Ports DSH's ``packages/subagent/subagent-in-process-driver/tests/inheritance.spec.ts`` ("rejects a
child escalation deterministically even when an answerer would allow it"); the event payloads
are those of DSH's user-approval plugin (``packages/interaction/user-approval/src/index.ts``).
"""

from __future__ import annotations

from typing import Any

import msgspec
from _shell_helpers import run, types
from _subagent_helpers import request, subagent_host

from turnfork.core import OpaqueEvent, ToolCallEvent, ToolResultBlock, ToolResultEvent, encode_event
from turnfork.shell import Reply, Tool, ToolContext


def test_a_refused_child_ask_logs_the_asked_and_decided_pair() -> None:
    """A granting approver is never consulted; the child's log holds approval/asked {id,
    toolName, callId, reason} and approval/decided {id, outcome: rejected}, in that order and
    key order, between the call and its error result, with no surfaceOp."""

    async def main() -> None:
        consulted: list[str] = []
        ran: list[str] = []

        async def write(args: dict[str, Any], ctx: ToolContext) -> str:
            await ctx.request_approval("escalate to workspace-write")
            ran.append("wrote")
            return "written"

        async def granting(*args: Any) -> bool:
            consulted.append("asked")
            return True

        host, parent, _, _ = subagent_host([
            Reply.tool_call("write", {}, call_id="call-write"), Reply.text("child done")],
            approval=True)
        host.approver = granting
        host.tools.register(Tool("write", "writes", {"type": "object"}, write))
        spawned = await host.subagents.start("spawn", request("write the file"), parent=parent)
        result = await spawned.result
        assert result.stop_reason == "completed" and consulted == [] and ran == []
        own = list(spawned.own_events())
        (call,) = [event for event in own if isinstance(event, ToolCallEvent)]
        (answer,) = [event for event in own if isinstance(event, ToolResultEvent)]
        between = own[own.index(call) + 1:own.index(answer)]
        assert types(between) == ["approval/asked", "approval/decided"]
        asked, decided = between
        assert isinstance(asked, OpaqueEvent) and isinstance(decided, OpaqueEvent)
        asked_data = msgspec.json.decode(asked.data)
        assert list(asked_data) == ["id", "toolName", "callId", "reason"]
        assert asked_data["toolName"] == "write" and asked_data["callId"] == "call-write"
        assert asked_data["reason"] == "escalate to workspace-write"
        assert msgspec.json.decode(decided.data) == {"id": asked_data["id"],
                                                     "outcome": "rejected"}
        for event in (asked, decided):
            assert "surfaceOp" not in msgspec.json.decode(encode_event(event))
        block = answer.data.message.content[0]
        assert isinstance(block, ToolResultBlock) and block.is_error is True
        await spawned.dispose()
        await parent.dispose()

    run(main)
