"""A packed chunk row's member times are ``time0`` plus the gaps before it; DSH expands them as
JavaScript numbers and refuses a time beyond the safe-integer range, so turnfork must too
rather than read the log as valid and write those times back into a seed."""

from __future__ import annotations

import json

import pytest
from returns.result import Failure

from turnfork.core import MAX_SAFE_INTEGER, decode_log


def _log(time0: int, gaps: list[int]) -> bytes:
    row = {"type": "text-chunks", "seq0": 1, "time0": time0,
           "data": {"turn": 1, "step": 1, "index": 0, "dt": gaps, "texts": ["a", "b", "c"]}}
    start = {"type": "turn/start", "seq": 0, "time": 0, "data": {"turn": 1}}
    return b"".join(json.dumps(record).encode() + b"\n" for record in (start, row))


@pytest.mark.parametrize(("time0", "gaps", "member", "time"), [
    (MAX_SAFE_INTEGER, [5, 0], 1, MAX_SAFE_INTEGER + 5),
    (MAX_SAFE_INTEGER - 1, [1, MAX_SAFE_INTEGER], 2, 2 * MAX_SAFE_INTEGER),
    (-MAX_SAFE_INTEGER, [0, -1], 2, -MAX_SAFE_INTEGER - 1),
])
def test_a_member_time_beyond_the_safe_range_is_refused(time0: int, gaps: list[int],
                                                        member: int, time: int) -> None:
    result = decode_log(_log(time0, gaps))
    assert isinstance(result, Failure), result
    error = result.failure()
    assert (error.line, error.seq, error.event_type) == (2, 1, "text-chunks")
    assert error.problem == (f"the packed row's member at seq {1 + member} has time {time}, "
                             "beyond the safe-integer range (time0 plus the gaps before it)")


def test_member_times_at_the_edge_of_the_range_read() -> None:
    events = decode_log(_log(MAX_SAFE_INTEGER - 3, [1, 2])).unwrap()
    assert [event.time for event in events[1:]] == [MAX_SAFE_INTEGER - 3, MAX_SAFE_INTEGER - 2,
                                                    MAX_SAFE_INTEGER]
