"""OpenAI Chat histories, pinned where a mutation run of ``core.formats.openai_chat`` found the
tests loose: the JSON type the strict level names for call arguments, every role, and the
sentences and call ids of the unanswered calls."""

from __future__ import annotations

from typing import Any

import pytest

from turnfork.core.formats import openai_chat

USER = {"role": "user", "content": "q"}
ANSWER = {"role": "assistant", "content": "a"}


def _call(call_id: str, arguments: Any = "{}", name: str = "f") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


@pytest.mark.parametrize(("arguments", "named"), [
    (None, "null"), (True, "a boolean"), (False, "a boolean"), (0, "an integer"),
    (-3, "an integer"), (1.5, "a number"), ({"city": "Paris"}, "an object"), ({}, "an object"),
    (["a"], "an array"), ([], "an array"),
])
def test_the_strict_level_names_the_json_type_of_arguments(arguments: Any, named: str) -> None:
    """In OpenAI's words: "expected a string, but got <type> instead", the type as JSON names
    it (a boolean is not an integer), for a tool call and a legacy function_call alike."""
    calls = {"role": "assistant", "content": None, "tool_calls": [_call("c1"),
                                                                 _call("c2", arguments)]}
    violation = openai_chat.check_balance([USER, calls, _result("c1"), _result("c2"), ANSWER],
                                          strict=True).failure()
    assert (violation.index, violation.rule) == (1, "arguments-type")
    assert violation.problem == ("Invalid type for 'messages[1].tool_calls[1].function."
                                 f"arguments': expected a string, but got {named} instead.")
    legacy = {"role": "assistant", "function_call": {"name": "f", "arguments": arguments}}
    violation = openai_chat.check_balance(
        [USER, legacy, {"role": "function", "name": "f", "content": "ok"}, ANSWER],
        strict=True).failure()
    assert violation.problem == ("Invalid type for 'messages[1].function_call.arguments': "
                                 f"expected a string, but got {named} instead.")
    assert openai_chat.check_balance([USER, legacy, {"role": "function", "name": "f",
                                                     "content": "ok"}, ANSWER]).unwrap()


@pytest.mark.parametrize(("ids", "twice"), [
    (["c1", "c1"], "c1"), (["c1", "c2", "c2"], "c2"), (["c1", "c2", "c3", "c2", "c1"], "c2"),
    (["c1", "c2", "c1", "c2"], "c1"),
])
def test_a_call_id_used_twice_is_the_first_one_repeated(ids: list[str], twice: str) -> None:
    calls = {"role": "assistant", "content": None, "tool_calls": [_call(i) for i in ids]}
    violation = openai_chat.check_balance([USER, calls, *map(_result, ids)]).failure()
    assert (violation.index, violation.rule, violation.call_id) == (1, "duplicate-call", twice)
    assert violation.problem == f"tool call id {twice} is used twice in one message"


def test_the_unanswered_calls_are_named_in_order() -> None:
    calls = {"role": "assistant", "content": None, "tool_calls": [_call(i) for i in
                                                                 ("c3", "c1", "c2")]}
    violation = openai_chat.check_balance([USER, calls, _result("c1")]).failure()
    assert (violation.index, violation.rule, violation.call_id) == (1, "unanswered-call", "c3")
    assert violation.problem == ("an assistant message with 'tool_calls' must be followed by "
                                 "tool messages responding to each 'tool_call_id'; these did "
                                 "not get one: c3, c2")
    legacy = {"role": "assistant", "function_call": {"name": "lookup", "arguments": "{}"}}
    waiting = openai_chat.check_balance([USER, legacy]).failure()
    assert (waiting.index, waiting.rule) == (1, "unanswered-call")
    assert waiting.problem == ("the assistant's function_call lookup waits for the `function` "
                               "message that answers it")
    first = openai_chat.check_balance([legacy]).failure()  # at index 0, too
    assert (first.index, first.rule) == (0, "unanswered-call")
    unnamed = {"role": "assistant", "function_call": {"arguments": "{}"}}
    assert "function_call (unnamed) waits" in openai_chat.check_balance(
        [USER, unnamed]).failure().problem
