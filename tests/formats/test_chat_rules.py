"""OpenAI Chat histories: each rule flagged at the item the provider names, and the cut."""

from __future__ import annotations

from typing import Any

import pytest

from turnfork.core.formats import openai_chat

USER = {"role": "user", "content": "Weather in Paris and Rome?"}
CALLS = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}},
    {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]}
R1 = {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
R2 = {"role": "tool", "tool_call_id": "c2", "content": "rain"}
DONE = {"role": "assistant", "content": "Sunny in Paris, rain in Rome."}


def _failure(messages: list[Any]) -> tuple[int, str]:
    violation = openai_chat.check_balance(messages).failure()
    return violation.index, violation.rule


def test_a_closed_turn_with_parallel_calls_is_balanced_and_cut_at_its_end() -> None:
    """Parallel calls answered in any order, then the answer: balanced, cut at the end."""
    history = openai_chat.decode_history([USER, CALLS, R2, R1, DONE])
    assert history.is_balanced and history.completed_prefix_length == 5
    assert openai_chat.completed_turn_prefix(history) == list(history.source)


def test_an_in_flight_turn_is_cut_before_it() -> None:
    """A second turn waiting for a result: the cut is the end of the first turn."""
    messages = [USER, CALLS, R1, R2, DONE, {"role": "user", "content": "And Oslo?"},
                {"role": "assistant", "tool_calls": [{"id": "c3", "type": "function",
                                                      "function": {"name": "weather"}}]}]
    history = openai_chat.decode_history(messages)
    assert history.violation is None
    assert history.end_violation is not None and history.end_violation.index == 6
    assert list(openai_chat.completed_turn_prefix(history)) == messages[:5]
    assert openai_chat.completed_turn_prefix(history)[4] is DONE


def test_a_missing_result_is_named_at_the_assistant_message() -> None:
    """A user message before the last result: unanswered-call at the calling message."""
    assert _failure([USER, CALLS, R1, {"role": "user", "content": "?"}, R2]) == (
        1, "unanswered-call")
    assert "c2" in openai_chat.check_balance([USER, CALLS, R1]).failure().problem


def test_a_system_message_between_calls_and_results_breaks_the_pairing() -> None:
    """Instructions inserted after the calls (pydantic-ai#4827's shape) are refused."""
    assert _failure([USER, CALLS, {"role": "system", "content": "Be brief."}, R1, R2]) == (
        1, "unanswered-call")


def test_orphan_duplicate_and_early_results() -> None:
    """Orphan, duplicate and before-the-call results are named at the tool message."""
    assert _failure([USER, R1, CALLS, R1, R2, DONE]) == (1, "orphan-result")
    assert _failure([USER, CALLS, R1, R1, R2]) == (3, "duplicate-result")
    assert _failure([USER, CALLS, R1, R2, {"role": "tool", "tool_call_id": "c9",
                                           "content": ""}]) == (4, "orphan-result")


def test_one_id_for_two_calls_is_refused() -> None:
    """Two calls of one message sharing an id: duplicate-call."""
    twice = {"role": "assistant", "tool_calls": [CALLS["tool_calls"][0]] * 2}
    assert _failure([USER, twice, R1]) == (1, "duplicate-call")


@pytest.mark.parametrize("bad", [5, {"content": "no role"}, {"role": "robot"},
                                 {"role": "tool", "content": "no id"},
                                 {"role": "assistant", "tool_calls": [{"id": 7}]}])
def test_unreadable_messages_are_shape_violations(bad: object) -> None:
    """A message that cannot be read stops the pass with a shape violation at its index."""
    history = openai_chat.decode_history([USER, DONE, bad, USER])
    assert history.violation is not None
    assert (history.violation.index, history.violation.rule) == (2, "shape")
    assert history.completed_prefix_length == 2 and history.end_violation is None


def test_unknown_keys_and_sdk_dumps_read() -> None:
    """Provider extras and model_dump() Nones are ignored; SDK objects are read as they are."""
    from openai.types.chat import ChatCompletionMessage

    dumped = ChatCompletionMessage(role="assistant", content=None, tool_calls=[
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}])
    extra = {"role": "tool", "tool_call_id": "c1", "content": "ok", "x_provider": {"a": 1}}
    for calling in (dumped, dumped.model_dump()):
        history = openai_chat.decode_history(
            [USER, calling, extra, ChatCompletionMessage(role="assistant", content="done")])
        assert history.is_balanced and history.completed_prefix_length == 4


def test_consecutive_assistant_messages_form_one_step() -> None:
    """Text then calls in two assistant messages: no turn ends between them."""
    history = openai_chat.decode_history([USER, {"role": "assistant", "content": "Checking."},
                                          CALLS, R1])
    assert history.completed_prefix_length == 0
