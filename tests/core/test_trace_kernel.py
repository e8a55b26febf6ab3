"""What a trace keeps, against a model written from the rules (issue 29).

For every prefix of every generated log (closed or in flight), folded one event at a time, the
trace must agree with a plain re-reading of the prefix: whether it is closed (exactly when
``check_balance`` succeeds), its phase, open turn and step, numbering, the cut, the last
``request/context`` route, ``request/header``, ``sandbox/mode``, title and time. And a
``tool/result`` that replaces an earlier one may change its content only: a replacement that
changes anything else (its turn, its step, its message id, its error flag or info) is refused.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from turnfork.core import (
    EMPTY_TRACE,
    Event,
    OpaqueEvent,
    RequestHeaderEvent,
    SandboxModeData,
    SandboxModeEvent,
    StepEndEvent,
    StepStartEvent,
    SurfaceReplace,
    ToolErrorInfo,
    ToolResultBlock,
    ToolResultEvent,
    Trace,
    TurnEndEvent,
    TurnStartEvent,
    advance,
    check_balance,
    completed_turn_cut,
    trace_log,
)
from turnfork.core.grammar import Phase
from turnfork.core.strategies import closed_logs, session_logs

Log = tuple[Event, ...]


def _route(event: OpaqueEvent) -> tuple[str, str] | None:
    try:
        data = json.loads(bytes(event.data))
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("provider"), str) and isinstance(
            data.get("model"), str):
        return data["provider"], data["model"]
    return None


def _expected(prefix: Log) -> dict[str, Any]:
    """What the trace of ``prefix`` must hold, read off the events directly."""
    turn: int | None = None
    turn_seq: int | None = None
    step: int | None = None
    ends = 0
    route = header = sandbox = None
    titled = False
    for event in prefix:
        if isinstance(event, TurnStartEvent):
            turn, turn_seq, step = event.data.turn, event.seq, None
        elif isinstance(event, TurnEndEvent):
            turn, turn_seq, ends = None, None, ends + 1
        elif isinstance(event, StepStartEvent):
            step = event.data.step
        elif isinstance(event, StepEndEvent):
            step = None
        elif isinstance(event, RequestHeaderEvent):
            header = event.data.header
        elif isinstance(event, SandboxModeEvent):
            sandbox = event.data
        elif isinstance(event, OpaqueEvent):
            if event.type == "request/context":
                route = _route(event) or route
            titled = titled or event.type == "session/title"
    phase = Phase.IDLE if turn is None else (Phase.TURN if step is None else Phase.STEP)
    return {"length": len(prefix), "open_turn": turn, "open_turn_seq": turn_seq,
            "open_step": step, "next_turn": ends + 1, "phase": phase,
            "completed_prefix_length": completed_turn_cut(prefix),
            "request_context": route, "request_header": header, "sandbox_mode": sandbox,
            "titled": titled, "last_time": prefix[-1].time if prefix else 0}


def _kept(trace: Trace) -> dict[str, Any]:
    return {"length": trace.length, "open_turn": trace.open_turn,
            "open_turn_seq": trace.open_turn_seq, "open_step": trace.open_step,
            "next_turn": trace.next_turn, "phase": trace.phase,
            "completed_prefix_length": trace.completed_prefix_length,
            "request_context": trace.request_context, "request_header": trace.request_header,
            "sandbox_mode": trace.sandbox_mode, "titled": trace.titled,
            "last_time": trace.last_time}


@settings(max_examples=examples(300), deadline=None)
@given(session_logs())
def test_every_prefix_traces_as_its_events_say(log: Log) -> None:
    """Folded one event at a time: the trace of each prefix is what the prefix says, closed
    exactly when check_balance accepts it, and trace_log agrees with the one-at-a-time fold."""
    trace = EMPTY_TRACE
    for length in range(len(log) + 1):
        prefix = log[:length]
        if length:
            trace = advance(trace, log[length - 1]).unwrap()
        assert _kept(trace) == _expected(prefix), length
        balanced = check_balance(prefix)
        assert trace.is_closed == isinstance(balanced, Success), length
        assert trace.is_closed == (trace.phase is Phase.IDLE and not trace.pending_calls)
        if not trace.is_closed:
            assert isinstance(balanced, Failure) and balanced.failure().rule == "open"
            assert balanced.failure().seq == length
    assert _kept(trace_log(log).unwrap()) == _kept(trace)


@settings(max_examples=examples(200), deadline=None)
@given(closed_logs(), st.lists(st.sampled_from(["workspace-write", "read-only",
                                                "danger-full-access"]), min_size=1, max_size=3))
def test_the_last_sandbox_mode_is_the_logs_override(log: Log, modes: list[Any]) -> None:
    """sandbox/mode events, wherever they stand: the trace keeps the last one's payload."""
    extra = tuple(SandboxModeEvent(seq=len(log) + i, time=9, data=SandboxModeData(mode=mode))
                  for i, mode in enumerate(modes))
    trace = trace_log(log + extra).unwrap()
    assert trace.sandbox_mode == extra[-1].data
    assert trace.is_closed


def _route_event(seq: int, data: object) -> OpaqueEvent:
    return OpaqueEvent(type="request/context", seq=seq, time=1,
                       data=msgspec.Raw(json.dumps(data).encode()))


def test_the_request_context_is_the_last_routes_provider_and_model() -> None:
    """Both halves of the route are kept; a route without both strings changes nothing."""
    start = (TurnStartEvent(seq=0, time=0, data=_turn_start()),)
    events = (*start, _route_event(1, {"provider": "p1", "model": "m1"}),
              _route_event(2, {"provider": "p2"}), _route_event(3, ["p", "m"]),
              _route_event(4, {"provider": "p3", "model": 7}))
    assert trace_log(events[:2]).unwrap().request_context == ("p1", "m1")
    assert trace_log(events).unwrap().request_context == ("p1", "m1")
    later = (*events, _route_event(5, {"model": "m4", "provider": "p4", "extra": 1}))
    assert trace_log(later).unwrap().request_context == ("p4", "m4")


def _turn_start() -> Any:
    from turnfork.core import TurnStartData

    return TurnStartData(turn=1)


def _pruned(log: Log) -> list[int]:
    return [event.seq for event in log if isinstance(event, ToolResultEvent)
            and isinstance(event.surface_op, SurfaceReplace)]


def _changes(event: ToolResultEvent) -> dict[str, ToolResultEvent]:
    """The replacement with one field other than its content changed."""
    data = event.data
    (block,) = data.message.content
    assert isinstance(block, ToolResultBlock)
    flipped = msgspec.structs.replace(block, is_error=not block.is_error)
    error = ToolErrorInfo(name="OtherError", code="OTHER")
    return {
        "turn": msgspec.structs.replace(event, data=msgspec.structs.replace(
            data, turn=data.turn + 1)),
        "step": msgspec.structs.replace(event, data=msgspec.structs.replace(
            data, step=data.step + 1)),
        "message id": msgspec.structs.replace(event, data=msgspec.structs.replace(
            data, message=msgspec.structs.replace(data.message, id=data.message.id + "x"))),
        "is_error": msgspec.structs.replace(event, data=msgspec.structs.replace(
            data, message=msgspec.structs.replace(data.message, content=(flipped,)))),
        "error": msgspec.structs.replace(event, data=msgspec.structs.replace(
            data, error=error if data.error != error else msgspec.UNSET)),
        "meta": msgspec.structs.replace(event, data=msgspec.structs.replace(
            data, meta=msgspec.Raw(b'{"changed":true}'))),
    }


@settings(max_examples=examples(300), deadline=None)
@given(session_logs(), st.data())
def test_a_result_replacement_may_change_only_its_content(log: Log,
                                                          data: st.DataObject) -> None:
    """Every pruning in a generated log: changing what it says besides the content (turn,
    step, message id, is_error, error info, meta) is refused at its seq, by the surface rule."""
    seqs = _pruned(log)
    if not seqs:
        return
    seq = data.draw(st.sampled_from(seqs))
    original = log[seq]
    assert isinstance(original, ToolResultEvent)
    # Every field at each drawn pruning: prunings are rare in generated logs, and a field
    # drawn per example left some (meta) untried for a whole run.
    for field, replacement in sorted(_changes(original).items()):
        refused = trace_log((*log[:seq], replacement, *log[seq + 1:]))
        assert isinstance(refused, Failure), field
        violation = refused.failure()
        assert (violation.seq, violation.rule, violation.problem) == (
            seq, "surface", "a tool/result replacement may rewrite only the result content"), \
            field
