"""Injectable time and ids, the shell's only sources of non-determinism; the deterministic
versions make tests' logs the same on every run (docs/api-shell-runtime.md)."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["Clock", "IdFactory", "system_clock", "uuid_ids", "sleep", "ManualClock",
           "CountingIds"]

Clock: TypeAlias = Callable[[], int]  # epoch milliseconds
IdFactory: TypeAlias = Callable[[], str]


def system_clock() -> int:
    """DSH's ``Date.now()``."""
    return time.time_ns() // 1_000_000


def uuid_ids() -> str:
    return str(uuid.uuid4())


async def sleep(clock: Clock, ms: float) -> None:
    """Wait ``ms`` of ``clock``'s time: on its own ``sleep`` if any, else the loop's timer."""
    own = getattr(clock, "sleep", None)
    if own is not None:
        await own(ms)
    else:
        await asyncio.sleep(max(ms, 0) / 1000)


class ManualClock:
    """A clock that moves only when told to, or by ``step`` ms on every reading."""

    __slots__ = ("_waits", "now", "step")

    def __init__(self, start: int = 0, *, step: int = 0) -> None:
        self.now = start
        self.step = step
        self._waits: list[tuple[float, asyncio.Future[None]]] = []

    def __call__(self) -> int:
        value = self.now
        self.now += self.step
        if self.step and self._waits:
            self._wake()
        return value

    def advance(self, ms: int) -> None:
        self.now += ms
        self._wake()

    @property
    def waiting(self) -> int:
        return sum(1 for _, future in self._waits if not future.done())

    async def sleep(self, ms: float) -> None:
        if ms <= 0:
            await asyncio.sleep(0)
            return
        entry = (self.now + ms, asyncio.get_running_loop().create_future())
        self._waits.append(entry)
        try:
            await entry[1]
        finally:
            self._waits.remove(entry)

    def _wake(self) -> None:
        for deadline, future in self._waits:
            if deadline <= self.now and not future.done():
                future.set_result(None)


class CountingIds:
    """Ids ``<prefix>1``, ``<prefix>2``, … in order."""

    __slots__ = ("_counter", "prefix")

    def __init__(self, prefix: str = "id-") -> None:
        self.prefix = prefix
        self._counter = itertools.count(1)

    def __call__(self) -> str:
        return f"{self.prefix}{next(self._counter)}"
