"""The surface a trace keeps is the one the replace rules describe, whichever way the log is
folded (issue 14 point 5: replaces are traced in linear time, by an index the fold builds)."""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings

from turnfork.core import advance, trace_log
from turnfork.core.events import Event, SurfaceReplace
from turnfork.core.strategies import closed_logs
from turnfork.core.trace import EMPTY_TRACE, SurfaceNode, Trace


def _seqs(node: SurfaceNode | None) -> list[int]:
    found: list[int] = []
    while node is not None:
        found.append(node.seq)
        node = node.previous
    return found[::-1]


def _reference(log: tuple[Event, ...]) -> list[int]:
    """The surface by the rules, with a plain list: an append goes last, a replace puts its
    event where its range was."""
    surface: list[int] = []
    for event in log:
        op = getattr(event, "surface_op", None)
        if op is None:
            continue
        if isinstance(op, SurfaceReplace):
            first, last = surface.index(op.start), surface.index(op.end)
            surface[first:last + 1] = [event.seq]
        else:
            surface.append(event.seq)
    return surface


@settings(max_examples=examples(300))
@given(closed_logs(min_turns=1, max_turns=5))
def test_one_fold_and_event_by_event_keep_the_rules_surface(log: tuple[Event, ...]) -> None:
    """trace_log (one fold, indexed after its first replace) and advance per event (each
    replace on its own) both keep the surface the rules describe."""
    folded = trace_log(log).unwrap()
    stepped: Trace = EMPTY_TRACE
    for event in log:
        stepped = advance(stepped, event).unwrap()
    expected = _reference(log)
    assert _seqs(folded.surface) == _seqs(stepped.surface) == expected
