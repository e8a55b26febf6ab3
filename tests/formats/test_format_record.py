"""The one format record (``common.WireFormat``) and its generic operations, run per format:
each format module's functions are its record's methods, and each method does its work for
every format (so a mutant of the generic code dies whichever format it would show in)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from turnfork.core.formats import anthropic, openai_chat, openai_responses
from turnfork.core.formats.common import History, WireFormat

#: Per format: a history whose first two items are a completed turn, whose third opens the next
#: and whose fourth leaves it in flight (a call waiting)
#: (a call still waiting), and a completed history that only the strict level refuses.
CASES: dict[str, tuple[ModuleType, list[Any], list[Any], str]] = {
    "openai-chat": (openai_chat, [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Which city?"},
        {"role": "user", "content": "Paris."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
    ], [{"role": "user", "content": "hi"}, {"role": "assistant", "content": []}], "empty-array"),
    "openai-responses": (openai_responses, [
        {"role": "user", "content": "Weather?"},
        {"type": "message", "role": "assistant", "content": "Which city?"},
        {"role": "user", "content": "Paris."},
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{}"},
    ], [], ""),
    "anthropic": (anthropic, [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "Which city?"},
        {"role": "user", "content": "Paris."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "w", "input": {}}]},
    ], [{"role": "user", "content": ""}, {"role": "assistant", "content": "hi"}],
        "empty-content"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_module_functions_are_the_records_methods(name: str) -> None:
    module = CASES[name][0]
    record = module.FORMAT
    assert isinstance(record, WireFormat)
    assert record.name == name
    for function in ("decode_history", "check_balance", "completed_turn_cut",
                     "completed_turn_prefix"):
        bound = getattr(module, function)
        assert bound.__self__ is record
        assert bound.__func__ is getattr(type(record), function)


@pytest.mark.parametrize("name", list(CASES))
def test_the_generic_operations_read_raw_and_decoded_histories(name: str) -> None:
    module, items, _, _ = CASES[name]
    history = module.decode_history(items)
    assert isinstance(history, History)
    assert (history.format, history.source, len(history.items)) == (name, tuple(items), 4)
    assert (history.completed_prefix_length, history.violation) == (2, None)
    assert history.end_violation is not None
    assert history.end_violation.rule == "unanswered-call"
    for given in (items, history):
        assert module.completed_turn_cut(given) == 2
        prefix = module.completed_turn_prefix(given)
        assert type(prefix) is list
        assert prefix == items[:2]
        assert all(a is b for a, b in zip(prefix, items, strict=False))
        assert module.check_balance(given).failure() == history.end_violation
    balanced = module.check_balance(items[:2]).unwrap()
    assert (balanced.is_balanced, balanced.ends_at_completed_turn) == (True, True)
    assert module.completed_turn_prefix(items) is not module.completed_turn_prefix(items)


@pytest.mark.parametrize("name", [name for name, case in CASES.items() if case[2]])
def test_check_balance_reads_again_at_the_level_asked(name: str) -> None:
    module, _, items, rule = CASES[name]
    loose = module.decode_history(items)
    assert (loose.is_balanced, loose.strict) == (True, False)
    assert module.check_balance(loose).unwrap() is loose
    assert module.check_balance(items).unwrap().strict is False
    strict = module.check_balance(loose, strict=True).failure()
    assert strict.rule == rule
    assert module.check_balance(items, strict=True).failure() == strict
    decoded = module.decode_history(items, strict=True)
    assert (decoded.strict, decoded.violation) == (True, strict)
    assert module.check_balance(decoded, strict=True).failure() == strict
    # ``strict=False`` (the default) asks for balance alone: the strict history is read again.
    assert module.check_balance(decoded).unwrap().strict is False
    # The cut keeps the level a decoded history was read at.
    assert module.completed_turn_cut(decoded) == decoded.completed_prefix_length


def test_anthropic_takes_the_thinking_setting_through_its_record() -> None:
    items = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "w", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "sunny"}]},
    ]
    assert anthropic.check_balance(items).unwrap().is_balanced
    decoded = anthropic.decode_history(items)
    refused = anthropic.check_balance(decoded, thinking=True).failure()
    assert refused.rule == "thinking-first"
    assert anthropic.decode_history(items, thinking=True).end_violation == refused
    assert anthropic.check_balance(decoded, thinking=False).unwrap() is not decoded
