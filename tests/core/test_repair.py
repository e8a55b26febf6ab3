"""Crash repair closes any open tail as DSH's does (packages/core/session/tests/repair.spec.ts,
``describe('interruptedTurnClosers')``): every case of that spec, in our words."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import UnsetType

from turnfork.core import (
    TOOL_NOT_STARTED_TEXT,
    TOOL_OUTCOME_UNKNOWN_TEXT,
    AssistantMessage,
    AssistantMessageData,
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
    ToolResultEvent,
    TurnEndData,
    TurnEndEvent,
    TurnInterrupted,
    TurnStartData,
    TurnStartEvent,
    repair_closers,
    tool_result_event,
)


class _Log:
    """Builds a log event by event, each with the next seq and time."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def _time(self) -> int:
        return 100 + len(self.events)

    def turn(self, number: int) -> _Log:
        self.events.append(TurnStartEvent(seq=len(self.events), time=self._time(),
                                          data=TurnStartData(turn=number)))
        return self

    def end_turn(self, number: int) -> _Log:
        self.events.append(TurnEndEvent(seq=len(self.events), time=self._time(),
                                        data=TurnEndData(turn=number,
                                                         reason=TurnInterrupted())))
        return self

    def step(self, turn: int, step: int = 1) -> _Log:
        self.events.append(StepStartEvent(seq=len(self.events), time=self._time(),
                                          data=StepData(turn=turn, step=step)))
        return self

    def end_step(self, turn: int, step: int = 1) -> _Log:
        self.events.append(StepEndEvent(seq=len(self.events), time=self._time(),
                                        data=StepData(turn=turn, step=step)))
        return self

    def assistant(self, turn: int, *calls: str, step: int = 1) -> _Log:
        content = (TextBlock(text="working"),
                   *(ToolCallBlock(id=call, name="echo", arguments="{}") for call in calls))
        message = AssistantMessage(content=content, id=f"m{len(self.events)}",
                                   source=MessageSource(kind="model", provider="p", model="m"))
        self.events.append(AssistantMessageEvent(
            seq=len(self.events), time=self._time(),
            data=AssistantMessageData(turn=turn, step=step, message=message),
            surface_op="append"))
        return self

    def call(self, turn: int, call_id: str, step: int = 1) -> _Log:
        self.events.append(ToolCallEvent(seq=len(self.events), time=self._time(),
                                         data=ToolCallData(turn=turn, step=step, call_id=call_id,
                                                           name="echo", arguments="{}")))
        return self

    def result(self, turn: int, call_id: str, step: int = 1) -> _Log:
        self.events.append(tool_result_event(
            seq=len(self.events), time=self._time(), turn=turn, step=step, call_id=call_id,
            message_id=f"r{len(self.events)}", text="done", is_error=False))
        return self


def _shape(closers: Sequence[Event]) -> list[tuple[object, ...]]:
    shape: list[tuple[object, ...]] = []
    for event in closers:
        if isinstance(event, ToolResultEvent):
            block = event.data.message.content[0]
            text = block.content[0].text  # type: ignore[union-attr]
            shape.append(("tool/result", event.seq, event.data.turn, event.data.step,
                          event.data.message.source.call_id, event.data.error, text,
                          event.source_event_seqs))
        elif isinstance(event, StepEndEvent):
            shape.append(("step/end", event.seq, event.data.turn, event.data.step))
        else:
            assert isinstance(event, TurnEndEvent)
            shape.append(("turn/end", event.seq, event.data.turn, event.data.reason))
    return shape


NOT_STARTED = ToolErrorInfo(name="ToolNotStartedError", code="TOOL_NOT_STARTED")
UNKNOWN = ToolErrorInfo(name="ToolOutcomeUnknownError", code="TOOL_OUTCOME_UNKNOWN")
INTERRUPTED = TurnInterrupted()


def test_a_balanced_log_and_an_empty_log_need_nothing() -> None:
    """'returns nothing for a balanced log' and 'returns nothing for an empty log'."""
    assert repair_closers(_Log().turn(1).end_turn(1).events) == ()
    assert repair_closers(()) == ()


def test_an_open_turn_without_a_step_gets_only_its_turn_end() -> None:
    """'closes an open turn with no open step (turn/end {interrupted} only)'."""
    closers = repair_closers(_Log().turn(1).events)
    assert _shape(closers) == [("turn/end", 1, 1, INTERRUPTED)]
    assert closers[0].time == 100  # the last event's time


def test_an_open_step_is_closed_before_the_turn() -> None:
    """'closes an open step before the turn (step/end then turn/end)'."""
    assert _shape(repair_closers(_Log().turn(1).step(1).events)) == [
        ("step/end", 2, 1, 1), ("turn/end", 3, 1, INTERRUPTED)]


def test_an_announced_call_never_recorded_is_marked_not_started_whatever_the_turn() -> None:
    """'marks an assistant tool request with no recorded call as not started' — in turn 2 of a
    log that starts there: repair does not care about turn numbers."""
    closers = repair_closers(_Log().turn(2).step(2).assistant(2, "call-1").events)
    assert _shape(closers) == [
        ("tool/result", 3, 2, 1, "call-1", NOT_STARTED, TOOL_NOT_STARTED_TEXT,
         closers[0].source_event_seqs),
        ("step/end", 4, 2, 1), ("turn/end", 5, 2, INTERRUPTED)]
    result = closers[0]
    assert isinstance(result, ToolResultEvent)
    assert result.data.message.id == "interrupted-tool-result-call-1-3"
    assert result.data.message.content[0].is_error is True  # type: ignore[union-attr]
    assert result.surface_op == "append"
    assert isinstance(result.source_event_seqs, UnsetType)  # no provenance


def test_a_call_already_answered_gets_no_second_result() -> None:
    """'does NOT synthesize a result for a tool-call that already has one'."""
    log = _Log().turn(2).step(2).assistant(2, "call-1").result(2, "call-1")
    assert _shape(repair_closers(log.events)) == [
        ("step/end", 4, 2, 1), ("turn/end", 5, 2, INTERRUPTED)]


def test_a_call_of_a_closed_step_gets_no_result() -> None:
    """'does NOT synthesize a result after the owning step already closed'."""
    log = _Log().turn(2).step(2).assistant(2, "call-1").end_step(2)
    assert _shape(repair_closers(log.events)) == [("turn/end", 4, 2, INTERRUPTED)]


def test_only_the_open_turn_is_repaired() -> None:
    """'synthesizes results only for the still-open turn, not a committed earlier turn'."""
    log = (_Log().turn(1).step(1).assistant(1, "old-call").call(1, "old-call")
           .result(1, "old-call").end_step(1).end_turn(1)
           .turn(2).step(2).assistant(2, "new-call"))
    shape = _shape(repair_closers(log.events))
    assert [entry[4] for entry in shape if entry[0] == "tool/result"] == ["new-call"]
    assert [entry[0] for entry in shape] == ["tool/result", "step/end", "turn/end"]


def test_each_unanswered_call_gets_a_result_in_log_order() -> None:
    """'synthesizes a result for each of multiple unanswered calls, in log order'."""
    log = _Log().turn(1).step(1).assistant(1, "call-a", "call-b").result(1, "call-a")
    assert [entry[4] for entry in _shape(repair_closers(log.events))
            if entry[0] == "tool/result"] == ["call-b"]
    both = _Log().turn(1).step(1).assistant(1, "call-a", "call-b")
    assert [entry[4] for entry in _shape(repair_closers(both.events))
            if entry[0] == "tool/result"] == ["call-a", "call-b"]


def test_a_recorded_call_tells_the_model_to_assess_the_retry() -> None:
    """'synthesized tool/result carries surfaceOp and sourceEventSeqs when tool/call was
    logged': TOOL_OUTCOME_UNKNOWN, citing the tool/call."""
    log = _Log().turn(1).step(1).assistant(1, "call-1").call(1, "call-1")
    closers = repair_closers(log.events)
    result = closers[0]
    assert isinstance(result, ToolResultEvent)
    assert (result.data.error, result.source_event_seqs, result.surface_op) == (
        UNKNOWN, (3,), "append")
    text = result.data.message.content[0].content[0].text  # type: ignore[union-attr]
    assert text == TOOL_OUTCOME_UNKNOWN_TEXT
    assert "retry only if the operation is read-only or idempotent" in text
    assert "first verify external state or ask the user" in text


def test_a_call_no_message_announced_still_gets_an_outcome() -> None:
    """'handles tool/call without a matching assistant/message entry gracefully': DSH closes the
    step and the turn and leaves the call unanswered. Ours answers it like any started call
    (TOOL_OUTCOME_UNKNOWN, citing it): our balance rule answers every started call — the one
    deliberate difference from DSH's repair (docs/conformance.md)."""
    from turnfork.core import check_balance

    log = _Log().turn(1).step(1).call(1, "orphan")
    closers = repair_closers(log.events)
    assert _shape(closers) == [
        ("tool/result", 3, 1, 1, "orphan", UNKNOWN, TOOL_OUTCOME_UNKNOWN_TEXT, (2,)),
        ("step/end", 4, 1, 1), ("turn/end", 5, 1, INTERRUPTED)]
    assert check_balance([*log.events, *closers]).unwrap().is_closed
