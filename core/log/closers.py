"""Turn closers: the events that balance a log whose last turn is still open (§2.8, §6.5).

Two situations need them, and the pending calls are answered differently in each:

* **Crash repair** is DSH's ``repair.ts``, :func:`repair_closers`: one lenient forward scan of a
  persisted log, whatever its turn numbers, answering the open step's calls that no result
  answered yet, then ``step/end`` if a step is open and ``turn/end`` ``interrupted``. One
  deliberate difference: a ``tool/call`` no assistant message announced gets an outcome too
  (DSH leaves it unanswered; our balance rule answers every started call).
* **Closing a live turn** (:func:`close_open_turn`, read off the trace):

  with reason ``interrupted`` it answers as repair does — a call that has a ``tool/call`` gets
  ``TOOL_OUTCOME_UNKNOWN`` (it may have run), a call only announced by the assistant message
  gets ``TOOL_NOT_STARTED`` (no ``tool/call`` is invented for it); on cancellation (reason
  ``aborted``, or any other live ending) a started call gets ``ABORTED``, and an announced call
  that was never dispatched gets its ``tool/call`` and an ``ABORTED_BEFORE_DISPATCH`` result,
  appended together, as DSH's scheduler does.

Then, for both, one path: the grammar's walk back to idle (:func:`.grammar.closing_walk`) from
the log's phase (:func:`.grammar.phase_of`): ``step/end`` if a step is open, then ``turn/end``
with the given reason. Both read the calls through the one pairing fold
(:class:`.trace.CallPairing`): the trace's, or repair's lenient scan of it. The result always
passes ``check_balance`` when appended to the log the trace was folded from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from msgspec import UNSET

from .._checking import checked, plain
from .events import (
    AssistantMessageEvent,
    Event,
    MessageSource,
    StepData,
    StepEndEvent,
    StepStartEvent,
    TextBlock,
    ToolCallBlock,
    ToolCallData,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResultBlock,
    ToolResultData,
    ToolResultEvent,
    ToolResultMessage,
    TurnEndData,
    TurnEndEvent,
    TurnEndReason,
    TurnInterrupted,
    TurnStartEvent,
)
from .grammar import STEP_END, TURN_END, closing_walk, phase_of
from .trace import CallPairing, PendingCall, Trace

# The generator closes turns inside hypothesis draws, where a checked call would touch the
# global random module: the walk's plain form.
_closing_walk = plain(closing_walk)
_phase_of = plain(phase_of)

__all__ = [
    "TOOL_NOT_STARTED_TEXT",
    "TOOL_OUTCOME_UNKNOWN_TEXT",
    "ABORTED_TEXT",
    "ABORTED_BEFORE_DISPATCH_TEXT",
    "close_open_turn",
    "closing_events",
    "repair_closers",
    "tool_result_event",
]

TOOL_NOT_STARTED_TEXT = (
    "The tool call was interrupted before the Harness recorded it as started. "
    "Retry it if it is still needed."
)
TOOL_OUTCOME_UNKNOWN_TEXT = (
    "The tool call was interrupted after it was recorded, but no result was durably recorded. "
    "Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the "
    "operation is read-only or idempotent; if it may have side effects, first verify external "
    "state or ask the user. Do not retry blindly."
)
ABORTED_TEXT = "Error: tool call aborted"
ABORTED_BEFORE_DISPATCH_TEXT = "Error: tool call aborted before dispatch"


@checked
def tool_result_event(*, seq: int, time: int, turn: int, step: int, call_id: str,
                      message_id: str, text: str, is_error: bool,
                      error: ToolErrorInfo | None = None, call_seq: int | None = None,
                      ) -> ToolResultEvent:
    """A ``tool/result`` with one text block, in the shape the loop writes (§2.8).

    ``call_seq`` is cited in ``sourceEventSeqs``; ``None`` leaves provenance unrecorded.
    """
    message = ToolResultMessage(
        source=MessageSource(kind="tool", call_id=call_id),
        content=(ToolResultBlock(tool_call_id=call_id, content=(TextBlock(text=text),),
                                 is_error=is_error),),
        id=message_id,
    )
    data = ToolResultData(turn=turn, step=step, message=message,
                          error=UNSET if error is None else error)
    if call_seq is None:
        return ToolResultEvent(seq=seq, time=time, data=data, surface_op="append")
    return ToolResultEvent(seq=seq, time=time, data=data, source_event_seqs=(call_seq,),
                           surface_op="append")


def _answer(call: PendingCall, turn: int, seq: int, time: int, repair: bool, *,
            undispatched: frozenset[str] = frozenset()) -> list[Event]:
    if repair:
        started = call.call_seq is not None
        code = "TOOL_OUTCOME_UNKNOWN" if started else "TOOL_NOT_STARTED"
        name = "ToolOutcomeUnknownError" if started else "ToolNotStartedError"
        text = TOOL_OUTCOME_UNKNOWN_TEXT if started else TOOL_NOT_STARTED_TEXT
        return [tool_result_event(
            seq=seq, time=time, turn=turn, step=call.step, call_id=call.call_id,
            message_id=f"interrupted-tool-result-{call.call_id}-{seq}", text=text,
            is_error=True, error=ToolErrorInfo(name=name, code=code), call_seq=call.call_seq)]
    events: list[Event] = []
    call_seq = call.call_seq
    code, text = "ABORTED", ABORTED_TEXT
    if call.call_id in undispatched:
        code, text = "ABORTED_BEFORE_DISPATCH", ABORTED_BEFORE_DISPATCH_TEXT
    if call_seq is None:
        call_seq = seq
        events.append(ToolCallEvent(seq=seq, time=time, data=ToolCallData(
            turn=turn, step=call.step, call_id=call.call_id, name=call.name,
            arguments=call.arguments)))
        seq += 1
        code, text = "ABORTED_BEFORE_DISPATCH", ABORTED_BEFORE_DISPATCH_TEXT
    events.append(tool_result_event(
        seq=seq, time=time, turn=turn, step=call.step, call_id=call.call_id,
        message_id=f"aborted-tool-result-{call.call_id}-{seq}", text=text, is_error=True,
        error=ToolErrorInfo(name="AbortError", code=code), call_seq=call_seq))
    return events


@checked
def close_open_turn(trace: Trace, events: Sequence[Event], reason: TurnEndReason,
                    time: int | None = None) -> tuple[Event, ...]:
    """The events that close the open turn of ``events``, numbered to follow it.

    Args:
        trace: the trace of ``events`` (``trace_log(events)``), e.g. a live session's.
        events: the log; only its length is read, to check that it matches the trace.
        reason: ``TurnInterrupted()`` for crash repair, ``TurnAborted(reason=cause)`` for a
            cancellation (any other reason answers pending calls as a cancellation does).
        time: stamp for the new events; defaults to the time of the log's last event.

    Returns:
        The closing events; empty when no turn is open.

    Raises:
        ValueError: ``trace`` was not folded from ``events`` (a programming error).
    """
    if trace.length != len(events):
        raise ValueError(f"trace covers {trace.length} events but the log has {len(events)}")
    return closing_events(trace, reason, time)


@checked
def closing_events(trace: Trace, reason: TurnEndReason, time: int | None = None,
                   undispatched: frozenset[str] = frozenset()) -> tuple[Event, ...]:
    """:func:`close_open_turn` for a log known only by its trace (numbered from its length).

    ``undispatched`` names started calls (their ``tool/call`` logged) that the runtime never
    dispatched because the cancellation came first: they are answered
    ``ABORTED_BEFORE_DISPATCH``, as a call never started is.
    """
    if trace.open_turn is None:
        return ()
    return _closing(trace.open_turn, trace.open_step, trace.pending_calls, seq=trace.length,
                    time=trace.last_time if time is None else time, reason=reason,
                    undispatched=undispatched)


def _closing(turn: int, step: int | None, pending: Iterable[PendingCall], *, seq: int,
             time: int, reason: TurnEndReason,
             undispatched: frozenset[str] = frozenset()) -> tuple[Event, ...]:
    """The one way a turn is closed: each pending call answered (as the reason says), then
    the grammar's walk back to idle from where the log stands."""
    repair = isinstance(reason, TurnInterrupted)
    closing: list[Event] = []
    for call in pending:
        answered = _answer(call, turn, seq, time, repair, undispatched=undispatched)
        closing.extend(answered)
        seq += len(answered)
    for kind in _closing_walk(_phase_of(turn, step)):
        if kind == STEP_END:
            assert step is not None
            closing.append(StepEndEvent(seq=seq, time=time, data=StepData(turn=turn, step=step)))
        else:
            assert kind == TURN_END, kind
            closing.append(TurnEndEvent(seq=seq, time=time,
                                        data=TurnEndData(turn=turn, reason=reason)))
        seq += 1
    return tuple(closing)


@checked
def repair_closers(events: Sequence[Event]) -> tuple[Event, ...]:
    """The events DSH's crash repair appends to a persisted log whose last turn is open.

    A lenient scan (DSH ``interruptedTurnClosers``): a ``turn/start`` opens its turn, whatever
    its number; ``step/end`` and ``turn/end`` clear the pending calls; an assistant message's
    tool calls become pending, a ``tool/call`` marks one started (or, unannounced, makes it
    pending and started: see the module rules), a ``tool/result`` answers one. Then, numbered
    after the last event and stamped with its time: a result per pending call in log order
    (``TOOL_OUTCOME_UNKNOWN`` citing its ``tool/call`` if it started, else
    ``TOOL_NOT_STARTED``), ``step/end`` if a step is open, ``turn/end`` ``interrupted``.

    >>> from turnfork.core.events import TurnStartData
    >>> [type(e).__name__ for e in repair_closers(
    ...     (TurnStartEvent(seq=0, time=5, data=TurnStartData(turn=2)),))]
    ['TurnEndEvent']
    """
    turn: int | None = None
    step: int | None = None
    calls = CallPairing()
    for event in events:
        if isinstance(event, TurnStartEvent):
            turn, step = event.data.turn, None
            calls.clear()
        elif isinstance(event, TurnEndEvent):
            turn, step = None, None
            calls.clear()
        elif isinstance(event, StepStartEvent):
            step = event.data.step
        elif isinstance(event, StepEndEvent):
            step = None
            calls.clear()
        elif isinstance(event, AssistantMessageEvent):
            for block in event.data.message.content:
                if isinstance(block, ToolCallBlock):
                    calls.announce(block.id, block.name, block.arguments, event.data.step)
        elif isinstance(event, ToolCallEvent):
            # A call no message announced still started: unlike DSH's repair, it gets an
            # outcome too (the balance rule answers every started call).
            data = event.data
            calls.start(data.call_id, data.name, data.arguments, data.step, event.seq)
        elif isinstance(event, ToolResultEvent):
            call_id = event.data.message.source.call_id
            if call_id is not None:
                calls.answer(call_id)
    if turn is None or not events:
        return ()
    last = events[-1]
    return _closing(turn, step, calls.pending.values(), seq=last.seq + 1, time=last.time,
                    reason=TurnInterrupted())
