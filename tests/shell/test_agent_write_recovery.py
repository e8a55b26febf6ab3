"""A turn whose closing write failed (a full disk) is closed before the next turn starts, with
the reason it was ending with, once the disk takes writes again (issue 14.10, the agent's side;
the store's side is test_store_write_failure.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from _shell_helpers import assert_balanced, make_host, of_type, run, scripted

from turnfork.core import Event, SessionHeader, TurnEndEvent, TurnError
from turnfork.shell import AgentLoopError, Reply


class _FullDisk:
    """A sink whose disk is full for a batch that ends a turn while ``full`` is set (nothing
    of a refused batch is written: the session keeps it out of its log)."""

    full = False
    written = 0

    def write(self, header: SessionHeader, events: Sequence[Event]) -> None:
        if self.full and any(isinstance(event, TurnEndEvent) for event in events):
            raise OSError(28, "No space left on device")
        self.written += len(events)

    @property
    def durable_length(self) -> int:
        return self.written

    def commit(self) -> None:
        pass

    async def wait_durable(self, length: int) -> None:
        pass


def test_a_turn_left_open_by_a_refused_closer_is_closed_before_the_next() -> None:
    """The model fails, the disk refuses the closing ``turn/end``: ``when_idle`` reports the
    write, the turn stays open; once the disk is back the next follow-up first closes turn 1
    with its error, then runs turn 2."""

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.error("UNKNOWN", "model down"),
                                          Reply.text("second")])
        disk = _FullDisk()
        disk.full = True
        agent.session._sink = disk  # type: ignore[assignment]
        agent.followup("first")
        with pytest.raises(AgentLoopError, match="No space left on device"):
            await agent.when_idle()
        assert agent.session.trace.open_turn == 1
        assert not of_type(agent.session.events, TurnEndEvent)
        disk.full = False
        agent.followup("second")
        await agent.when_idle()
        ends = of_type(agent.session.events, TurnEndEvent)
        assert [end.data.turn for end in ends] == [1, 2]
        first = ends[0].data.reason
        assert isinstance(first, TurnError) and "model down" in first.error.message
        assert_balanced(agent.session.events)

    run(main)
