"""The completed-turn prefix is a new list of the caller's own items, whatever the format: a list
so that it goes as it is to any SDK, and a new one so that a child's prompt appended to it leaves
the parent's history alone."""

from __future__ import annotations

import json

import pytest

from turnfork.core import formats
from turnfork.core.formats import anthropic, openai_chat, openai_responses

TURN = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
OPEN = {
    openai_chat: [{"role": "user", "content": "q2"},
                  {"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                                                        "function": {"name": "f",
                                                                     "arguments": "{}"}}]}],
    openai_responses: [{"role": "user", "content": "q2"},
                       {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}],
    anthropic: [{"role": "user", "content": "q2"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "f",
                                                   "input": {}}]}],
}


@pytest.mark.parametrize("fmt", list(OPEN), ids=lambda m: m.__name__.rsplit(".")[-1])
def test_the_seed_is_a_new_list_of_the_callers_items(fmt: object) -> None:
    """A list holding the caller's own objects through the cut, serialisable as it is, and a
    different list on each call (mutating one changes neither the parent nor another seed)."""
    messages = TURN * 3 + OPEN[fmt]  # type: ignore[index]
    history = fmt.decode_history(messages)  # type: ignore[attr-defined]
    seed = fmt.completed_turn_prefix(history)  # type: ignore[attr-defined]
    assert type(seed) is list and len(seed) == 6
    assert all(a is b for a, b in zip(seed, messages, strict=False))
    assert json.loads(json.dumps(seed)) == messages[:6]
    seed.append({"role": "user", "content": "child prompt"})
    again = fmt.completed_turn_prefix(history)  # type: ignore[attr-defined]
    assert again is not seed and len(again) == 6 and len(history.source) == 8
    assert formats.completed_turn_prefix(history) == again


def test_a_history_ending_at_a_completed_turn_is_copied_whole() -> None:
    """Nothing to cut: a list of all the items (the caller's objects), not the history itself."""
    history = openai_chat.decode_history(TURN)
    seed = openai_chat.completed_turn_prefix(history)
    assert type(seed) is list and seed == TURN and seed is not TURN
    assert seed[0] is TURN[0] and openai_chat.completed_turn_cut(TURN) == 2


def test_raw_items_are_read_first() -> None:
    """The functions take the raw items too (read in one pass, then cut)."""
    messages = TURN + OPEN[openai_chat]
    assert openai_chat.completed_turn_prefix(messages) == TURN
    assert openai_chat.completed_turn_cut(messages) == 2
