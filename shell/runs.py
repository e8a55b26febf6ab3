"""The runs an agent watches, and its latest turn (for ``when_idle``), both read from the log: a
claimed run settles with ``None`` once its turn ended or was left open (the loop failed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..core import (
    Event,
    InboxSplicedEvent,
    RunResult,
    TurnEndEvent,
    TurnProgress,
    TurnStartEvent,
    UserMessage,
    read_turn,
)
from .agent_contract import IdleReporter, report_idle
from .errors import model_error

__all__ = ["RunWatch", "RunWatches"]


@dataclass(slots=True)
class RunWatch:
    """A run waiting for the turn that claims its message: once claimed, the seq of the turn's
    ``turn/start`` and its number; once settled, the log's length through its ``turn/end``."""

    message_id: str
    settled: asyncio.Future[RunResult | None]
    start: int | None = None
    turn: int | None = None
    upto: int | None = None


class RunWatches:
    """An agent's watched runs, and where in its log the latest turn it ran lies."""

    def __init__(self) -> None:
        self._watches: list[RunWatch] = []
        #: The latest turn's ``turn/start`` seq, and the log's length through its ``turn/end``
        #: once it ended.
        self._latest_start: int | None = None
        self._latest_upto: int | None = None

    def watch(self, message_id: str) -> RunWatch:
        watch = RunWatch(message_id, asyncio.get_running_loop().create_future())
        self._watches.append(watch)
        return watch

    async def result(self, watch: RunWatch, owner: IdleReporter, *,
                     raise_on_failure: bool) -> RunResult:
        """The watched run's result once its turn is closed and durable (a cancelled wait
        stops watching, not the turn); ``raise_on_failure``: a failure as its ``ModelError``."""
        try:
            outcome = await asyncio.shield(watch.settled)
        finally:
            if watch in self._watches:
                self._watches.remove(watch)
        await report_idle(owner, watch.upto)
        if outcome is None:  # through its turn/end, or as the loop's failure left it open
            assert watch.start is not None
            outcome = read_turn(owner.session.events[watch.start:watch.upto])
        if raise_on_failure and outcome.failure is not None:
            raise model_error(outcome.failure, outcome)
        return outcome

    async def latest(self, owner: IdleReporter, *, raise_on_failure: bool) -> RunResult | None:
        """The latest turn's result once the log is durable (``None`` before the first)."""
        await report_idle(owner)
        if self._latest_start is None:
            return None
        result = read_turn(owner.session.events[self._latest_start:self._latest_upto])
        if raise_on_failure and result.failure is not None:
            raise model_error(result.failure, result)
        return result

    def observe(self, events: Iterable[Event], progress: Callable[[], TurnProgress | None],
                pending: Callable[[], tuple[UserMessage, ...]]) -> None:
        """Follow appended events (``pending``: the input still queued)."""
        for event in events:
            if isinstance(event, TurnStartEvent):
                self._latest_start, self._latest_upto = event.seq, None
                self._claimed(event, progress())
            elif isinstance(event, TurnEndEvent):
                self._latest_upto = event.seq + 1
                self._ended(event)
            elif (isinstance(event, InboxSplicedEvent) and self._watches
                  and event.data.outcome == "canceled"):
                self._dropped({message.id for message in pending()})

    def left_open(self) -> None:
        for watch in list(self._watches):
            if watch.start is not None:
                self._settle(watch, None)

    def _claimed(self, start: TurnStartEvent, progress: TurnProgress | None) -> None:
        if not self._watches or progress is None or progress.turn != start.data.turn:
            return  # a turn that claimed nothing (and has ended already)
        claimed = {message.id for message in progress.claimed}
        for watch in self._watches:
            if watch.start is None and watch.message_id in claimed:
                watch.start, watch.turn = start.seq, start.data.turn

    def _ended(self, end: TurnEndEvent) -> None:
        for watch in list(self._watches):
            if watch.turn == end.data.turn and watch.start is not None:
                watch.upto = end.seq + 1
                self._settle(watch, None)

    def _dropped(self, pending: set[str]) -> None:
        for watch in list(self._watches):
            if watch.start is None and watch.message_id not in pending:
                self._settle(watch, RunResult(output="", stop_reason="aborted"))

    def _settle(self, watch: RunWatch, result: RunResult | None) -> None:
        self._watches.remove(watch)
        if not watch.settled.done():
            watch.settled.set_result(result)

