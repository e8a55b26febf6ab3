"""The prompt-cache instrument for a continued fork child (issue 16.6): every request a
continuable fork child makes, as the real ``openai`` SDK sends it to a loopback fake server,
across its turns and across a restart of the process.

:func:`continued_fork_on_the_wire` runs a parent (persona, an ``echo`` tool, the ``subagent``
tool on ``fork`` in continuable mode, the control tools, optionally the report tool) through
two scripted turns, then one turn over HTTP that starts a background fork child. The child
(on its own fake server, so the two conversations never race for replies) makes four
requests: its first (answered with an ``echo`` call), the step after the call, a second turn
on a follow-up, and — after the process is closed and a new one resumes the parent from the
same JSONL store — a third turn on another follow-up, cold-resumed from its log.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from _wire_prefix import PERSONA
from fake_openai_server import FakeOpenAI, Recorded, Reply, chunk, prompt_bytes

from turnfork.core import AgentOptions, ToolRestriction, ToolResultBlock, ToolResultMessage
from turnfork.shell import (
    ForkProvider,
    Host,
    JsonlSessionStore,
    Model,
    ModelRequest,
    ScriptedModel,
    SubagentRuntime,
    SubagentTool,
    Tool,
    ToolContext,
)
from turnfork.shell import Reply as ScriptReply
from turnfork.shell.models.openai_chat import OpenAIChatModel
from turnfork.shell.subagents import ReportTool, SubagentControlTools

__all__ = ["ContinuedWire", "continued_fork_on_the_wire", "extends"]

ReportPlacement = Literal["none", "child", "global"]

_ECHO = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def extends(later: Recorded, earlier: Recorded) -> bool:
    """Whether ``later``'s rendered prompt (system, tools, messages) starts with all of
    ``earlier``'s, byte for byte."""
    return prompt_bytes(later.body).startswith(prompt_bytes(earlier.body))


@dataclass(frozen=True)
class ContinuedWire:
    #: The parent's request that started the child (the one its first request is compared to).
    parent: Recorded
    #: The child's requests in order: first, after its tool call, second turn, after restart.
    child: tuple[Recorded, ...]
    #: Non-system messages the child inherited.
    seed_messages: int


class _Switch:
    def __init__(self, first: Model) -> None:
        self.current = first

    def stream(self, request: ModelRequest) -> Any:
        return self.current.stream(request)


async def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return str(args.get("text", ""))


def _compose(host: Host, report: ReportPlacement, cache_preserving: bool = False,
             persona: str | None = None, tool_filter: ToolRestriction | None = None) -> None:
    host.tools.register(Tool("echo", "Echo the text back.", _ECHO, _echo, concurrency_safe=True))
    runtime = SubagentRuntime(host)
    runtime.register_provider(ForkProvider(cache_preserving=cache_preserving))
    SubagentTool(provider="fork", background_mode="continuable", persona=persona,
                 tool_filter=tool_filter,
                 agent_options=AgentOptions(provider="child")).install(host)
    SubagentControlTools().install(host)
    if report != "none":
        ReportTool(scope=report).install(host)


def _text(text: str) -> Reply:
    return Reply(events=(chunk({"content": text}, finish="stop"),))


def _call(name: str, arguments: dict[str, Any], call_id: str) -> Reply:
    piece = {"index": 0, "id": call_id, "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}
    return Reply(events=(chunk({"tool_calls": [piece]}, finish="tool_calls"),))


async def _quiet(host: Host) -> None:
    async with asyncio.timeout(120):  # a K = 1,000 parent's requests are large
        while host.subagents.continuation.activations() or any(
                agent.running for agent in host.agents.list()):
            await asyncio.sleep(0.002)


def _history(turns: int) -> list[ScriptReply]:
    if turns == 2:  # the scenario's own two turns
        return [ScriptReply.text("ok"), ScriptReply.text("ok")]
    script: list[ScriptReply] = []
    for turn in range(1, turns + 1):  # DSH's K shape, as _wire_prefix's
        script += [ScriptReply.tool_call("echo", {"text": f"tok{turn:04}"},
                                         call_id=f"call_{turn:04}"), ScriptReply.text("ok")]
    return script


async def continued_fork_on_the_wire(root: Path, report: ReportPlacement, *, turns: int = 2,
                                     cache_preserving: bool = False, persona: str | None = None,
                                     tool_filter: ToolRestriction | None = None
                                     ) -> ContinuedWire:
    """Run the scenario of the module docstring; returns every request that matters.

    ``turns``: the parent's scripted turns before the fork (2: the scenario's text turns;
    otherwise DSH's K shape, an ``echo`` call and ``ok`` each); the rest configure the fork
    provider and the ``subagent`` tool's children."""
    parent_replies = [_call("subagent", {"description": "Summarise the echoes",
                                         "prompt": "List the words echoed so far."}, "call_fork"),
                      _text("Started."), _text("Noted."), _text("Noted again."),
                      _text("Noted once more.")]
    child_replies = [_call("echo", {"text": "check"}, "call_child"), _text("tok1, tok2"),
                     _text("second answer"), _text("third answer")]
    store_root = root / "sessions"
    async with FakeOpenAI(parent_replies, prefix_cache=True) as parents, \
            FakeOpenAI(child_replies, prefix_cache=True) as children:
        async with OpenAIChatModel("m", base_url=parents.base_url) as parent_sdk, \
                OpenAIChatModel("m", base_url=children.base_url) as child_sdk:
            host = Host(store=JsonlSessionStore(store_root))
            switch = _Switch(ScriptedModel(_history(turns)))
            host.models.register("deepseek", switch)
            host.models.register("child", child_sdk)
            _compose(host, report, cache_preserving, persona, tool_filter)
            parent = host.create_agent(provider="deepseek", model="m", system=PERSONA)
            for turn in range(1, turns + 1):
                parent.followup(f"Turn {turn}: remember the word tok{turn}.")
                await parent.when_idle()
            # chat messages: a tool result message sends one per result block
            seed_messages = sum(
                sum(isinstance(b, ToolResultBlock) for b in m.content)
                if isinstance(m, ToolResultMessage) else 1 for m in parent.session.history())
            switch.current = parent_sdk
            parent.followup("Start a background fork to list the words.")
            await _quiet(host)
            (child_id,) = [s for s in host.sessions.list() if s != parent.id]
            await host.subagents.continuation.followup(parent, child_id, "And once more?")
            await _quiet(host)
            parent_id = parent.id
            await host.subagents.aclose()
            await host.aclose()
            # a new process over the same store: the same composition, the parent resumed
            again = Host(store=JsonlSessionStore(store_root))
            again.models.register("deepseek", parent_sdk)
            again.models.register("child", child_sdk)
            _compose(again, report, cache_preserving, persona, tool_filter)
            resumed = again.create_agent(parent_id, provider="deepseek", model="m",
                                         system=PERSONA)
            await again.subagents.continuation.followup(resumed, child_id, "One last time?")
            await _quiet(again)
            await again.subagents.aclose()
            await again.aclose()
        child_requests = tuple(children.requests)
        first_parent = parents.requests[0]
    if len(child_requests) != 4:
        raise AssertionError(f"expected 4 child requests, got {len(child_requests)}")
    return ContinuedWire(parent=first_parent, child=child_requests, seed_messages=seed_messages)
