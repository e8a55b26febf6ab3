"""The completed-turn prefix is a view of the caller's own items, found in O(1) once read."""

from __future__ import annotations

import pytest

from turnfork.core.formats import HistoryPrefix, openai_chat

TURN = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]


def test_the_prefix_is_a_view_of_the_callers_items() -> None:
    """Items are the caller's objects; slicing from 0 stays a view; equality is by items."""
    open_turn = [{"role": "user", "content": "q2"},
                 {"role": "assistant", "tool_calls": [{"id": "c"}]}]
    messages = TURN * 3 + open_turn
    history = openai_chat.decode_history(messages)
    prefix = openai_chat.completed_turn_prefix(history)
    assert isinstance(prefix, HistoryPrefix) and len(prefix) == 6
    assert all(a is b for a, b in zip(prefix, messages, strict=False))
    assert prefix[-1] is messages[5] and prefix == messages[:6]
    assert isinstance(prefix[:4], HistoryPrefix) and list(prefix[1:3]) == messages[1:3]
    with pytest.raises(IndexError):
        prefix[6]
    assert openai_chat.completed_turn_prefix(prefix) == prefix


def test_a_history_ending_at_a_completed_turn_is_its_own_prefix() -> None:
    """Nothing to cut: the history's own items come back, not a copy."""
    history = openai_chat.decode_history(TURN)
    assert openai_chat.completed_turn_prefix(history) is history.source
    assert openai_chat.completed_turn_cut(TURN) == 2


def test_the_view_refuses_a_length_outside_its_items() -> None:
    """A prefix longer than its items is a programming error."""
    with pytest.raises(ValueError, match="outside"):
        HistoryPrefix((1, 2), 3)
