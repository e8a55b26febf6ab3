"""The typed failures of a turn: one :class:`ModelError` family, chosen by the DSH failure code
(the table: docs/api-shell-runtime.md, "Running a turn")."""

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
        return self.failure.code

    @property
    def status(self) -> int | None:
        """The provider's HTTP status (``HTTP_<n>`` codes say it too)."""
        return _status_of(self.failure)

    @property
    def retry_after_ms(self) -> float | None:
        """The provider's ``Retry-After``, in milliseconds."""
        delay = self.failure.provider_retry_after_ms
        return None if isinstance(delay, UnsetType) else delay

    @property
    def request_id(self) -> str | None:
        request_id = self.failure.request_id
        return None if isinstance(request_id, UnsetType) else request_id


class ModelRateLimitedError(ModelError):
    """``RATE_LIMIT``, HTTP 429."""


class ModelTimeoutError(ModelError):
    """``TIMEOUT``, HTTP 408."""


class ModelServerError(ModelError):
    """``SERVER``, HTTP 5xx."""


class ModelTransportError(ModelError):
    """``TRANSPORT``, ``NETWORK``."""


class ModelNotFoundError(ModelError):
    """``MODEL_NOT_FOUND``, HTTP 404."""

    @property
    def url(self) -> str | None:
        """The URL the failure's message names (where the request went), if any."""
        found = _URL.search(self.failure.message)
        return None if found is None else found.group(0).rstrip(".,;:)")


class ModelAuthenticationError(ModelError):
    """``AUTH``, HTTP 401/403."""


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
    """The exception for ``failure``: by its code, else by its HTTP status."""
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
