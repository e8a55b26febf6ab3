"""An agent over OpenAIChatModel against the loopback fake server retries what DSH retries: a
429 with Retry-After (seconds or an HTTP date), a 500, a hang, a connection cut mid-tool-call,
an empty completion, a refused connection; not a clean end of the body before [DONE].
Ports DSH's ``packages/llm/llm-retry/tests/transport-recovery.spec.ts`` (issue 22's done-when
test is the first one)."""

from __future__ import annotations

import asyncio
import email.utils
import math
import socket
from datetime import UTC, datetime, timedelta
from typing import Any

from _shell_helpers import assert_balanced, types
from fake_openai_server import FakeOpenAI, Reply, chunk, usage_chunk
from returns.result import Success

from turnfork.core import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    TextBlock,
    ToolCallDelta,
    TurnEndEvent,
    TurnError,
)
from turnfork.core.events import LlmRetryEvent, LlmRetryStartedEvent
from turnfork.core.retry import DEFAULT_RETRY_POLICY, RetryPolicy, check_retries
from turnfork.shell import CountingIds, Host, ManualClock, OpenAIChatModel
from turnfork.shell.agent import Agent

USAGE = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
ANSWER = Reply(events=(chunk({"role": "assistant", "content": "The answer"}),
                       chunk({"content": " is 42."}, finish="stop"), usage_chunk(USAGE)))
TOOL_CUT = (chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                   "function": {"name": "read_file", "arguments": '{"pa'}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th"'}}]}))


def _run(main: Any, timeout: float = 60.0) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(timeout):
            return await main()
    return asyncio.run(bounded())


def _retries(agent: Agent) -> list[LlmRetryEvent]:
    return [e for e in agent.session.events if isinstance(e, LlmRetryEvent)]


def _final_text(agent: Agent) -> str:
    message = agent.session.history()[-1]
    return "".join(b.text for b in message.content if isinstance(b, TextBlock))


async def _settle(agent: Agent, clock: ManualClock) -> None:
    """Wait for the agent, moving the clock on past each retry's delay as it waits."""
    idle = asyncio.ensure_future(agent.when_idle())
    while not idle.done():
        if clock.waiting:
            clock.advance(math.ceil(_retries(agent)[-1].data.delay_ms))
        await asyncio.sleep(0.001)
    await idle


async def _agent_over(server: FakeOpenAI, clock: ManualClock, *,
                      retry: RetryPolicy = DEFAULT_RETRY_POLICY, timeout: float = 10.0,
                      base_url: str | None = None) -> tuple[Host, Agent, OpenAIChatModel]:
    host = Host(clock=clock, ids=CountingIds("id-"))
    model = OpenAIChatModel("test-model", base_url=base_url or server.base_url, api_key="k",
                            timeout=timeout, provider_name="loopback")
    host.models.register("loopback", model, retry=retry)
    return host, host.create_agent(provider="loopback", model="test-model"), model


def test_429_then_500_then_a_stream_completes_the_turn_with_two_retries() -> None:
    """Issue 22, done when: a 429 with Retry-After, then a 500, then a real stream: one turn,
    two llm/retry + llm/retry-started pairs, the final text; the 429's delay is the provider's
    (2 s), the 500's the default backoff of a second retry (1 s ± 10%); the three requests are
    the same bytes."""
    async def main() -> None:
        clock = ManualClock(1_000)
        replies = [Reply(status=429, headers=(("retry-after", "2"),),
                         body={"error": {"message": "Rate limit reached"}}),
                   Reply(status=500, body={"error": {"message": "boom"}}), ANSWER]
        async with FakeOpenAI(replies) as server:
            host, agent, model = await _agent_over(server, clock)
            async with model:
                agent.followup("What is the answer?")
                await _settle(agent, clock)
                await host.aclose()
        assert len(server.requests) == 3
        assert server.requests[0].raw == server.requests[1].raw == server.requests[2].raw
        events = agent.session.events
        kinds = types(events)
        assert kinds.count("turn/start") == kinds.count("step/start") == 1
        first, second = _retries(agent)
        assert (first.data.retry, first.data.failure.code, first.data.failure.status,
                first.data.failure.provider_retry_after_ms, first.data.delay_ms) == (
            1, "RATE_LIMIT", 429, 2000.0, 2000.0)
        assert (second.data.retry, second.data.failure.code, second.data.failure.status) == (
            2, "SERVER", 500)
        assert 900 <= second.data.delay_ms <= 1100  # the second retry's backoff: 1 s ± 10%
        assert second.data.retry_id == first.data.retry_id
        started = [e for e in events if isinstance(e, LlmRetryStartedEvent)]
        assert [(s.data.retry_id, s.data.retry) for s in started] == [
            (first.data.retry_id, 1), (first.data.retry_id, 2)]
        assert kinds.index("llm/retry") < kinds.index("llm/retry-started")
        end = events[-1]
        assert isinstance(end, TurnEndEvent) and end.data.reason.__struct_config__.tag == \
            "completed"
        assert _final_text(agent) == "The answer is 42."
        assert_balanced(events)
        assert check_retries(events) == Success(None)
    _run(main)


def test_retry_after_as_an_http_date_is_waited_for() -> None:
    """Retry-After given as an HTTP date: the delay is the time to that date (at most the
    header's whole seconds)."""
    async def main() -> None:
        clock = ManualClock(1_000)
        soon = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=4),
                                           usegmt=True)
        replies = [Reply(status=429, headers=(("retry-after", soon),),
                         body={"error": {"message": "slow down"}}), ANSWER]
        async with FakeOpenAI(replies) as server:
            host, agent, model = await _agent_over(server, clock)
            async with model:
                agent.followup("go")
                await _settle(agent, clock)
                await host.aclose()
        assert len(server.requests) == 2
        (retry,) = _retries(agent)
        assert 1_000 < retry.data.delay_ms <= 4_000
        assert retry.data.delay_ms == retry.data.failure.provider_retry_after_ms
        assert _final_text(agent) == "The answer is 42."
    _run(main)


def test_a_hang_times_out_and_the_retry_answers() -> None:
    """transport-recovery.spec.ts:200 ("turns a stalled body into TIMEOUT and succeeds on the
    next request"): a server that sends nothing within the read timeout."""
    async def main() -> None:
        clock = ManualClock(1_000)
        async with FakeOpenAI([Reply(end="stall"), ANSWER]) as server:
            host, agent, model = await _agent_over(server, clock, timeout=0.5)
            async with model:
                agent.followup("go")
                await _settle(agent, clock)
                await host.aclose()
        assert len(server.requests) == 2
        assert [r.data.failure.code for r in _retries(agent)] == ["TIMEOUT"]
        assert _final_text(agent) == "The answer is 42."
    _run(main)


def test_a_connection_cut_mid_tool_call_is_retried_without_running_the_call() -> None:
    """transport-recovery.spec.ts:112 ("retries partial_disconnect without committing failed
    chunks"): the tool call half streamed before the socket dropped stays in the failed
    chunks, never becomes a message or a tool/call; the request is repeated as it was."""
    async def main() -> None:
        clock = ManualClock(1_000)
        async with FakeOpenAI([Reply(events=TOOL_CUT, end="drop"), ANSWER]) as server:
            host, agent, model = await _agent_over(server, clock)
            async with model:
                agent.followup("read the path")
                await _settle(agent, clock)
                await host.aclose()
        assert len(server.requests) == 2
        assert server.requests[0].body == server.requests[1].body
        (retry,) = _retries(agent)
        assert retry.data.failure.code == "TRANSPORT"
        failed = [e for e in agent.session.events
                  if isinstance(e, AssistantChunkEvent) and e.seq < retry.seq]
        assert any(isinstance(e.data.chunk, ToolCallDelta) for e in failed)
        assert "tool/call" not in types(agent.session.events)
        messages = [e for e in agent.session.events if isinstance(e, AssistantMessageEvent)]
        assert [(m.data.turn, m.data.step) for m in messages] == [(1, 1)]
        assert _final_text(agent) == "The answer is 42."
    _run(main)


def test_an_empty_completion_is_retried() -> None:
    """transport-recovery.spec.ts:147 ("retries a wire-valid content-less completion without
    committing an empty message")."""
    async def main() -> None:
        clock = ManualClock(1_000)
        empty = Reply(events=(chunk({"role": "assistant"}, finish="stop"), usage_chunk(USAGE)))
        async with FakeOpenAI([empty, ANSWER]) as server:
            host, agent, model = await _agent_over(server, clock)
            async with model:
                agent.followup("go")
                await _settle(agent, clock)
                await host.aclose()
        assert len(server.requests) == 2
        assert server.requests[0].body == server.requests[1].body
        (retry,) = _retries(agent)
        assert (retry.data.failure.code, retry.data.failure.message) == (
            "EMPTY_RESPONSE", "model returned a completed response with no content")
        messages = [e for e in agent.session.events if isinstance(e, AssistantMessageEvent)]
        assert len(messages) == 1
        end = agent.session.events[-1]
        assert isinstance(end, TurnEndEvent) and end.data.reason.__struct_config__.tag == \
            "completed"
    _run(main)


def test_a_clean_end_before_done_is_not_retried() -> None:
    """transport-recovery.spec.ts:174 ("exposes a clean partial EOF as non-default-retryable
    STREAM_CLOSED"): a body that ends cleanly mid-tool-call is one request and the turn's
    error (our code NETWORK, DSH's text)."""
    async def main() -> None:
        clock = ManualClock(1_000)
        async with FakeOpenAI([Reply(events=TOOL_CUT, end="eof"), ANSWER]) as server:
            host, agent, model = await _agent_over(server, clock)
            async with model:
                agent.followup("go")
                await agent.when_idle()
                await host.aclose()
        assert len(server.requests) == 1
        assert _retries(agent) == []
        assert "assistant/message" not in types(agent.session.events)
        end = agent.session.events[-1]
        assert isinstance(end, TurnEndEvent) and isinstance(end.data.reason, TurnError)
        assert (end.data.reason.error.message, end.data.reason.error.code) == (
            "SSE stream ended without [DONE]", "NETWORK")
    _run(main)


def test_a_refused_connection_recovers_once_the_server_starts() -> None:
    """transport-recovery.spec.ts:86 ("recovers from a true refused connection after the
    endpoint starts during backoff")."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main() -> None:
        clock = ManualClock(1_000)
        server = FakeOpenAI([Reply(events=(chunk({"content": "connected after retry"},
                                                 finish="stop"),))], port=port)
        host, agent, model = await _agent_over(server, clock,
                                               base_url=f"http://127.0.0.1:{port}/v1")
        async with model:
            agent.followup("go")
            while not clock.waiting:
                await asyncio.sleep(0.001)
            async with server:
                await _settle(agent, clock)
                await host.aclose()
        assert len(server.requests) == 1
        assert [r.data.failure.code for r in _retries(agent)] == ["TRANSPORT"]
        assert types(agent.session.events).count("step/start") == 1
        assert _final_text(agent) == "connected after retry"
    _run(main)


def test_the_transport_budget_spent_the_turn_ends_transport() -> None:
    """transport-recovery.spec.ts:221 ("stops after the configured transport retry budget is
    exhausted"): three dropped connections under two retries."""
    async def main() -> None:
        clock = ManualClock(1_000)
        dropped = Reply(events=(chunk({"content": "x"}),), end="drop")
        async with FakeOpenAI([dropped, dropped, dropped]) as server:
            host, agent, model = await _agent_over(
                server, clock, retry=RetryPolicy(max_retries=2, initial_delay_ms=10,
                                                 max_delay_ms=10, jitter_ratio=0))
            async with model:
                agent.followup("go")
                await _settle(agent, clock)
                await host.aclose()
        assert len(server.requests) == 3
        assert types(agent.session.events).count("step/start") == 1
        assert len(_retries(agent)) == 2
        end = agent.session.events[-1]
        assert isinstance(end, TurnEndEvent) and isinstance(end.data.reason, TurnError)
        assert end.data.reason.error.code == "TRANSPORT"
        assert "the connection broke mid-response" in end.data.reason.error.message
    _run(main)
