"""OpenAI Responses histories: each rule flagged at the item OpenAI names, and the cut."""

from __future__ import annotations

from typing import Any

from turnfork.core.formats import openai_responses

USER = {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"},
                                    {"type": "input_image", "image_url": "data:image/png;base64,"}]}
REASON = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
CALL1 = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "weather",
         "arguments": "{}"}
CALL2 = {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "weather",
         "arguments": "{}"}
OUT1 = {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
OUT2 = {"type": "function_call_output", "call_id": "c2", "output": "rain"}
SEARCH = {"type": "web_search_call", "id": "ws_1", "status": "completed",
          "action": {"type": "search", "query": "weather"}}
DONE = {"type": "message", "role": "assistant", "id": "msg_1",
        "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}]}


def _failure(items: list[Any]) -> tuple[int, str]:
    violation = openai_responses.check_balance(items).failure()
    return violation.index, violation.rule


def test_a_closed_turn_is_balanced_and_cut_at_its_end() -> None:
    """Reasoning, parallel calls, their outputs, a hosted search, the answer."""
    items = [USER, REASON, CALL1, CALL2, OUT2, OUT1, SEARCH, DONE]
    history = openai_responses.decode_history(items)
    assert history.is_balanced and history.completed_prefix_length == 8


def test_outputs_pair_by_call_id_anywhere_after_their_call() -> None:
    """An output need not follow its call at once; without one the call is unanswered."""
    assert openai_responses.check_balance([USER, CALL1, CALL2, OUT1, DONE, OUT2]).unwrap()
    history = openai_responses.decode_history([USER, CALL1, CALL2, OUT1, DONE])
    assert history.completed_prefix_length == 0
    assert history.end_violation is not None
    assert (history.end_violation.index, history.end_violation.rule) == (2, "unanswered-call")


def test_orphan_duplicate_and_mismatched_outputs() -> None:
    """No call before it, a second one, or the wrong output type: at the output."""
    assert _failure([USER, OUT1, CALL1, OUT1]) == (1, "orphan-result")
    assert _failure([USER, CALL1, OUT1, OUT1]) == (3, "duplicate-result")
    custom = {"type": "custom_tool_call_output", "call_id": "c1", "output": "x"}
    assert _failure([USER, CALL1, custom]) == (2, "orphan-result")
    assert _failure([USER, CALL1, {**CALL1, "id": "fc_9"}]) == (2, "duplicate-call")


def test_reasoning_stays_with_its_item() -> None:
    """A reasoning item with nothing of its response after it: reasoning-alone."""
    assert _failure([USER, REASON, USER]) == (1, "reasoning-alone")
    assert _failure([USER, REASON]) == (1, "reasoning-alone")
    chained = {**REASON, "id": "rs_2"}
    assert openai_responses.check_balance([USER, REASON, chained, DONE]).unwrap()


def test_duplicate_item_ids_are_refused() -> None:
    """Two items with one id: duplicate-item at the second."""
    assert _failure([USER, DONE, USER, DONE]) == (3, "duplicate-item")


def test_other_client_calls_pair_by_naming_convention() -> None:
    """A new `X_call` with a call_id is answered by `X_call_output`; hosted calls need none."""
    call = {"type": "future_tool_call", "call_id": "f1"}
    out = {"type": "future_tool_call_output", "call_id": "f1"}
    assert openai_responses.decode_history([USER, call, out, DONE]).is_balanced
    assert openai_responses.decode_history([USER, call, DONE]).end_violation is not None
    hosted = {"type": "future_search_call", "id": "x_1"}
    assert openai_responses.decode_history([USER, hosted, DONE]).completed_prefix_length == 3


def test_unreadable_items_are_shape_violations() -> None:
    """No type nor role, a call without call_id, a bad role: shape at that item."""
    for bad in ({"content": "?"}, {"type": "function_call", "name": "f"},
                {"role": "robot", "content": "?"}, "text"):
        history = openai_responses.decode_history([USER, DONE, bad])
        assert history.violation is not None
        assert (history.violation.index, history.violation.rule) == (2, "shape"), bad
