"""The strict level: each rule a provider refuses one item's content for, named in its own words,
checked only with ``strict=True``; the default stays balance-only. The cut of a strict history
stops before the first item the provider would refuse."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from turnfork.core.formats import STRICT_RULES, anthropic, openai_chat, openai_responses

USER = {"role": "user", "content": "q"}
ANSWER = {"role": "assistant", "content": "a"}


def _call(arguments: Any) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}


CHAT_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("null-content", {"role": "assistant", "content": None},
     "Invalid value for 'content': expected a string, got null."),
    ("null-content", {"role": "assistant"}, "expected a string, got null"),
    ("function-name", {"role": "function", "content": "ok"},
     "Missing parameter 'name': messages with role 'function' must have a 'name'."),
    ("arguments-type", {"role": "assistant", "content": None,
                        "tool_calls": [_call({"city": "Paris"})]},
     "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but "
     "got an object instead."),
    ("arguments-type", {"role": "assistant", "content": None, "tool_calls": [_call(None)]},
     "but got null instead"),
    ("arguments-type", {"role": "assistant", "function_call": {"name": "f", "arguments": 3}},
     "'messages[1].function_call.arguments': expected a string, but got an integer instead."),
    ("empty-array", {"role": "user", "content": []},
     "Invalid 'messages[1].content': empty array. Expected an array with minimum length 1, but "
     "got an empty array instead."),
    ("empty-array", {"role": "assistant", "content": "x", "tool_calls": []},
     "Invalid 'messages[1].tool_calls': empty array."),
]
ANTHROPIC_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("empty-content", {"role": "user", "content": ""},
     "messages.1: all messages must have non-empty content except for the optional final "
     "assistant message"),
    ("empty-content", {"role": "user", "content": []}, "messages.1: all messages must have"),
    ("empty-text", {"role": "user", "content": [{"type": "text", "text": ""}]},
     "messages: text content blocks must be non-empty (messages.1.content.0)"),
    ("empty-text", {"role": "user", "content": [{"type": "text", "text": "hi"},
                                                 {"type": "text", "text": " \n"}]},
     "messages: text content blocks must contain non-whitespace text (messages.1.content.1)"),
]


@pytest.mark.parametrize(("rule", "message", "words"), CHAT_CASES)
def test_chat_strict_rules(rule: str, message: dict[str, Any], words: str) -> None:
    """Each Chat rule at the message, with OpenAI's words; balance alone accepts it."""
    results = [{"role": "tool", "tool_call_id": call["id"], "content": "ok"}
               for call in message.get("tool_calls") or ()]
    history = [{"role": "system", "content": "s"}, message, *results, USER, ANSWER]
    assert openai_chat.check_balance(history).unwrap().is_balanced
    violation = openai_chat.check_balance(history, strict=True).failure()
    assert (violation.index, violation.rule) == (1, rule)
    assert words in violation.problem


@pytest.mark.parametrize(("rule", "message", "words"), ANTHROPIC_CASES)
def test_anthropic_strict_rules(rule: str, message: dict[str, Any], words: str) -> None:
    """Each Anthropic rule at the message, with Anthropic's words; balance alone accepts it."""
    history = [USER, {"role": "assistant", "content": "a"}, message,
               {"role": "assistant", "content": "b"}]
    assert anthropic.check_balance(history).unwrap().is_balanced
    violation = anthropic.check_balance(history, strict=True).failure()
    assert (violation.index, violation.rule) == (2, rule)
    assert words.replace("messages.1", "messages.2") in violation.problem


def test_anthropic_tool_use_input_must_be_an_object() -> None:
    """A tool_use whose input is text (or missing) breaks input-type; the pair still balances."""
    for bad in ("Paris", None, ["Paris"]):
        use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": bad}
        history = [USER, {"role": "assistant", "content": [use]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                 "content": "ok"}]}]
        assert anthropic.check_balance(history).unwrap().is_balanced
        violation = anthropic.check_balance(history, strict=True).failure()
        assert (violation.index, violation.rule) == (1, "input-type")
        assert violation.problem == ("messages.1.content.0.tool_use.input: Input should be a "
                                     "valid dictionary")


def test_an_empty_final_assistant_message_is_allowed() -> None:
    """Anthropic's one exception: the final assistant message may be empty (a prefill)."""
    for empty in ("", []):
        history = [USER, {"role": "assistant", "content": empty}]
        assert anthropic.check_balance(history, strict=True).unwrap().is_balanced
        with_more = [*history, USER]
        assert anthropic.check_balance(with_more, strict=True).failure().rule == "empty-content"


def test_chat_content_is_optional_with_calls() -> None:
    """content None is fine beside tool_calls or a function_call."""
    calls = {"role": "assistant", "content": None, "tool_calls": [_call("{}")]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    legacy = {"role": "assistant", "content": None,
              "function_call": {"name": "f", "arguments": "{}"}}
    answer = {"role": "function", "name": "f", "content": "ok"}
    for history in ([USER, calls, result, ANSWER], [USER, legacy, answer, ANSWER]):
        assert openai_chat.check_balance(history, strict=True).unwrap().is_balanced


@pytest.mark.parametrize("fmt", [openai_chat, openai_responses, anthropic],
                         ids=lambda m: m.__name__.rsplit(".")[-1])
def test_the_strict_cut_stops_before_a_refused_item(fmt: ModuleType) -> None:
    """A strict history's seed ends at the last completed turn before the refused item; the
    decoded level is remembered, and asking the other level reads the items again."""
    bad = {"role": "assistant", "content": None} if fmt is openai_chat else \
        {"role": "user", "content": ""}
    if fmt is openai_responses:
        bad = {"role": "user", "content": "fine"}
    items = [USER, ANSWER, USER, ANSWER, bad, USER, ANSWER]
    strict = fmt.decode_history(items, strict=True)
    assert strict.strict
    loose = fmt.check_balance(strict).unwrap()
    assert not loose.strict and loose.completed_prefix_length == 7
    if fmt is openai_responses:  # no strict rules: the same verdict
        assert strict.is_balanced and strict.completed_prefix_length == 7
        return
    assert strict.violation is not None and strict.violation.index == 4
    assert strict.violation.rule in STRICT_RULES
    assert fmt.completed_turn_prefix(strict) == items[:4]
    assert fmt.check_balance(loose, strict=True).failure() == strict.violation


def test_the_strict_rules_are_listed() -> None:
    """STRICT_RULES is exactly the rules the cases above exercise."""
    assert {rule for rule, _, _ in CHAT_CASES + ANTHROPIC_CASES} | {"input-type"} == STRICT_RULES
