"""Abort signals, after DSH's ``AbortController`` / ``AbortSignal`` (docs/api-shell-subagents.md).

Listeners are plain callables, called synchronously in order, so an abort can come from a
done-callback or an ``on_cancel`` hook that must not await. A raising listener does not stop
the others: its error goes to the running loop's handler (or is raised after them, with none).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["AbortController", "AbortSignal", "AbortListener"]

AbortListener: TypeAlias = Callable[[object], None]


class AbortSignal:
    """The read side of an :class:`AbortController`: whether and why it was aborted."""

    __slots__ = ("_aborted", "_listeners", "_reason")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._listeners: list[AbortListener] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def reason(self) -> object:
        return self._reason

    def add_listener(self, listener: AbortListener) -> None:
        if not self._aborted:
            self._listeners.append(listener)

    def remove_listener(self, listener: AbortListener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def _fire(self, reason: object) -> None:
        if self._aborted:
            return
        self._aborted, self._reason = True, reason
        listeners, self._listeners = self._listeners, []
        failures: list[BaseException] = []
        for listener in listeners:
            try:
                listener(reason)
            except Exception as error:  # one bad listener must not silence the others
                failures.append(error)
        if not failures:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise failures[0] from None
        for failure in failures:
            loop.call_exception_handler({"message": "an abort listener failed",
                                         "exception": failure})

    def __repr__(self) -> str:
        return f"AbortSignal(aborted={self._aborted}, reason={self._reason!r})"


class AbortController:
    """Owns one :class:`AbortSignal` and aborts it (only the first call has an effect)."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: object = "aborted") -> None:
        self.signal._fire(reason)
