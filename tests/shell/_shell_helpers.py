"""Shared helpers for the shell runtime tests: deterministic hosts, bounded runs, tools."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from returns.result import Success

from turnfork.core import Event, check_balance, event_type
from turnfork.shell import (
    Agent,
    CountingIds,
    Host,
    ManualClock,
    ScriptedModel,
    SessionStore,
    Tool,
    ToolContext,
)
from turnfork.shell.models.scripted import ScriptEntry

T = TypeVar("T")

ECHO_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def run(main: Callable[[], Awaitable[T]], timeout: float = 5.0) -> T:
    """Run ``main`` under asyncio.run, bounded so a bug fails instead of hanging; also checks
    that no task outlives it."""

    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            result = await main()
        leftover = asyncio.all_tasks() - {asyncio.current_task()}
        assert not leftover, f"tasks leaked: {leftover}"
        return result

    return asyncio.run(bounded())


def make_host(store: SessionStore | None = None) -> Host:
    return Host(store=store, clock=ManualClock(1_000, step=1), ids=CountingIds("id-"))


def scripted(host: Host, script: Iterable[ScriptEntry] = (), *, provider: str = "scripted",
             **options: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(script)
    host.models.register(provider, model)
    return host.create_agent(provider=provider, model="test-model", **options), model


def types(events: Iterable[Event]) -> list[str]:
    return [event_type(event) for event in events]


def assert_balanced(events: Sequence[Event]) -> None:
    result = check_balance(events)
    assert isinstance(result, Success), result


def of_type(events: Iterable[Event], kind: type[T]) -> list[T]:
    return [event for event in events if isinstance(event, kind)]


async def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"echo:{args['text']}"


def echo_tool(name: str = "echo", *, safe: bool = True) -> Tool:
    return Tool(name, "echo the given text", ECHO_SCHEMA, _echo, concurrency_safe=safe)


def blocking_tool(name: str, started: asyncio.Event, *, safe: bool = False,
                  record: list[str] | None = None) -> Tool:
    """A tool that signals ``started`` and then waits forever (until cancelled)."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        started.set()
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            if record is not None:
                record.append(f"{name} cancelled, cause {ctx.cancel_cause}")
            raise
        return "unreachable"

    return Tool(name, "blocks", {"type": "object"}, handler, concurrency_safe=safe)


async def wait_for(predicate: Callable[[], bool], *, limit: int = 1000) -> None:
    """Yield to the loop until ``predicate`` holds (bounded by the test's timeout)."""
    for _ in range(limit):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")
