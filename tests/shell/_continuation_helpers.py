"""Shared by the continuable-children tests: hosts with a JSONL store, gated scripted replies,
the texts a log's conversation holds, and bounded waits for an epoch to settle."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _shell_helpers import assert_balanced, make_host, of_type

from turnfork.core import (
    ContentBlock,
    Event,
    InboxSplicedData,
    InboxSplicedEvent,
    TextBlock,
    TurnEndEvent,
    UserMessageEvent,
)
from turnfork.core.continuation import ContinuableStart
from turnfork.shell import (
    Agent,
    ForkProvider,
    Host,
    JsonlSessionStore,
    ModelRequest,
    Reply,
    ScriptedModel,
    SpawnProvider,
    SubagentRuntime,
)
from turnfork.shell.models.scripted import ScriptEntry
from turnfork.shell.subagents import ContinuationManager, SubagentEnd, SubagentEvent, SubagentStart

__all__ = [
    "Lifecycle",
    "continuable_host",
    "gated",
    "start",
    "texts",
    "user_texts",
    "turn_reasons",
    "splices",
    "manager",
    "eventually",
    "settle",
    "finish",
]


class Lifecycle:
    """Collects the runtime's SubagentStart/SubagentEnd events."""

    def __init__(self, runtime: SubagentRuntime) -> None:
        self.events: list[SubagentEvent] = []
        runtime.subscribe(self.events.append)

    def starts(self, child_id: str | None = None) -> list[SubagentStart]:
        return [e for e in self.events if isinstance(e, SubagentStart)
                and (child_id is None or e.id == child_id)]

    def ends(self, child_id: str | None = None) -> list[SubagentEnd]:
        return [e for e in self.events if isinstance(e, SubagentEnd)
                and (child_id is None or e.id == child_id)]


def continuable_host(root: Path, script: Sequence[ScriptEntry] = (), *,
                     store: JsonlSessionStore | None = None, **options: Any,
                     ) -> tuple[Host, Agent, ScriptedModel, Lifecycle]:
    """A deterministic host persisting under ``root`` with ``fork`` and ``spawn`` registered,
    and one scripted parent agent (provider ``parent``)."""
    host = make_host(store if store is not None else JsonlSessionStore(root))
    runtime = SubagentRuntime(host)
    runtime.register_provider(ForkProvider())
    runtime.register_provider(SpawnProvider())
    lifecycle = Lifecycle(runtime)
    model = ScriptedModel(script)
    host.models.register("parent", model)
    parent = host.create_agent(provider="parent", model="test-model", **options)
    return host, parent, model, lifecycle


def manager(host: Host) -> ContinuationManager:
    return host.subagents.continuation


def gated(reply: Reply, gate: asyncio.Event) -> ScriptEntry:
    """A script entry that waits for ``gate`` before answering ``reply``."""

    async def entry(_: ModelRequest) -> Reply:
        await gate.wait()
        return reply

    return entry


async def start(host: Host, parent: Agent, prompt: str = "child task", *,
                provider: str = "spawn", label: str | None = None, **fields: Any) -> str:
    """Start a continuable child; returns its id."""
    started = await manager(host).start_continuable(
        provider, ContinuableStart(prompt=(TextBlock(text=prompt),), label=label or prompt,
                                   **fields), parent=parent)
    return started.child_id


def texts(blocks: Sequence[ContentBlock]) -> list[str]:
    return [b.text for b in blocks if isinstance(b, TextBlock)]


def user_texts(events: Sequence[Event]) -> list[str]:
    """The caller-supplied user messages of a log, in order (runtime-context snapshots, which a
    plugin writes, left out), each as its text blocks joined by newlines."""
    return ["\n".join(texts(e.data.content)) for e in of_type(events, UserMessageEvent)
            if e.data.source.kind != "plugin"]


def turn_reasons(events: Sequence[Event]) -> list[str]:
    return [type(e.data.reason).__struct_config__.tag  # type: ignore[misc]
            for e in of_type(events, TurnEndEvent)]


def splices(events: Sequence[Event]) -> list[InboxSplicedData]:
    return [e.data for e in of_type(events, InboxSplicedEvent)]


async def eventually(predicate: Callable[[], bool], seconds: float = 5.0) -> None:
    """Wait until ``predicate`` holds, yielding to the loop (and the store's committer)."""
    async with asyncio.timeout(seconds):
        while not predicate():
            await asyncio.sleep(0.001)


async def settle(lifecycle: Lifecycle, child_id: str, epochs: int = 1) -> SubagentEnd:
    """Wait until ``child_id`` has settled ``epochs`` times; returns its last SubagentEnd."""
    await eventually(lambda: len(lifecycle.ends(child_id)) >= epochs)
    return lifecycle.ends(child_id)[-1]


async def finish(host: Host, *agents: Agent) -> None:
    """Close the host (drains continuable children) and check every log named is balanced."""
    await host.subagents.aclose()
    await host.aclose()
    assert len(host.agents) == 0
    for agent in agents:
        assert_balanced(agent.session.events)
