"""The trace's fold over a whole log equals the event-at-a-time fold, on any log (issue 15.5)."""

from __future__ import annotations

import msgspec
from _budget import examples
from _trace_helpers import comparable
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Result, Success

from turnfork.core import (
    EMPTY_TRACE,
    CallPairing,
    Event,
    Trace,
    Violation,
    advance,
    trace_log,
)
from turnfork.core.events import TYPED_EVENT_CLASSES, OpaqueEvent, ToolResultEvent, event_type
from turnfork.core.grammar import Phase, phase_after, phase_of
from turnfork.core.log.trace import _RULES
from turnfork.core.strategies import broken_logs, session_logs

Log = tuple[Event, ...]


def _one_at_a_time(events: Log, start: Trace = EMPTY_TRACE) -> Result[Trace, Violation]:
    trace = start
    for event in events:
        step = advance(trace, event)
        if isinstance(step, Failure):
            return step
        trace = step.unwrap()
    return Success(trace)


def _same(left: Result[Trace, Violation], right: Result[Trace, Violation]) -> None:
    if isinstance(left, Failure) or isinstance(right, Failure):
        assert isinstance(left, Failure) and isinstance(right, Failure), (left, right)
        assert left.failure() == right.failure()
    else:
        assert comparable(left.unwrap()) == comparable(right.unwrap())


@st.composite
def _scrambled_logs(draw: st.DrawFn) -> Log:
    """A generated log with a window of its events shuffled and renumbered: most break a
    rule somewhere, many in ways no single-defect strategy aims at."""
    log = draw(session_logs())
    if len(log) < 2:
        return log
    start = draw(st.integers(0, len(log) - 2))
    end = draw(st.integers(start + 2, min(len(log), start + 8)))
    window = draw(st.permutations(log[start:end]))
    renumbered = draw(st.booleans())
    scrambled = (*log[:start], *window, *log[end:])
    if not renumbered:
        return scrambled
    # Renumbered here: the checked strategies.renumber would draw from `random` (beartype).
    return tuple(msgspec.structs.replace(event, seq=k) for k, event in enumerate(scrambled))


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(_scrambled_logs(), broken_logs().map(lambda case: case[0])))
def test_whole_fold_equals_one_event_at_a_time_on_any_log(log: Log) -> None:
    """trace_log gives the same trace, or the same first violation, as advance event by event."""
    _same(trace_log(log), _one_at_a_time(log))


@settings(max_examples=examples(200), deadline=None)
@given(st.one_of(session_logs(), _scrambled_logs()), st.data())
def test_a_fold_resumed_from_any_cut_equals_the_whole_fold(log: Log, data: st.DataObject) -> None:
    """Tracing a log's tail from the trace of its head equals tracing it whole."""
    cut = data.draw(st.integers(0, len(log)))
    head = trace_log(log[:cut])
    whole = trace_log(log)
    if isinstance(head, Failure):
        assert isinstance(whole, Failure) and whole.failure() == head.failure()
        return
    _same(trace_log(log[cut:], head.unwrap()), whole)


def test_the_fold_table_is_the_grammar_table() -> None:
    """Every typed event class has a rule whose placement is grammar.phase_after's, per phase."""
    assert set(_RULES) == set(TYPED_EVENT_CLASSES)
    for cls, rule in _RULES.items():
        assert rule.kind == str(cls.__struct_config__.tag)
        if cls is ToolResultEvent:  # placed by its own code: a replacement may stand between steps
            assert rule.placed == frozenset(Phase)
        else:
            assert rule.placed == {phase for phase in Phase
                                   if phase_after(phase, rule.kind) is not None}


def test_an_opaque_event_is_placed_by_its_type() -> None:
    """request/context outside a turn is refused; session/title is accepted anywhere."""
    context = OpaqueEvent(type="request/context", seq=0, time=0, data=msgspec.Raw(b"{}"))
    title = OpaqueEvent(type="session/title", seq=0, time=0, data=msgspec.Raw(b"{}"))
    assert phase_after(Phase.IDLE, event_type(context)) is None
    refused = trace_log([context])
    assert isinstance(refused, Failure) and refused.failure().rule == "enclosure"
    assert trace_log([title]).unwrap().titled


@settings(max_examples=examples(60), deadline=None)
@given(session_logs())
def test_the_phase_is_the_grammar_folded(log: Log) -> None:
    """After every event of a legal log, ``Trace.phase`` (``grammar.phase_of`` of the open
    turn and step) is the phase ``phase_after`` walks to from idle, and the closers of that
    trace walk back from it."""
    phase, trace = Phase.IDLE, EMPTY_TRACE
    for event in log:
        walked = phase_after(phase, event_type(event))
        assert walked is not None
        phase, trace = walked, advance(trace, event).unwrap()
        assert trace.phase is phase is phase_of(trace.open_turn, trace.open_step)


def test_the_pairing_names_each_rule_and_reads_on() -> None:
    """One pairing fold for the trace and crash repair: each event's rule is named, and the
    event is applied all the same (repair reads on where the trace refuses)."""
    calls = CallPairing()
    assert calls.announce("a", "f", "{}", 1) is None
    assert calls.announce("a", "f", "{}", 1) == "repeated"
    assert calls.answer("a") == "not started"
    assert calls.start("a", "f", "{}", 1, 7) == "started twice"  # answered already
    assert calls.pending["a"].call_seq == 7 and calls.answered == ["a"]  # applied anyway
    assert calls.answer("a") == "answered twice"
    assert calls.start("b", "g", "{}", 1, 8) is None
    assert calls.start("b", "g", "{}", 1, 9) == "started twice"
    assert calls.pending["b"].call_seq == 9
    assert calls.answer("c", not_started=True) is None
    calls.clear()
    assert (calls.pending, calls.answered) == ({}, [])
