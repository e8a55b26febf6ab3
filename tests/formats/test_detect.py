"""detect_format tells the formats apart only where the items say which it is."""

from __future__ import annotations

from typing import Any

import pytest

from turnfork.core import formats

PLAIN = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


@pytest.mark.parametrize(("data", "expected"), [
    ([*PLAIN, {"role": "tool", "tool_call_id": "c", "content": "x"}], "openai-chat"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}],
     "openai-chat"),
    ([{"role": "system", "content": "s"}, *PLAIN,
      {"role": "assistant", "tool_calls": [{"id": "c"}]}], "openai-chat"),
    ([*PLAIN, {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""}],
     "openai-responses"),
    ([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}], "openai-responses"),
    ({"input": PLAIN}, "openai-responses"),
    ([*PLAIN, {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                                 "input": {}}]}], "anthropic"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                                {"type": "image", "source": {}}]}]},
     "anthropic"),
])
def test_markers_name_one_format(data: Any, expected: str) -> None:
    """A format-only marker anywhere decides, and decode_history reads it in that format."""
    assert formats.detect_format(data).unwrap() == expected
    assert formats.decode_history(data).unwrap().format == expected


@pytest.mark.parametrize("data", [PLAIN, [], {"messages": PLAIN},
                                  [{"role": "user", "content": [{"type": "text", "text": "x"}]}]])
def test_plain_histories_are_ambiguous(data: Any) -> None:
    """Text only: valid in more than one format, so detection refuses to guess."""
    assert formats.detect_format(data).failure().startswith("ambiguous")


def test_mixed_markers_are_refused_and_a_named_format_is_used() -> None:
    """Markers of two formats: refused with the item; naming the format reads it anyway."""
    mixed = [{"role": "tool", "tool_call_id": "c", "content": "x"},
             {"type": "function_call_output", "call_id": "c", "output": ""}]
    assert "item 1" in formats.detect_format(mixed).failure()
    assert formats.decode_history(PLAIN, "anthropic").unwrap().format == "anthropic"
    assert formats.decode_history({"input": PLAIN}, "anthropic").failure() == (
        "not a anthropic history")
    assert formats.detect_format("text").failure().startswith("not a history")


def test_a_dsh_event_log_is_not_taken_for_a_responses_history() -> None:
    """DSH events carry a `type` too; detection names them instead of guessing Responses."""
    events = [{"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}]
    assert formats.detect_format(events).failure().startswith("a DSH event log")
