"""DSH's ACP snapshot ``subagent-max-tokens-partial`` (examples/acp-agent/tests/snapshots/
subagent-max-tokens-partial, run by examples/acp-agent/tests/acp.snapshot.ts; spec
packages/subagent/subagent-in-process-driver/tests/subagent-in-process-driver.spec.ts "keeps
earlier streamed text when the final step appends an empty usage-only message"): the child
writes ``partial one``, calls ``todo_write``, then is cut off by the token limit; the parent's
model is told so, with the partial output."""

from __future__ import annotations

from typing import Any

import msgspec
from _replay import acp_recorded, assert_replays, run_acp

from turnfork.core import OpaqueEvent
from turnfork.shell import Host, SubagentRuntime, Tool, ToolContext

RECORDING = acp_recorded("subagent-max-tokens-partial", children=1)
PROMPTS = ("Use the subagent tool exactly once to delegate this subtask: \"Write the words "
           "'partial one', call todo_write once, then keep going until you are cut off.\" After "
           "the subagent returns, reply with the single word PARENT_DONE and stop.",)

_TODOS = {"type": "object", "properties": {"todos": {"type": "array"}}, "required": ["todos"]}


async def _todo_write(args: dict[str, Any], ctx: ToolContext) -> str:
    todos = args["todos"]
    ctx.session.append(OpaqueEvent, msgspec.Raw(msgspec.json.encode({"todos": todos})),
                       type="todo/write")
    counts = {status: sum(1 for todo in todos if todo.get("status") == status)
              for status in ("pending", "in_progress", "completed")}
    return (f"Updated todo list: {counts['pending']} pending, {counts['in_progress']} in "
            f"progress, {counts['completed']} completed.")


def add_todo_tool(host: Host, runtime: SubagentRuntime) -> None:
    """The ACP app's ``todo_write`` (DSH's tool-todo plugin), reduced to what the child's log
    shows of it: a ``todo/write`` event with the list, then its summary line."""
    host.tools.register(Tool("todo_write", "Replace the todo list.", _TODOS, _todo_write))


def test_max_tokens_partial_logs_equal_dsh() -> None:
    """Our child's truncated step keeps an empty usage-only ``assistant/message`` (its tool call
    dropped, never run) and ends ``max-tokens``; our parent's result is DSH's ``Error: subagent
    run hit its token limit before finishing`` with ``partial one``."""
    assert_replays(run_acp(RECORDING, PROMPTS, prepare=add_todo_tool), RECORDING)
