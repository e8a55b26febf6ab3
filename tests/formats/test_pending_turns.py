"""Cuts that would leave something pending, and where today's SDK types decide the shape.

* An unanswered legacy Chat ``function_call``, a Responses ``mcp_approval_request`` still waiting
  for its response, a Responses ``program`` without its ``program_output``: the turn is open, so
  the cut leaves it out (on cb407df the first two counted as completed turns, and a ``program``
  paired with nothing).
* The SDKs' types (openai 3.57, anthropic 2.15), read from the installed packages: a ``system``
  message among Anthropic messages, a server-executed ``tool_search_call`` without ``call_id``,
  a ``local_shell_call_output`` that names its call by ``id``.
* An ``item_reference`` is an item only the provider holds: ``stored-item``, cut before it.
"""

from __future__ import annotations

import typing
from typing import Any

from turnfork.core.formats import anthropic, openai_chat, openai_responses

USER = {"role": "user", "content": "q"}
CHAT_ANSWER = {"role": "assistant", "content": "a"}
ANSWER = {"type": "message", "role": "assistant", "content": "a"}


# --------------------------------------------------------------------------- Chat legacy


LEGACY = {"role": "assistant", "content": None,
          "function_call": {"name": "weather", "arguments": "{}"}}
LEGACY_RESULT = {"role": "function", "name": "weather", "content": "sunny"}


def test_an_unanswered_legacy_function_call_keeps_its_turn_open() -> None:
    """A history ending on a function_call is in flight: the cut is the turn before it."""
    history = openai_chat.decode_history([USER, CHAT_ANSWER, USER, LEGACY])
    assert history.completed_prefix_length == 2 and history.violation is None
    assert history.end_violation is not None
    assert (history.end_violation.index, history.end_violation.rule) == (3, "unanswered-call")
    assert "function_call weather" in history.end_violation.problem


def test_an_answered_legacy_call_completes_with_the_answer_after_it() -> None:
    """function_call, its function message, the answer: one completed turn; the step that made
    the call completes none (the cut is never between the call and its function message)."""
    items = [USER, LEGACY, LEGACY_RESULT, CHAT_ANSWER]
    assert openai_chat.completed_turn_cut(items) == 4
    assert openai_chat.completed_turn_cut(items[:3]) == 0
    assert openai_chat.check_balance(items[:3]).unwrap().is_balanced


def test_a_legacy_call_left_behind_is_accepted() -> None:
    """OpenAI does not pair the legacy call: a user message after it is no violation."""
    history = openai_chat.decode_history([USER, LEGACY, USER, CHAT_ANSWER])
    assert history.is_balanced and history.completed_prefix_length == 4


# --------------------------------------------------------------------------- Responses


REQUEST = {"type": "mcp_approval_request", "id": "mcpr_1", "name": "deploy",
           "server_label": "ops", "arguments": "{}"}
APPROVAL = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}
MCP_CALL = {"type": "mcp_call", "id": "mcp_1", "name": "deploy", "server_label": "ops",
            "arguments": "{}", "output": "done"}
PROGRAM = {"type": "program", "id": "prg_1", "call_id": "call_prg", "code": "1", "fingerprint": "f"}
PROGRAM_OUTPUT = {"type": "program_output", "id": "prgo_1", "call_id": "call_prg",
                  "result": "1", "status": "completed"}


def test_a_history_ending_in_an_approval_request_is_open() -> None:
    """The request waits for the caller's response: in flight, cut before its turn."""
    history = openai_responses.decode_history([USER, ANSWER, USER, REQUEST])
    assert history.completed_prefix_length == 2 and history.violation is None
    assert history.end_violation is not None
    assert (history.end_violation.index, history.end_violation.rule) == (3, "unanswered-call")
    assert "mcpr_1" in history.end_violation.problem


def test_an_approved_request_completes_after_the_model_goes_on() -> None:
    """Request, response, the model's mcp_call and answer: the turn completes at the end, not
    at the request's step."""
    items = [USER, REQUEST, APPROVAL, MCP_CALL, ANSWER]
    assert openai_responses.completed_turn_cut(items) == 5
    assert openai_responses.completed_turn_cut(items[:3]) == 0
    abandoned = openai_responses.decode_history([USER, REQUEST, USER, ANSWER])
    assert abandoned.is_balanced and abandoned.completed_prefix_length == 4


def test_a_program_without_its_output_is_an_open_call() -> None:
    """`program` pairs with `program_output` by call_id, as openai-agents pairs them."""
    history = openai_responses.decode_history([USER, ANSWER, USER, PROGRAM])
    assert history.completed_prefix_length == 2
    assert history.end_violation is not None and history.end_violation.rule == "unanswered-call"
    done = openai_responses.decode_history([USER, PROGRAM, PROGRAM_OUTPUT, ANSWER])
    assert done.is_balanced and done.completed_prefix_length == 4
    stray = openai_responses.check_balance([USER, PROGRAM_OUTPUT]).failure()
    assert (stray.index, stray.rule) == (1, "orphan-result")


def _typed_dict_keys(name: str) -> dict[str, str]:
    """The keys of one of openai's input item TypedDicts, each with its annotation's text."""
    from openai.types.responses import response_input_item_param as params

    hints = typing.get_type_hints(getattr(params, name), include_extras=True)
    return {key: str(hint) for key, hint in hints.items()}


def test_local_shell_call_output_pairs_by_its_id() -> None:
    """openai's LocalShellCallOutput has `id` (the call's id) and no `call_id`: it pairs by it."""
    keys = _typed_dict_keys("LocalShellCallOutput")
    assert "Required" in keys["id"] and "call_id" not in keys
    call = {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_sh", "status": "completed",
            "action": {"type": "exec", "command": ["ls"], "env": {}}}
    output = {"type": "local_shell_call_output", "id": "call_sh", "output": "a.txt"}
    history = openai_responses.decode_history([USER, call, output, ANSWER])
    assert history.is_balanced and history.completed_prefix_length == 4
    assert openai_responses.check_balance([USER, call]).failure().rule == "unanswered-call"
    nameless = openai_responses.check_balance([USER, call, {**output, "id": None}]).failure()
    assert nameless.rule == "shape" and "input[2].id" in nameless.problem


def test_a_server_executed_tool_search_needs_no_output() -> None:
    """openai's ToolSearchCall has an optional call_id and `execution`: a search the server ran
    (or one without call_id) pairs with nothing; a client one needs its tool_search_output."""
    keys = _typed_dict_keys("ToolSearchCall")
    assert "Optional" in keys["call_id"] and "server" in keys["execution"]
    server = {"type": "tool_search_call", "id": "ts_1", "arguments": {}, "execution": "server"}
    found = {"type": "tool_search_output", "id": "tso_1", "tools": [], "execution": "server"}
    assert openai_responses.decode_history([USER, server, found, ANSWER]).is_balanced
    anonymous = {"type": "tool_search_call", "id": "ts_2", "arguments": {}}
    assert openai_responses.completed_turn_cut([USER, anonymous, ANSWER]) == 3
    client = {"type": "tool_search_call", "id": "ts_3", "call_id": "call_ts", "arguments": {},
              "execution": "client"}
    assert openai_responses.check_balance([USER, client]).failure().rule == "unanswered-call"
    answered = [USER, client, {"type": "tool_search_output", "call_id": "call_ts", "tools": [],
                               "execution": "client"}, ANSWER]
    assert openai_responses.decode_history(answered).is_balanced


def test_an_item_reference_is_a_stored_item() -> None:
    """What an item_reference points at cannot be seen: stored-item at it, cut before it."""
    reference = {"type": "item_reference", "id": "msg_old"}
    history = openai_responses.decode_history([USER, ANSWER, reference, USER, ANSWER])
    assert history.violation is not None
    assert (history.violation.index, history.violation.rule) == (2, "stored-item")
    assert "msg_old" in history.violation.problem and history.completed_prefix_length == 2
    assert openai_responses.completed_turn_prefix(history) == [USER, ANSWER]


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_takes_a_system_message_as_its_sdk_types_do() -> None:
    """anthropic 2.15's MessageParam holds SystemMessageParam: a system message between turns
    reads; between a tool_use and its result it breaks the pairing, like a user prompt."""
    from anthropic.types import MessageParam, SystemMessageParam

    assert SystemMessageParam in typing.get_args(MessageParam)
    system = {"role": "system", "content": "Be brief."}
    assert anthropic.decode_history([USER, {"role": "assistant", "content": "a"}, system,
                                     USER, {"role": "assistant", "content": "b"}]).is_balanced
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f",
                                             "input": {}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                           "content": "ok"}]}
    broken = anthropic.check_balance([USER, use, system, result]).failure()
    assert (broken.index, broken.rule) == (1, "unanswered-call")
    misplaced: dict[str, Any] = {"role": "system", "content": result["content"]}
    assert anthropic.check_balance([USER, use, misplaced]).failure().rule == "shape"
