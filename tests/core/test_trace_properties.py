"""Properties of the balance trace and the codec over generated DSH logs (issue 2, item 6)."""

from __future__ import annotations

from _budget import examples
from _trace_helpers import comparable
from hypothesis import given, settings
from returns.result import Failure, Success

from turnfork.core import EMPTY_TRACE, Event, advance, decode_log, encode_log, trace_log
from turnfork.core.strategies import broken_logs, session_logs

Log = tuple[Event, ...]


@settings(max_examples=examples(300), deadline=None)
@given(session_logs())
def test_generated_logs_trace_and_advance_agrees(log: Log) -> None:
    """trace_log accepts every generated log and equals advance folded one event at a time."""
    traced = trace_log(log)
    assert isinstance(traced, Success), str(traced.failure())
    trace = EMPTY_TRACE
    for event in log:
        trace = advance(trace, event).unwrap()
    whole = traced.unwrap()
    assert comparable(trace) == comparable(whole)
    assert whole.length == len(log)


@settings(max_examples=examples(300), deadline=None)
@given(session_logs())
def test_codec_round_trips_generated_logs(log: Log) -> None:
    """decode_log(encode_log(L)) == Success(L), with and without packed chunk rows."""
    assert decode_log(encode_log(log)) == Success(log)
    assert decode_log(encode_log(log, pack_chunks=True)) == Success(log)


@settings(max_examples=examples(600), deadline=None)
@given(broken_logs())
def test_broken_logs_fail_at_exactly_the_broken_seq(case: tuple[Log, int, str]) -> None:
    """A log with one defect is refused at the defect's seq, naming the broken rule."""
    events, broken_seq, rule = case
    assert isinstance(trace_log(events[:broken_seq]), Success)
    result = trace_log(events)
    assert isinstance(result, Failure)
    violation = result.failure()
    assert (violation.seq, violation.rule) == (broken_seq, rule), str(violation)
    assert str(violation).startswith(f"seq {broken_seq}: ")
