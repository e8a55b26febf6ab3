"""What the trace's fold keeps besides the surface, pinned where a mutation run found it loose.

* ``Trace``'s defaults describe a log with nothing open yet: a trace built by hand with only
  what a ``turn/start`` names is the one the fold leaves after it, and it takes step 1 next
  (no other step).
* The log's first title candidate (``Trace.first_title``) is the first human message (source
  kind ``user``) whose fallback title is not empty, with that title; no other message counts.
* An ``assistant/message``, ``tool/call`` or appended ``tool/result`` that names another step
  (or turn) than the open one is refused with the step it names and where the log is.
* An event confined to a step, standing between the steps of an open turn, is refused with
  the sentence that says so (and where the log is); outside any turn, with the one that says
  no turn is open.
"""

from __future__ import annotations

import msgspec
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from turnfork.core import (
    EMPTY_TRACE,
    AssistantMessageEvent,
    Event,
    LlmRetryStartedData,
    LlmRetryStartedEvent,
    OpaqueEvent,
    StepData,
    StepEndEvent,
    StepStartEvent,
    SurfaceReplace,
    TextBlock,
    ToolCallEvent,
    ToolResultEvent,
    Trace,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    UserMessageEvent,
    advance,
    fallback_title,
    trace_log,
)
from turnfork.core.strategies import closed_logs, session_logs

Log = tuple[Event, ...]


@settings(max_examples=examples(100), deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 1_000), st.integers(0, 2**40), st.data())
def test_the_defaults_of_a_trace_are_a_turn_with_no_step_yet(
        length: int, turn: int, time: int, data: st.DataObject) -> None:
    """From a hand-made trace between turns, a ``turn/start`` leaves exactly the trace built
    with what it names (the rest left at the defaults); a trace built so takes a
    ``step/start`` for step 1 and refuses any other step number."""
    between = Trace(length=length, next_turn=turn, completed_prefix_length=length)
    started = advance(between, TurnStartEvent(seq=length, time=time,
                                              data=TurnStartData(turn=turn))).unwrap()
    by_hand = Trace(length=length + 1, open_turn=turn, open_turn_seq=length, next_turn=turn,
                    completed_prefix_length=length, last_time=time)
    assert started == by_hand
    step = data.draw(st.integers(1, 5))
    stepped = advance(by_hand, StepStartEvent(seq=length + 1, time=time,
                                              data=StepData(turn=turn, step=step)))
    if step == 1:
        assert isinstance(stepped, Success)
        assert stepped.unwrap().open_step == 1
    else:
        assert isinstance(stepped, Failure)
        assert stepped.failure().problem == (
            f"step/start for turn {turn} step {step}, expected step 1")


def _first_title(prefix: Log) -> tuple[int, str] | None:
    """The first human message with a non-empty fallback title, read off the events."""
    for event in prefix:
        if isinstance(event, UserMessageEvent) and event.data.source.kind == "user":
            title = fallback_title("\n".join(block.text for block in event.data.content
                                             if isinstance(block, TextBlock)))
            if title:
                return event.seq, title
    return None


@settings(max_examples=examples(200), deadline=None)
@given(session_logs(max_turns=5))
def test_the_first_title_is_the_first_human_message_with_one(log: Log) -> None:
    """For every prefix of a generated log, folded one event at a time: the trace's first
    title is the seq and fallback title of the first ``user``-sourced message whose title is
    not empty (``None`` before one), and ``trace_log`` of the whole log agrees."""
    trace = EMPTY_TRACE
    for length, event in enumerate(log, start=1):
        trace = advance(trace, event).unwrap()
        assert trace.first_title == _first_title(log[:length]), length
    assert trace_log(log).unwrap().first_title == _first_title(log)


def _phases(log: Log) -> list[tuple[int | None, bool]]:
    """(open turn, whether a step is open) before each event and after the last one."""
    turn: int | None = None
    step = False
    where = [(turn, step)]
    for event in log:
        if isinstance(event, TurnStartEvent):
            turn = event.data.turn
        elif isinstance(event, TurnEndEvent):
            turn = None
        elif isinstance(event, StepStartEvent):
            step = True
        elif isinstance(event, StepEndEvent):
            step = False
        where.append((turn, step))
    return where


@settings(max_examples=examples(200), deadline=None)
@given(closed_logs(min_turns=1, max_turns=4), st.data())
def test_a_step_event_outside_a_step_says_where_the_log_is(log: Log,
                                                           data: st.DataObject) -> None:
    """An ``llm/retry-started`` (typed) or a ``todo/write`` (opaque, confined to a turn) put
    after a prefix of a generated log that has no step open is refused there, by the
    enclosure rule: inside a turn the retry is told it must be inside a step and where the
    log is; outside a turn either is told that no turn is open."""
    where = _phases(log)
    cuts = [i for i, (_, step) in enumerate(where) if not step]
    cut = data.draw(st.sampled_from(cuts))
    turn, _ = where[cut]
    time = log[cut - 1].time if cut else 0
    if turn is not None:
        kind = "llm/retry-started"
        stray: Event = LlmRetryStartedEvent(seq=cut, time=time, data=LlmRetryStartedData(
            retry_id="retry-1", turn=turn, step=1, retry=1))
        problem = f"{kind} must be inside a step; the log is turn {turn} (no step open)"
    else:
        kind = data.draw(st.sampled_from(("llm/retry-started", "todo/write")))
        stray = (LlmRetryStartedEvent(seq=cut, time=time, data=LlmRetryStartedData(
            retry_id="retry-1", turn=1, step=1, retry=1)) if kind == "llm/retry-started"
            else OpaqueEvent(type=kind, seq=cut, time=time, data=msgspec.Raw(b'{"todos":[]}')))
        problem = f"{kind} must be inside a turn, but no turn is open"
    refused = trace_log((*log[:cut], stray))
    assert isinstance(refused, Failure)
    violation = refused.failure()
    assert (violation.seq, violation.rule, violation.problem) == (cut, "enclosure", problem)


def _in_step(event: Event) -> bool:
    """A message or call that names its step (a pruning may stand anywhere in its turn)."""
    if isinstance(event, ToolResultEvent):
        return not isinstance(event.surface_op, SurfaceReplace)
    return isinstance(event, AssistantMessageEvent | ToolCallEvent)


def _elsewhere(event: AssistantMessageEvent | ToolCallEvent | ToolResultEvent, turn: int,
               step: int) -> tuple[Event, str]:
    """The event naming ``turn`` and ``step`` instead, and how the refusal calls it."""
    if isinstance(event, AssistantMessageEvent):
        kind = "assistant/message"
    elif isinstance(event, ToolCallEvent):
        kind = "tool/call"
    else:
        kind = f"tool/result for {event.data.message.source.call_id}"
    return msgspec.structs.replace(
        event, data=msgspec.structs.replace(event.data, turn=turn, step=step)), kind


@settings(max_examples=examples(200), deadline=None)
@given(closed_logs(min_turns=1, max_turns=4), st.data())
def test_an_event_naming_another_step_inside_an_open_one_is_refused(
        log: Log, data: st.DataObject) -> None:
    """An ``assistant/message``, ``tool/call`` or appended ``tool/result`` of a generated
    log changed to name another step or another turn (while its own step is open) is
    refused at its seq, by the enclosure rule, with the step it names and where the log is."""
    seqs = [event.seq for event in log if _in_step(event)]
    if not seqs:
        return
    seq = data.draw(st.sampled_from(seqs))
    event = log[seq]
    assert isinstance(event, AssistantMessageEvent | ToolCallEvent | ToolResultEvent)
    turn, step = event.data.turn, event.data.step
    other_turn, other_step = data.draw(st.sampled_from(
        ((turn, step + 1), (turn + 1, step), (turn, step + 7))))
    moved, kind = _elsewhere(event, other_turn, other_step)
    refused = trace_log((*log[:seq], moved))
    assert isinstance(refused, Failure)
    violation = refused.failure()
    assert (violation.seq, violation.rule, violation.problem) == (
        seq, "enclosure",
        f"{kind} for turn {other_turn} step {other_step} is outside the open step; the log is "
        f"turn {turn} step {step}")
