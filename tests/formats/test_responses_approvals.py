"""OpenAI Responses: an ``mcp_approval_request`` still waiting holds the completed-turn cut back,
even when the model's text follows it; the cut is a history the checks accept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from turnfork.core.formats import openai_responses

OPENING = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a"},
           {"role": "user", "content": "use the tools"}]


def _request(name: str) -> dict[str, str]:
    return {"type": "mcp_approval_request", "id": name, "server_label": "s", "name": "t",
            "arguments": "{}"}


def _response(name: str) -> dict[str, object]:
    return {"type": "mcp_approval_response", "approval_request_id": name, "approve": True}


def test_a_request_left_waiting_before_the_models_text_keeps_the_cut_before_its_step() -> None:
    history = [*OPENING, _request("a1"), _request("a2"), _response("a1"),
               {"role": "assistant", "content": "done"}]
    assert openai_responses.check_balance(history).failure().rule == "unanswered-call"
    assert openai_responses.completed_turn_cut(history) == 2
    assert openai_responses.check_balance(history[:2]).unwrap().is_balanced


@given(st.lists(st.booleans(), min_size=1, max_size=5))
def test_the_cut_of_any_answered_or_waiting_requests_is_balanced(answered: list[bool]) -> None:
    """Requests answered or not, then the model's text: the cut always passes the checks, and
    it is the whole history exactly when every request was answered."""
    names = [f"a{index}" for index in range(len(answered))]
    history = [*OPENING, *map(_request, names),
               *(_response(name) for name, done in zip(names, answered, strict=True) if done),
               {"role": "assistant", "content": "done"}]
    cut = openai_responses.completed_turn_cut(history)
    assert openai_responses.check_balance(history[:cut]).unwrap().is_balanced
    assert (cut == len(history)) == all(answered)
