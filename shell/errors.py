"""The typed failures of a turn: one :class:`ModelError` family, chosen by the DSH failure code.

The code decides the class (DSH's adapters' codes and :class:`~turnfork.shell.OpenAIChatModel`'s);
a code no adapter uses falls back on the HTTP status. The exception keeps the whole
``LlmFailure`` and, when a run raised it, the turn's :class:`~turnfork.core.RunResult`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from msgspec import UnsetType

from ..core import LlmFailure, describe_failure

if TYPE_CHECKING:
    from ..core import RunResult

__all__ = ["ModelError", "ModelRateLimitedError", "ModelTimeoutError", "ModelServerError",
           "ModelTransportError", "ModelNotFoundError", "ModelAuthenticationError", "model_error"]

_URL = re.compile(r"https?://[^\s'\"<>]+")


class ModelError(Exception):
    """A turn ended in error: the model failed (or the loop did, code ``UNKNOWN``); ``failure``
    is what its ``turn/end`` records, ``result`` the run's result (``None`` outside a run)."""

    def __init__(self, failure: LlmFailure, result: RunResult | None = None) -> None:
        super().__init__(describe_failure(failure))
        self.failure = failure
        self.result = result

    @property
    def code(self) -> str:
        """The DSH failure code (``RATE_LIMIT``, ``SERVER``, …)."""
        return self.failure.code

    @property
    def status(self) -> int | None:
        """The provider's HTTP status, when it answered with one (``HTTP_<n>`` codes say it
        too)."""
        return _status_of(self.failure)

    @property
    def retry_after_ms(self) -> float | None:
        """How long the provider asked to wait (its ``Retry-After``), in milliseconds."""
        delay = self.failure.provider_retry_after_ms
        return None if isinstance(delay, UnsetType) else delay

    @property
    def request_id(self) -> str | None:
        """The provider's id of the failed request, when it gave one."""
        request_id = self.failure.request_id
        return None if isinstance(request_id, UnsetType) else request_id


class ModelRateLimitedError(ModelError):
    """The provider refused for the request rate (``RATE_LIMIT``, HTTP 429); see
    :attr:`retry_after_ms`."""


class ModelTimeoutError(ModelError):
    """The provider did not answer in time (``TIMEOUT``, HTTP 408)."""


class ModelServerError(ModelError):
    """The provider failed (``SERVER``, HTTP 5xx); :attr:`status` is its HTTP status."""


class ModelTransportError(ModelError):
    """The connection failed or broke mid-response (``TRANSPORT``, ``NETWORK``)."""


class ModelNotFoundError(ModelError):
    """The endpoint or the model does not exist (HTTP 404)."""

    @property
    def url(self) -> str | None:
        """The URL the failure's message names (the one the request went to), if any."""
        found = _URL.search(self.failure.message)
        return None if found is None else found.group(0).rstrip(".,;:)")


class ModelAuthenticationError(ModelError):
    """The credential is missing, malformed or refused (``AUTH``, HTTP 401/403)."""


_BY_CODE: dict[str, type[ModelError]] = {
    "RATE_LIMIT": ModelRateLimitedError, "TIMEOUT": ModelTimeoutError,
    "SERVER": ModelServerError, "SERVER_ERROR": ModelServerError, "UNAVAILABLE": ModelServerError,
    "TRANSPORT": ModelTransportError, "NETWORK": ModelTransportError,
    "MODEL_NOT_FOUND": ModelNotFoundError, "NOT_FOUND": ModelNotFoundError,
    "AUTH": ModelAuthenticationError, "INVALID_CREDENTIAL": ModelAuthenticationError,
    "MISSING_CREDENTIAL": ModelAuthenticationError,
}
_BY_STATUS: dict[int, type[ModelError]] = {
    401: ModelAuthenticationError, 403: ModelAuthenticationError, 404: ModelNotFoundError,
    408: ModelTimeoutError, 429: ModelRateLimitedError,
}

#: Codes that name their own kind of failure: a status they came with does not override them.
_OWN_KIND = frozenset({"QUOTA", "CONTEXT_WINDOW_EXCEEDED", "INVALID_REQUEST", "EMPTY_RESPONSE",
                       "CONTENT_FILTER", "MALFORMED_RESPONSE", "RESPONSE_TOO_LARGE"})


def model_error(failure: LlmFailure, result: RunResult | None = None) -> ModelError:
    """The exception for ``failure``: by its code, else by its HTTP status (``HTTP_<n>`` counts
    as status ``n``), else a plain :class:`ModelError`.

    >>> type(model_error(LlmFailure(message="slow down", code="RATE_LIMIT"))).__name__
    'ModelRateLimitedError'
    >>> model_error(LlmFailure(message="bad gateway", code="HTTP_502")).status
    502
    """
    kind = _BY_CODE.get(failure.code)
    if kind is None and failure.code not in _OWN_KIND:
        status = _status_of(failure)
        if status is not None:
            kind = _BY_STATUS.get(status, ModelServerError if status >= 500 else None)
    return (kind or ModelError)(failure, result)


def _status_of(failure: LlmFailure) -> int | None:
    if not isinstance(failure.status, UnsetType):
        return failure.status
    code = failure.code
    if code.startswith("HTTP_") and code[5:].isascii() and code[5:].isdigit():
        return int(code[5:])
    return None
