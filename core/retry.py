"""Kept importable: the names of :mod:`turnfork.core.log.retry`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .log.retry import (
    DEFAULT_RETRY_POLICY,
    DEFAULT_RETRYABLE_CODES,
    MAX_TIMER_DELAY_MS,
    RetryPolicy,
    backoff_delay_ms,
    check_retries,
    retry_policy_key,
    schedule_retry,
)

__all__ = [
    "RetryPolicy", "DEFAULT_RETRY_POLICY", "DEFAULT_RETRYABLE_CODES", "MAX_TIMER_DELAY_MS",
    "retry_policy_key", "backoff_delay_ms", "schedule_retry", "check_retries",
]
