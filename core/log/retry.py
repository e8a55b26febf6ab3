"""Model-request retries as DSH's llm-retry does them: the policy, the schedule, the log's rules.

Rules of this module:

* A :class:`RetryPolicy` belongs to a model route (the shell registers one per provider). Mode
  ``normal`` retries the failures whose code is in ``retryable_codes``, at most
  ``max_retries`` times per step; mode ``always`` retries every model-request failure until
  the request succeeds or the turn is cancelled. Omitted, a route gets :data:`DEFAULT_RETRY_POLICY`:
  normal, five retries of ``EMPTY_RESPONSE``, ``RATE_LIMIT``, ``SERVER``, ``TIMEOUT`` and
  ``TRANSPORT``, backoff from 500 ms to 10 s with 10 % jitter.
* The delay of retry *n* is ``min(initial · 2^(n−1), max)``, times a uniform factor in
  ``[1 − jitter, 1 + jitter]``, capped at ``max`` again (:func:`backoff_delay_ms`). The core
  has no randomness: the caller passes the uniform draw. A provider's ``Retry-After``
  (``providerRetryAfterMs``, positive and finite) at or below ``max`` is the delay, exactly
  and without jitter; above it, normal mode gives up and always mode keeps its own backoff.
* Retry numbers count within one step, per provider and complete policy
  (:func:`retry_policy_key`, DSH's canonical key: every field that changes behaviour, the
  codes sorted), so a route replaced with another policy starts its own count; one chain
  keeps one ``retryId``.
* :func:`schedule_retry` is the decision, pure: the ``llm/retry`` payload to write before the
  wait, or ``None`` when the failure ends the turn. The turn machine (:mod:`.loop`) writes it,
  has the shell wait, then writes ``llm/retry-started`` and calls the model again over the same
  history: a retry stays in its turn and step, and nothing of it is model-visible.
* :func:`check_retries` holds a log to DSH's retry invariants (its ``invariant`` companion):
  each ``llm/retry`` inside the open turn and step, naming the provider of the request header
  in force, with mode-specific bounds, the next number of its provider-policy chain and that
  chain's id, a delay a timer can wait; each ``llm/retry-started`` after the one scheduled
  attempt it names, once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Final, Literal

import msgspec
from msgspec import UNSET
from returns.result import Failure, Result, Success

from .._checking import checked
from .events import (
    Event,
    LlmFailure,
    LlmRetryData,
    LlmRetryEvent,
    LlmRetryStartedData,
    LlmRetryStartedEvent,
    RequestHeaderEvent,
    StepEndEvent,
    StepStartEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .trace import Violation

__all__ = [
    "RetryPolicy",
    "DEFAULT_RETRY_POLICY",
    "DEFAULT_RETRYABLE_CODES",
    "MAX_TIMER_DELAY_MS",
    "retry_policy_key",
    "backoff_delay_ms",
    "schedule_retry",
    "check_retries",
]

#: The longest delay a JavaScript timer can wait (2^31 − 1 ms), DSH's bound on every delay.
MAX_TIMER_DELAY_MS: Final = 2_147_483_647
#: The failures normal mode retries unless told otherwise (DSH's default list).
DEFAULT_RETRYABLE_CODES: Final = ("EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT",
                                  "TRANSPORT")
_MAX_SAFE_INTEGER: Final = 2**53 - 1


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """How a model route retries a failed request (DSH's provider ``retryPolicy``).

    Args:
        mode: ``"normal"`` (bounded, the listed codes) or ``"always"`` (every failure, no
            bound; ``max_retries`` and ``retryable_codes`` are then not used).
        max_retries: retries after the first request, per step (0: none).
        retryable_codes: the failure codes normal mode retries, at least one, no duplicates.
        initial_delay_ms: the first local backoff, > 0.
        max_delay_ms: the longest local backoff and the longest provider delay accepted,
            at least ``initial_delay_ms``, at most :data:`MAX_TIMER_DELAY_MS`.
        jitter_ratio: the symmetric jitter around each local delay, from 0 to 1.

    Raises:
        ValueError: a value out of its range, naming the field.

    >>> RetryPolicy().max_retries, RetryPolicy().max_delay_ms
    (5, 10000.0)
    >>> RetryPolicy(initial_delay_ms=20, max_delay_ms=10)
    Traceback (most recent call last):
    ...
    ValueError: retry policy: initial_delay_ms (20) must be at most max_delay_ms (10)
    """

    mode: Literal["normal", "always"] = "normal"
    max_retries: int = 5
    retryable_codes: tuple[str, ...] = DEFAULT_RETRYABLE_CODES
    initial_delay_ms: float = 500.0
    max_delay_ms: float = 10_000.0
    jitter_ratio: float = 0.1

    def __post_init__(self) -> None:
        problem = _policy_problem(self)
        if problem is not None:
            raise ValueError(f"retry policy: {problem}")


def _policy_problem(policy: RetryPolicy) -> str | None:
    if policy.mode not in ("normal", "always"):
        return f'mode must be "normal" or "always", not {policy.mode!r}'
    for name in ("initial_delay_ms", "max_delay_ms"):
        value = getattr(policy, name)
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or not 0 < value <= MAX_TIMER_DELAY_MS:
            return (f"{name} must be a positive number of milliseconds no greater than "
                    f"{MAX_TIMER_DELAY_MS}, not {value!r}")
    if policy.initial_delay_ms > policy.max_delay_ms:
        return (f"initial_delay_ms ({policy.initial_delay_ms:g}) must be at most max_delay_ms "
                f"({policy.max_delay_ms:g})")
    jitter = policy.jitter_ratio
    if isinstance(jitter, bool) or not isinstance(jitter, int | float) \
            or not 0 <= jitter <= 1:
        return f"jitter_ratio must be between 0 and 1, not {jitter!r}"
    if policy.mode == "always":
        return None
    retries = policy.max_retries
    if isinstance(retries, bool) or not isinstance(retries, int) \
            or not 0 <= retries <= _MAX_SAFE_INTEGER:
        return f"max_retries must be a non-negative whole number, not {retries!r}"
    codes = policy.retryable_codes
    if not isinstance(codes, tuple):
        return f"retryable_codes must be a tuple of failure codes, not {type(codes).__name__}"
    if not codes:
        return "retryable_codes must name at least one failure code"
    if any(not isinstance(code, str) or not code for code in codes):
        return "retryable_codes must hold only non-empty strings"
    if len(set(codes)) != len(codes):
        return "retryable_codes must not repeat a code"
    return None


#: What a route gets when it names no policy.
DEFAULT_RETRY_POLICY: Final = RetryPolicy()


def _js_number(value: float) -> str:
    """``value`` as JavaScript's ``String(number)`` writes it (DSH's keys are ``JSON.stringify``
    of numbers): no ``.0`` on whole numbers, exponents from 1e21 and below 1e-6."""
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # where the decimal point goes, counted from the left
    if len(text) <= point <= 21:
        out = text + "0" * (point - len(text))
    elif 0 < point <= 21:
        out = f"{text[:point]}.{text[point:]}"
    elif -6 < point <= 0:
        out = "0." + "0" * -point + text
    else:
        mantissa = text[0] + (f".{text[1:]}" if len(text) > 1 else "")
        out = f"{mantissa}e{'+' if point > 0 else '-'}{abs(point - 1)}"
    return ("-" if sign else "") + out


@checked
def retry_policy_key(policy: RetryPolicy) -> str:
    """DSH's canonical key of a policy: every field that changes behaviour, codes sorted.

    >>> retry_policy_key(RetryPolicy(max_retries=2, retryable_codes=("SERVER", "RATE_LIMIT"),
    ...                              jitter_ratio=0))
    '["normal",2,["RATE_LIMIT","SERVER"],500,10000,0]'
    >>> retry_policy_key(RetryPolicy(mode="always"))
    '["always",500,10000,0.1]'
    """
    timing = [_js_number(policy.initial_delay_ms), _js_number(policy.max_delay_ms),
              _js_number(policy.jitter_ratio)]
    if policy.mode == "always":
        parts = ['"always"', *timing]
    else:
        codes = ",".join(msgspec.json.encode(code).decode()
                         for code in sorted(policy.retryable_codes))
        parts = ['"normal"', _js_number(policy.max_retries), f"[{codes}]", *timing]
    return f"[{','.join(parts)}]"


@checked
def backoff_delay_ms(policy: RetryPolicy, retry: int, draw: float) -> float:
    """The local delay before retry number ``retry`` (from 1): exponential from the initial
    delay, capped, jittered by ``draw`` (uniform in [0, 1]), capped again.

    >>> policy = RetryPolicy(jitter_ratio=0.1)
    >>> backoff_delay_ms(policy, 1, 0.0), backoff_delay_ms(policy, 2, 1.0)
    (450.0, 1100.0)
    >>> backoff_delay_ms(policy, 9, 1.0)
    10000.0

    Raises:
        ValueError: ``retry`` below 1, or ``draw`` outside [0, 1].
    """
    if retry < 1:
        raise ValueError(f"a retry number counts from 1, not {retry}")
    if not 0 <= draw <= 1:
        raise ValueError(f"the jitter draw must be in [0, 1], not {draw!r}")
    exponent = retry - 1
    exponential = (policy.max_delay_ms if exponent >= 1024
                   else min(policy.initial_delay_ms * 2.0 ** exponent, policy.max_delay_ms))
    jitter = 1 - policy.jitter_ratio + 2 * policy.jitter_ratio * draw
    return float(min(exponential * jitter, policy.max_delay_ms))


@checked
def schedule_retry(policy: RetryPolicy | None, failure: LlmFailure, *, turn: int, step: int,
                   provider: str, earlier: Sequence[LlmRetryData], draw: float,
                   retry_id: str) -> LlmRetryData | None:
    """The ``llm/retry`` payload for a failed model request, or ``None``: the failure ends the
    turn (no policy, a code normal mode does not retry, its budget spent, or a provider delay
    over the cap).

    Args:
        policy: the serving route's policy (``None``: the route does not retry).
        failure: what the request failed with.
        turn, step: where it failed.
        provider: the provider of the failed request.
        earlier: the retries already scheduled in this step, oldest first.
        draw: a uniform draw in [0, 1] for the jitter.
        retry_id: the id of a chain this retry would start (a continued chain keeps its own).

    >>> failure = LlmFailure(message="busy", code="RATE_LIMIT", status=429)
    >>> first = schedule_retry(RetryPolicy(jitter_ratio=0), failure, turn=1, step=1,
    ...                        provider="p", earlier=(), draw=0.5, retry_id="r1")
    >>> first.retry, first.max_retries, first.delay_ms, first.retry_id
    (1, 5, 500.0, 'r1')
    >>> schedule_retry(RetryPolicy(), LlmFailure(message="no", code="AUTH"), turn=1, step=1,
    ...                provider="p", earlier=(), draw=0.5, retry_id="r2") is None
    True
    """
    if policy is None:
        return None
    if policy.mode == "normal" and failure.code not in policy.retryable_codes:
        return None
    key = retry_policy_key(policy)
    prior = next((data for data in reversed(earlier)
                  if data.turn == turn and data.step == step and data.provider == provider
                  and data.policy_key == key), None)
    previous = 0 if prior is None else prior.retry
    if policy.mode == "normal" and previous >= policy.max_retries:
        return None
    retry = previous + 1
    provided = _number(failure.provider_retry_after_ms)
    if provided is not None and math.isfinite(provided) and provided > 0:
        if provided <= policy.max_delay_ms:
            delay = provided
        elif policy.mode == "normal":
            return None
        else:
            delay = backoff_delay_ms(policy, retry, draw)
    else:
        delay = backoff_delay_ms(policy, retry, draw)
    return LlmRetryData(
        retry_id=retry_id if prior is None else prior.retry_id, turn=turn, step=step,
        provider=provider, mode=policy.mode, policy_key=key, retry=retry,
        max_retries=policy.max_retries if policy.mode == "normal" else UNSET,
        delay_ms=float(delay), failure=failure)


def _number(value: object) -> float | None:
    """A JSON number field's value (``None`` when absent)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


# --------------------------------------------------------------------------- the log's rules


def _failure_problem(failure: LlmFailure) -> str | None:
    if not failure.message:
        return "its failure has an empty message"
    if not failure.code:
        return "its failure has an empty code"
    status = failure.status
    if isinstance(status, int) and not 100 <= status <= 599:
        return f"its failure's status {status} is not an HTTP status (100 to 599)"
    after = _number(failure.provider_retry_after_ms)
    if after is not None and not (math.isfinite(after) and after > 0):
        return f"its failure's providerRetryAfterMs {after:g} is not a positive number"
    if isinstance(failure.request_id, str) and not failure.request_id:
        return "its failure has an empty requestId"
    return None


def _retry_problem(data: LlmRetryData) -> str | None:
    """What is wrong with a retry's own fields, if anything."""
    if not data.retry_id:
        return "llm/retry has an empty retryId"
    problem = _failure_problem(data.failure)
    if problem is not None:
        return f"llm/retry: {problem}"
    if data.retry < 1:
        return f"llm/retry number {data.retry} must count from 1"
    if not data.provider:
        return "llm/retry has an empty provider"
    if not data.policy_key:
        return "llm/retry has an empty policyKey"
    if data.mode == "normal":
        limit = data.max_retries
        if not isinstance(limit, int) or limit < 1:
            return "llm/retry in normal mode needs maxRetries of at least 1"
        if data.retry > limit:
            return f"llm/retry number {data.retry} exceeds maxRetries {limit}"
    elif data.max_retries is not UNSET:
        return "llm/retry in always mode must not carry maxRetries"
    delay = float(data.delay_ms)
    if not (math.isfinite(delay) and 0 <= delay <= MAX_TIMER_DELAY_MS):
        return (f"llm/retry delayMs {data.delay_ms:g} is not a delay a timer can wait "
                f"(0 to {MAX_TIMER_DELAY_MS} ms)")
    return None


def _placement_problem(data: LlmRetryData, turn: int | None, step: tuple[int, int] | None,
                       provider: str | None) -> str | None:
    """What is wrong with where a retry stands: in the open step, after its request's header."""
    if turn is None:
        return "llm/retry stands outside any open turn"
    if step is None:
        return f"llm/retry stands in turn {turn} outside any open step"
    if data.turn != turn:
        return f"llm/retry names turn {data.turn}, but the open turn is {turn}"
    if (data.turn, data.step) != step:
        return (f"llm/retry names turn {data.turn} step {data.step}, but the open step is turn "
                f"{step[0]} step {step[1]}")
    if provider is None:
        return (f"llm/retry names provider {data.provider!r}, but no request/header names the "
                "failed request's provider")
    if data.provider != provider:
        return (f"llm/retry names provider {data.provider!r}, but the failed request went to "
                f"{provider!r}")
    return None


def _chain_problem(data: LlmRetryData, prior: LlmRetryData | None, owned: set[str],
                   ) -> str | None:
    """What is wrong with a retry as the next of its chain (``prior``: the chain's last one)."""
    expected = 1 if prior is None else prior.retry + 1
    if data.retry != expected:
        return (f"llm/retry number {data.retry} should be {expected} for provider "
                f"{data.provider!r} under its policy")
    if prior is not None and prior.retry_id != data.retry_id:
        return (f"llm/retry changes its chain's retryId from {prior.retry_id!r} to "
                f"{data.retry_id!r}")
    if prior is None and data.retry_id in owned:
        return f"llm/retry retryId {data.retry_id!r} already names another chain"
    return None


def _start_problem(begun: LlmRetryStartedData, where: tuple[int, int] | None, again: bool,
                   ) -> str | None:
    """What is wrong with a retry's start: ``where`` the retry was scheduled (if it was), and
    ``again`` whether it started already."""
    if not begun.retry_id:
        return "llm/retry-started has an empty retryId"
    if where is None:
        return (f"llm/retry-started names retry {begun.retry} of {begun.retry_id!r}, which no "
                "llm/retry scheduled")
    if where != (begun.turn, begun.step):
        return (f"llm/retry-started names turn {begun.turn} step {begun.step}, but its retry "
                f"was scheduled in turn {where[0]} step {where[1]}")
    if again:
        return f"llm/retry-started repeats retry {begun.retry} of {begun.retry_id!r}"
    return None


@checked
def check_retries(events: Iterable[Event]) -> Result[None, Violation]:
    """Whether a log keeps DSH's retry invariants (see the module's rules); ``Failure`` names
    the first event that breaks one, by seq, with rule ``retry``.

    >>> check_retries([]).unwrap() is None
    True
    """
    turn: int | None = None
    #: The open step as its step/start named it: (turn, step).
    step: tuple[int, int] | None = None
    provider: str | None = None
    #: (turn, step, provider, policy key) -> the chain's last retry.
    chains: dict[tuple[int, int, str, str], LlmRetryData] = {}
    owned: set[str] = set()
    scheduled: dict[tuple[str, int], tuple[int, int]] = {}
    started: set[tuple[str, int]] = set()
    for event in events:
        problem: str | None = None
        if isinstance(event, TurnStartEvent):
            turn, step = event.data.turn, None
        elif isinstance(event, TurnEndEvent):
            turn = step = None
        elif isinstance(event, StepStartEvent):
            step = (event.data.turn, event.data.step)
        elif isinstance(event, StepEndEvent):
            step = None
        elif isinstance(event, RequestHeaderEvent):
            provider = event.data.header.config.provider
        elif isinstance(event, LlmRetryEvent):
            data = event.data
            key = (data.turn, data.step, data.provider, data.policy_key)
            problem = (_retry_problem(data) or _placement_problem(data, turn, step, provider)
                       or _chain_problem(data, chains.get(key), owned))
            chains[key] = data  # a problem ends the walk below, recorded or not
            owned.add(data.retry_id)
            scheduled[(data.retry_id, data.retry)] = (data.turn, data.step)
        elif isinstance(event, LlmRetryStartedEvent):
            attempt = (event.data.retry_id, event.data.retry)
            problem = _start_problem(event.data, scheduled.get(attempt), attempt in started)
            started.add(attempt)
        if problem is not None:
            return Failure(Violation(seq=event.seq, rule="retry", problem=problem))
    return Success(None)
