"""What each closer says, field by field (issue 29): every answer to a pending call is an
error result with its code and name, cites its call when there is one, and is stamped and
numbered as the module rules say; repair and live closing agree where they should."""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from turnfork.core import (
    ABORTED_BEFORE_DISPATCH_TEXT,
    ABORTED_TEXT,
    TOOL_NOT_STARTED_TEXT,
    TOOL_OUTCOME_UNKNOWN_TEXT,
    CancelUser,
    Event,
    StepEndEvent,
    TextBlock,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResultBlock,
    ToolResultEvent,
    TurnAborted,
    TurnEndEvent,
    TurnEndReason,
    TurnInterrupted,
    check_balance,
    close_open_turn,
    repair_closers,
    tool_result_event,
    trace_log,
)
from turnfork.core.closers import closing_events
from turnfork.core.strategies import in_flight_logs

Log = tuple[Event, ...]

#: (text, error code, error name) of each kind of answer: started or announced, repaired or
#: cancelled.
ANSWERS = {
    (True, True): (TOOL_OUTCOME_UNKNOWN_TEXT, "TOOL_OUTCOME_UNKNOWN", "ToolOutcomeUnknownError"),
    (False, True): (TOOL_NOT_STARTED_TEXT, "TOOL_NOT_STARTED", "ToolNotStartedError"),
    (True, False): (ABORTED_TEXT, "ABORTED", "AbortError"),
    (False, False): (ABORTED_BEFORE_DISPATCH_TEXT, "ABORTED_BEFORE_DISPATCH", "AbortError"),
}


def _block(event: ToolResultEvent) -> ToolResultBlock:
    (block,) = event.data.message.content
    assert isinstance(block, ToolResultBlock)
    return block


@settings(max_examples=examples(300), deadline=None)
@given(in_flight_logs(), st.sampled_from([TurnInterrupted(), TurnAborted(reason=CancelUser())]),
       st.none() | st.integers(0, 2**40))
def test_every_answer_is_an_error_result_citing_its_call(log: Log, reason: TurnEndReason,
                                                         time: int | None) -> None:
    """Each pending call's result: is_error, the code and name of its situation, one text
    block, the call cited (its tool/call; for a dispatched one, the tool/call written just
    before it); every closer stamped with ``time`` (default: the last event's) and numbered
    after the log; the turn ends with the reason, the step first if one is open."""
    trace = trace_log(log).unwrap()
    closers = close_open_turn(trace, log, reason, time)
    repair = isinstance(reason, TurnInterrupted)
    stamp = log[-1].time if time is None else time
    assert all(event.time == stamp for event in closers)
    assert [event.seq for event in closers] == list(range(len(log), len(log) + len(closers)))
    results = [event for event in closers if isinstance(event, ToolResultEvent)]
    assert [result.data.message.source.call_id for result in results] == [
        call.call_id for call in trace.pending_calls]
    by_seq = {event.seq: event for event in (*log, *closers)}
    for call, result in zip(trace.pending_calls, results, strict=True):
        started = call.call_seq is not None
        text, code, name = ANSWERS[(started, repair)]
        block = _block(result)
        assert block.is_error is True
        assert block.tool_call_id == call.call_id
        assert block.content == (TextBlock(text=text),)
        assert result.data.error == ToolErrorInfo(name=name, code=code)
        assert (result.data.turn, result.data.step) == (trace.open_turn, call.step)
        assert result.surface_op == "append"
        if started or not repair:
            (cited,) = result.source_event_seqs
            call_event = by_seq[cited]
            assert isinstance(call_event, ToolCallEvent)
            assert call_event.data.call_id == call.call_id
            if not started:  # dispatched by the closers, right before its result
                assert cited == result.seq - 1
                assert (call_event.data.name, call_event.data.arguments) == (
                    call.name, call.arguments)
        prefix = "interrupted" if repair else "aborted"
        assert result.data.message.id == f"{prefix}-tool-result-{call.call_id}-{result.seq}"
    tail = [type(event) for event in closers
            if not isinstance(event, ToolResultEvent | ToolCallEvent)]
    assert tail == ([StepEndEvent] if trace.open_step is not None else []) + [TurnEndEvent]
    end = closers[-1]
    assert isinstance(end, TurnEndEvent) and end.data.turn == trace.open_turn
    assert end.data.reason == reason
    assert check_balance((*log, *closers)).unwrap().is_closed


@settings(max_examples=examples(300), deadline=None)
@given(in_flight_logs())
def test_repair_closes_as_the_live_interrupted_closing_does(log: Log) -> None:
    """On a valid in-flight log DSH's lenient repair scan and the trace's closing agree,
    event for event."""
    trace = trace_log(log).unwrap()
    assert repair_closers(log) == close_open_turn(trace, log, TurnInterrupted())
    assert closing_events(trace, TurnInterrupted()) == close_open_turn(
        trace, log, TurnInterrupted())


def test_a_log_with_no_open_turn_or_no_events_needs_no_repair() -> None:
    assert repair_closers(()) == ()


def test_tool_result_event_without_a_call_cites_nothing() -> None:
    """``call_seq=None`` leaves provenance unrecorded; the result is as given otherwise."""
    event = tool_result_event(seq=3, time=7, turn=1, step=2, call_id="c", message_id="m",
                              text="t", is_error=False)
    assert event.source_event_seqs == msgspec_unset() and event.surface_op == "append"
    assert _block(event).is_error is False and event.data.error == msgspec_unset()
    cited = tool_result_event(seq=3, time=7, turn=1, step=2, call_id="c", message_id="m",
                              text="t", is_error=True, call_seq=1,
                              error=ToolErrorInfo(name="E", code="C"))
    assert cited.source_event_seqs == (1,) and _block(cited).is_error is True
    assert cited.data.error == ToolErrorInfo(name="E", code="C")
    assert (cited.seq, cited.time, cited.data.turn, cited.data.step) == (3, 7, 1, 2)
    assert cited.data.message.source.call_id == "c" and cited.data.message.id == "m"


def msgspec_unset() -> object:
    from msgspec import UNSET

    return UNSET
