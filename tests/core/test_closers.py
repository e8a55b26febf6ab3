"""Turn closers balance any in-flight log (issue 3, item 7)."""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Success

from turnfork.core import (
    ABORTED_BEFORE_DISPATCH_TEXT,
    ABORTED_TEXT,
    TOOL_NOT_STARTED_TEXT,
    TOOL_OUTCOME_UNKNOWN_TEXT,
    CancelParent,
    CancelUser,
    Event,
    StepEndEvent,
    TextBlock,
    ToolCallEvent,
    ToolResultBlock,
    ToolResultEvent,
    TurnAborted,
    TurnEndEvent,
    TurnEndReason,
    TurnInterrupted,
    check_balance,
    close_open_turn,
    closing_events,
    decode_session,
    trace_log,
)
from turnfork.core.strategies import closed_logs, in_flight_logs

Log = tuple[Event, ...]
REASONS: list[TurnEndReason] = [TurnInterrupted(), TurnAborted(reason=CancelUser()),
                                TurnAborted(reason=CancelParent())]


def _result_text(event: ToolResultEvent) -> str:
    block = event.data.message.content[0]
    assert isinstance(block, ToolResultBlock)
    text = block.content[0]
    assert isinstance(text, TextBlock)
    return text.text


@settings(max_examples=examples(400), deadline=None)
@given(in_flight_logs(), st.sampled_from(REASONS))
def test_closers_balance_every_in_flight_log(log: Log, reason: TurnEndReason) -> None:
    """check_balance(L + close_open_turn(...)) succeeds, ending with the given reason."""
    trace = trace_log(log).unwrap()
    closers = close_open_turn(trace, log, reason, time=99)
    closed = check_balance(log + closers)
    assert isinstance(closed, Success), closed
    last = closers[-1]
    assert isinstance(last, TurnEndEvent)
    assert last.data.reason == reason
    assert last.data.turn == trace.open_turn
    assert all(event.time == 99 for event in closers)
    assert [event.seq for event in closers] == list(range(len(log), len(log) + len(closers)))


@settings(max_examples=examples(300), deadline=None)
@given(in_flight_logs(), st.sampled_from(REASONS))
def test_every_pending_call_gets_the_texts_of_its_situation(log: Log,
                                                            reason: TurnEndReason) -> None:
    """Repair answers started calls OUTCOME_UNKNOWN and announced ones NOT_STARTED;
    cancellation answers ABORTED, or dispatches then ABORTED_BEFORE_DISPATCH."""
    trace = trace_log(log).unwrap()
    closers = close_open_turn(trace, log, reason)
    results = {e.data.message.source.call_id: e for e in closers if isinstance(e, ToolResultEvent)}
    dispatched = {e.data.call_id for e in closers if isinstance(e, ToolCallEvent)}
    assert set(results) == {call.call_id for call in trace.pending_calls}
    repair = isinstance(reason, TurnInterrupted)
    for call in trace.pending_calls:
        result = results[call.call_id]
        assert result.data.step == call.step
        started = call.call_seq is not None
        if repair:
            assert not dispatched
            expected = TOOL_OUTCOME_UNKNOWN_TEXT if started else TOOL_NOT_STARTED_TEXT
            assert result.data.message.id == f"interrupted-tool-result-{call.call_id}-{result.seq}"
        else:
            expected = ABORTED_TEXT if started else ABORTED_BEFORE_DISPATCH_TEXT
            assert (call.call_id in dispatched) == (not started)
        assert _result_text(result) == expected
    assert any(isinstance(e, StepEndEvent) for e in closers) == (trace.open_step is not None)


@settings(max_examples=examples(300), deadline=None)
@given(in_flight_logs(), st.sampled_from(REASONS[1:]), st.data())
def test_started_calls_never_dispatched_are_answered_before_dispatch(
        log: Log, reason: TurnEndReason, data: st.DataObject) -> None:
    """A cancellation's closers, told which started calls were never dispatched, answer those
    (and the announced ones) ABORTED_BEFORE_DISPATCH with code ``ABORTED_BEFORE_DISPATCH``, and
    the other started calls ABORTED; the log stays balanced (DSH tool-subagent.spec.ts:908)."""
    trace = trace_log(log).unwrap()
    started = sorted(call.call_id for call in trace.pending_calls if call.call_seq is not None)
    undispatched = frozenset(data.draw(st.sets(st.sampled_from(started)) if started
                                       else st.just(set())))
    closers = closing_events(trace, reason, time=7, undispatched=undispatched)
    assert isinstance(check_balance(log + closers), Success)
    results = {e.data.message.source.call_id: e for e in closers if isinstance(e, ToolResultEvent)}
    for call in trace.pending_calls:
        result = results[call.call_id]
        never = call.call_seq is None or call.call_id in undispatched
        assert _result_text(result) == (ABORTED_BEFORE_DISPATCH_TEXT if never else ABORTED_TEXT)
        assert result.data.error
        assert result.data.error.code == ("ABORTED_BEFORE_DISPATCH" if never else "ABORTED")
        assert result.data.message.content[0].is_error


@settings(max_examples=examples(100), deadline=None)
@given(closed_logs())
def test_a_closed_log_needs_no_closers(log: Log) -> None:
    """Nothing is open, so nothing is appended."""
    assert close_open_turn(trace_log(log).unwrap(), log, TurnInterrupted()) == ()


def test_the_derived_in_flight_parent_gets_dsh_s_repair_closers() -> None:
    """The fork parent caught at its subagent call is closed as DSH's repair would close it."""
    from pathlib import Path

    path = (Path(__file__).parents[1] / "fixtures" / "dsh" / "derived"
            / "fork-parent-inflight-at-subagent-call.DERIVED.jsonl")
    _, log = decode_session(path.read_bytes(), projected=True).unwrap()
    closers = close_open_turn(trace_log(log).unwrap(), log, TurnInterrupted())
    assert [(type(e).__name__, e.seq) for e in closers] == [
        ("ToolResultEvent", 159), ("StepEndEvent", 160), ("TurnEndEvent", 161)]
    result = closers[0]
    assert isinstance(result, ToolResultEvent)
    call_id = "call_00_sAtKUseRzHRBvL4CF7XF1334"
    assert result.data.message.id == f"interrupted-tool-result-{call_id}-159"
    assert result.source_event_seqs == (158,)
    assert (result.data.turn, result.data.step) == (2, 1)
    assert result.data.error is not None and result.data.error.code == "TOOL_OUTCOME_UNKNOWN"


def test_a_trace_of_another_log_is_refused() -> None:
    """Closers must be computed from the trace of the very log they close."""
    import pytest

    from turnfork.core import TurnStartData, TurnStartEvent

    log = (TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=1)),)
    with pytest.raises(ValueError, match="trace covers"):
        close_open_turn(trace_log(()).unwrap(), log, TurnInterrupted())
