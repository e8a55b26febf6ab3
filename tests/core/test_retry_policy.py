"""Retry policies, their canonical keys, backoff and the schedule decision (core.retry), ported
from DSH's ``packages/llm/llm/tests/retry-policy.spec.ts`` and the pure parts of
``packages/llm/llm-retry/tests/retry.spec.ts``: what delay and number a failed request gets,
and when it gets none."""

from __future__ import annotations

import json

import msgspec
import pytest
from msgspec import UNSET

from turnfork.core.events import LlmFailure, LlmRetryData, LlmRetryEvent
from turnfork.core.retry import (
    DEFAULT_RETRY_POLICY,
    DEFAULT_RETRYABLE_CODES,
    MAX_TIMER_DELAY_MS,
    RetryPolicy,
    backoff_delay_ms,
    retry_policy_key,
    schedule_retry,
)

BUSY = LlmFailure(message="busy", code="RATE_LIMIT", status=429)


def _normal(**changes: object) -> RetryPolicy:
    """retry.spec.ts's ``normalConfig``: two retries, 500 ms to 10 s, no jitter."""
    fields: dict[str, object] = {"max_retries": 2, "jitter_ratio": 0.0, **changes}
    return RetryPolicy(**fields)  # type: ignore[arg-type]


def _always(**changes: object) -> RetryPolicy:
    fields: dict[str, object] = {"mode": "always", "jitter_ratio": 0.0, **changes}
    return RetryPolicy(**fields)  # type: ignore[arg-type]


def _schedule(policy: RetryPolicy | None, failure: LlmFailure = BUSY, *,
              earlier: tuple[LlmRetryData, ...] = (), draw: float = 0.5,
              provider: str = "mock", retry_id: str = "chain-1") -> LlmRetryData | None:
    return schedule_retry(policy, failure, turn=1, step=1, provider=provider, earlier=earlier,
                          draw=draw, retry_id=retry_id)


def _chain(policy: RetryPolicy, failures: list[LlmFailure], draws: list[float],
           ) -> list[LlmRetryData | None]:
    """Schedule one retry per failure in one step, as a loop that retries each would."""
    earlier: list[LlmRetryData] = []
    out: list[LlmRetryData | None] = []
    for number, (failure, draw) in enumerate(zip(failures, draws, strict=True)):
        data = _schedule(policy, failure, earlier=tuple(earlier), draw=draw,
                         retry_id=f"chain-{number}")
        out.append(data)
        if data is not None:
            earlier.append(data)
    return out


# --------------------------------------------------------------------------- retry-policy.spec.ts


def test_the_default_policy_is_dsh_s_normal_default() -> None:
    """retry-policy.spec.ts:10 ("resolves immutable normal defaults"): five retries of the five
    transient codes, 500 ms to 10 s, 10% jitter; the policy cannot be changed."""
    policy = RetryPolicy()
    assert policy == DEFAULT_RETRY_POLICY
    assert (policy.mode, policy.max_retries, policy.retryable_codes, policy.initial_delay_ms,
            policy.max_delay_ms, policy.jitter_ratio) == (
        "normal", 5, ("EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT"),
        500, 10_000, 0.1)
    assert policy.retryable_codes == DEFAULT_RETRYABLE_CODES
    with pytest.raises(AttributeError):
        policy.max_retries = 1  # type: ignore[misc]


def test_a_configured_normal_policy_keeps_what_it_was_given() -> None:
    """retry-policy.spec.ts:26: a configured normal policy resolves to its own values, and a
    later change to the caller's list does not reach it (a tuple is the policy's own)."""
    codes = ["BUSY"]
    policy = RetryPolicy(max_retries=4, retryable_codes=tuple(codes), initial_delay_ms=25,
                         max_delay_ms=100, jitter_ratio=0)
    codes.append("LATE")
    assert (policy.max_retries, policy.retryable_codes, policy.initial_delay_ms,
            policy.max_delay_ms, policy.jitter_ratio) == (4, ("BUSY",), 25, 100, 0)


def test_always_mode_has_the_default_backoff() -> None:
    """retry-policy.spec.ts:52: always mode alone gets 500 ms, 10 s, 10%."""
    policy = RetryPolicy(mode="always")
    assert (policy.initial_delay_ms, policy.max_delay_ms, policy.jitter_ratio) == (500, 10_000, 0.1)
    assert retry_policy_key(policy) == '["always",500,10000,0.1]'


def test_always_mode_ignores_the_normal_only_fields() -> None:
    """retry-policy.spec.ts:62: normal-only fields left on an always policy change nothing:
    not its key, not what it retries."""
    layered = RetryPolicy(mode="always", max_retries=5, retryable_codes=("SERVER",))
    assert retry_policy_key(layered) == retry_policy_key(RetryPolicy(mode="always"))
    auth = LlmFailure(message="bad key", code="AUTH")
    scheduled = _schedule(layered, auth)
    assert scheduled is not None and scheduled.max_retries is UNSET


@pytest.mark.parametrize(("fields", "words"), [
    ({"max_retries": -1}, "max_retries"),
    ({"max_retries": 1.5}, "max_retries"),
    ({"max_retries": 2**53}, "max_retries"),
    ({"mode": "always", "initial_delay_ms": 0}, "initial_delay_ms"),
    ({"max_delay_ms": float("inf")}, "max_delay_ms"),
    ({"initial_delay_ms": MAX_TIMER_DELAY_MS + 1}, "initial_delay_ms"),
    ({"mode": "always", "max_delay_ms": MAX_TIMER_DELAY_MS + 1}, "max_delay_ms"),
    ({"initial_delay_ms": 20, "max_delay_ms": 10}, "must be at most max_delay_ms"),
    ({"mode": "always", "jitter_ratio": 1.1}, "jitter_ratio"),
    ({"retryable_codes": ()}, "at least one"),
    ({"retryable_codes": ("SERVER", "SERVER")}, "must not repeat"),
    ({"retryable_codes": ("",)}, "non-empty strings"),
    ({"retryable_codes": (429,)}, "non-empty strings"),
    ({"retryable_codes": ["SERVER"]}, "must be a tuple"),
    ({"mode": "sometimes"}, 'mode must be "normal" or "always"'),
])
def test_an_invalid_policy_is_refused_naming_the_field(fields: dict[str, object],
                                                      words: str) -> None:
    """retry-policy.spec.ts:77 ("rejects invalid policy"): each out-of-range value is refused
    with a sentence naming it."""
    with pytest.raises(ValueError, match=words):
        RetryPolicy(**fields)  # type: ignore[arg-type]


def test_an_unknown_field_is_refused() -> None:
    """retry-policy.spec.ts:77 (the unknown-key cases ``maxRetires``, ``initialDelay``)."""
    with pytest.raises(TypeError, match="max_retires"):
        RetryPolicy(max_retires=1)  # type: ignore[call-arg]


# --------------------------------------------------------------------------- keys and delays


def test_the_policy_key_is_dsh_s_canonical_text() -> None:
    """retry.spec.ts:176 (its ``policyKey``), and DSH's own fixtures: codes sorted, numbers as
    JavaScript writes them."""
    assert retry_policy_key(_normal(retryable_codes=("SERVER", "RATE_LIMIT"))) == \
        '["normal",2,["RATE_LIMIT","SERVER"],500,10000,0]'
    # examples/acp-agent/retry.cordis.yml: two retries, 1 ms, zero jitter.
    assert retry_policy_key(RetryPolicy(max_retries=2, initial_delay_ms=1, max_delay_ms=1,
                                        jitter_ratio=0)) == \
        '["normal",2,["EMPTY_RESPONSE","RATE_LIMIT","SERVER","TIMEOUT","TRANSPORT"],1,1,0]'
    assert retry_policy_key(RetryPolicy(mode="always", initial_delay_ms=1_000,
                                        max_delay_ms=30_000, jitter_ratio=0.2)) == \
        '["always",1000,30000,0.2]'
    assert retry_policy_key(_always(initial_delay_ms=0.000001, max_delay_ms=1e-7 * 10**7)) == \
        '["always",0.000001,1,0]'


def test_the_key_changes_with_every_field_that_changes_behaviour() -> None:
    """Two policies that behave differently never share a key; the code order does not
    count (eligibility is set membership)."""
    base = _normal()
    variants = [_normal(max_retries=3), _normal(retryable_codes=("SERVER",)),
                _normal(initial_delay_ms=501), _normal(max_delay_ms=10_001),
                _normal(jitter_ratio=0.2), _always()]
    keys = {retry_policy_key(policy) for policy in [base, *variants]}
    assert len(keys) == len(variants) + 1
    assert retry_policy_key(_normal(retryable_codes=("TIMEOUT", "SERVER"))) == \
        retry_policy_key(_normal(retryable_codes=("SERVER", "TIMEOUT")))


def test_backoff_doubles_from_the_initial_delay_up_to_the_cap() -> None:
    """Exponential from 500 ms, capped at 10 s, before and after the jitter."""
    policy = _normal()
    assert [backoff_delay_ms(policy, retry, 0.5) for retry in range(1, 8)] == [
        500, 1000, 2000, 4000, 8000, 10_000, 10_000]
    assert backoff_delay_ms(policy, 5000, 0.5) == 10_000
    assert backoff_delay_ms(RetryPolicy(jitter_ratio=0.5), 5, 1.0) == 10_000


@pytest.mark.parametrize("bad", [-0.01, 1.01, float("nan")])
def test_a_draw_outside_the_unit_interval_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="draw"):
        backoff_delay_ms(RetryPolicy(), 1, bad)


# --------------------------------------------------------------------------- the schedule


def test_a_retry_records_its_policy_number_budget_delay_and_failure() -> None:
    """retry.spec.ts:176 ("records the scheduled delay before retrying the request"): the
    payload, in DSH's keys and key order."""
    data = _schedule(_normal(retryable_codes=("SERVER", "RATE_LIMIT")), draw=0.5)
    assert data is not None
    event = LlmRetryEvent(seq=3, time=0, data=data)
    wire = json.loads(msgspec.json.encode(event), object_pairs_hook=list)
    payload = dict(wire)["data"]
    assert [key for key, _ in payload] == ["retryId", "turn", "step", "provider", "mode",
                                           "policyKey", "retry", "maxRetries", "delayMs",
                                           "failure"]
    assert dict(payload) | {"failure": dict(dict(payload)["failure"])} == {
        "retryId": "chain-1", "turn": 1, "step": 1, "provider": "mock", "mode": "normal",
        "policyKey": '["normal",2,["RATE_LIMIT","SERVER"],500,10000,0]', "retry": 1,
        "maxRetries": 2, "delayMs": 500, "failure": {"message": "busy", "code": "RATE_LIMIT",
                                                     "status": 429}}


def test_jittered_backoff_then_the_budget_ends_it() -> None:
    """retry.spec.ts:311 ("applies bounded exponential jitter and stops after the configured
    budget"): draws 0 and 1 give 450 and 1,100 ms; the third failure of a two-retry budget is
    the turn's."""
    server = LlmFailure(message="busy", code="SERVER")
    first, second, third = _chain(_normal(jitter_ratio=0.1), [server] * 3, [0.0, 1.0, 0.5])
    assert first is not None and second is not None
    assert (first.delay_ms, second.delay_ms) == (450, 1100)
    assert (first.retry, second.retry) == (1, 2)
    assert second.retry_id == first.retry_id == "chain-0"
    assert third is None


def test_full_jitter_may_schedule_no_wait_at_all() -> None:
    """retry.spec.ts:346 ("accepts the zero-delay lower jitter bound")."""
    data = _schedule(_normal(initial_delay_ms=1, max_delay_ms=1, jitter_ratio=1),
                     LlmFailure(message="busy", code="SERVER"), draw=0.0)
    assert data is not None and data.delay_ms == 0


def test_a_bounded_retry_after_is_the_delay_and_an_over_cap_one_ends_the_turn() -> None:
    """retry.spec.ts:367: a provider delay at or below the cap is used verbatim (no jitter,
    even at jitter 1); one above it makes normal mode give up."""
    wait = LlmFailure(message="wait", code="RATE_LIMIT", provider_retry_after_ms=2000.0)
    data = _schedule(_normal(jitter_ratio=1), wait, draw=0.0)
    assert data is not None and data.delay_ms == 2000
    at_cap = msgspec.structs.replace(wait, provider_retry_after_ms=10_000.0)
    data = _schedule(_normal(jitter_ratio=1), at_cap, draw=0.0)
    assert data is not None and data.delay_ms == 10_000
    too_long = msgspec.structs.replace(wait, provider_retry_after_ms=10_001.0)
    assert _schedule(RetryPolicy(), too_long) is None


def test_a_retry_after_that_is_not_a_positive_number_is_not_used() -> None:
    """Only a positive finite provider delay replaces local backoff."""
    for value in (0.0, -5.0, float("inf")):
        failure = LlmFailure(message="wait", code="RATE_LIMIT", provider_retry_after_ms=value)
        data = _schedule(_normal(), failure)
        assert data is not None and data.delay_ms == 500, value


def test_always_mode_keeps_its_own_backoff_over_an_over_cap_retry_after() -> None:
    """retry.spec.ts:398 ("uses local jittered backoff when always mode receives an over-cap
    Retry-After"): 2 ms × 1.5, within the 4 ms cap."""
    failure = LlmFailure(message="wait too long", code="AUTH", provider_retry_after_ms=10.0)
    data = _schedule(_always(initial_delay_ms=2, max_delay_ms=4, jitter_ratio=0.5), failure,
                     draw=1.0)
    assert data is not None and data.delay_ms == 3 and data.mode == "always"


def test_a_failure_normal_mode_does_not_list_ends_the_turn() -> None:
    """retry.spec.ts:424 ("delegates non-transient failures without scheduling a timer"), and
    :437: a route with no policy never retries."""
    assert _schedule(RetryPolicy(), LlmFailure(message="bad key", code="AUTH")) is None
    assert _schedule(None, BUSY) is None
    assert _schedule(RetryPolicy(max_retries=0), BUSY) is None


def test_every_default_code_is_retried() -> None:
    """retry.spec.ts:226 (EMPTY_RESPONSE under the default codes) and the README's list."""
    for code in ("EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT"):
        assert _schedule(RetryPolicy(), LlmFailure(message="x", code=code)) is not None, code
    for code in ("AUTH", "QUOTA", "INVALID_REQUEST", "NETWORK", "STREAM_CLOSED", "UNKNOWN",
                 "ABORTED", "CONTEXT_WINDOW_EXCEEDED"):
        assert _schedule(RetryPolicy(), LlmFailure(message="x", code=code)) is None, code


def test_budgets_and_numbers_belong_to_one_provider_and_policy() -> None:
    """retry.spec.ts:531 ("keeps finite retry budgets scoped to the failed provider") and :576
    (a replaced route's changed policy starts its own history and chain)."""
    one = _normal(max_retries=1, initial_delay_ms=1, max_delay_ms=1)
    failure = LlmFailure(message="failed", code="SERVER")
    mock = _schedule(one, failure, provider="mock", retry_id="a")
    assert mock is not None and mock.retry == 1
    assert _schedule(one, failure, earlier=(mock,), provider="mock") is None
    other = _schedule(one, failure, earlier=(mock,), provider="other", retry_id="b")
    assert other is not None and (other.retry, other.retry_id) == (1, "b")
    replaced = _schedule(_normal(max_retries=1, initial_delay_ms=3, max_delay_ms=3), failure,
                         earlier=(mock,), provider="mock", retry_id="c")
    assert replaced is not None and (replaced.retry, replaced.retry_id) == (1, "c")
    assert replaced.policy_key != mock.policy_key
    elsewhere = schedule_retry(one, failure, turn=1, step=2, provider="mock", earlier=(mock,),
                               draw=0.5, retry_id="d")
    assert elsewhere is not None and elsewhere.retry == 1


def test_always_mode_has_no_bound() -> None:
    """retry.spec.ts:654 ("keeps always mode unbounded"): four retries of a permanent failure,
    1.1, 2.2, 4 and 4 ms (jitter 0.1, draw 1, cap 4), no maxRetries."""
    policy = _always(initial_delay_ms=1, max_delay_ms=4, jitter_ratio=0.1)
    auth = LlmFailure(message="auth", code="AUTH")
    chain = _chain(policy, [auth] * 4, [1.0] * 4)
    assert [(d.retry, d.delay_ms, d.max_retries) for d in chain if d is not None] == [
        (1, 1.1, UNSET), (2, 2.2, UNSET), (3, 4, UNSET), (4, 4, UNSET)]
    assert _chain(policy, [auth] * 50, [0.5] * 50)[-1] is not None
