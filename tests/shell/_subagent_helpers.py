"""Shared helpers for the subagent runtime tests: hosts with both providers, logs, texts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from _shell_helpers import assert_balanced, make_host, of_type

from turnfork.core import (
    ContentBlock,
    Event,
    StartRequest,
    TextBlock,
    ToolResultBlock,
    ToolResultEvent,
    TurnEndEvent,
    UserMessage,
)
from turnfork.shell import (
    Agent,
    ForkProvider,
    Host,
    ModelRequest,
    ScriptedModel,
    SessionStore,
    SpawnProvider,
    SubagentRuntime,
)
from turnfork.shell.models.scripted import ScriptEntry
from turnfork.shell.subagents import SubagentEvent, SubagentStart


class Recorder:
    """Collects the runtime's observer events and the child agents they name."""

    def __init__(self, runtime: SubagentRuntime) -> None:
        self.events: list[SubagentEvent] = []
        self.children: dict[str, Agent] = {}
        runtime.subscribe(self._on_event)

    def _on_event(self, event: SubagentEvent) -> None:
        self.events.append(event)
        if isinstance(event, SubagentStart):
            self.children[event.child_id] = event.run.local_agent

    def child(self, index: int = 0) -> Agent:
        return list(self.children.values())[index]


def subagent_host(script: Sequence[ScriptEntry] = (), *, store: SessionStore | None = None,
                  **options: Any) -> tuple[Host, Agent, ScriptedModel, Recorder]:
    """A host with ``fork`` and ``spawn`` registered and one scripted parent agent."""
    host = make_host(store)
    runtime = SubagentRuntime(host)
    runtime.register_provider(ForkProvider())
    runtime.register_provider(SpawnProvider())
    model = ScriptedModel(script)
    host.models.register("scripted", model)
    parent = host.create_agent(provider="scripted", model="test-model", **options)
    return host, parent, model, Recorder(runtime)


def request(prompt: str, **fields: Any) -> StartRequest:
    return StartRequest(prompt=(TextBlock(text=prompt),), **fields)


def result_texts(events: Sequence[Event]) -> list[str]:
    """The text of every tool/result, in log order."""
    texts = []
    for event in of_type(events, ToolResultEvent):
        block = event.data.message.content[0]
        assert isinstance(block, ToolResultBlock)
        texts.append("".join(b.text for b in block.content if isinstance(b, TextBlock)))
    return texts


def last_user_text(request: ModelRequest) -> str:
    """The text of the last human message a model was sent (a child's runtime-context snapshot,
    which follows its task, is not one)."""
    for message in reversed(request.messages):
        if isinstance(message, UserMessage) and message.source.kind == "user":
            return "".join(b.text for b in message.content if isinstance(b, TextBlock))
    raise AssertionError("no user message")


def texts(blocks: Sequence[ContentBlock] | None) -> str:
    return "".join(b.text for b in blocks or () if isinstance(b, TextBlock))


def turn_ends(events: Sequence[Event]) -> list[Any]:
    return [event.data.reason for event in of_type(events, TurnEndEvent)]


def assert_all_balanced(*agents: Agent) -> None:
    for agent in agents:
        assert_balanced(agent.session.events)


async def finish(parent: Agent, recorder: Recorder) -> None:
    """Dispose every run and agent, then check that nothing is live and that the parent's and
    every child's log is balanced."""
    host = parent.host
    await host.subagents.aclose()
    await host.aclose()
    assert len(host.agents) == 0 and host.subagents.runs() == ()
    assert_all_balanced(parent, *recorder.children.values())
