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
    no_id = openai_responses.check_balance([USER, {"type": call}]).failure()
    assert no_id.problem == f"input[1].call_id: a `{call}` item needs its call_id"
    assert (no_id.index, no_id.rule) == (1, "shape")
    key = "id" if output == "local_shell_call_output" else "call_id"
    bare = openai_responses.check_balance([USER, item, {"type": output}]).failure()
    assert (bare.index, bare.rule) == (2, "shape")
    assert bare.problem == f"input[2].{key}: a `{output}` item needs its {key}"


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
