"""Injectable time and ids: the shell's only sources of non-determinism.

A :class:`~shell.host.Host` takes a clock (epoch milliseconds, as DSH's ``Date.now()``) and an
id factory (random UUID v4 strings, as DSH mints them). Tests pass the deterministic versions
below so logs come out the same on every run.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["Clock", "IdFactory", "system_clock", "uuid_ids", "ManualClock", "CountingIds"]

#: Returns epoch milliseconds.
Clock: TypeAlias = Callable[[], int]
#: Returns a fresh, non-empty id.
IdFactory: TypeAlias = Callable[[], str]


def system_clock() -> int:
    """Epoch milliseconds now (DSH's ``Date.now()``)."""
    return time.time_ns() // 1_000_000


def uuid_ids() -> str:
    """A random UUID v4 string."""
    return str(uuid.uuid4())


class ManualClock:
    """A clock that moves only when told to, or by ``step`` ms on every reading.

    >>> clock = ManualClock(1000, step=1)
    >>> clock(), clock()
    (1000, 1001)
    """

    __slots__ = ("now", "step")

    def __init__(self, start: int = 0, *, step: int = 0) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> int:
        value = self.now
        self.now += self.step
        return value

    def advance(self, ms: int) -> None:
        self.now += ms


class CountingIds:
    """Ids ``<prefix>1``, ``<prefix>2``, … in order.

    >>> ids = CountingIds("m-")
    >>> ids(), ids()
    ('m-1', 'm-2')
    """

    __slots__ = ("_counter", "prefix")

    def __init__(self, prefix: str = "id-") -> None:
        self.prefix = prefix
        self._counter = itertools.count(1)

    def __call__(self) -> str:
        return f"{self.prefix}{next(self._counter)}"
