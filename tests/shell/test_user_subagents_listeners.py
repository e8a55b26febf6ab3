"""Lifecycle observers that are coroutine functions: run, as DSH runs a listener's promise."""

from __future__ import annotations

import asyncio
from typing import Any

from _shell_helpers import run
from _subagent_helpers import request, subagent_host

from turnfork.shell import Reply
from turnfork.shell.subagents import SubagentEnd, SubagentEvent, SubagentStart


def test_an_async_listener_is_run_and_its_failure_reported() -> None:
    """A listener that is a coroutine function is run to its end (not left an un-awaited
    coroutine), and one that raises there is reported to the loop's exception handler; the
    run goes on."""

    async def main() -> None:
        host, parent, _, _ = subagent_host([Reply.text("done")])
        seen: list[str] = []
        reported: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: reported.append(context))

        async def observe(event: SubagentEvent) -> None:
            await asyncio.sleep(0)
            seen.append(type(event).__name__)
            if isinstance(event, SubagentEnd):
                raise RuntimeError("observer broke")

        host.subagents.subscribe(observe)  # type: ignore[arg-type]
        started = await host.subagents.start("spawn", request("p"), parent=parent)
        assert (await started.result).stop_reason == "completed"
        await started.dispose()
        for _ in range(5):
            await asyncio.sleep(0)
        assert seen == [SubagentStart.__name__, SubagentEnd.__name__]
        assert [str(context["exception"]) for context in reported] == ["observer broke"]
        assert reported[0]["message"] == "a subagent listener failed"
        await host.aclose()

    run(main)
