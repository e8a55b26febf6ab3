"""The balance trace: every rule, its sentence, and what a Trace reports (issue 2, item 4)."""

from __future__ import annotations

import msgspec
import pytest
from msgspec import UNSET, UnsetType
from returns.result import Failure, Success

from turnfork.core import (
    EMPTY_TRACE,
    TOOL_NOT_STARTED,
    AssistantChunkData,
    AssistantChunkEvent,
    AssistantMessage,
    AssistantMessageData,
    AssistantMessageEvent,
    ContentBlock,
    EpochHeader,
    Event,
    LlmCallConfig,
    MessageSource,
    OpaqueEvent,
    PendingCall,
    RequestHeaderData,
    RequestHeaderEvent,
    StepData,
    StepEndEvent,
    StepStartEvent,
    SurfaceOp,
    SurfaceReplace,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallData,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResultBlock,
    ToolResultData,
    ToolResultEvent,
    ToolResultMessage,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    UserMessage,
    UserMessageEvent,
    Violation,
    advance,
    check_balance,
    trace_log,
)


class Log:
    """Appends events with ``seq`` = position and a rising time, for compact test logs."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def _seq(self) -> int:
        return len(self.events)

    def _add(self, event: Event) -> int:
        self.events.append(event)
        return event.seq

    def turn_start(self, turn: int) -> int:
        return self._add(TurnStartEvent(seq=self._seq(), time=self._seq(),
                                        data=TurnStartData(turn=turn)))

    def turn_end(self, turn: int) -> int:
        return self._add(TurnEndEvent(seq=self._seq(), time=self._seq(),
                                      data=TurnEndData(turn=turn, reason=TurnCompleted())))

    def step_start(self, turn: int, step: int) -> int:
        return self._add(StepStartEvent(seq=self._seq(), time=self._seq(),
                                        data=StepData(turn=turn, step=step)))

    def step_end(self, turn: int, step: int) -> int:
        return self._add(StepEndEvent(seq=self._seq(), time=self._seq(),
                                      data=StepData(turn=turn, step=step)))

    def user(self, text: str = "hi", *, op: SurfaceOp = "append",
             cited: tuple[int, ...] | UnsetType = UNSET) -> int:
        return self._add(UserMessageEvent(
            seq=self._seq(), time=self._seq(), source_event_seqs=cited, surface_op=op,
            data=UserMessage(content=(TextBlock(text=text),), source=MessageSource(kind="user"),
                             id=f"u{self._seq()}")))

    def chunk(self, turn: int, step: int) -> int:
        return self._add(AssistantChunkEvent(seq=self._seq(), time=self._seq(),
                                             data=AssistantChunkData(
                                                 turn=turn, step=step,
                                                 chunk=TextDelta(index=0, text="x"))))

    def assistant(self, turn: int, step: int, *calls: str,
                  cited: tuple[int, ...] | UnsetType = UNSET,
                  source: MessageSource | None = None) -> int:
        content: tuple[ContentBlock, ...] = (TextBlock(text="ok"), *(
            ToolCallBlock(id=call, name="bash", arguments="{}") for call in calls))
        return self._add(AssistantMessageEvent(
            seq=self._seq(), time=self._seq(), source_event_seqs=cited, surface_op="append",
            data=AssistantMessageData(turn=turn, step=step, message=AssistantMessage(
                content=content, id=f"a{self._seq()}",
                source=source or MessageSource(kind="model", provider="p", model="m")))))

    def call(self, turn: int, step: int, call_id: str) -> int:
        return self._add(ToolCallEvent(seq=self._seq(), time=self._seq(), data=ToolCallData(
            turn=turn, step=step, call_id=call_id, name="bash", arguments="{}")))

    def result(self, turn: int, step: int, call_id: str, *,
               cited: tuple[int, ...] | UnsetType = UNSET, op: SurfaceOp = "append",
               text: str = "done", error: ToolErrorInfo | None = None,
               block_call_id: str | None = None, message_id: str | None = None) -> int:
        return self._add(ToolResultEvent(
            seq=self._seq(), time=self._seq(), source_event_seqs=cited, surface_op=op,
            data=ToolResultData(
                turn=turn, step=step, error=UNSET if error is None else error,
                message=ToolResultMessage(
                    source=MessageSource(kind="tool", call_id=call_id),
                    id=message_id or f"r{self._seq()}",
                    content=(ToolResultBlock(tool_call_id=block_call_id or call_id,
                                             content=(TextBlock(text=text),),
                                             is_error=error is not None),)))))

    def header(self) -> int:
        return self._add(RequestHeaderEvent(seq=self._seq(), time=self._seq(),
                                            data=RequestHeaderData(header=EpochHeader(
                                                config=LlmCallConfig(provider="p", model="m")),
                                                reason="initial")))

    def opaque(self, kind: str) -> int:
        return self._add(OpaqueEvent(type=kind, seq=self._seq(), time=self._seq(),
                                     data=msgspec.Raw(b"{}")))

    def completed_turn(self, turn: int) -> None:
        """A whole turn: one step with one tool call and its result."""
        self.turn_start(turn)
        self.step_start(turn, 1)
        self.user()
        self.assistant(turn, 1, f"call_t{turn}")
        call = self.call(turn, 1, f"call_t{turn}")
        self.result(turn, 1, f"call_t{turn}", cited=(call,))
        self.step_end(turn, 1)
        self.turn_end(turn)


def _violation(log: Log) -> Violation:
    result = trace_log(log.events)
    assert isinstance(result, Failure), result
    violation: Violation = result.failure()
    # The events before the broken one are fine: the violation is at the last event.
    assert isinstance(trace_log(log.events[:violation.seq]), Success)
    return violation


def _open_step(turn: int = 1) -> Log:
    """Whole turns before ``turn``, then ``turn`` with its step 1 open."""
    log = Log()
    for earlier in range(1, turn):
        log.completed_turn(earlier)
    log.turn_start(turn)
    log.step_start(turn, 1)
    return log


# --------------------------------------------------------------------------- the example


def test_the_issue_example_sentence() -> None:
    """A stray result reads "seq 41: tool/result for call_7 has no tool/call in turn 3 step 2"."""
    log = Log()
    log.completed_turn(1)
    log.completed_turn(2)
    log.turn_start(3)
    log.step_start(3, 1)
    log.step_end(3, 1)
    log.step_start(3, 2)
    while len(log.events) < 41:
        log.chunk(3, 2)
    log.result(3, 2, "call_7", cited=(40,))
    sentence = "seq 41: tool/result for call_7 has no tool/call in turn 3 step 2"
    assert str(_violation(log)) == sentence


# --------------------------------------------------------------------------- seq


def test_seq_must_equal_position() -> None:
    """A seq other than the position is refused at that position."""
    log = Log()
    log.turn_start(1)
    log.events.append(StepStartEvent(seq=5, time=1, data=StepData(turn=1, step=1)))
    violation = _violation(log)
    assert (violation.seq, violation.rule) == (1, "seq")
    assert violation.message == ("seq 1: event at position 1 has seq 5; seq must equal the "
                                 "event's position, counting from 0")


# --------------------------------------------------------------------------- turns and steps


def _turn_cases() -> list[tuple[Log, str, str]]:
    cases: list[tuple[Log, str, str]] = []
    log = Log()
    log.turn_start(1)
    log.turn_start(2)
    cases.append((log, "turn", "turn/start for turn 2 while turn 1 is still open"))
    log = Log()
    log.completed_turn(1)
    log.turn_start(3)
    cases.append((log, "turn", "turn/start for turn 3, expected turn 2"))
    log = Log()
    log.turn_end(1)
    cases.append((log, "turn", "turn/end for turn 1 but no turn is open"))
    log = Log()
    log.turn_start(1)
    log.turn_end(2)
    cases.append((log, "turn", "turn/end for turn 2 but turn 1 is open"))
    log = _open_step()
    log.turn_end(1)
    cases.append((log, "step", "turn/end for turn 1 while step 1 is still open"))
    log = _open_step()
    log.step_start(1, 2)
    cases.append((log, "step", "step/start for turn 1 step 2 while step 1 is still open"))
    log = _open_step()
    log.step_end(1, 1)
    log.step_start(1, 3)
    cases.append((log, "step", "step/start for turn 1 step 3, expected step 2"))
    log = _open_step()
    log.step_end(1, 2)
    cases.append((log, "step", "step/end for turn 1 step 2 but the log is turn 1 step 1"))
    log = Log()
    log.turn_start(1)
    log.step_end(1, 1)
    cases.append((log, "step", "step/end for turn 1 step 1 but the log is turn 1 (no step "
                               "open)"))
    log = Log()
    log.step_start(1, 1)
    cases.append((log, "enclosure", "step/start for turn 1 step 1, but turn 1 is not open; "
                                    "the log is between turns (no turn open)"))
    return cases


@pytest.mark.parametrize(("log", "rule", "sentence"), _turn_cases())
def test_turn_and_step_rules(log: Log, rule: str, sentence: str) -> None:
    """Misplaced or misnumbered turn and step boundaries name the rule and the numbers."""
    violation = _violation(log)
    assert violation.seq == len(log.events) - 1
    assert (violation.rule, violation.problem) == (rule, sentence)


# --------------------------------------------------------------------------- enclosure


def _enclosure_cases() -> list[tuple[Log, str]]:
    cases: list[tuple[Log, str]] = []
    log = _open_step()
    log.chunk(1, 2)
    cases.append((log, "assistant/chunk for turn 1 step 2 is outside the open step; the log "
                       "is turn 1 step 1"))
    log = Log()
    log.turn_start(1)
    log.assistant(1, 1)
    cases.append((log, "assistant/message for turn 1 step 1 is outside the open step; the log "
                       "is turn 1 (no step open)"))
    log = _open_step()
    log.call(2, 1, "c1")
    cases.append((log, "tool/call for turn 2 step 1 is outside the open step; the log is turn "
                       "1 step 1"))
    log = _open_step()
    log.result(1, 2, "c1", cited=(0,))
    cases.append((log, "tool/result for c1 for turn 1 step 2 is outside the open step; the log "
                       "is turn 1 step 1"))
    log = Log()
    log.header()
    cases.append((log, "request/header must be inside a turn, but no turn is open"))
    for kind in ("request/context", "todo/write"):
        log = Log()
        log.completed_turn(1)
        log.opaque(kind)
        cases.append((log, f"{kind} must be inside a turn, but no turn is open"))
    log = Log()
    log.completed_turn(1)
    log.result(1, 1, "call_t1", op=SurfaceReplace(start=5, end=5), cited=(5,))
    cases.append((log, "tool/result replacement outside a turn"))
    return cases


@pytest.mark.parametrize(("log", "sentence"), _enclosure_cases())
def test_enclosure_rules(log: Log, sentence: str) -> None:
    """Step-bound events outside their step, and turn-bound events between turns, are refused."""
    violation = _violation(log)
    assert (violation.rule, violation.problem) == ("enclosure", sentence)


def test_events_allowed_between_turns() -> None:
    """User messages, policy and plugin events may sit between turns; request/header inside."""
    log = Log()
    log.user()
    log.opaque("goal/change")
    log.opaque("acme/plugin")
    log.turn_start(1)
    log.header()
    log.opaque("todo/write")
    log.turn_end(1)
    assert isinstance(check_balance(log.events), Success)


# --------------------------------------------------------------------------- pairing


def _pairing_cases() -> list[tuple[Log, str]]:
    cases: list[tuple[Log, str]] = []
    log = _open_step()
    log.assistant(1, 1, "c1", "c2")
    log.call(1, 1, "c1")
    log.result(1, 1, "c1", cited=(3,))
    log.step_end(1, 1)
    cases.append((log, "step/end for turn 1 step 1 while c2 still has no tool/result"))
    log = _open_step()
    log.assistant(1, 1, "c1", "c1")
    cases.append((log, "assistant/message repeats tool call c1 in turn 1 step 1"))
    log = _open_step()
    log.call(1, 1, "c1")
    log.call(1, 1, "c1")
    cases.append((log, "tool/call c1 was already started in turn 1 step 1"))
    log = _open_step()
    log.call(1, 1, "c1")
    log.result(1, 1, "c1", cited=(2,))
    log.result(1, 1, "c1", cited=(2,))
    cases.append((log, "second tool/result for c1 in turn 1 step 1"))
    log = _open_step()
    log.assistant(1, 1, "c1")
    log.result(1, 1, "c1", cited=(2,))
    cases.append((log, "tool/result for c1 has no tool/call in turn 1 step 1"))
    log = _open_step(2)
    log.result(2, 1, "call_t1", cited=(4,))
    cases.append((log, "tool/result for call_t1 has no tool/call in turn 2 step 1"))
    return cases


@pytest.mark.parametrize(("log", "sentence"), _pairing_cases())
def test_pairing_rules(log: Log, sentence: str) -> None:
    """Every call gets exactly one result in its own step."""
    violation = _violation(log)
    assert (violation.rule, violation.problem) == ("pairing", sentence)


def test_parallel_calls_pair() -> None:
    """call A, call B, result A, result B is balanced."""
    log = _open_step()
    log.assistant(1, 1, "a", "b")
    a, b = log.call(1, 1, "a"), log.call(1, 1, "b")
    log.result(1, 1, "a", cited=(a,))
    log.result(1, 1, "b", cited=(b,))
    log.step_end(1, 1)
    log.turn_end(1)
    assert isinstance(check_balance(log.events), Success)


def test_tool_not_started_repair_result_needs_no_call() -> None:
    """The crash-repair TOOL_NOT_STARTED result may answer a call that never started."""
    log = _open_step()
    log.assistant(1, 1, "c1")
    log.result(1, 1, "c1", error=ToolErrorInfo(name="ToolNotStartedError",
                                               code=TOOL_NOT_STARTED))
    log.step_end(1, 1)
    log.turn_end(1)
    assert isinstance(check_balance(log.events), Success)


def test_other_error_results_still_need_a_call() -> None:
    """Only TOOL_NOT_STARTED is exempt from the pairing rule."""
    log = _open_step()
    log.assistant(1, 1, "c1")
    log.result(1, 1, "c1", error=ToolErrorInfo(name="ToolOutcomeUnknownError",
                                               code="TOOL_OUTCOME_UNKNOWN"))
    assert _violation(log).rule == "pairing"


# --------------------------------------------------------------------------- shape


def test_assistant_message_must_come_from_a_model() -> None:
    """An assistant message needs a model source with provider and model."""
    log = _open_step()
    log.assistant(1, 1, source=MessageSource(kind="model", provider="p"))
    violation = _violation(log)
    assert (violation.rule, violation.problem) == (
        "shape", 'assistant/message source must be {"kind":"model"} with a provider and a model')


def test_tool_result_must_hold_one_block_for_its_call() -> None:
    """A tool result's block must name the call of its source."""
    log = _open_step()
    log.call(1, 1, "c1")
    log.result(1, 1, "c1", cited=(2,), block_call_id="c2")
    violation = _violation(log)
    assert violation.rule == "shape"
    assert violation.problem == ('tool/result message must come from {"kind":"tool",'
                                 '"callId":…} and hold exactly one tool-result block for that '
                                 "call")


# --------------------------------------------------------------------------- surface


def _surface_cases() -> list[tuple[Log, str]]:
    cases: list[tuple[Log, str]] = []
    log = Log()
    log.user()
    log.user(cited=(0, 0))
    cases.append((log, "sourceEventSeqs lists a seq twice"))
    log = Log()
    log.user()
    log.user(cited=(0, 1))
    cases.append((log, "sourceEventSeqs cites seq 1, which is not earlier than this event"))
    log = Log()
    log.user(cited=())
    cases.append((log, "sourceEventSeqs is empty (only an assistant/message may cite nothing)"))
    log = Log()
    log.user()
    log.user()
    log.user(op=SurfaceReplace(start=1, end=0), cited=(0, 1))
    cases.append((log, "surface replace 1..0: start comes after end on the surface"))
    log = Log()
    log.user()
    log.opaque("compaction/start")
    log.user(op=SurfaceReplace(start=0, end=1), cited=(0, 1))
    cases.append((log, "surface replace names seq 1, which is not on the surface"))
    log = Log()
    log.opaque("compaction/start")
    log.user()
    log.user(op=SurfaceReplace(start=0, end=1), cited=(0, 1))
    cases.append((log, "surface replace names seq 0, which is not on the surface"))
    log = Log()
    log.user()
    log.user()
    log.user()
    log.user(op=SurfaceReplace(start=0, end=2), cited=(0, 2))
    cases.append((log, "surface replace shadows seq 1 without citing it in sourceEventSeqs"))
    log = _open_step()
    log.user()
    log.result(1, 1, "c1", op=SurfaceReplace(start=2, end=2), cited=(2,))
    cases.append((log, "a tool/result replacement must shadow exactly one tool/result"))
    log = _open_step()
    call = log.call(1, 1, "c1")
    first = log.result(1, 1, "c1", cited=(call,))
    log.result(1, 1, "c1", op=SurfaceReplace(start=first, end=first), cited=(first,),
               message_id="other-id")
    cases.append((log, "a tool/result replacement may rewrite only the result content"))
    return cases


@pytest.mark.parametrize(("log", "sentence"), _surface_cases())
def test_surface_rules(log: Log, sentence: str) -> None:
    """Provenance and replace ranges are checked as DSH does on every append (§1.1)."""
    violation = _violation(log)
    assert (violation.rule, violation.problem) == ("surface", sentence)


def test_valid_replacements_shrink_the_surface() -> None:
    """A checkpoint replacing a range, and a content-only result rewrite, are accepted."""
    log = _open_step()
    first = log.user()
    log.user()
    call = log.call(1, 1, "c1")
    result = log.result(1, 1, "c1", cited=(call,), message_id="keep")
    start = log.opaque("compaction/start")
    log.user("summary", op=SurfaceReplace(start=first, end=first + 1),
             cited=(first, first + 1, start))
    log.result(1, 1, "c1", op=SurfaceReplace(start=result, end=result), cited=(result,),
               text="[pruned]", message_id="keep")
    trace = trace_log(log.events).unwrap()
    surface_seqs = []
    node = trace.surface
    while node is not None:
        surface_seqs.append(node.seq)
        node = node.previous
    assert len(surface_seqs) == 2
    assert trace.surface is not None and trace.surface.seq == len(log.events) - 1


def test_assistant_message_may_cite_nothing() -> None:
    """An empty sourceEventSeqs means a known empty stream on assistant/message only."""
    log = _open_step()
    log.assistant(1, 1, cited=())
    assert isinstance(trace_log(log.events), Success)


# --------------------------------------------------------------------------- check_balance


def test_check_balance_names_the_open_turn() -> None:
    """An open turn with no step: check_balance names the turn, at the log's end."""
    log = Log()
    log.completed_turn(1)
    log.turn_start(2)
    result = check_balance(log.events)
    assert isinstance(result, Failure)
    assert (result.failure().seq, result.failure().rule) == (9, "open")
    assert str(result.failure()) == "seq 9: the log ends inside turn 2"


def test_check_balance_names_the_open_step() -> None:
    """An open step: check_balance names turn and step."""
    log = _open_step()
    result = check_balance(log.events)
    assert str(result.failure()) == "seq 2: the log ends inside turn 1 step 1"


def test_check_balance_names_a_pending_call() -> None:
    """A call without a result: check_balance names the call, turn and step."""
    log = _open_step()
    log.assistant(1, 1, "call_9")
    result = check_balance(log.events)
    assert str(result.failure()) == ("seq 3: the log ends while call_9 in turn 1 step 1 has "
                                     "no tool/result")


def test_check_balance_accepts_closed_logs_and_reports_the_trace() -> None:
    """A closed log returns its trace."""
    log = Log()
    log.completed_turn(1)
    log.user()
    trace = check_balance(log.events).unwrap()
    assert trace.is_closed
    assert (trace.length, trace.completed_prefix_length, trace.next_turn) == (9, 8, 2)


# --------------------------------------------------------------------------- the Trace


def test_trace_reports_open_turn_step_and_pending_calls() -> None:
    """Trace fields: open turn and step, pending calls, next numbers, prefix length."""
    log = Log()
    log.completed_turn(1)
    log.user()
    turn_seq = log.turn_start(2)
    log.step_start(2, 1)
    log.step_end(2, 1)
    log.step_start(2, 2)
    log.assistant(2, 2, "a", "b", "c")
    call_a = log.call(2, 2, "a")
    log.call(2, 2, "b")
    log.result(2, 2, "b", cited=(call_a + 1,))
    trace = trace_log(log.events).unwrap()
    assert (trace.open_turn, trace.open_step) == (2, 2)
    assert (trace.next_turn, trace.next_step) == (2, 2)
    assert trace.completed_prefix_length == 8
    assert trace.open_turn_seq == turn_seq
    assert trace.length == len(log.events)
    assert trace.last_time == log.events[-1].time
    assert trace.pending_calls == (
        PendingCall(call_id="a", name="bash", arguments="{}", step=2, call_seq=call_a),
        PendingCall(call_id="c", name="bash", arguments="{}", step=2, call_seq=None))
    assert trace.answered_calls == ("b",)
    assert not trace.is_closed


def test_empty_trace() -> None:
    """Before any event: nothing open, turn 1 next, prefix length 0."""
    assert trace_log(()) == Success(EMPTY_TRACE)
    assert (EMPTY_TRACE.length, EMPTY_TRACE.open_turn, EMPTY_TRACE.next_turn,
            EMPTY_TRACE.completed_prefix_length) == (0, None, 1, 0)
    assert EMPTY_TRACE.is_closed


def test_advance_is_pure_and_continues_a_trace() -> None:
    """advance returns a new Trace and leaves its input unchanged; trace_log can resume."""
    log = Log()
    log.completed_turn(1)
    log.turn_start(2)
    middle = trace_log(log.events[:4]).unwrap()
    after = advance(middle, log.events[4]).unwrap()
    assert middle.length == 4 and after.length == 5
    resumed = trace_log(log.events[4:], start=middle).unwrap()
    assert resumed.open_turn == 2 and resumed.completed_prefix_length == 8
    assert isinstance(advance(middle, log.events[5]), Failure)  # seq 5 at position 4
