"""Shared by the runtime reliability tests (state machine, load, child boundaries): hosts with
both providers, counting tools, log checks and bounded waits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from returns.result import Success

from turnfork.core import (
    ContentBlock,
    Event,
    StartRequest,
    TextBlock,
    ToolResultBlock,
    ToolResultEvent,
    check_balance,
    trace_log,
)
from turnfork.shell import (
    Agent,
    CountingIds,
    ForkProvider,
    Host,
    ManualClock,
    ScriptedModel,
    SpawnProvider,
    SubagentRuntime,
    Tool,
    ToolContext,
)
from turnfork.shell.models.scripted import ScriptEntry

T = TypeVar("T")

TEXT_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}},
               "required": ["text"]}


def make_host() -> Host:
    """A deterministic host (manual clock that ticks on every read, counting ids) with the
    ``fork`` and ``spawn`` providers registered."""
    host = Host(clock=ManualClock(1_000, step=1), ids=CountingIds("id-"))
    runtime = SubagentRuntime(host)
    runtime.register_provider(ForkProvider())
    runtime.register_provider(SpawnProvider())
    return host


def scripted_parent(host: Host, script: Iterable[ScriptEntry] = (), *,
                    provider: str = "parent", **options: Any) -> tuple[Agent, ScriptedModel]:
    """A parent agent whose model (registered as ``provider``) plays ``script``."""
    model = ScriptedModel(script)
    host.models.register(provider, model)
    return host.create_agent(provider=provider, model="test-model", **options), model


def request(prompt: str, **fields: Any) -> StartRequest:
    return StartRequest(prompt=(TextBlock(text=prompt),), **fields)


class CountingTool:
    """A global tool that counts its invocations (and may yield a few times, so a call stays
    pending across await points)."""

    def __init__(self, name: str, *, safe: bool = True, pauses: int = 0) -> None:
        self.name = name
        self.calls = 0
        self.pauses = pauses
        self.tool = Tool(name, f"the {name} tool", TEXT_SCHEMA, self._handle,
                         concurrency_safe=safe)

    async def _handle(self, args: dict[str, Any], ctx: ToolContext) -> str:
        self.calls += 1
        for _ in range(self.pauses):
            await asyncio.sleep(0)
        return f"{self.name}:{args['text']}"


def text_of(blocks: Sequence[ContentBlock] | None) -> str:
    return "".join(block.text for block in blocks or () if isinstance(block, TextBlock))


def tool_results(events: Iterable[Event]) -> list[ToolResultEvent]:
    return [event for event in events if isinstance(event, ToolResultEvent)]


def result_text(event: ToolResultEvent) -> str:
    block = event.data.message.content[0]
    assert isinstance(block, ToolResultBlock)
    return text_of(block.content)


def assert_traces_clean(events: Sequence[Event], what: str) -> None:
    """The log so far obeys every balance rule (it may still be in flight)."""
    traced = trace_log(events)
    assert isinstance(traced, Success), f"{what}: {traced}"


def assert_balanced(events: Sequence[Event], what: str) -> None:
    """The log obeys every balance rule and is closed (no open turn, step or call)."""
    checked = check_balance(events)
    assert isinstance(checked, Success), f"{what}: {checked}"


async def wait_for(predicate: Callable[[], bool], *, limit: int = 10_000) -> None:
    """Yield to the loop until ``predicate`` holds (bounded in loop iterations)."""
    for _ in range(limit):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


async def bounded(awaitable: Awaitable[T], seconds: float) -> T:
    """Await with a safety bound, so a bug fails the test instead of hanging it."""
    async with asyncio.timeout(seconds):
        return await awaitable
