"""The surface's bookkeeping in ``core.trace`` (and how an open log is reported), pinned where a
mutation run found it loose.

* A replace whose start stands after its end on the surface is refused as such, whatever it
  cites: the fold compares the two positions, it does not walk past the end.
* A replace that shadows seqs it does not cite names the earliest of them.
* A ``tool/result`` replacement shadows exactly one ``tool/result``: a range that holds more
  (even one that starts at a tool/result and cites everything), or one entry that is another
  kind of message, is refused with that rule's sentence.
* A ``tool/result`` replacement may not change its message's source either (an extra key in
  it is more than the content).
* A message (user, assistant or tool/result) whose ``sourceEventSeqs`` repeat a seq or name
  one not earlier than itself is refused at its seq, whichever kind of message it is.
* A log that ends with calls still waiting names the first of them, in the order the step
  announced or started them.
"""

from __future__ import annotations

from typing import Any

import msgspec
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure

from turnfork.core import (
    AssistantMessageEvent,
    Event,
    MessageSource,
    StepEndEvent,
    StepStartEvent,
    SurfaceNode,
    SurfaceReplace,
    ToolCallBlock,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    UserMessageEvent,
    check_balance,
    trace_log,
)
from turnfork.core.strategies import closed_logs, in_flight_logs, session_logs

Log = tuple[Event, ...]
_replace = msgspec.structs.replace


def _seqs(node: SurfaceNode | None) -> list[int]:
    found: list[int] = []
    while node is not None:
        found.append(node.seq)
        node = node.previous
    return found[::-1]


def _replacements(log: Log) -> list[int]:
    return [event.seq for event in log
            if isinstance(event, UserMessageEvent | ToolResultEvent)
            and isinstance(event.surface_op, SurfaceReplace)]


def _surface_before(log: Log, seq: int) -> list[int]:
    """The surface the event at ``seq`` finds (the prefix before it is valid)."""
    return _seqs(trace_log(log[:seq]).unwrap().surface)


def _refusal(log: Log) -> tuple[int, str, str]:
    refused = trace_log(log)
    assert isinstance(refused, Failure), "the changed log was accepted"
    violation = refused.failure()
    return violation.seq, violation.rule, violation.problem


def _with(log: Log, seq: int, event: Any) -> Log:
    return (*log[:seq], event, *log[seq + 1:])


@settings(max_examples=examples(200), deadline=None)
@given(closed_logs(min_turns=1, max_turns=5), st.data())
def test_a_replace_from_a_later_entry_to_an_earlier_one_is_refused(
        log: Log, data: st.DataObject) -> None:
    """Any replacement of a log, turned to run from a later surface entry back to an earlier
    one while citing every entry of the surface, is refused at its seq as a range whose start
    comes after its end."""
    seqs = _replacements(log)
    if not seqs:
        return
    seq = data.draw(st.sampled_from(seqs))
    surface = _surface_before(log, seq)
    if len(surface) < 2:
        return
    earlier = data.draw(st.integers(0, len(surface) - 2))
    later = data.draw(st.integers(earlier + 1, len(surface) - 1))
    start, end = surface[later], surface[earlier]
    event = log[seq]
    backwards = _replace(event, surface_op=SurfaceReplace(start=start, end=end),
                         source_event_seqs=tuple(surface))
    assert _refusal(_with(log, seq, backwards)) == (
        seq, "surface", f"surface replace {start}..{end}: start comes after end on the surface")


@settings(max_examples=examples(200), deadline=None)
@given(closed_logs(min_turns=1, max_turns=5), st.data())
def test_a_replace_names_the_earliest_shadowed_seq_it_does_not_cite(
        log: Log, data: st.DataObject) -> None:
    """Any replacement of a log, widened to a range of the surface and made to leave some of
    the range's seqs uncited (it still cites the others and an earlier seq off the range), is
    refused at its seq naming the earliest uncited one."""
    seqs = _replacements(log)
    if not seqs:
        return
    seq = data.draw(st.sampled_from(seqs))
    surface = _surface_before(log, seq)
    first = data.draw(st.integers(0, len(surface) - 1))
    last = data.draw(st.integers(first, len(surface) - 1))
    shadowed = surface[first:last + 1]
    uncited = data.draw(st.sets(st.sampled_from(shadowed), min_size=min(2, len(shadowed))))
    off_range = next(s for s in range(seq) if s not in shadowed)
    cited = tuple(sorted({off_range, *(s for s in shadowed if s not in uncited)}))
    event = _replace(log[seq], surface_op=SurfaceReplace(start=shadowed[0], end=shadowed[-1]),
                     source_event_seqs=cited)
    assert _refusal(_with(log, seq, event)) == (
        seq, "surface",
        f"surface replace shadows seq {min(uncited)} without citing it in sourceEventSeqs")


def _prunes(log: Log) -> list[int]:
    return [seq for seq in _replacements(log) if isinstance(log[seq], ToolResultEvent)]


@settings(max_examples=examples(200), deadline=None)
@given(session_logs(max_turns=5), st.data())
def test_a_result_replacement_shadows_exactly_one_tool_result(
        log: Log, data: st.DataObject) -> None:
    """A pruning turned to shadow a range that is not exactly one tool/result — the result
    it prunes and the entries after it up to a later one, or a single entry that is not a
    tool/result — citing every seq of the range, is refused at its seq by the surface rule
    for results."""
    seqs = _prunes(log)
    if not seqs:
        return
    seq = data.draw(st.sampled_from(seqs))
    event = log[seq]
    assert isinstance(event, ToolResultEvent) and isinstance(event.surface_op, SurfaceReplace)
    surface = _surface_before(log, seq)
    pruned = surface.index(event.surface_op.start)
    others = [i for i, s in enumerate(surface) if not isinstance(log[s], ToolResultEvent)]
    wider = pruned + 1 < len(surface) and (not others or data.draw(st.booleans()))
    if wider:
        first, last = pruned, data.draw(st.integers(pruned + 1, len(surface) - 1))
    elif others:
        first = last = data.draw(st.sampled_from(others))
    else:
        return
    shadowed = surface[first:last + 1]
    wrong = _replace(event, surface_op=SurfaceReplace(start=shadowed[0], end=shadowed[-1]),
                     source_event_seqs=tuple(shadowed))
    assert _refusal(_with(log, seq, wrong)) == (
        seq, "surface", "a tool/result replacement must shadow exactly one tool/result")


@settings(max_examples=examples(100), deadline=None)
@given(session_logs(max_turns=5), st.data())
def test_a_result_replacement_may_not_change_its_source(log: Log, data: st.DataObject) -> None:
    """A pruning whose message source gains a key (same kind, same call id) is refused at its
    seq: the source is not the result's content."""
    seqs = _prunes(log)
    if not seqs:
        return
    seq = data.draw(st.sampled_from(seqs))
    event = log[seq]
    assert isinstance(event, ToolResultEvent)
    message = event.data.message
    source = MessageSource.from_wire({**message.source.to_wire(), "prunedBy": "pruner"})
    changed = _replace(event, data=_replace(event.data,
                                            message=_replace(message, source=source)))
    assert _refusal(_with(log, seq, changed)) == (
        seq, "surface", "a tool/result replacement may rewrite only the result content")


def _waiting(log: Log) -> list[tuple[str, int, int]]:
    """The calls of the log's open step still without a result, as (call id, turn, step), in
    the order the step first announced or started them: read from the events alone."""
    waiting: dict[str, tuple[int, int]] = {}
    for event in log:
        if isinstance(event, StepStartEvent | StepEndEvent | TurnEndEvent):
            waiting = {}
        elif isinstance(event, AssistantMessageEvent):
            for block in event.data.message.content:
                if isinstance(block, ToolCallBlock):
                    waiting.setdefault(block.id, (event.data.turn, event.data.step))
        elif isinstance(event, ToolCallEvent):
            waiting.setdefault(event.data.call_id, (event.data.turn, event.data.step))
        elif isinstance(event, ToolResultEvent) and not isinstance(event.surface_op,
                                                                   SurfaceReplace):
            waiting.pop(event.data.message.source.call_id or "", None)
    return [(call_id, turn, step) for call_id, (turn, step) in waiting.items()]


@settings(max_examples=examples(300), deadline=None)
@given(in_flight_logs(max_turns=3))
def test_a_log_ending_with_calls_waiting_names_the_first_of_them(log: Log) -> None:
    """check_balance of an in-flight log cut while calls wait for results names, at the log's
    length, the first call the open step announced or started that has no result yet."""
    waiting = _waiting(log)
    if not waiting:
        return
    call_id, turn, step = waiting[0]
    refused = check_balance(log)
    assert isinstance(refused, Failure)
    violation = refused.failure()
    assert (violation.seq, violation.rule, violation.problem) == (
        len(log), "open",
        f"the log ends while {call_id} in turn {turn} step {step} has no tool/result")


_MESSAGES = (UserMessageEvent, AssistantMessageEvent, ToolResultEvent)


@settings(max_examples=examples(200), deadline=None)
@given(session_logs(max_turns=4), st.sampled_from(_MESSAGES), st.booleans(), st.data())
def test_a_message_citing_badly_is_refused_at_its_seq(log: Log, kind: type, twice: bool,
                                                      data: st.DataObject) -> None:
    """A message of a generated log (user, assistant or tool/result, appended or replacing)
    whose ``sourceEventSeqs`` list a seq twice, or name its own seq or a later one, is refused
    at its seq by the surface rule, with the sentence for that."""
    seqs = [event.seq for event in log if isinstance(event, kind)]
    if not seqs:
        return
    seq = data.draw(st.sampled_from(seqs))
    event = log[seq]
    assert isinstance(event, _MESSAGES)
    cited = () if isinstance(event.source_event_seqs, msgspec.UnsetType) else (
        event.source_event_seqs)
    if twice:
        repeated = data.draw(st.sampled_from(cited)) if cited else data.draw(
            st.integers(0, max(seq - 1, 0)))
        bad = (*cited, repeated) if cited else (repeated, repeated)
        problem = "sourceEventSeqs lists a seq twice"
    else:
        later = data.draw(st.integers(seq, seq + 3))
        bad = (*cited, later)
        problem = f"sourceEventSeqs cites seq {later}, which is not earlier than this event"
    assert _refusal(_with(log, seq, _replace(event, source_event_seqs=bad))) == (
        seq, "surface", problem)
