"""DSH's retry invariants held as a pure check (core.retry.check_retries), ported from
``packages/llm/llm-retry/tests/invariant.spec.ts``; DSH's own retry logs and our generated
logs keep them, broken logs fail with a sentence naming the seq."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _budget import examples
from hypothesis import given, settings
from msgspec import UNSET
from returns.result import Failure, Success

from turnfork.core import check_balance, decode_log, decode_session, trace_log
from turnfork.core.events import (
    CancelUser,
    EpochHeader,
    Event,
    LlmCallConfig,
    LlmFailure,
    LlmRetryData,
    LlmRetryEvent,
    LlmRetryStartedData,
    LlmRetryStartedEvent,
    OpaqueEvent,
    RequestHeaderData,
    RequestHeaderEvent,
    StepData,
    StepEndEvent,
    StepStartEvent,
    TurnAborted,
    TurnEndData,
    TurnEndEvent,
    TurnError,
    TurnStartData,
    TurnStartEvent,
)
from turnfork.core.retry import MAX_TIMER_DELAY_MS, check_retries
from turnfork.core.strategies import closed_logs, session_logs

DSH = Path(__file__).resolve().parent.parent / "fixtures" / "dsh"
EMPTY_RESPONSE_RETRY = DSH / (
    "examples__acp-agent__tests__snapshots__empty-response-retry__session.jsonl")
PROVIDER_RETRY = DSH / "streams" / (
    "examples__headless-agent__tests__snapshots__provider-retry__stream-json.expected.jsonl.txt")

FAILURE = LlmFailure(message="provider busy", code="RATE_LIMIT", status=429)
NORMAL = LlmRetryData(retry_id="normal-retry-chain", turn=1, step=1, provider="mock",
                      mode="normal", policy_key="normal-policy", retry=1, max_retries=2,
                      delay_ms=1.0, failure=FAILURE)
ALWAYS = LlmRetryData(retry_id="always-retry-chain", turn=1, step=1, provider="mock",
                      mode="always", policy_key="always-policy", retry=1, delay_ms=1.0,
                      failure=FAILURE)


class Log:
    """A log built by appending payloads, numbered as it grows (a DSH session's ``append``)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, cls: type[Any], data: Any) -> Log:
        self.events.append(cls(seq=len(self.events), time=0, data=data))
        return self

    def turn(self, turn: int = 1) -> Log:
        return self.add(TurnStartEvent, TurnStartData(turn=turn))

    def step(self, turn: int = 1, step: int = 1) -> Log:
        return self.add(StepStartEvent, StepData(turn=turn, step=step))

    def step_end(self, turn: int = 1, step: int = 1) -> Log:
        return self.add(StepEndEvent, StepData(turn=turn, step=step))

    def header(self, provider: str = "mock") -> Log:
        return self.add(RequestHeaderEvent, RequestHeaderData(
            header=EpochHeader(config=LlmCallConfig(provider=provider, model="mock")),
            reason="initial"))

    def retry(self, data: LlmRetryData = NORMAL, **changes: Any) -> Log:
        return self.add(LlmRetryEvent, msgspec.structs.replace(data, **changes))

    def started(self, retry_id: str = NORMAL.retry_id, turn: int = 1, step: int = 1,
                retry: int = 1) -> Log:
        return self.add(LlmRetryStartedEvent, LlmRetryStartedData(
            retry_id=retry_id, turn=turn, step=step, retry=retry))

    def check(self) -> str | None:
        """``None`` when the log keeps the invariants, else the violation's message."""
        result = check_retries(self.events)
        if isinstance(result, Success):
            return None
        violation = result.failure()
        assert violation.rule == "retry"
        assert violation.seq == len(self.events) - 1, "the last event is the one checked"
        return violation.message


def _open_step(turn: int = 1, step: int = 1) -> Log:
    """invariant.spec.ts's ``openStep``: a turn and step open, a request header for mock."""
    return Log().turn(turn).step(turn, step).header()


def test_successive_normal_and_always_retries_in_open_steps_pass() -> None:
    """invariant.spec.ts:70: retries 1 and 2 (a zero delay allowed) in one step; an always
    retry in another session."""
    assert _open_step().retry().retry(retry=2, delay_ms=0.0).check() is None
    assert _open_step().retry(ALWAYS).check() is None


def test_the_whole_failure_payload_is_checked() -> None:
    """invariant.spec.ts:85 ("validates the complete durable failure payload")."""
    complete = LlmFailure(message="provider busy", code="RATE_LIMIT", status=429,
                          provider_retry_after_ms=25.0, request_id="request-1")
    assert _open_step().retry(ALWAYS, failure=complete).check() is None
    broken = [
        (LlmFailure(message="", code="RATE_LIMIT"), "empty message"),
        (LlmFailure(message="failed", code=""), "empty code"),
        (LlmFailure(message="failed", code="RATE_LIMIT", status=99), "status 99"),
        (LlmFailure(message="failed", code="RATE_LIMIT", status=600), "status 600"),
        (LlmFailure(message="failed", code="RATE_LIMIT", provider_retry_after_ms=0.0),
         "providerRetryAfterMs 0"),
        (LlmFailure(message="failed", code="RATE_LIMIT", request_id=""), "empty requestId"),
    ]
    for failure, words in broken:
        message = _open_step().retry(ALWAYS, failure=failure).check()
        assert message is not None and words in message, (failure, message)
        assert message.startswith("seq 3: llm/retry: its failure")


@pytest.mark.parametrize(("changes", "words"), [
    ({"retry_id": ""}, "empty retryId"),
    ({"retry": 0}, "must count from 1"),
    ({"max_retries": 0}, "maxRetries of at least 1"),
    ({"max_retries": UNSET}, "maxRetries of at least 1"),
    ({"retry": 3}, "exceeds maxRetries 2"),
    ({"mode": "always"}, "always mode must not carry maxRetries"),
    ({"provider": ""}, "empty provider"),
    ({"policy_key": ""}, "empty policyKey"),
    ({"delay_ms": -1.0}, "delayMs -1"),
    ({"delay_ms": MAX_TIMER_DELAY_MS + 1.0}, "not a delay a timer can wait"),
])
def test_invalid_retry_fields_are_refused(changes: dict[str, Any], words: str) -> None:
    """invariant.spec.ts:135 ("rejects invalid retry data"; a wrong type or an unknown mode is
    refused by the decoder before any check: see the last test)."""
    message = _open_step().retry(**changes).check()
    assert message is not None and words in message, message


def test_a_retry_outside_the_open_turn_and_step_is_refused() -> None:
    """invariant.spec.ts:157 ("rejects records outside the currently open turn and step")."""
    cases = [
        (Log().retry(), "outside any open turn"),
        (_open_step().retry(turn=2), "names turn 2, but the open turn is 1"),
        (_open_step().step_end().retry(), "in turn 1 outside any open step"),
        (Log().turn().retry(), "in turn 1 outside any open step"),
        (_open_step().retry(step=2), "names turn 1 step 2, but the open step is turn 1 step 1"),
        (_open_step().step_end().add(TurnEndEvent, TurnEndData(
            turn=1, reason=TurnAborted(reason=CancelUser()))).retry(), "outside any open turn"),
    ]
    for log, words in cases:
        message = log.check()
        assert message is not None and words in message, message


def test_numbers_follow_on_within_a_chain() -> None:
    """invariant.spec.ts:195 ("accepts successive retries in one step and rejects skipped
    numbering") and :206 (a repeated number is refused; a new step starts over)."""
    message = _open_step().retry().retry(retry=2).retry(ALWAYS, retry=2).check()
    assert message is not None and "number 2 should be 1" in message
    message = _open_step().retry().retry(retry=1).check()
    assert message is not None and "number 1 should be 2" in message
    reset = _open_step().retry().step_end().step(1, 2).retry(step=2, retry_id="step-2-chain")
    assert reset.check() is None


def test_one_chain_keeps_one_id_and_an_id_names_one_chain() -> None:
    """invariant.spec.ts:228 ("keeps one retry identity per provider-policy chain")."""
    message = _open_step().retry().retry(retry=2, retry_id="changed-retry-chain").check()
    assert message is not None and "changes its chain's retryId" in message
    message = _open_step().retry().retry(ALWAYS, retry_id=NORMAL.retry_id).check()
    assert message is not None and "already names another chain" in message


def test_a_started_retry_pairs_one_scheduled_attempt_once() -> None:
    """invariant.spec.ts:250 ("validates retry-started correlation and uniqueness")."""
    message = _open_step().started(retry_id="").check()
    assert message is not None and "empty retryId" in message
    message = _open_step().started(retry_id="missing-retry-chain").check()
    assert message is not None and "which no llm/retry scheduled" in message
    message = _open_step().retry().started(turn=2).check()
    assert message is not None and "its retry was scheduled in turn 1 step 1" in message
    message = _open_step().retry().started().started().check()
    assert message is not None and "repeats retry 1" in message
    assert _open_step().retry().started().check() is None


def test_a_chain_starts_afresh_in_a_new_turn() -> None:
    """invariant.spec.ts:278 ("starts a fresh retry chain after incomplete predecessor
    boundaries"): a turn that failed, and turns before it, do not continue a chain."""
    failed = (_open_step().retry().step_end()
              .add(TurnEndEvent, TurnEndData(turn=1, reason=TurnError(error=FAILURE))))
    failed.turn(2).step(2, 1).header().retry(turn=2, retry_id="second-turn-chain")
    assert failed.check() is None


def test_a_retry_names_the_provider_of_the_request_in_force() -> None:
    """invariant.spec.ts:306 ("rejects a provider that does not match the failed request
    route"), and :62 (no request header: no provider)."""
    message = _open_step().retry(ALWAYS, provider="other").check()
    assert message is not None and "failed request went to 'mock'" in message
    message = Log().turn().step().retry().check()
    assert message is not None and "no request/header" in message
    # The header in force may be from an earlier turn.
    earlier = (_open_step().step_end().add(TurnEndEvent, TurnEndData(
        turn=1, reason=TurnError(error=FAILURE))).turn(2).step(2, 1).retry(turn=2))
    assert earlier.check() is None


def test_a_whole_log_is_checked_from_its_start() -> None:
    """invariant.spec.ts:314 and :324 (late registration validates what is there): a scheduled
    and started attempt passes; a retry before any turn is reported."""
    assert _open_step().retry().started().check() is None
    message = Log().step().retry().check()
    assert message is not None and "outside any open turn" in message


def test_a_mode_dsh_does_not_have_is_refused_by_the_decoder() -> None:
    """invariant.spec.ts:135's ``unknown-mode`` and ``delay-type`` cases: the typed event
    refuses them when the log is read, naming the line."""
    good = json.loads(msgspec.json.encode(LlmRetryEvent(seq=0, time=0, data=NORMAL)))
    for key, value in (("mode", "sometimes"), ("delayMs", "1")):
        bad = json.loads(json.dumps(good))
        bad["data"][key] = value
        result = decode_log(json.dumps(bad).encode())
        assert isinstance(result, Failure)
        assert key in result.failure().problem, result.failure()


# ------------------------------------------------------------------ real and generated logs


def test_dsh_s_empty_response_retry_log_reads_typed_and_keeps_every_rule() -> None:
    """examples/acp-agent/tests/snapshots/empty-response-retry: the retry events are typed, in
    the failed call's turn and step, and the log is balanced and keeps the invariants."""
    _, events = decode_session(EMPTY_RESPONSE_RETRY.read_bytes(), projected=True).unwrap()
    retries = [e for e in events if isinstance(e, LlmRetryEvent | LlmRetryStartedEvent)]
    assert [type(e).__name__ for e in retries] == ["LlmRetryEvent", "LlmRetryStartedEvent"]
    assert not [e for e in events if isinstance(e, OpaqueEvent) and e.type.startswith("llm/")]
    scheduled = retries[0]
    assert isinstance(scheduled, LlmRetryEvent)
    assert (scheduled.data.turn, scheduled.data.step, scheduled.data.retry,
            scheduled.data.failure.code) == (1, 1, 1, "EMPTY_RESPONSE")
    assert isinstance(check_balance(events), Success)
    assert check_retries(events) == Success(None)


def test_dsh_s_provider_retry_stream_reads_typed_and_keeps_every_rule() -> None:
    """examples/headless-agent/tests/snapshots/provider-retry: the session events the headless
    CLI streamed decode typed, trace, and keep the invariants."""
    lines = [json.loads(line) for line in PROVIDER_RETRY.read_bytes().splitlines()]
    body = b"\n".join(json.dumps(line["event"]).encode() for line in lines
                      if line["type"] == "session_event")
    events = decode_log(body).unwrap()
    kinds = [type(e).__name__ for e in events]
    assert kinds.count("LlmRetryEvent") == kinds.count("LlmRetryStartedEvent") == 1
    assert isinstance(check_balance(events), Success)
    assert check_retries(events) == Success(None)


def test_a_broken_dsh_log_fails_with_its_seq() -> None:
    """The same DSH log with its retry's provider changed is reported at that event."""
    _, events = decode_session(EMPTY_RESPONSE_RETRY.read_bytes(), projected=True).unwrap()
    index = next(i for i, e in enumerate(events) if isinstance(e, LlmRetryEvent))
    event = events[index]
    assert isinstance(event, LlmRetryEvent)
    broken = list(events)
    broken[index] = msgspec.structs.replace(event, data=msgspec.structs.replace(
        event.data, provider="elsewhere"))
    assert isinstance(trace_log(broken), Success)  # the grammar is still kept
    violation = check_retries(broken).failure()
    assert violation.message == (
        f"seq {index}: llm/retry names provider 'elsewhere', but the failed request went to "
        "'deepseek-official'")


@settings(max_examples=examples(100), deadline=None)
@given(session_logs())
def test_every_generated_log_keeps_the_retry_invariants(log: tuple[Event, ...]) -> None:
    """The generator's logs (retried calls included) keep DSH's retry invariants."""
    result = check_retries(log)
    assert isinstance(result, Success), result.failure().message


@settings(max_examples=examples(50), deadline=None)
@given(closed_logs(min_turns=1))
def test_a_retry_moved_to_another_step_is_reported(log: tuple[Event, ...]) -> None:
    """Renaming a retry's step breaks the enclosure rule, at that retry."""
    index = next((i for i, e in enumerate(log) if isinstance(e, LlmRetryEvent)), None)
    if index is None:
        return
    event = log[index]
    assert isinstance(event, LlmRetryEvent)
    broken = list(log)
    broken[index] = msgspec.structs.replace(event, data=msgspec.structs.replace(
        event.data, step=event.data.step + 1))
    violation = check_retries(broken).failure()
    assert violation.seq == index and "but the open step is" in violation.problem
