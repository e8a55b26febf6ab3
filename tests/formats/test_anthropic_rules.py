"""Anthropic Messages histories: each rule flagged at the message Anthropic names, and the cut."""

from __future__ import annotations

from typing import Any

from turnfork.core.formats import anthropic

USER = {"role": "user", "content": "Weather in Paris and Rome?"}
THINK = {"type": "thinking", "thinking": "Two cities.", "signature": "sig"}
USE1 = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}
USE2 = {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}}
CALLS = {"role": "assistant", "content": [THINK, {"type": "text", "text": "Checking."}, USE1, USE2]}
RES1 = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}
RES2 = {"type": "tool_result", "tool_use_id": "toolu_2", "content": [
    {"type": "text", "text": "rain"},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}]}
RESULTS = {"role": "user", "content": [RES2, RES1, {"type": "text", "text": "thanks"}]}
DONE = {"role": "assistant", "content": [{"type": "text", "text": "Sunny and rain."}]}


def _failure(messages: list[Any]) -> tuple[int, str]:
    violation = anthropic.check_balance(messages).failure()
    return violation.index, violation.rule


def test_a_closed_tool_loop_is_balanced_and_cut_at_its_end() -> None:
    """Thinking, parallel tool_use, results first in the next user message, the answer."""
    history = anthropic.decode_history([USER, CALLS, RESULTS, DONE])
    assert history.is_balanced and history.completed_prefix_length == 4


def test_missing_results_are_named_at_the_assistant_message() -> None:
    """A next message without every result: unanswered-call at the tool_use message."""
    partial = {"role": "user", "content": [RES1]}
    assert _failure([USER, CALLS, partial, DONE]) == (1, "unanswered-call")
    assert _failure([USER, CALLS, {"role": "user", "content": "go on"}]) == (1, "unanswered-call")
    assert _failure([USER, CALLS, DONE]) == (1, "unanswered-call")
    assert anthropic.check_balance([USER, CALLS]).failure().rule == "unanswered-call"


def test_results_must_open_the_user_message() -> None:
    """Text before the tool_result blocks: results-first at the user message."""
    late = {"role": "user", "content": [{"type": "text", "text": "here"}, RES1, RES2]}
    assert _failure([USER, CALLS, late, DONE]) == (2, "results-first")


def test_orphan_and_duplicate_results() -> None:
    """A result for no call of the previous message, or twice for one: at the user message."""
    assert _failure([{"role": "user", "content": [RES1]}]) == (0, "orphan-result")
    stray = {"role": "user", "content": [RES1, RES2, {**RES1, "tool_use_id": "toolu_9"}]}
    assert _failure([USER, CALLS, stray]) == (2, "orphan-result")
    assert _failure([USER, CALLS, {"role": "user", "content": [RES1, RES1, RES2]}]) == (
        2, "duplicate-result")
    twice = {"role": "assistant", "content": [USE1, USE1]}
    assert _failure([USER, twice, {"role": "user", "content": [RES1]}]) == (1, "duplicate-call")


def test_server_tools_pair_inside_the_assistant_turn() -> None:
    """server_tool_use needs its result in its turn; a paused turn may end the history."""
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
              "input": {"query": "weather"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    answer = {"type": "text", "text": "Sunny."}
    whole = {"role": "assistant", "content": [search, found, answer]}
    assert anthropic.decode_history([USER, whole]).completed_prefix_length == 2
    paused = {"role": "assistant", "content": [search]}
    history = anthropic.decode_history([USER, paused])
    assert history.is_balanced and history.completed_prefix_length == 0
    resumed = {"role": "assistant", "content": [found, answer]}
    assert anthropic.decode_history([USER, paused, resumed]).completed_prefix_length == 3
    assert _failure([USER, paused, USER]) == (1, "server-call-unanswered")
    assert _failure([USER, {"role": "assistant", "content": [found]}]) == (1, "orphan-result")


def test_an_open_tool_loop_keeps_its_thinking() -> None:
    """With thinking in use, the turn's first assistant message must start with it."""
    stripped = {"role": "assistant", "content": [USE1, USE2]}
    earlier = [USER, {"role": "assistant", "content": [THINK, {"type": "text", "text": "Hi."}]}]
    assert _failure([*earlier, USER, stripped, RESULTS]) == (3, "thinking-first")
    assert anthropic.check_balance([*earlier, USER, CALLS, RESULTS]).unwrap()
    # Closed again by the answer, the loop no longer needs it; without thinking, never.
    assert anthropic.check_balance([*earlier, USER, stripped, RESULTS, DONE]).unwrap()
    assert anthropic.check_balance([USER, stripped, RESULTS]).unwrap()


def test_unreadable_messages_are_shape_violations() -> None:
    """Unknown role, unsigned thinking, misplaced blocks: shape at that message."""
    for bad in ({"role": "robot", "content": "Be brief."},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]},
                {"role": "user", "content": [USE1]},
                {"role": "assistant", "content": 7}):
        history = anthropic.decode_history([USER, DONE, bad])
        assert history.violation is not None
        assert (history.violation.index, history.violation.rule) == (2, "shape"), bad


def test_sdk_objects_read() -> None:
    """The anthropic SDK's content block objects read like their dicts (attributes)."""
    from pydantic import BaseModel

    class Block(BaseModel):
        type: str
        id: str | None = None
        name: str | None = None
        input: dict[str, str] | None = None

    message = {"role": "assistant", "content": [Block(type="tool_use", id="toolu_1",
                                                      name="weather", input={})]}
    history = anthropic.decode_history([USER, message, {"role": "user", "content": [RES1]}])
    assert history.is_balanced


def test_the_thinking_setting_can_be_said() -> None:
    """thinking=True applies the rule with no thinking block in sight; False never applies it."""
    stripped = {"role": "assistant", "content": [USE1, USE2]}
    loop = [USER, stripped, RESULTS]
    assert anthropic.check_balance(loop).unwrap()
    violation = anthropic.check_balance(loop, thinking=True).failure()
    assert (violation.index, violation.rule) == (1, "thinking-first")
    earlier = [USER, {"role": "assistant", "content": [THINK, {"type": "text", "text": "Hi."}]}]
    decoded = anthropic.decode_history([*earlier, *loop])
    assert anthropic.check_balance(decoded).failure().rule == "thinking-first"
    assert anthropic.check_balance(decoded, thinking=False).unwrap()
