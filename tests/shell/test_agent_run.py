"""``await agent.run(prompt)`` returns the answer of the turn that took the prompt; ``when_idle``
reports the latest turn's result; ``async with`` disposes hosts and agents (issue 22, "the call
that returns the answer")."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from _shell_helpers import blocking_tool, echo_tool, make_host, run, scripted, wait_for

from turnfork.core import (
    AssistantChunkEvent,
    Event,
    FinishError,
    LlmFailure,
    RunResult,
    SessionHeader,
    TextBlock,
    TextDelta,
    TokenUsage,
    TurnEndEvent,
)
from turnfork.shell import (
    AgentDisposedError,
    AgentLoopError,
    Host,
    ModelError,
    ModelServerError,
    Reply,
    ScriptedModel,
)


def streamed(events: Sequence[Event]) -> str:
    return "".join(event.data.chunk.text for event in events
                   if isinstance(event, AssistantChunkEvent)
                   and isinstance(event.data.chunk, TextDelta))


def _server_error(status: int = 503) -> Reply:
    """A provider's 503 as OpenAIChatModel reports it (a code no retry policy repeats, so that
    one scripted reply is one failed turn)."""
    return Reply(finish=FinishError(failure=LlmFailure(
        message="upstream exploded", code="UNAVAILABLE", status=status, request_id="req-7")))


def test_run_returns_the_final_text_stop_reason_and_usage_of_its_turn() -> None:
    """One turn of two model calls (a tool call, then the answer): the output is the final
    text, the usage the sum of both calls."""

    async def main() -> None:
        host = make_host()
        host.tools.register(echo_tool())
        agent, _ = scripted(host, [Reply.tool_call("echo", {"text": "hi"}, usage=(10, 2)),
                                   Reply.text("all done", usage=(15, 3))])
        result = await agent.run("go")
        assert isinstance(result, RunResult)
        assert (result.output, result.stop_reason, result.turn) == ("all done", "completed", 1)
        assert result.ok and result.failure is None
        assert result.usage == TokenUsage(input_tokens=25, output_tokens=5)
        assert result.content == (TextBlock(text="all done"),)
        assert agent.session.durable_length == len(agent.session)
        await agent.dispose()

    run(main)


def test_a_failed_turn_is_a_result_with_its_typed_failure() -> None:
    """A model failure ends the turn ``error``; the result carries the failure, not an
    exception, unless the caller asks for one."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [_server_error(502), _server_error()])
        result = await agent.run("go")
        assert (result.stop_reason, result.output, result.ok) == ("error", "", False)
        assert result.failure == LlmFailure(message="upstream exploded", code="UNAVAILABLE",
                                            status=502, request_id="req-7")
        with pytest.raises(ModelServerError) as raised:
            await agent.run("again", raise_on_failure=True)
        error = raised.value
        assert isinstance(error, ModelError)
        assert (error.status, error.code, error.request_id) == (503, "UNAVAILABLE", "req-7")
        assert str(error) == "UNAVAILABLE (HTTP 503): upstream exploded"
        assert error.result is not None and error.result.turn == 2
        await agent.dispose()

    run(main)


def test_runs_on_a_busy_agent_queue_and_each_gets_its_own_turn() -> None:
    """Two runs started together: the second queues behind the first (as ``followup`` does)
    and each returns the answer of the turn that took its prompt."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.text("first answer"), Reply.text("second")])
        first, second = await asyncio.gather(agent.run("one"), agent.run("two"))
        assert (first.output, first.turn) == ("first answer", 1)
        assert (second.output, second.turn) == ("second", 2)
        await agent.dispose()

    run(main)


def test_a_run_queued_behind_a_followup_waits_for_its_own_turn() -> None:
    """Input queued before the run's is answered first; the run's result is its own turn's,
    and input queued after it is not waited for."""

    async def main() -> None:
        started = asyncio.Event()
        host = make_host()
        host.tools.register(blocking_tool("block", started))
        agent, _ = scripted(host, [Reply.text("earlier"), Reply.text("mine"),
                                   Reply.tool_call("block", {})])
        agent.followup("earlier")
        pending = asyncio.ensure_future(agent.run("mine"))
        await asyncio.sleep(0)  # the run queues its prompt
        agent.followup("later")  # its turn blocks until cancelled
        result = await pending
        assert (result.output, result.turn) == ("mine", 2)
        await started.wait()
        assert agent.running
        await agent.dispose()

    run(main)


def test_a_prompt_dropped_before_its_turn_returns_aborted_without_a_turn() -> None:
    """Cancelling the running turn drops the input queued behind it: the run waiting on that
    input returns ``aborted`` with no turn; the run whose turn was cancelled gets that turn,
    ``aborted``, with the text streamed so far."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.hang("half an ans")])
        running = asyncio.ensure_future(agent.run("one"))
        queued = asyncio.ensure_future(agent.run("two"))
        await wait_for(lambda: streamed(agent.session.events) == "half an ans")
        agent.cancel()
        cancelled, dropped = await running, await queued
        assert (cancelled.stop_reason, cancelled.turn, cancelled.output) == (
            "aborted", 1, "half an ans")
        assert dropped == RunResult(output="", stop_reason="aborted")
        await agent.dispose()

    run(main)


def test_disposing_an_agent_ends_a_waiting_run() -> None:
    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.hang()])
        pending = asyncio.ensure_future(agent.run("one"))
        await wait_for(lambda: agent.running)
        await agent.dispose()
        assert (await pending).stop_reason == "aborted"
        with pytest.raises(AgentDisposedError):
            await agent.run("more")

    run(main)


def test_cancelling_the_awaiting_task_leaves_the_turn_running() -> None:
    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.text("done anyway")])
        waiting = asyncio.ensure_future(agent.run("go"))
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        result = await agent.when_idle()
        assert result is not None and result.output == "done anyway"
        await agent.dispose()

    run(main)


class _FullDisk:
    """A sink that refuses every batch holding a ``turn/end`` (nothing of it is written)."""

    written = 0

    def write(self, header: SessionHeader, events: Sequence[Event]) -> None:
        if any(isinstance(event, TurnEndEvent) for event in events):
            raise OSError(28, "No space left on device")
        self.written += len(events)

    @property
    def durable_length(self) -> int:
        return self.written

    def commit(self) -> None:
        pass

    async def wait_durable(self, length: int) -> None:
        pass


def test_a_turn_the_disk_left_open_raises_the_loop_failure() -> None:
    """The disk refuses the turn's end: the run cannot report a closed turn and raises the
    loop's failure, once."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.text("never closed")])
        agent.session._sink = _FullDisk()  # type: ignore[assignment]
        with pytest.raises(AgentLoopError, match="No space left on device"):
            await agent.run("go")
        assert agent.session.trace.open_turn == 1
        agent.session._sink = None
        await agent.dispose()

    run(main)


def test_when_idle_returns_the_latest_turns_result() -> None:
    """``when_idle`` returns normally after a failed turn (as it always did) but now says how
    the turn ended; ``raise_on_failure`` raises instead. Before any turn it returns ``None``."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.text("fine"), _server_error()])
        assert await agent.when_idle() is None
        agent.followup("one")
        first = await agent.when_idle()
        assert first is not None and (first.output, first.turn) == ("fine", 1)
        agent.followup("two")
        with pytest.raises(ModelServerError, match="upstream exploded"):
            await agent.when_idle(raise_on_failure=True)
        again = await agent.when_idle()  # the failure stays readable
        assert again is not None and again.failure is not None and again.turn == 2
        await agent.dispose()

    run(main)


def test_async_with_disposes_the_agent_and_closes_the_host() -> None:
    async def main() -> None:
        async with Host() as host:
            host.models.register("scripted", ScriptedModel([Reply.text("hello")]))
            async with host.create_agent(provider="scripted", model="m") as agent:
                assert (await agent.run("hi")).output == "hello"
            assert agent.disposed and agent.id not in host.agents
            keeper = host.create_agent(provider="scripted", model="m")
        assert keeper.disposed and len(host.agents) == 0

    run(main)


def test_async_with_disposes_on_an_exception_too() -> None:
    async def main() -> None:
        host = Host()
        host.models.register("scripted", ScriptedModel([Reply.hang()]))
        with pytest.raises(RuntimeError, match="caller gave up"):
            async with host, host.create_agent(provider="scripted", model="m") as agent:
                agent.followup("work")
                await wait_for(lambda: agent.running)
                raise RuntimeError("caller gave up")
        assert agent.disposed and not agent.running
        assert agent.session.trace.is_closed

    run(main)
