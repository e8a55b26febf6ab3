"""Shared helpers of the Ray tests: a host with the in-process and the Ray providers side by
side, so that one test states one contract and runs it both ways."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import _ray_rules
from returns.result import Success

from turnfork.core import (
    Event,
    StartRequest,
    TextBlock,
    TurnEndEvent,
    check_balance,
    event_type,
)
from turnfork.shell import Agent, ForkProvider, Host, SessionStore, SpawnProvider
from turnfork.shell.ray import RayForkProvider, RaySpawnProvider, RayWorkerPool
from turnfork.shell.subagents import SubagentEvent, SubagentStart

T = TypeVar("T")

#: Where a child runs, and its provider's name by kind.
WHERE = ("in-process", "ray")
NAMES = {("in-process", "fork"): "fork", ("in-process", "spawn"): "spawn",
         ("ray", "fork"): "ray-fork", ("ray", "spawn"): "ray-spawn"}


def provider(where: str, kind: str = "fork") -> str:
    return NAMES[(where, kind)]


def run(main: Callable[[], Awaitable[T]], timeout: float = 60.0) -> T:
    """Run ``main`` under asyncio.run, bounded, and check that no task outlives it."""

    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            result = await main()
        leftover = asyncio.all_tasks() - {asyncio.current_task()}
        assert not leftover, f"tasks leaked: {leftover}"
        return result

    return asyncio.run(bounded())


class Recorder:
    """The runtime's observer events."""

    def __init__(self) -> None:
        self.events: list[SubagentEvent] = []

    def __call__(self, event: SubagentEvent) -> None:
        self.events.append(event)

    def starts(self) -> list[SubagentStart]:
        return [event for event in self.events if isinstance(event, SubagentStart)]


def contract_host(pool: RayWorkerPool, *, store: SessionStore | None = None,
                  **host_options: Any) -> tuple[Host, Agent, Recorder]:
    """A host with ``fork``/``spawn`` in process and ``ray-fork``/``ray-spawn`` on ``pool``,
    the rules model and tools, and a parent on the rules model (model ``m-parent``)."""
    host = Host(store=store, **host_options)
    _ray_rules.configure(host)
    runtime = host.subagents
    for registered in (ForkProvider(), SpawnProvider(), RayForkProvider(pool),
                       RaySpawnProvider(pool)):
        runtime.register_provider(registered)
    recorder = Recorder()
    runtime.subscribe(recorder)
    parent = host.create_agent(provider=_ray_rules.PROVIDER, model="m-parent")
    return host, parent, recorder


def request(task: str, **fields: Any) -> StartRequest:
    return StartRequest(prompt=(TextBlock(text=task),), **fields)


async def one_turn(agent: Agent, task: str) -> None:
    agent.followup(task)
    await agent.when_idle()


def text(blocks: Sequence[Any]) -> str:
    return "".join(block.text for block in blocks if isinstance(block, TextBlock))


def types(events: Sequence[Event]) -> list[str]:
    return [event_type(event) for event in events]


def turn_ends(events: Sequence[Event]) -> list[Any]:
    return [event.data.reason for event in events if isinstance(event, TurnEndEvent)]


def assert_balanced(events: Sequence[Event], what: str = "log") -> None:
    result = check_balance(events)
    assert isinstance(result, Success), f"{what}: {result}"
    assert result.unwrap().is_closed, f"{what}: not closed"


async def close(host: Host) -> None:
    """Dispose every run and agent; nothing of them may stay live."""
    await host.subagents.aclose()
    await host.aclose()
    assert host.subagents.runs() == () and len(host.agents) == 0
