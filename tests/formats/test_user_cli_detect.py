"""detect_format's refusal says what the history holds: an empty one, or items that are not
items of any format, are not "plain user and assistant messages"."""

from __future__ import annotations

from typing import Any

import pytest

from turnfork.core import formats


@pytest.mark.parametrize("data", [[], {"messages": []}])
def test_an_empty_history_is_called_empty(data: Any) -> None:
    """Nothing in it names a format: that, not messages it does not hold, is why."""
    problem = formats.detect_format(data).failure()
    assert problem.startswith("ambiguous: an empty history (no items) is valid in "), problem
    assert "plain user and assistant messages" not in problem


@pytest.mark.parametrize(("data", "what"), [
    ([1, 2, 3], "item 0 is a number"),
    (["hello"], "item 0 is a string"),
    ([None], "item 0 is null"),
    ([[{"role": "user", "content": "hi"}]], "item 0 is a list"),
    ([{"role": "user", "content": "hi"}, True], "item 1 is a boolean"),
])
def test_an_item_that_is_not_an_object_is_named(data: Any, what: str) -> None:
    """A list of numbers was refused as if it held plain messages; it names the item now."""
    problem = formats.detect_format(data).failure()
    assert problem.startswith("ambiguous: "), problem
    assert f"{what}, not an item of any format" in problem, problem


def test_plain_messages_keep_their_words() -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert formats.detect_format(plain).failure() == (
        "ambiguous: plain user and assistant messages are valid in openai-chat, "
        "openai-responses, anthropic; name the format")
