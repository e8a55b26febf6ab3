"""What every format shares (``core.formats.common``), pinned where a mutation run found it loose:
a decoded history handed back in is read again exactly when its level differs from the one
asked, and never otherwise; items given as objects read as their dicts do, also when one of
them does not read; a shape problem names the item (and the field) in msgspec's words; the
``History`` a caller builds itself, and its ``repr``."""

from __future__ import annotations

from types import ModuleType, SimpleNamespace
from typing import Any, get_args

import msgspec
import pytest
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Success

from turnfork.core import formats
from turnfork.core.formats import (
    FORMAT_NAMES,
    FormatName,
    FormatViolation,
    History,
    anthropic,
    openai_chat,
    openai_responses,
)
from turnfork.core.formats.strategies import broken_histories, histories

MODULES: dict[FormatName, ModuleType] = {"openai-chat": openai_chat,
                                         "openai-responses": openai_responses,
                                         "anthropic": anthropic}

#: A message each strict format refuses only at the strict level, in a history that is
#: otherwise balanced and complete.
STRICT_ONLY: dict[FormatName, list[dict[str, Any]]] = {
    "openai-chat": [{"role": "user", "content": "q"}, {"role": "assistant", "content": None},
                    {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
    "anthropic": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
                  {"role": "user", "content": ""}, {"role": "assistant", "content": "a"}],
}


def _verdict(history: History[Any]) -> tuple[Any, ...]:
    return (history.strict, history.completed_prefix_length, history.violation,
            history.end_violation)


def test_the_format_names_are_every_format_name() -> None:
    assert FORMAT_NAMES == get_args(FormatName) == ("openai-chat", "openai-responses",
                                                    "anthropic")


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(FORMAT_NAMES), st.data(), st.booleans(), st.booleans())
def test_a_decoded_history_is_judged_at_the_level_asked(fmt: FormatName, data: st.DataObject,
                                                        read: bool, asked: bool) -> None:
    """``check_balance(history, strict=b)`` of a history decoded at level ``a`` says what the
    raw items at level ``b`` say, and hands back the very history when ``a == b``; the cut
    and the seed of a decoded history are its own, at its own level."""
    module = MODULES[fmt]
    items = list(data.draw(st.one_of(histories(fmt), broken_histories(fmt))).items)
    if fmt in STRICT_ONLY and data.draw(st.booleans()):
        items = STRICT_ONLY[fmt] + items
    decoded = module.decode_history(items, strict=read)
    assert decoded.strict is read
    fresh = module.decode_history(items, strict=asked)
    checked = module.check_balance(decoded, strict=asked)
    judged = checked.unwrap() if isinstance(checked, Success) else None
    assert (checked.failure() if judged is None else None) == (fresh.violation
                                                               or fresh.end_violation)
    if judged is not None:
        assert _verdict(judged) == _verdict(fresh)
        assert (judged is decoded) == (read == asked)
    assert module.completed_turn_cut(decoded) == decoded.completed_prefix_length
    assert formats.completed_turn_cut(decoded) == decoded.completed_prefix_length
    assert module.completed_turn_prefix(decoded) == items[:decoded.completed_prefix_length]


def test_a_strict_history_checked_at_the_balance_level_is_read_again() -> None:
    """The examples the property above draws from, one per way: kept, read stricter, read
    looser."""
    items = STRICT_ONLY["openai-chat"]
    loose, strict = openai_chat.decode_history(items), openai_chat.decode_history(items,
                                                                                  strict=True)
    assert openai_chat.check_balance(loose).unwrap() is loose
    assert openai_chat.check_balance(loose, strict=True).failure().rule == "null-content"
    assert strict.violation is not None and strict.violation.rule == "null-content"
    again = openai_chat.check_balance(strict, strict=False).unwrap()
    assert again is not strict and _verdict(again) == _verdict(loose)


def test_a_thinking_setting_reads_a_decoded_anthropic_history_again() -> None:
    """``thinking`` is not part of a decoded history: given, the items are read again with it,
    even at the level the history was read at."""
    items = [{"role": "user", "content": "q"},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f",
                                                "input": {}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}]
    history = anthropic.decode_history(items)
    assert history.is_balanced
    assert anthropic.check_balance(history).unwrap() is history
    assert anthropic.check_balance(history, thinking=True).failure().rule == "thinking-first"
    assert anthropic.check_balance(history, thinking=False).unwrap() is not history


def _as_objects(value: Any) -> Any:
    """A JSON value with every object made an attribute bag, as an SDK's models are."""
    if isinstance(value, dict):
        return SimpleNamespace(**{key: _as_objects(item) for key, item in value.items()})
    if isinstance(value, list):
        return [_as_objects(item) for item in value]
    return value


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(FORMAT_NAMES), st.data())
def test_objects_read_as_their_dicts_do(fmt: FormatName, data: st.DataObject) -> None:
    """Items given as objects with attributes are judged as the same items given as dicts;
    with an item that does not read put at k, too (the items before it are still objects)."""
    module = MODULES[fmt]
    items = list(data.draw(st.one_of(histories(fmt), broken_histories(fmt))).items)
    objects = [_as_objects(item) for item in items]
    assert _verdict(module.decode_history(objects)) == _verdict(module.decode_history(items))
    k = data.draw(st.integers(0, len(items)))
    bad = data.draw(st.sampled_from([5, "text", None]))
    as_dicts = module.decode_history([*items[:k], bad, *items[k:]])
    as_objects = module.decode_history([*objects[:k], bad, *objects[k:]])
    assert _verdict(as_objects) == _verdict(as_dicts)
    assert len(as_objects.items) == len(as_dicts.items)


@pytest.mark.parametrize(("fmt", "item", "problem"), [
    # msgspec names no path for the item itself: the sentence gets the item's
    ("openai-chat", 5, "Expected `object`, got `int` - at `messages[1]`"),
    ("anthropic", None, "Expected `object`, got `null` - at `messages[1]`"),
    # a field: msgspec's path, with the item's label in place of `$`
    ("openai-chat", {"role": 7}, "Expected `str`, got `int` - at `messages[1].role`"),
    ("openai-responses", {"type": "message", "role": "user", "id": []},
     "Expected `str | null`, got `array` - at `input[1].id`"),
    ("anthropic", {"role": "user"}, "Object missing required field `content` - at "
                                    "`messages[1]`"),
])
def test_a_shape_problem_names_the_item_in_msgspecs_words(fmt: FormatName, item: Any,
                                                          problem: str) -> None:
    first = {"role": "user", "content": "q"}
    for given_as in (first, SimpleNamespace(**first)):
        violation = MODULES[fmt].check_balance([given_as, item]).failure()
        assert violation == FormatViolation(index=1, rule="shape", problem=problem)
        assert str(violation) == violation.message == f"item 1: {problem}"


def test_a_history_built_by_hand_is_at_the_balance_level_and_says_what_it_is() -> None:
    violation = FormatViolation(index=1, rule="orphan-result", problem="p", call_id="c")
    built = History(format="openai-chat", source=({"role": "user"}, {"role": "tool"}),
                    items=(), completed_prefix_length=1, violation=violation,
                    end_violation=None)
    assert built.strict is False
    assert not built.is_balanced and not built.ends_at_completed_turn
    assert formats.completed_turn_cut(built) == 1
    assert formats.completed_turn_prefix(built) == [{"role": "user"}]
    assert repr(built) == (
        "History(format='openai-chat', items=2, completed_prefix_length=1, "
        "violation=FormatViolation(index=1, rule='orphan-result', problem='p', call_id='c'), "
        "end_violation=None, strict=False)")
    assert msgspec.structs.replace(built, strict=True).strict is True
