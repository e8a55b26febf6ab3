"""A trace's repr is short, whatever the log's length: the surface and the runtime-context
snapshots are linked lists as long as the log, so their reprs name a seq, not the chain (a
debugger or a failing assertion would otherwise print, or recurse through, the whole log)."""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings

from turnfork.core import ContextSnapshot, Event, trace_log
from turnfork.core.strategies import closed_logs, in_flight_logs


@settings(max_examples=examples(100), deadline=None)
@given(closed_logs() | in_flight_logs())
def test_the_reprs_name_the_figures_not_the_chains(log: tuple[Event, ...]) -> None:
    trace = trace_log(log).unwrap()
    assert repr(trace) == (
        f"Trace(length={trace.length}, open_turn={trace.open_turn}, "
        f"open_step={trace.open_step}, next_turn={trace.next_turn}, "
        f"next_step={trace.next_step}, pending_calls={trace.pending_calls!r}, "
        f"completed_prefix_length={trace.completed_prefix_length})")
    if trace.surface is not None:
        assert repr(trace.surface) == f"SurfaceNode(seq={trace.surface.seq})"


def test_a_snapshot_names_its_seq_only() -> None:
    older = ContextSnapshot(seq=3, text="a")
    assert repr(ContextSnapshot(seq=9, text="b", older=older)) == "ContextSnapshot(seq=9)"
