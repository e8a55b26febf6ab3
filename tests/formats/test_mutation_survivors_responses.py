"""OpenAI Responses histories, pinned where a mutation run of ``core.formats.openai_responses``
found the tests loose: each client call type with its output type (written out here, from the
module's docstring and the SDK's types, not read off the table under test), the input roles,
the items of the model's side, and the sentences of the shape rules."""

from __future__ import annotations

from typing import Any

import pytest

from turnfork.core.formats import openai_responses

USER = {"role": "user", "content": "q"}
DONE = {"type": "message", "role": "assistant", "content": "a"}

#: Each client call type and the output type that answers it.
PAIRS = [("function_call", "function_call_output"),
         ("custom_tool_call", "custom_tool_call_output"),
         ("computer_call", "computer_call_output"),
         ("local_shell_call", "local_shell_call_output"),
         ("shell_call", "shell_call_output"),
         ("apply_patch_call", "apply_patch_call_output"),
         ("tool_search_call", "tool_search_output"),
         ("program", "program_output")]


def _output(kind: str, call_id: str) -> dict[str, Any]:
    # a local_shell_call_output names its call by `id` (the SDK's type has no call_id)
    key = "id" if kind == "local_shell_call_output" else "call_id"
    return {"type": kind, key: call_id, "output": "ok"}


def test_the_table_is_the_documented_one() -> None:
    assert dict(openai_responses.OUTPUT_OF_CALL) == dict(PAIRS)


@pytest.mark.parametrize(("call", "output"), PAIRS)
def test_each_client_call_is_answered_by_its_own_output(call: str, output: str) -> None:
    """Answered: balanced, cut at the end; unanswered: in flight at the call; answered by
    another type's output: orphan-result; without its id, call or output: shape."""
    item = {"type": call, "call_id": "c1"}
    history = openai_responses.decode_history([USER, item, _output(output, "c1"), DONE])
    assert history.is_balanced and history.completed_prefix_length == 4
    waiting = openai_responses.decode_history([USER, item, DONE])
    assert waiting.violation is None and waiting.completed_prefix_length == 0
    assert waiting.end_violation == openai_responses.check_balance([USER, item]).failure()
    assert (waiting.end_violation.index, waiting.end_violation.rule,
            waiting.end_violation.call_id) == (1, "unanswered-call", "c1")
    assert waiting.end_violation.problem == "No tool output found for function call c1"
    other = next(o for c, o in PAIRS if o != output and c != "local_shell_call")
    wrong = openai_responses.check_balance([USER, item, _output(other, "c1")]).failure()
    assert (wrong.index, wrong.rule, wrong.call_id) == (2, "orphan-result", "c1")
    assert wrong.problem == (f"a `{other}` answers call c1, which is a `{call}` (its output "
                             f"is a `{output}`)")
    if call == "tool_search_call":  # without a call_id, call and output are the server's
        return
    for no_call_id in ({"type": call}, {"type": call, "id": "item_1"}):
        no_id = openai_responses.check_balance([USER, no_call_id]).failure()
        assert no_id.problem == f"input[1].call_id: a `{call}` item needs its call_id"
        assert (no_id.index, no_id.rule) == (1, "shape")
    key = "id" if output == "local_shell_call_output" else "call_id"
    for no_pairing in ({"type": output}, {"type": output, "status": "completed"}):
        bare = openai_responses.check_balance([USER, item, no_pairing]).failure()
        assert (bare.index, bare.rule) == (2, "shape")
        assert bare.problem == f"input[2].{key}: a `{output}` item needs its {key}"
    if output != "local_shell_call_output":
        with_id = {"type": output, "id": "out_1"}  # an item id is not the call's id
        assert openai_responses.check_balance([USER, item, with_id]).failure().rule == "shape"


def test_a_tool_search_run_by_the_server_needs_no_output() -> None:
    for call in ({"type": "tool_search_call", "call_id": "s1", "execution": "server"},
                 {"type": "tool_search_call"}):
        for tail in ([], [{"type": "tool_search_output", "execution": "server"}]):
            history = openai_responses.decode_history([USER, call, *tail, DONE])
            assert history.is_balanced and history.completed_prefix_length == 3 + len(tail)
    client = {"type": "tool_search_call", "call_id": "s1", "execution": "client"}
    assert openai_responses.decode_history([USER, client, DONE]).end_violation is not None


@pytest.mark.parametrize("role", ["user", "system", "developer"])
def test_every_input_role_is_the_callers(role: str) -> None:
    """A message of each input role reads, and ends the model's step before it."""
    message = {"role": role, "content": "x"}
    history = openai_responses.decode_history([message, DONE, message, DONE, message])
    assert history.is_balanced and history.completed_prefix_length == 4
    typed = {"type": "message", **message}
    assert openai_responses.decode_history([typed, DONE]).completed_prefix_length == 2


def test_a_role_outside_the_four_is_named() -> None:
    violation = openai_responses.check_balance([USER, {"role": "tool", "content": "x"}]).failure()
    assert (violation.index, violation.rule) == (1, "shape")
    assert violation.problem == ("input[1].role 'tool' is not one of assistant, developer, "
                                 "system, user")
    bare = openai_responses.check_balance([USER, {"content": "x"}]).failure()
    assert bare.problem == "input[1] has neither a `type` nor a `role`"


@pytest.mark.parametrize("item", [{"type": "mcp_list_tools", "id": "l1", "tools": []},
                                  {"type": "web_search_call", "id": "w1"},
                                  {"type": "image_generation_call", "id": "g1"}])
def test_the_model_side_items_belong_to_its_step(item: dict[str, Any]) -> None:
    """A hosted item after the model's text is still the model's step: the turn completes
    after it, not before."""
    history = openai_responses.decode_history([USER, DONE, item])
    assert history.is_balanced and history.completed_prefix_length == 3
    after = openai_responses.decode_history([USER, item, {"type": "function_call",
                                                          "call_id": "c1"}])
    assert after.completed_prefix_length == 0 and after.end_violation is not None


def test_a_local_shell_output_with_a_call_id_pairs_by_it() -> None:
    """Given a call_id, a local_shell_call_output pairs by it, and its `id` is an item id of
    its own (unique among the items)."""
    call = {"type": "local_shell_call", "call_id": "c1", "id": "ls_1"}
    output = {"type": "local_shell_call_output", "call_id": "c1", "id": "lso_1"}
    assert openai_responses.decode_history([USER, call, output, DONE]).is_balanced
    twice = openai_responses.check_balance([USER, call, {**output, "id": "ls_1"}]).failure()
    assert (twice.index, twice.rule) == (2, "duplicate-item")
    by_id = {"type": "local_shell_call_output", "id": "c1"}  # no call_id: `id` is the call's
    assert openai_responses.decode_history([USER, call, by_id, DONE]).is_balanced


def test_a_server_tool_search_after_the_text_is_still_the_models_step() -> None:
    for search in ({"type": "tool_search_call", "call_id": "s1", "execution": "server"},
                   {"type": "tool_search_call"}, {"type": "tool_search_output"}):
        history = openai_responses.decode_history([USER, DONE, search])
        assert history.is_balanced and history.completed_prefix_length == 3


@pytest.mark.parametrize("item", [{"type": "future_tool_call_output"},
                                  {"type": "future_item", "call_id": "c9"},
                                  {"type": "future_item"}])
def test_an_unknown_item_that_pairs_with_nothing_is_the_callers(item: dict[str, Any]) -> None:
    """An item type the rules do not know, neither a call nor an output that names its call,
    is the caller's: it ends the model's step (the turn completes before it), answers nothing,
    and leaves an approval request behind as an input message does."""
    history = openai_responses.decode_history([USER, DONE, item, DONE])
    assert history.is_balanced and history.completed_prefix_length == 4
    assert openai_responses.decode_history([USER, DONE, item]).completed_prefix_length == 2
    request = {"type": "mcp_approval_request", "id": "ap_1", "name": "f", "arguments": "{}"}
    assert openai_responses.decode_history([USER, request]).end_violation is not None
    left = openai_responses.decode_history([USER, request, item, DONE])
    assert left.is_balanced and left.completed_prefix_length == 4


def test_each_approval_response_answers_its_own_request() -> None:
    """Two requests of one step, one response: the other request still waits, named by its
    id at its index; both answered, the turn completes."""
    requests = [{"type": "mcp_approval_request", "id": f"ap_{n}", "name": "f",
                 "arguments": "{}", "server_label": "s"} for n in (1, 2)]
    responses = [{"type": "mcp_approval_response", "approval_request_id": f"ap_{n}",
                  "approve": True} for n in (1, 2)]
    for answered, waiting in ((0, 1), (1, 0)):
        history = openai_responses.decode_history([USER, *requests, responses[answered],
                                                   DONE])
        assert history.violation is None
        end = history.end_violation
        assert end is not None
        assert (end.index, end.rule, end.call_id) == (1 + waiting, "unanswered-call",
                                                      f"ap_{waiting + 1}")
        assert end.problem == (f"mcp_approval_request ap_{waiting + 1} waits for its "
                               "mcp_approval_response")
    both = openai_responses.decode_history([USER, *requests, *responses, DONE])
    assert both.is_balanced and both.completed_prefix_length == 6


def test_a_lone_reasoning_item_is_named_by_its_id_or_its_place() -> None:
    for reasoning, name in (({"type": "reasoning", "id": "rs_7", "summary": []}, "rs_7"),
                            ({"type": "reasoning", "summary": []}, "input[1]")):
        for tail in ([], [USER]):
            violation = openai_responses.check_balance([USER, reasoning, *tail]).failure()
            assert (violation.index, violation.rule) == (1, "reasoning-alone")
            assert violation.problem == (f"Item '{name}' of type 'reasoning' was provided "
                                         "without its required following item")


def test_the_default_level_is_balance() -> None:
    """Responses has no strict rules, but a history says the level it was read at."""
    assert openai_responses.decode_history([USER, DONE]).strict is False
    assert openai_responses.decode_history([USER, DONE], strict=True).strict is True
    assert openai_responses.check_balance([USER, DONE]).unwrap().strict is False
