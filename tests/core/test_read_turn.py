"""``read_turn``: one turn's result from its events (what ``Agent.run`` returns): the final
output's text, the stop reason and failure of its ``turn/end``, usage summed over its calls."""

from __future__ import annotations

from turnfork.core import (
    AssistantChunkData,
    AssistantChunkEvent,
    AssistantMessage,
    AssistantMessageData,
    AssistantMessageEvent,
    Event,
    LlmFailure,
    MessageSource,
    RunResult,
    TextBlock,
    TextDelta,
    TokenUsage,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnError,
    TurnStartData,
    TurnStartEvent,
    UsageChunk,
    read_turn,
)

SOURCE = MessageSource(kind="model", provider="p", model="m")
COMPLETED = TurnCompleted()


class _Turn:
    def __init__(self, turn: int = 1) -> None:
        self.turn = turn
        self.events: list[Event] = [TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=turn))]

    def _add(self, event: Event) -> _Turn:
        self.events.append(event)
        return self

    def chunk(self, chunk: UsageChunk | TextDelta) -> _Turn:
        return self._add(AssistantChunkEvent(seq=len(self.events), time=0, data=AssistantChunkData(
            turn=self.turn, step=1, chunk=chunk)))

    def message(self, text: str, usage: TokenUsage | None = None) -> _Turn:
        message = AssistantMessage(content=(TextBlock(text=text),), id=f"m{len(self.events)}",
                                   source=SOURCE)
        data = (AssistantMessageData(turn=self.turn, step=1, message=message) if usage is None
                else AssistantMessageData(turn=self.turn, step=1, message=message, usage=usage))
        return self._add(AssistantMessageEvent(seq=len(self.events), time=0, data=data,
                                               surface_op="append"))

    def end(self, reason: TurnCompleted | TurnError = COMPLETED) -> _Turn:
        return self._add(TurnEndEvent(seq=len(self.events), time=0,
                                      data=TurnEndData(turn=self.turn, reason=reason)))


def test_usage_is_summed_over_every_call_a_failed_one_too() -> None:
    """A failed attempt streamed usage but left no message: it is counted (it was billed)."""
    turn = (_Turn().chunk(UsageChunk(usage=TokenUsage(input_tokens=7, output_tokens=0)))
            .chunk(UsageChunk(usage=TokenUsage(input_tokens=8, output_tokens=2,
                                               cache_read_tokens=5)))
            .message("answer", TokenUsage(input_tokens=8, output_tokens=2)).end())
    result = read_turn(turn.events)
    assert result.usage == TokenUsage(input_tokens=15, output_tokens=2, cache_read_tokens=5)
    assert (result.output, result.stop_reason, result.turn) == ("answer", "completed", 1)


def test_a_log_without_chunks_keeps_the_messages_usage() -> None:
    """A projected log (no chunks) still has each message's usage."""
    turn = (_Turn(3).message("a", TokenUsage(input_tokens=1, output_tokens=1))
            .message("b", TokenUsage(input_tokens=2, output_tokens=3)).end())
    result = read_turn(turn.events)
    assert result.usage == TokenUsage(input_tokens=3, output_tokens=4)
    assert (result.output, result.turn) == ("b", 3)


def test_a_failed_turn_carries_its_failure_and_the_text_streamed_so_far() -> None:
    failure = LlmFailure(message="cut", code="TRANSPORT")
    turn = (_Turn().chunk(TextDelta(index=0, text="half "))
            .chunk(TextDelta(index=0, text="done")).end(TurnError(error=failure)))
    result = read_turn(turn.events)
    assert result == RunResult(output="half done", stop_reason="error", failure=failure,
                               turn=1, content=(TextBlock(text="half done"),))
    assert not result.ok


def test_only_the_first_turn_is_read_and_a_turn_without_its_end_is_an_error() -> None:
    first = _Turn().message("one").end()
    second = _Turn(2).message("two").end()
    assert read_turn([*first.events, *second.events]).output == "one"
    open_turn = _Turn().message("still going")
    assert read_turn(open_turn.events).stop_reason == "error"
    assert read_turn(()) == RunResult(output="", stop_reason="error")
