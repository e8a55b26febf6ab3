"""Cancellation at every await point leaves a closed, balanced log (DSH's shapes)."""

from __future__ import annotations

import asyncio
from typing import Any

from _shell_helpers import (
    assert_balanced,
    blocking_tool,
    echo_tool,
    make_host,
    of_type,
    run,
    scripted,
    types,
    wait_for,
)

from turnfork.core import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    CancelHook,
    CancelUser,
    InboxSplicedEvent,
    ReasoningBlock,
    TextBlock,
    ToolErrorInfo,
    ToolResultEvent,
    TurnAborted,
    TurnCompleted,
    TurnEndEvent,
    UserMessageEvent,
)
from turnfork.shell import Agent, ModelRequest, Reply, Tool, ToolContext


def _last_reason(agent: Agent) -> Any:
    return of_type(agent.session.events, TurnEndEvent)[-1].data.reason


def test_cancel_before_the_loop_runs_drops_the_queued_input() -> None:
    """Input queued but never claimed is dropped with a canceled splice; no turn starts."""

    async def main() -> None:
        agent, model = scripted(make_host(), [Reply.text("never")])
        agent.followup("go")
        agent.cancel()
        await agent.when_idle()
        splices = of_type(agent.session.events, InboxSplicedEvent)
        assert types(agent.session.events) == ["agent/inbox/spliced"] * 2
        assert splices[1].data.outcome == "canceled" and splices[1].data.removed_count == 1
        assert agent.pending == () and model.calls == 0

    run(main)


def test_cancel_before_the_first_step() -> None:
    """Cancelled in a pre-step hook: the turn ends aborted with no step."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.text("never")])
        entered = asyncio.Event()

        async def hook(agent: Agent, turn: int, step: int) -> None:
            entered.set()
            await asyncio.get_running_loop().create_future()

        agent.pre_step_hooks.append(hook)
        agent.followup("go")
        await entered.wait()
        agent.cancel(CancelHook(reason="policy"))
        await agent.when_idle()
        assert types(agent.session.events) == ["agent/inbox/spliced", "turn/start",
                                               "agent/inbox/spliced", "turn/end"]
        assert _last_reason(agent) == TurnAborted(reason=CancelHook(reason="policy"))

    run(main)


def test_cancel_mid_stream_keeps_the_delivered_text() -> None:
    """The streamed prefix becomes an interrupted assistant/message citing its chunks."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.hang("partial")])
        agent.followup("go")
        # block-start, "part", "ial": everything the hanging reply streams
        await wait_for(lambda: types(agent.session.events).count("assistant/chunk") == 3)
        agent.cancel()
        await agent.when_idle()
        events = list(agent.session.events)
        assert types(events)[-3:] == ["assistant/message", "step/end", "turn/end"]
        (message,) = of_type(events, AssistantMessageEvent)
        assert message.data.interrupted is True
        assert message.data.message.content == (TextBlock(text="partial"),)
        chunk_seqs = [e.seq for e in of_type(events, AssistantChunkEvent)]
        assert list(message.source_event_seqs) == chunk_seqs  # type: ignore[arg-type]
        assert _last_reason(agent) == TurnAborted(reason=CancelUser())
        assert_balanced(events)

    run(main)


def test_cancel_mid_stream_keeps_only_visible_text_and_reasoning() -> None:
    """Whitespace-only text is dropped; reasoning is kept."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.hang("   ", reasoning="thinking")])
        agent.followup("go")
        await wait_for(lambda: types(agent.session.events).count("assistant/chunk") >= 5)
        agent.cancel()
        await agent.when_idle()
        (message,) = of_type(agent.session.events, AssistantMessageEvent)
        assert message.data.message.content == (ReasoningBlock(text="thinking"),)

    run(main)


def test_cancel_before_anything_streamed_writes_no_message() -> None:
    """Cancelled while waiting for the first chunk: no assistant/message at all."""

    async def main() -> None:
        called = asyncio.Event()

        async def wait_forever(request: ModelRequest) -> Reply:
            called.set()
            await asyncio.get_running_loop().create_future()
            raise AssertionError("unreachable")

        agent, _ = scripted(make_host(), [wait_forever])
        agent.followup("go")
        await called.wait()
        agent.cancel()
        await agent.when_idle()
        assert types(agent.session.events)[-6:] == [
            "user/message", "session/title", "request/header", "request/context", "step/end",
            "turn/end"]
        assert_balanced(agent.session.events)

    run(main)


def test_cancel_mid_tool_answers_started_and_undispatched_calls() -> None:
    """The running call gets ABORTED; a later call never dispatched gets its tool/call and
    ABORTED_BEFORE_DISPATCH, as in DSH's cancel-tool-calls fixture."""

    async def main() -> None:
        host = make_host()
        started = asyncio.Event()
        record: list[str] = []
        host.tools.register(blocking_tool("wait", started, record=record))
        host.tools.register(echo_tool("later", safe=False))
        agent, _ = scripted(host, [Reply.tool_calls([("wait", {}), ("later", {"text": "x"})])])
        agent.followup("go")
        await started.wait()
        agent.cancel()
        await agent.when_idle()
        events = list(agent.session.events)
        assert types(events)[-7:] == ["assistant/message", "tool/call", "tool/result",
                                      "tool/call", "tool/result", "step/end", "turn/end"]
        first, second = of_type(events, ToolResultEvent)
        assert first.data.error == ToolErrorInfo(name="AbortError", code="ABORTED")
        assert second.data.error == ToolErrorInfo(name="AbortError",
                                                  code="ABORTED_BEFORE_DISPATCH")
        assert record == ["wait cancelled, cause CancelUser()"]
        assert_balanced(events)

    run(main)


def test_cancel_mid_parallel_tools_cancels_every_running_call() -> None:
    """Both safe calls are cancelled and answered ABORTED; no task is left behind."""

    async def main() -> None:
        host = make_host()
        a_started, b_started = asyncio.Event(), asyncio.Event()
        record: list[str] = []
        host.tools.register(blocking_tool("a", a_started, safe=True, record=record))
        host.tools.register(blocking_tool("b", b_started, safe=True, record=record))
        agent, _ = scripted(host, [Reply.tool_calls([("a", {}), ("b", {})])])
        agent.followup("go")
        await a_started.wait()
        await b_started.wait()
        agent.cancel()
        await agent.when_idle()
        results = of_type(agent.session.events, ToolResultEvent)
        assert [r.data.error.code for r in results] == ["ABORTED", "ABORTED"]  # type: ignore[union-attr]
        assert sorted(record) == ["a cancelled, cause CancelUser()",
                                  "b cancelled, cause CancelUser()"]
        assert_balanced(agent.session.events)

    run(main)


def test_cancel_between_steps() -> None:
    """Cancelled after step 1 ended, before step 2 started: the turn ends after step/end."""

    async def main() -> None:
        host = make_host()
        host.tools.register(echo_tool())
        agent, model = scripted(host, [Reply.tool_call("echo", {"text": "x"}), Reply.text("no")])
        at_step_two = asyncio.Event()

        async def hook(agent: Agent, turn: int, step: int) -> None:
            if step == 2:
                at_step_two.set()
                await asyncio.get_running_loop().create_future()

        agent.pre_step_hooks.append(hook)
        agent.followup("go")
        await at_step_two.wait()
        agent.cancel()
        await agent.when_idle()
        assert types(agent.session.events)[-3:] == ["tool/result", "step/end", "turn/end"]
        assert model.calls == 1
        assert_balanced(agent.session.events)

    run(main)


def test_input_queued_during_the_turn_is_dropped_on_cancel() -> None:
    """A follow-up waiting for the next turn is dropped with outcome canceled, after turn/end."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.hang("x")])
        agent.followup("go")
        await wait_for(lambda: "assistant/chunk" in types(agent.session.events))
        agent.followup("queued")
        agent.cancel()
        await agent.when_idle()
        names = types(agent.session.events)
        assert names[-2:] == ["turn/end", "agent/inbox/spliced"]
        last = of_type(agent.session.events, InboxSplicedEvent)[-1]
        assert (last.data.removed_count, last.data.outcome) == (1, "canceled")
        assert_balanced(agent.session.events)

    run(main)


def test_input_after_the_cancel_runs_in_a_new_turn() -> None:
    """A follow-up sent after cancel() (before the loop settled) is kept and run."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.hang("x"), Reply.text("second")])
        agent.followup("go")
        await wait_for(lambda: "assistant/chunk" in types(agent.session.events))
        agent.cancel()
        agent.followup("again")
        await agent.when_idle()
        reasons = [e.data.reason for e in of_type(agent.session.events, TurnEndEvent)]
        assert reasons == [TurnAborted(reason=CancelUser()), TurnCompleted()]
        assert not any(s.data.outcome == "canceled"
                       for s in of_type(agent.session.events, InboxSplicedEvent))

    run(main)


def test_a_tool_that_swallows_cancellation_still_stops_the_turn() -> None:
    """Even if a tool eats CancelledError, the loop stops at its next checkpoint."""

    async def stubborn(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            return "I refuse to stop"
        return "unreachable"

    async def main() -> None:
        host = make_host()
        host.tools.register(Tool("stubborn", "", {}, stubborn))
        agent, model = scripted(host, [Reply.tool_call("stubborn", {}), Reply.text("no")])
        agent.followup("go")
        await wait_for(lambda: "tool/call" in types(agent.session.events))
        agent.cancel()
        await agent.when_idle()
        assert model.calls == 1
        assert isinstance(_last_reason(agent), TurnAborted)
        assert_balanced(agent.session.events)

    run(main)


def test_cancel_when_idle_does_nothing() -> None:
    """cancel() with no turn running writes nothing."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.text("a")])
        agent.followup("go")
        await agent.when_idle()
        before = len(agent.session.events)
        agent.cancel()
        await agent.when_idle()
        assert len(agent.session.events) == before

    run(main)


def test_tool_context_run_reports_the_cause_to_on_cancel() -> None:
    """ctx.run() calls on_cancel with the agent's cancel cause before cancelling on."""
    causes: list[Any] = []

    async def delegate(args: dict[str, Any], ctx: ToolContext) -> str:
        forever = asyncio.get_running_loop().create_future()
        await ctx.run(forever, on_cancel=causes.append)
        return "unreachable"

    async def main() -> None:
        host = make_host()
        host.tools.register(Tool("delegate", "", {}, delegate))
        agent, _ = scripted(host, [Reply.tool_call("delegate", {})])
        agent.followup("go")
        await wait_for(lambda: "tool/call" in types(agent.session.events))
        agent.cancel(CancelHook(reason="parent went away"))
        await agent.when_idle()
        assert causes == [CancelHook(reason="parent went away")]
        assert_balanced(agent.session.events)

    run(main)


def test_an_interrupt_keeps_queued_input_parked_until_the_next_input() -> None:
    """cancel(keep_queued=True) ends the running turn aborted and drops nothing: the queued
    follow-up waits, and the next follow-up wakes a turn that claims it first (DSH's
    interrupt_agent: queued follow-ups stay parked until the next send)."""

    async def main() -> None:
        started = asyncio.Event()

        async def wait_forever(request: object) -> Reply:
            started.set()
            await asyncio.get_running_loop().create_future()
            raise AssertionError("unreachable")

        agent, _ = scripted(make_host(), [wait_forever, Reply.text("parked"),
                                              Reply.text("fresh")])
        agent.followup("first")
        await started.wait()
        agent.followup("queued")
        agent.cancel(keep_queued=True)
        await agent.when_idle()
        assert [m.content for m in agent.pending] == [(TextBlock(text="queued"),)]
        events = list(agent.session.events)
        assert not any(isinstance(e, InboxSplicedEvent) and e.data.outcome == "canceled"
                       for e in events)
        assert isinstance(of_type(events, TurnEndEvent)[-1].data.reason, TurnAborted)
        agent.followup("fresh")
        await agent.when_idle()
        users = [e.data.content[0].text for e in of_type(agent.session.events, UserMessageEvent)
                 if e.data.source.kind == "user"]
        assert users == ["first", "queued", "fresh"]
        assert_balanced(agent.session.events)

    run(main)
