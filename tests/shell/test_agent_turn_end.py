"""Every turn-end reason the loop writes: completed, max-tokens, error, blocked (aborted is in
test_agent_cancel.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
from _shell_helpers import assert_balanced, echo_tool, make_host, of_type, run, scripted, types

from turnfork.core import (
    AssistantMessageEvent,
    BlockEnd,
    BlockStart,
    FinishChunk,
    FinishMaxTokens,
    StreamChunk,
    SubagentDescriptorData,
    SubagentDescriptorEvent,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallEvent,
    TurnBlocked,
    TurnCompleted,
    TurnEndEvent,
    TurnError,
    TurnMaxTokens,
    UsageChunk,
)
from turnfork.shell import Agent, Host, ModelRequest, Reply
from turnfork.shell.models.scripted import SCRIPT_EXHAUSTED


def _reasons(agent: Agent) -> list[Any]:
    return [e.data.reason for e in of_type(agent.session.events, TurnEndEvent)]


def test_completed() -> None:
    """A text answer completes the turn."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.text("hi", usage=(1, 2))])
        agent.followup("go")
        await agent.when_idle()
        assert _reasons(agent) == [TurnCompleted()]
        message = of_type(agent.session.events, AssistantMessageEvent)[0]
        assert message.data.usage == TokenUsage(input_tokens=1, output_tokens=2)

    run(main)


def test_max_tokens_drops_tool_calls_and_ends_the_turn() -> None:
    """On max-tokens the tool calls are dropped, no tool runs, the turn ends max-tokens."""

    async def main() -> None:
        host = make_host()
        host.tools.register(echo_tool())
        agent, model = scripted(host, [Reply.max_tokens("Starting", tool_calls=[
            ("echo", {"text": "x"})])])
        agent.followup("go")
        await agent.when_idle()
        message = of_type(agent.session.events, AssistantMessageEvent)[0]
        assert message.data.message.content == (TextBlock(text="Starting"),)
        assert not of_type(agent.session.events, ToolCallEvent)
        assert _reasons(agent) == [TurnMaxTokens()]
        assert model.calls == 1
        assert_balanced(agent.session.events)

    run(main)


class _ReplayModel:
    """Streams a text block and a tool call, then finishes max-tokens with a replay state."""

    async def _chunks(self) -> AsyncIterator[StreamChunk]:
        call = ToolCallBlock(id="c", name="echo", arguments="{")
        for chunk in (BlockStart(index=0, block_type="text"), TextDelta(index=0, text="Go"),
                      BlockStart(index=1, block_type="tool-call"),
                      BlockEnd(index=0, block=TextBlock(text="Go")),
                      BlockEnd(index=1, block=call),
                      UsageChunk(usage=TokenUsage(input_tokens=9, output_tokens=9)),
                      FinishChunk(reason=FinishMaxTokens(), replay_state=msgspec.Raw(
                          b'{"response":{"id":1},"blocks":[{"type":"text"},'
                          b'{"type":"tool-call"}]}'))):
            yield chunk

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        return self._chunks()


def test_max_tokens_filters_the_replay_state_blocks() -> None:
    """The dropped tool call's replayState.blocks entry goes with it (DSH's max-tokens rule)."""

    async def main() -> None:
        host = Host()
        host.models.register("replay", _ReplayModel())
        agent = host.create_agent(provider="replay", model="m")
        agent.followup("go")
        await agent.when_idle()
        message = of_type(agent.session.events, AssistantMessageEvent)[0]
        source = message.data.message.source
        assert source.get("replayState") == msgspec.Raw(
            b'{"response":{"id":1},"blocks":[{"type":"text"}]}')
        assert message.data.message.content == (TextBlock(text="Go"),)
        assert len(message.source_event_seqs) == 7  # type: ignore[arg-type]
        await agent.dispose()

    run(main)


def test_error_finish_ends_the_turn_with_the_failure() -> None:
    """A model error finish: no assistant/message, step/end, turn/end error with its code."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.error("AUTH", "invalid api key")])
        agent.followup("go")
        await agent.when_idle()
        assert types(agent.session.events)[-5:] == [
            "request/header", "request/context", "assistant/chunk", "step/end", "turn/end"]
        (reason,) = _reasons(agent)
        assert isinstance(reason, TurnError)
        assert (reason.error.code, reason.error.message) == ("AUTH", "invalid api key")

    run(main)


def test_script_exhausted_is_an_error_turn() -> None:
    """Running out of script ends the turn with SCRIPT_EXHAUSTED, then the agent goes idle."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [])
        agent.followup("go")
        await agent.when_idle()
        (reason,) = _reasons(agent)
        assert isinstance(reason, TurnError) and reason.error.code == SCRIPT_EXHAUSTED

    run(main)


def test_model_exception_is_an_unknown_error_and_the_agent_goes_on() -> None:
    """A model that raises ends the turn with code UNKNOWN and the message; later turns run."""

    def explode(request: ModelRequest) -> Reply:
        raise ConnectionError("socket closed")

    async def main() -> None:
        agent, _ = scripted(make_host(), [explode, Reply.text("fine")])
        agent.followup("one")
        await agent.when_idle()
        agent.followup("two")
        await agent.when_idle()
        first, second = _reasons(agent)
        assert isinstance(first, TurnError)
        assert (first.error.code, first.error.message) == ("UNKNOWN", "socket closed")
        assert second == TurnCompleted()
        assert_balanced(agent.session.events)

    run(main)


def test_stream_without_finish_is_an_error() -> None:
    """A stream that stops without a finish chunk ends the turn with an error."""

    class Silent:
        async def _none(self) -> AsyncIterator[StreamChunk]:
            yield BlockStart(index=0, block_type="text")

        def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
            return self._none()

    async def main() -> None:
        host = Host()
        host.models.register("silent", Silent())
        agent = host.create_agent(provider="silent", model="m")
        agent.followup("go")
        await agent.when_idle()
        (reason,) = _reasons(agent)
        assert isinstance(reason, TurnError)
        assert "without a finish chunk" in reason.error.message
        await agent.dispose()

    run(main)


def test_blocked_by_a_pre_step_hook() -> None:
    """A hook returning False blocks the step: before step 1 the turn has no step at all."""

    async def main() -> None:
        agent, model = scripted(make_host(), [Reply.text("never")])
        agent.pre_step_hooks.append(lambda agent, turn, step: False)
        agent.followup("go")
        await agent.when_idle()
        assert types(agent.session.events) == ["agent/inbox/spliced", "turn/start",
                                               "agent/inbox/spliced", "turn/end"]
        assert _reasons(agent) == [TurnBlocked()]
        assert model.calls == 0

    run(main)


def test_hooks_run_before_every_step_and_may_append() -> None:
    """Async hooks see (turn, step) before step/start and may log events there."""
    seen: list[tuple[int, int]] = []

    async def hook(agent: Agent, turn: int, step: int) -> bool:
        seen.append((turn, step))
        if step == 1:
            agent.session.append(SubagentDescriptorEvent, SubagentDescriptorData(
                version=2, mode="one-shot", provider="fork"))
        return step < 2

    async def main() -> None:
        host = make_host()
        host.tools.register(echo_tool())
        agent, _ = scripted(host, [Reply.tool_call("echo", {"text": "x"}), Reply.text("no")])
        agent.pre_step_hooks.append(hook)
        agent.followup("go")
        await agent.when_idle()
        assert seen == [(1, 1), (1, 2)]
        names = types(agent.session.events)
        assert names[3:5] == ["subagent/descriptor", "step/start"]
        assert names[-2:] == ["step/end", "turn/end"]
        assert _reasons(agent) == [TurnBlocked()]

    run(main)


def test_hook_failure_is_an_error_turn() -> None:
    """A hook that raises ends the turn with error UNKNOWN."""

    def hook(agent: Agent, turn: int, step: int) -> None:
        raise RuntimeError("hook broke")

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.text("x")])
        agent.pre_step_hooks.append(hook)
        agent.followup("go")
        await agent.when_idle()
        (reason,) = _reasons(agent)
        assert isinstance(reason, TurnError) and reason.error.message == "hook broke"

    run(main)
