"""Result reading (wire-format §7.3-7.4): output selection, accounting turn, stop reasons."""

from __future__ import annotations

import pytest
from _delegation_helpers import SNAPSHOTS, Log, load, tool_result
from hypothesis import given
from hypothesis import strategies as st
from msgspec import UNSET, Raw

from turnfork.core import (
    CancelUser,
    Event,
    LlmFailure,
    ReasoningBlock,
    SubagentResult,
    TextBlock,
    ToolCallBlock,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEndReason,
    TurnError,
    TurnInterrupted,
    TurnMaxTokens,
    accounting_turn_end,
    final_assistant_output,
    read_result,
    render_tool_result,
    stop_reason_for,
)

ERROR = TurnError(error=LlmFailure(message="boom", code="UNKNOWN"))
ENDINGS: list[TurnEndReason] = [TurnCompleted(), ERROR, TurnMaxTokens()]


def test_last_non_empty_message_wins_whole() -> None:
    """Ensures the last non-empty assistant message is the output, all its blocks included."""
    blocks = (ReasoningBlock(text="think"), TextBlock(text="two"),
              ToolCallBlock(id="c", name="t", arguments="{}"))
    log = Log().turn(1, text="one").turn(2, blocks=blocks).turn(3, blocks=())
    assert final_assistant_output(log.events) == blocks


def test_output_from_an_iterator_equals_the_sequence_scan() -> None:
    """Ensures the forward fold (any iterable) and the backward scan agree."""
    log = Log().turn(1, text="one", chunks=("o", "ne")).turn(2, blocks=())
    assert final_assistant_output(iter(log.events)) == final_assistant_output(log.events) == \
        (TextBlock(text="one"),)


def test_streamed_text_is_the_fallback() -> None:
    """Ensures text deltas are joined (empty pieces ignored) when no message has content."""
    log = Log().turn(1, chunks=("par", "", "tial"), reason=TurnAborted(reason=CancelUser()))
    assert final_assistant_output(log.events) == (TextBlock(text="partial"),)
    assert final_assistant_output(iter(log.events)) == (TextBlock(text="partial"),)


def test_no_output_at_all() -> None:
    """Ensures a run without assistant text gives None (and read_result gives ())."""
    log = Log().turn(1)
    assert final_assistant_output(log.events) is None
    assert read_result(log.events, cancelled=False).output == ()


@pytest.mark.parametrize(("reason", "expected"), [
    (TurnCompleted(), "completed"), (TurnMaxTokens(), "max-tokens"),
    (TurnAborted(reason=CancelUser()), "aborted"), (TurnBlocked(), "refusal"),
    (ERROR, "error"), (TurnInterrupted(), "error"), (None, "error")])
def test_stop_reason_mapping(reason: TurnEndReason | None, expected: str) -> None:
    """Ensures each turn-end kind maps to DSH's stop reason."""
    assert stop_reason_for(reason) == expected


def test_accounting_turn_needs_a_step_or_a_failed_claim() -> None:
    """Ensures a stepless completed turn does not account, a stepless blocked claim does."""
    log = Log().turn(1, text="a", reason=TurnMaxTokens())
    log.turn(2, step=False, claim=True)  # claimed, completed, no step: no work
    log.turn(3, step=False)  # nothing at all
    end = accounting_turn_end(log.events)
    assert end is not None and end.data.turn == 1
    log.turn(4, step=False, claim=True, reason=TurnBlocked())
    end = accounting_turn_end(log.events)
    assert end is not None and end.data.turn == 4
    assert read_result(log.events, cancelled=False).stop_reason == "refusal"


def test_cancel_overrides_everything_but_completed() -> None:
    """Ensures a cancelled run is aborted unless it completed."""
    failed = Log().turn(1, reason=ERROR).events
    assert read_result(failed, cancelled=True).stop_reason == "aborted"
    done = Log().turn(1, text="ok").events
    assert read_result(done, cancelled=True).stop_reason == "completed"


def test_structured_value_is_returned_when_captured() -> None:
    """Ensures a captured value rides along with the output."""
    done = Log().turn(1, text="ok").events
    result = read_result(done, cancelled=False, captured=Raw(b'{"a":1}'), structured_requested=True)
    assert result.stop_reason == "completed"
    assert result.structured == Raw(b'{"a":1}')


@pytest.mark.parametrize(("cancelled", "expected"), [(False, "error"), (True, "aborted")])
def test_completed_without_structured_value_fails(cancelled: bool, expected: str) -> None:
    """Ensures a run asked for structured output cannot complete without capturing one."""
    done = Log().turn(1, text="ok").events
    result = read_result(done, cancelled=cancelled, structured_requested=True)
    assert result.stop_reason == expected
    assert result.structured is UNSET
    assert read_result(Log().turn(1, reason=TurnMaxTokens()).events, cancelled=False,
                       structured_requested=True).stop_reason == "max-tokens"


def test_captured_value_ignored_when_not_requested() -> None:
    """Ensures structured stays absent unless it was requested."""
    done = Log().turn(1, text="ok").events
    assert read_result(done, cancelled=False, captured=Raw(b"{}")).structured is UNSET


@pytest.mark.parametrize(("child", "seed_length", "parent", "result_seq"), [
    ("subagent-fork-in-process__session.1.jsonl", 42,
     "subagent-fork-in-process__session.jsonl", 159),
    ("subagent-spawn-in-process__session.1.jsonl", 0,
     "subagent-spawn-in-process__session.jsonl", 118),
    ("subagent-depth-two-rejection__session.2.jsonl", 0,
     "subagent-depth-two-rejection__session.1.jsonl", 18),
])
def test_real_children_give_the_parents_tool_result(child: str, seed_length: int, parent: str,
                                                    result_seq: int) -> None:
    """Ensures reading a real DSH child and rendering it gives its parent's tool/result text."""
    _, child_events = load(SNAPSHOTS + child)
    _, parent_events = load(SNAPSHOTS + parent)
    result = read_result(child_events[seed_length:], cancelled=False)
    assert result.stop_reason == "completed"
    rendered = render_tool_result(result)
    assert (rendered.text, rendered.is_error) == tool_result(parent_events[result_seq])
    assert rendered.is_error is False


def test_fork_child_without_output_does_not_return_seeded_text() -> None:
    """Ensures a fork child whose own turn produced nothing has empty output, although its
    seed holds the parent's assistant text."""
    _, child_events = load(SNAPSHOTS + "subagent-fork-in-process__session.1.jsonl")
    assert final_assistant_output(child_events[:42]) is not None
    own = Log(start=42).end_seed().turn(3, reason=ERROR).events
    result = read_result(own, cancelled=False)
    assert result == SubagentResult(output=(), stop_reason="error", failure=ERROR.error)


texts = st.text(min_size=1, max_size=6)


@st.composite
def seeded_children(draw: st.DrawFn) -> tuple[list[Event], int]:
    """A seed of completed turns with assistant text, then own events without assistant output."""
    seed = Log()
    for turn in range(1, draw(st.integers(1, 4)) + 1):
        seed.turn(turn, text=draw(texts), chunks=tuple(draw(st.lists(texts, max_size=3))))
    own = Log(start=seed.seq).end_seed()
    if draw(st.booleans()):
        own.approval("never")
    turn = len([e for e in seed.events if type(e).__name__ == "TurnEndEvent"]) + 1
    for offset in range(draw(st.integers(0, 3))):
        own.turn(turn + offset, blocks=draw(st.sampled_from([None, ()])),
                 reason=draw(st.sampled_from(ENDINGS)),
                 step=draw(st.booleans()), claim=draw(st.booleans()))
    return seed.events + own.events, len(seed.events)


@given(child=seeded_children(), cancelled=st.booleans())
def test_output_never_comes_from_before_the_seed_boundary(child: tuple[list[Event], int],
                                                          cancelled: bool) -> None:
    """Ensures own events without assistant output read as empty output, whatever the seed."""
    events, seed_length = child
    assert final_assistant_output(events[:seed_length]) is not None
    result = read_result(events[seed_length:], cancelled=cancelled)
    assert result.output == ()
    assert result.stop_reason in {"completed", "error", "max-tokens", "aborted"}
    if cancelled:
        assert result.stop_reason in {"completed", "aborted"}
