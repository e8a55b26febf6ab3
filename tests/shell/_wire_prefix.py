"""The prompt-cache instrument: how much of a fork child's first model request, as sent on the
wire, is a prefix the parent's last request already sent (issue 13.2).

:func:`fork_on_the_wire` runs a parent agent and a fork child through the real ``openai`` SDK
against the loopback :class:`~fake_openai_server.FakeOpenAI` and keeps every request body as it
arrived. The parent's first ``turns`` turns are scripted (DSH's K-turn shape: a user message,
one ``echo`` call, its result, the reply ``ok``); its next turn goes over HTTP: the parent's
request (answered with a ``subagent`` call), the child's first request, the parent's request
with the child's result. :func:`prompt_share` then compares the child's first request with the
parent's request before it:

* **prompt share** (the requirement): the child's system message, tool schemas and seed
  messages, in the order a provider renders a prompt (system, tools, messages; see
  :func:`fake_openai_server.prompt_bytes`), against the same rendering of the parent's request:
  the length of the byte prefix both share, over the length of that part of the child's.
* **body prefix**: the byte prefix the two HTTP bodies share exactly as sent (the SDK writes
  ``model``, ``stream``, ``messages`` and only then ``tools``), over the child's body length.
* **message-wise**: system prompts equal, tool schemas equal and in the same order, and how
  many of the child's leading non-system messages equal the parent's.

The fake server also does a provider's prefix-cache accounting (``prefix_cache=True``), so each
request's usage says how many of its tokens a provider would bill as cache hits.

Importable by the tests (``tests/shell`` is on their path) and by
``benchmarks/bench_prompt_cache.py`` (which puts it there).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from fake_openai_server import FakeOpenAI, Recorded, Reply, chunk, prompt_bytes

from turnfork.core import (
    AssistantMessageEvent,
    StartRequest,
    TokenUsage,
    ToolRestriction,
    ToolResultBlock,
    ToolResultMessage,
)
from turnfork.shell import (
    ForkProvider,
    Host,
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
from turnfork.shell.subagents import SubagentEvent, SubagentStart

__all__ = ["PERSONA", "ForkWire", "PromptShare", "common_prefix", "fork_on_the_wire",
           "prompt_bytes", "prompt_share"]

#: A deployment persona of a realistic size (the system prompt a parent and its fork share).
PERSONA = (
    "You are a careful software engineer working in the user's repository. Read before you "
    "write; keep changes small and reviewable; run the tests after every change and report "
    "what you ran and what you saw. Prefer the standard library; explain any new dependency. "
    "Never invent results: if a command fails, say so and show its output. Ask before "
    "deleting files or rewriting history. Answer in the user's language, briefly.\n\n"
    "Tools: use `echo` to repeat text back. Hand self-contained side tasks to `subagent` so "
    "this conversation stays focused; a fork child already knows everything said here.") * 2

_ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string",
                                                          "description": "what to echo"}},
                "required": ["text"]}


@dataclass(frozen=True)
class PromptShare:
    """How much of the child's first request repeats the parent's (see the module docstring)."""

    #: Bytes of the child's system + tools + seed messages, rendered in provider order.
    inherited_bytes: int
    #: Of those, the prefix the parent's rendered request shares byte for byte.
    shared_bytes: int
    #: Bytes of the child's HTTP body, and the prefix it shares with the parent's body.
    body_bytes: int
    body_shared_bytes: int
    system_equal: bool
    tools_equal: bool
    #: The child's seed messages (its non-system messages inherited from the parent).
    seed_messages: int
    #: How many leading non-system messages the two requests have in common.
    leading_messages_equal: int

    @property
    def share(self) -> float:
        """``shared_bytes / inherited_bytes``: the requirement's figure (≥ 0.99 wanted)."""
        return self.shared_bytes / self.inherited_bytes if self.inherited_bytes else 0.0

    @property
    def body_share(self) -> float:
        return self.body_shared_bytes / self.body_bytes if self.body_bytes else 0.0

    @property
    def is_prefix_extension(self) -> bool:
        """The message-wise requirement: same system, same tools, every seed message equal."""
        return self.system_equal and self.tools_equal and \
            self.leading_messages_equal >= self.seed_messages


def common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # binary search over slice comparisons (done in C)
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _system(body: dict[str, Any]) -> list[Any]:
    return [m for m in body.get("messages") or [] if m.get("role") == "system"]


def _conversation(body: dict[str, Any]) -> list[Any]:
    return [m for m in body.get("messages") or [] if m.get("role") != "system"]


def prompt_share(parent: Recorded, child: Recorded, seed_messages: int) -> PromptShare:
    """Compare the child's first request with the parent's request before it.

    Args:
        parent: The parent's request (as the fake server recorded it).
        child: The child's first request.
        seed_messages: How many of the child's non-system messages are inherited.
    """
    inherited = {**child.body, "messages": [*_system(child.body),
                                            *_conversation(child.body)[:seed_messages]]}
    inherited_prompt = prompt_bytes(inherited)
    shared = min(common_prefix(prompt_bytes(child.body), prompt_bytes(parent.body)),
                 len(inherited_prompt))
    leading = 0
    for mine, theirs in zip(_conversation(child.body), _conversation(parent.body), strict=False):
        if mine != theirs:
            break
        leading += 1
    return PromptShare(
        inherited_bytes=len(inherited_prompt), shared_bytes=shared,
        body_bytes=len(child.raw), body_shared_bytes=common_prefix(child.raw, parent.raw),
        system_equal=_system(child.body) == _system(parent.body),
        tools_equal=child.body.get("tools") == parent.body.get("tools"),
        seed_messages=seed_messages, leading_messages_equal=leading)


@dataclass(frozen=True)
class ForkWire:
    """Every request of one parent turn that forks, as the fake server received them."""

    #: The parent's request that the ``subagent`` call answered (the one the child extends).
    parent: Recorded
    #: The child's first request.
    child: Recorded
    #: The parent's request after the child's result.
    parent_after: Recorded
    #: Non-system messages the child inherited (the parent's history at its last turn end).
    seed_messages: int
    #: The usage the child's assistant message logged (from the fake's cache accounting).
    child_usage: TokenUsage | None
    parent_after_usage: TokenUsage | None

    def share(self) -> PromptShare:
        return prompt_share(self.parent, self.child, self.seed_messages)


class _Switch:
    """The parent's model: scripted for the history, then the SDK for the measured turn."""

    def __init__(self, first: Model) -> None:
        self.current = first

    def stream(self, request: ModelRequest) -> Any:
        return self.current.stream(request)


async def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return str(args.get("text", ""))


def _history_script(turns: int) -> list[ScriptReply]:
    script: list[ScriptReply] = []
    for turn in range(1, turns + 1):
        script.append(ScriptReply.tool_call("echo", {"text": f"tok{turn:04}"},
                                            call_id=f"call_{turn:04}"))
        script.append(ScriptReply.text("ok"))
    return script


def _subagent_call() -> Reply:
    arguments = json.dumps({"description": "Summarise the echoes",
                            "prompt": "List the words echoed so far, comma-separated."})
    piece = {"index": 0, "id": "call_fork", "type": "function",
             "function": {"name": "subagent", "arguments": arguments}}
    return Reply(events=(chunk({"tool_calls": [piece]}, finish="tool_calls"),))


async def fork_on_the_wire(turns: int, *, persona: str = PERSONA,
                           child_persona: str | None = None,
                           tool_filter: ToolRestriction | None = None,
                           output_schema: str | None = None,
                           cache_preserving: bool = False) -> ForkWire:
    """Run ``turns`` scripted parent turns, then one turn that forks, over the real SDK.

    The parent has the persona, an ``echo`` tool and the ``subagent`` tool (fork provider; by
    default no persona or tool filter for its children: a plain fork). ``output_schema``: the
    tool's start requests also ask for that schema (JSON text); ``cache_preserving``: the
    fork provider's mode.
    """
    replies = [_subagent_call(),
               Reply(events=(chunk({"content": "tok0001, …"}, finish="stop"),)),
               Reply(events=(chunk({"content": "Done."}, finish="stop"),))]
    async with FakeOpenAI(replies, prefix_cache=True) as server, OpenAIChatModel(
            "m", base_url=server.base_url, timeout=60.0) as sdk_model:
        host = Host()
        switch = _Switch(ScriptedModel(_history_script(turns)))
        host.models.register("deepseek", switch)
        host.tools.register(Tool("echo", "Echo the text back.", _ECHO_SCHEMA, _echo,
                                 concurrency_safe=True))
        runtime = SubagentRuntime(host)
        runtime.register_provider(ForkProvider(cache_preserving=cache_preserving))
        tool = SubagentTool(provider="fork", persona=child_persona, tool_filter=tool_filter)
        if output_schema is not None:
            plain_request = tool.request

            def with_schema(description: str, prompt: str) -> StartRequest:
                return msgspec.structs.replace(plain_request(description, prompt),
                                               output_schema=msgspec.Raw(output_schema.encode()))

            tool.request = with_schema  # type: ignore[method-assign]
        tool.install(host)
        children: list[Any] = []

        def on_event(event: SubagentEvent) -> None:
            if isinstance(event, SubagentStart):
                children.append(host.sessions.get(event.child_id))

        runtime.subscribe(on_event)
        parent = host.create_agent(provider="deepseek", model="m", system=persona)
        for turn in range(1, turns + 1):
            parent.followup(f"Turn {turn}: echo the word tok{turn:04}.")
            await parent.when_idle()
        # what the child will inherit: the parent's history at its last turn end, counted as chat
        # messages (a tool result message sends one chat message per result block)
        seed_messages = sum(
            sum(isinstance(b, ToolResultBlock) for b in m.content)
            if isinstance(m, ToolResultMessage) else 1 for m in parent.session.history())
        switch.current = sdk_model
        parent.followup("Ask a fork to list the echoed words.")
        await parent.when_idle()
        parent_events = list(parent.session.events)
        await parent.dispose()
        requests = list(server.requests)
    if len(requests) != 3 or len(children) != 1 or children[0] is None:
        raise AssertionError(f"expected parent, child, parent requests and one child; got "
                             f"{len(requests)} requests, {len(children)} children")
    return ForkWire(parent=requests[0], child=requests[1], parent_after=requests[2],
                    seed_messages=seed_messages,
                    child_usage=_last_usage(list(children[0].events)),
                    parent_after_usage=_last_usage(parent_events))


def _last_usage(events: Sequence[Any]) -> TokenUsage | None:
    for event in reversed(events):
        if isinstance(event, AssistantMessageEvent):
            usage = event.data.usage
            return usage if isinstance(usage, TokenUsage) else None
    return None
