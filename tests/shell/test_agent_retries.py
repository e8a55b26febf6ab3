"""Failed model calls retried by an agent as DSH's llm-retry does it: the route's policy, the
``llm/retry`` written (and durable) before the wait on the host's clock, ``llm/retry-started``
after it, the same request again in the same turn and step. Ported from DSH's
``packages/llm/llm-retry/tests/retry.spec.ts``, ``persistence.spec.ts`` and
``loader-composition.spec.ts``, and ``packages/core/agent-loop/tests/request-error.spec.ts``."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from _shell_helpers import assert_balanced, run, types
from msgspec import UNSET
from returns.result import Success

from turnfork.core import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    FinishError,
    LlmFailure,
    TextBlock,
    ToolCallBlock,
    TurnEndEvent,
    TurnError,
    decode_session,
)
from turnfork.core.events import LlmRetryEvent, LlmRetryStartedEvent, StepData, StepStartEvent
from turnfork.core.retry import RetryPolicy, check_retries
from turnfork.shell import (
    CountingIds,
    Host,
    JsonlSessionStore,
    ManualClock,
    Reply,
    ScriptedModel,
    Tool,
    ToolContext,
)
from turnfork.shell.agent import Agent

DSH_EMPTY_RESPONSE = Path(__file__).resolve().parent.parent / "fixtures" / "dsh" / (
    "examples__acp-agent__tests__snapshots__empty-response-retry__session.jsonl")
#: retry.spec.ts's ``normalConfig``: two retries, 500 ms to 10 s, no jitter.
TWO_RETRIES = RetryPolicy(max_retries=2, jitter_ratio=0)


def _failing(code: str, message: str, **failure: object) -> Reply:
    return Reply(finish=FinishError(failure=LlmFailure(message=message, code=code,
                                                       **failure)))  # type: ignore[arg-type]


def _host(clock: ManualClock | None = None, **options: object) -> Host:
    return Host(clock=clock or ManualClock(1_000), ids=CountingIds("id-"),
                **options)  # type: ignore[arg-type]


def _agent(host: Host, script: list[Reply], *, retry: RetryPolicy | None = TWO_RETRIES,
           provider: str = "mock") -> tuple[Agent, ScriptedModel]:
    """retry.spec.ts's harness: a scripted route, by default under ``TWO_RETRIES``."""
    model = ScriptedModel(script)
    host.models.register(provider, model, retry=retry)
    return host.create_agent(provider=provider, model="mock"), model


async def _until_waiting(clock: ManualClock) -> None:
    """Let the agent run until it waits on the clock (bounded: the test's timeout)."""
    while clock.waiting == 0:
        await asyncio.sleep(0)


def _retries(agent: Agent) -> list[LlmRetryEvent]:
    return [e for e in agent.session.events if isinstance(e, LlmRetryEvent)]


def _last_text(agent: Agent) -> str:
    message = agent.session.history()[-1]
    return "".join(b.text for b in message.content if isinstance(b, TextBlock))


def test_a_rate_limited_call_is_retried_after_the_recorded_delay() -> None:
    """retry.spec.ts:176 ("records the scheduled delay before retrying the request"): the
    event names the policy, number, budget and delay; the wait is on the host's clock; the
    retry is the same step; request-error.spec.ts:50: one turn."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        agent, model = _agent(host, [_failing("RATE_LIMIT", "busy", status=429),
                                     Reply.text("done")],
                              retry=RetryPolicy(max_retries=2, jitter_ratio=0,
                                                retryable_codes=("SERVER", "RATE_LIMIT")))
        agent.followup("go")
        await _until_waiting(clock)
        (event,) = _retries(agent)
        assert event.data.retry_id and event.data.retry_id == event.data.retry_id.strip()
        assert (event.data.turn, event.data.step, event.data.provider, event.data.mode,
                event.data.policy_key, event.data.retry, event.data.max_retries,
                event.data.delay_ms) == (
            1, 1, "mock", "normal", '["normal",2,["RATE_LIMIT","SERVER"],500,10000,0]', 1, 2,
            500)
        assert event.data.failure == LlmFailure(message="busy", code="RATE_LIMIT", status=429)
        assert model.calls == 1
        clock.advance(499)
        for _ in range(20):
            await asyncio.sleep(0)
        assert model.calls == 1 and clock.waiting == 1
        clock.advance(1)
        await agent.when_idle()
        assert model.calls == 2
        events = agent.session.events
        assert [e.data for e in events if isinstance(e, StepStartEvent)] == [
            StepData(turn=1, step=1)]
        assert types(events).count("turn/start") == 1
        started = [e for e in events if isinstance(e, LlmRetryStartedEvent)]
        assert [(s.data.retry_id, s.data.turn, s.data.step, s.data.retry) for s in started] == [
            (event.data.retry_id, 1, 1, 1)]
        assert started[0].time == event.time + 500  # written when the wait was over
        assert _last_text(agent) == "done"
        assert_balanced(events)
        assert check_retries(events) == Success(None)
    run(main)


def test_an_empty_completion_is_retried_under_the_default_codes() -> None:
    """retry.spec.ts:226 ("retries an EMPTY_RESPONSE error finish under the default retryable
    codes"): the default policy (no retry= given) covers it; one assistant message."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        model = ScriptedModel([_failing("EMPTY_RESPONSE",
                                        "model returned a completed response with no content"),
                               Reply.text("recovered")])
        host.models.register("mock", model)  # DSH's default policy
        agent = host.create_agent(provider="mock", model="mock")
        agent.followup("go")
        await _until_waiting(clock)
        (event,) = _retries(agent)
        assert event.data.failure.code == "EMPTY_RESPONSE"
        assert event.data.max_retries == 5 and 450 <= event.data.delay_ms <= 550
        clock.advance(550)
        await agent.when_idle()
        messages = [e for e in agent.session.events if isinstance(e, AssistantMessageEvent)]
        assert [(m.data.turn, m.data.step) for m in messages] == [(1, 1)]
        assert _last_text(agent) == "recovered"
    run(main)


def test_a_failed_call_s_partial_output_stays_in_its_chunks_and_runs_nothing() -> None:
    """retry.spec.ts:261 ("leaves partial failed chunks on their step without committing a
    message or tool side effect"), and :694 (the retried request's messages are the failed
    one's: neither the provider's diagnostic nor the partial output enters them)."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        runs: list[str] = []

        async def danger(args: dict[str, object], ctx: ToolContext) -> str:
            runs.append(ctx.call_id)
            return "unexpected"

        host.tools.register(Tool("danger", "must not run for a failed call", {"type": "object"},
                                 danger))
        diagnostic = "private provider diagnostic must not enter context"
        partial = Reply(blocks=(TextBlock(text="discarded partial output"),
                                ToolCallBlock(id="discarded-call", name="danger",
                                              arguments="{}")),
                        finish=FinishError(failure=LlmFailure(message=diagnostic,
                                                              code="TRANSPORT")),
                        chunk_size=1000)
        agent, model = _agent(host, [partial, Reply.text("recovered")])
        agent.followup("safe input")
        await _until_waiting(clock)
        clock.advance(500)
        await agent.when_idle()
        events = agent.session.events
        retry = _retries(agent)[0]
        failed = [e for e in events if isinstance(e, AssistantChunkEvent) and e.seq < retry.seq]
        assert len(failed) == 7  # two blocks of start, delta, end, and the error finish
        (message,) = [e for e in events if isinstance(e, AssistantMessageEvent)]
        assert not set(message.source_event_seqs or ()) & {e.seq for e in failed}
        assert "tool/call" not in types(events) and runs == []
        assert _last_text(agent) == "recovered"
        first, second = model.requests
        assert list(second.messages) == list(first.messages)
        assert (second.system, second.tools, second.config) == (first.system, first.tools,
                                                                 first.config)
        sent = repr(list(second.messages))
        assert diagnostic not in sent and "discarded partial output" not in sent
        assert any(e.data.failure.message == diagnostic for e in _retries(agent))
    run(main)


def test_the_budget_spent_the_last_failure_ends_the_turn() -> None:
    """retry.spec.ts:311 ("stops after the configured budget"): three SERVER failures under a
    two-retry budget are three requests, two retries, and the turn ends with the third."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        agent, model = _agent(host, [_failing("SERVER", f"busy {n}") for n in
                                     ("one", "two", "three")])
        agent.followup("go")
        for delay in (500, 1000):
            await _until_waiting(clock)
            clock.advance(delay)
        await agent.when_idle()
        assert model.calls == 3
        assert [e.data.delay_ms for e in _retries(agent)] == [500, 1000]
        end = agent.session.events[-1]
        assert isinstance(end, TurnEndEvent)
        assert end.data.reason == TurnError(error=LlmFailure(message="busy three",
                                                             code="SERVER"))
        assert types(agent.session.events).count("step/start") == 1
        assert check_retries(agent.session.events) == Success(None)
    run(main)


def test_a_bounded_retry_after_is_waited_exactly_and_an_over_cap_one_is_not() -> None:
    """retry.spec.ts:367 ("uses a bounded provider Retry-After verbatim and delegates an
    over-cap instruction")."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        agent, model = _agent(host, [_failing("RATE_LIMIT", "wait",
                                              provider_retry_after_ms=2000.0),
                                     Reply.text("done")],
                              retry=RetryPolicy(max_retries=2, jitter_ratio=1))
        agent.followup("go")
        await _until_waiting(clock)
        assert _retries(agent)[0].data.delay_ms == 2000
        clock.advance(1999)
        await asyncio.sleep(0)
        assert clock.waiting == 1
        clock.advance(1)
        await agent.when_idle()
        assert model.calls == 2

        other, rejected = _agent(host, [_failing("RATE_LIMIT", "wait too long",
                                                 provider_retry_after_ms=10_001.0)],
                                 retry=RetryPolicy(), provider="rejected")
        other.followup("go")
        await other.when_idle()
        assert rejected.calls == 1 and _retries(other) == []
    run(main)


def test_a_failure_the_policy_does_not_retry_ends_the_turn_without_a_wait() -> None:
    """retry.spec.ts:424 ("delegates non-transient failures without scheduling a timer"), and a
    route registered with ``retry=None``."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        agent, model = _agent(host, [_failing("AUTH", "bad key")], retry=RetryPolicy())
        agent.followup("go")
        await agent.when_idle()
        assert model.calls == 1 and _retries(agent) == [] and clock.waiting == 0
        plain, off = _agent(host, [_failing("RATE_LIMIT", "busy")], retry=None,
                            provider="no-retry")
        plain.followup("go")
        await plain.when_idle()
        assert off.calls == 1 and _retries(plain) == []
    run(main)


def test_a_request_no_model_serves_is_not_retried() -> None:
    """retry.spec.ts:437 ("delegates when no final adapter served the failed request")."""
    async def main() -> None:
        host = _host()
        agent, model = _agent(host, [Reply.text("must not run")],
                              retry=RetryPolicy(mode="always"))
        host.models.unregister("mock")
        agent.followup("missing route")
        await agent.when_idle()
        assert model.calls == 0 and _retries(agent) == []
        end = agent.session.events[-1]
        assert isinstance(end, TurnEndEvent) and isinstance(end.data.reason, TurnError)
        assert "no model registered for provider 'mock'" in end.data.reason.error.message
    run(main)


def test_the_policy_is_the_failed_request_s_route_s() -> None:
    """retry.spec.ts:463 ("selects policy by the failed request provider"): the same failure
    ends a turn on a normal route and is retried on an always route."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        normal, first = _agent(host, [_failing("AUTH", "mock auth failed")],
                               retry=RetryPolicy())
        always, second = _agent(host, [_failing("AUTH", "other auth failed"),
                                       Reply.text("other recovered")],
                                retry=RetryPolicy(mode="always", initial_delay_ms=1,
                                                  max_delay_ms=1, jitter_ratio=0),
                                provider="other")
        normal.followup("normal")
        await normal.when_idle()
        assert _retries(normal) == []
        always.followup("always")
        await _until_waiting(clock)
        (event,) = _retries(always)
        assert (event.data.provider, event.data.mode, event.data.retry, event.data.delay_ms,
                event.data.max_retries) == ("other", "always", 1, 1, UNSET)
        clock.advance(1)
        await always.when_idle()
        assert (first.calls, second.calls) == (1, 2)
        assert _last_text(always) == "other recovered"
    run(main)


def test_cancellation_during_the_wait_writes_no_started_event() -> None:
    """retry.spec.ts:952 ("lets turn cancellation win during backoff without opening another
    step"): the turn ends aborted, the wait is gone, the model is not called again."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        agent, model = _agent(host, [_failing("AUTH", "permanent"), Reply.text("must not run")],
                              retry=RetryPolicy(mode="always"))
        agent.followup("go")
        await _until_waiting(clock)
        agent.cancel()
        await agent.when_idle()
        assert model.calls == 1 and clock.waiting == 0
        kinds = types(agent.session.events)
        assert "llm/retry" in kinds and "llm/retry-started" not in kinds
        assert kinds[-2:] == ["step/end", "turn/end"] and kinds.count("step/start") == 1
        end = agent.session.events[-1]
        assert isinstance(end, TurnEndEvent) and end.data.reason.__struct_config__.tag == "aborted"
        assert_balanced(agent.session.events)
        assert check_retries(agent.session.events) == Success(None)
    run(main)


def test_disposal_during_the_wait_ends_it() -> None:
    """retry.spec.ts:776 ("aborts and drains a captured backoff before plugin disposal
    completes"), for the agent's own disposal: no second request, no waiting left."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        agent, model = _agent(host, [_failing("TRANSPORT", "temporary"),
                                     Reply.text("must not run")],
                              retry=RetryPolicy(mode="always"))
        agent.followup("go")
        await _until_waiting(clock)
        await agent.dispose()
        clock.advance(60_000)
        await asyncio.sleep(0)
        assert model.calls == 1 and clock.waiting == 0
        assert types(agent.session.events).count("step/start") == 1
    run(main)


def test_the_scheduled_retry_is_durable_before_the_wait(tmp_path: Path) -> None:
    """DSH's llm-retry: "each scheduled retry is durable before its cancellable wait";
    persistence.spec.ts:32: an always retry round-trips through the store and adds no model
    message."""
    async def main() -> None:
        clock = ManualClock(1_000)
        store = JsonlSessionStore(tmp_path)
        host = Host(store=store, clock=clock, ids=CountingIds("id-"))
        agent, _ = _agent(host, [_failing("RATE_LIMIT", "provider busy", status=429),
                                 Reply.text("ok")],
                          retry=RetryPolicy(mode="always", jitter_ratio=0.1))
        agent.followup("go")
        await _until_waiting(clock)
        path = store.path_for(agent.session.header)
        on_disk = [json.loads(line) for line in path.read_bytes().splitlines()]
        assert on_disk[-1]["type"] == "llm/retry"
        assert "maxRetries" not in on_disk[-1]["data"]
        assert on_disk[-1]["data"]["policyKey"] == '["always",500,10000,0.1]'
        clock.advance(10_000)
        await agent.when_idle()
        _, events = decode_session(path.read_bytes()).unwrap()
        assert events == tuple(agent.session.events)
        assert len(agent.session.history()) == 2  # the prompt and the answer, nothing more
        await host.aclose()
    run(main)


def test_each_scheduled_retry_is_logged_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    """The agent logs every retry it schedules, once, on its module's logger."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        agent, _ = _agent(host, [_failing("SERVER", "overloaded", status=503),
                                 Reply.text("ok")])
        agent.followup("go")
        await _until_waiting(clock)
        clock.advance(500)
        await agent.when_idle()
    with caplog.at_level(logging.WARNING, logger="turnfork.shell.agent"):
        run(main)
    (record,) = [r for r in caplog.records if r.name == "turnfork.shell.agent"]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == ("agent id-1: the request to mock failed (SERVER: "
                                   "overloaded); retry 1 of 2 in 500 ms (turn 1, step 1)")


def test_a_policy_given_at_registration_reaches_the_loop() -> None:
    """loader-composition.spec.ts:88 ("loads provider-supplied policy and records recovery
    through the shipping loop"): one retry, then the answer."""
    async def main() -> None:
        clock = ManualClock(1_000)
        host = _host(clock)
        policy = RetryPolicy(max_retries=1, retryable_codes=("RATE_LIMIT", "SERVER"),
                             initial_delay_ms=1, max_delay_ms=1, jitter_ratio=0)
        assert host.models.retry_policy("mock") is None
        agent, model = _agent(host, [_failing("SERVER", "temporary outage"),
                                     Reply.text("recovered")], retry=policy)
        assert host.retry_policy("mock") is policy
        agent.followup("recover")
        await _until_waiting(clock)
        clock.advance(1)
        await agent.when_idle()
        assert model.calls == 2 and len(_retries(agent)) == 1
        assert _last_text(agent) == "recovered"
    run(main)


def test_registering_something_else_as_a_policy_is_refused() -> None:
    host = _host()
    with pytest.raises(TypeError, match="retry must be a RetryPolicy or None"):
        host.models.register("mock", ScriptedModel(), retry=5)  # type: ignore[arg-type]


def test_the_agent_writes_dsh_s_empty_response_retry_shape() -> None:
    """examples/acp-agent/tests/snapshots/empty-response-retry: our agent, given the same
    scenario and policy (two retries, 1 ms, zero jitter), writes the same events in the same
    order from step/start to turn/end, with the same retry payload apart from its id."""
    _, theirs = decode_session(DSH_EMPTY_RESPONSE.read_bytes(), projected=True).unwrap()

    async def main() -> list[object]:
        clock = ManualClock(1_000)
        host = _host(clock, sandbox_mode="danger-full-access")
        agent, _ = _agent(host, [Reply(usage=None, finish=FinishError(failure=LlmFailure(
            message="model returned a completed response with no content",
            code="EMPTY_RESPONSE"))), Reply.text("Recovered.", usage=(12, 3))],
            retry=RetryPolicy(max_retries=2, initial_delay_ms=1, max_delay_ms=1,
                              jitter_ratio=0), provider="deepseek-official")
        agent.followup("This prompt first receives an empty completion, then a retried reply.")
        await _until_waiting(clock)
        clock.advance(1)
        await agent.when_idle()
        return list(agent.session.events)

    ours = run(main)

    def shape(events: list[object] | tuple[object, ...]) -> list[str]:
        kinds = [t for t in types(events) if t not in ("user/message", "session/title")]  # type: ignore[arg-type]
        return kinds[kinds.index("step/start"):]

    # DSH's failed call streamed a usage chunk before its error finish; ours streams only the
    # finish, so its chunks are compared by kind of run, not count.
    def squeezed(kinds: list[str]) -> list[str]:
        return [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]

    assert squeezed(shape(ours)) == squeezed(shape(list(theirs)))
    ours_retry = next(e for e in ours if isinstance(e, LlmRetryEvent))
    theirs_retry = next(e for e in theirs if isinstance(e, LlmRetryEvent))
    assert (ours_retry.data.turn, ours_retry.data.step, ours_retry.data.mode,
            ours_retry.data.policy_key, ours_retry.data.retry, ours_retry.data.max_retries,
            ours_retry.data.delay_ms, ours_retry.data.failure, ours_retry.data.provider) == (
        theirs_retry.data.turn, theirs_retry.data.step, theirs_retry.data.mode,
        theirs_retry.data.policy_key, theirs_retry.data.retry, theirs_retry.data.max_retries,
        theirs_retry.data.delay_ms, theirs_retry.data.failure, theirs_retry.data.provider)
