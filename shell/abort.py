"""Abort signals: how the owner of a subagent run says "stop", in the spirit of DSH's
``AbortController`` / ``AbortSignal``.

Rules:

* A signal fires once. :meth:`AbortController.abort` marks it aborted, records the reason and
  calls every listener synchronously, in the order they were added; later calls do nothing.
* Listeners are plain callables, so an abort can come from a done-callback or from an
  ``on_cancel`` hook that must not await. A listener added after the abort is not called: check
  :attr:`AbortSignal.aborted` first.
* A listener that raises does not stop the others; its error goes to the running event loop's
  exception handler (or is raised after all listeners ran, when no loop is running).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["AbortController", "AbortSignal", "AbortListener"]

#: Called with the abort reason.
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
        """What :meth:`AbortController.abort` was given (``None`` before the abort)."""
        return self._reason

    def add_listener(self, listener: AbortListener) -> None:
        """Call ``listener(reason)`` when the signal is aborted (not if it already was)."""
        if not self._aborted:
            self._listeners.append(listener)

    def remove_listener(self, listener: AbortListener) -> None:
        """Forget a listener; a no-op when it is not registered."""
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
    """Owns one :class:`AbortSignal` and aborts it.

    >>> controller = AbortController()
    >>> seen = []
    >>> controller.signal.add_listener(seen.append)
    >>> controller.abort("enough"); controller.abort("again")
    >>> controller.signal.aborted, controller.signal.reason, seen
    (True, 'enough', ['enough'])
    """

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: object = "aborted") -> None:
        """Abort the signal with ``reason``; only the first call has an effect."""
        self.signal._fire(reason)
