"""A seed goes to each SDK as it is returned: `chat.completions.create(messages=seed)`,
`responses.create(input=seed)`, `messages.create(messages=seed)` and the OpenAI Agents SDK's
`Runner.run(agent, seed)`, with the items as the caller holds them (dicts, or the SDK's own
objects appended as they came back) and with DSH seeds projected by `core.wire_seed`.

Each parent conversation is built by calling the real SDK against a scripted endpoint (an httpx
mock transport, no network), so its items are the SDK's own response objects; its last turn is
open (a tool call the parent is still running). The body the SDK sends for the child is compared
with the seed, item by item.

On cb407df the seed was a view (`SequencePrefix`): `responses.create(input=seed)` failed with
"Object of type SequencePrefix is not JSON serializable" and `Runner.run(agent, seed)` with
"'SequencePrefix' object has no attribute 'copy'".
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from _capture import (
    EXTRA,
    ScriptedEndpoint,
    anthropic_message,
    chat_body,
    responses_body,
)

from turnfork.core import completed_turn_prefix as dsh_prefix
from turnfork.core import decode_session
from turnfork.core.formats import anthropic, openai_chat, openai_responses
from turnfork.core.wire_seed import from_dsh

FIXTURE = (Path(__file__).resolve().parents[1] / "fixtures" / "dsh" / "derived"
           / "fork-parent-inflight-at-subagent-call.DERIVED.jsonl")
CALL = {"id": "call_fork", "type": "function",
        "function": {"name": "fork", "arguments": '{"prompt": "Which colour?"}'}}


def _plain(item: Any) -> Any:
    """An item as JSON: an SDK object as the SDK itself sends it (the fields it was given)."""
    if hasattr(item, "model_dump"):
        return item.model_dump(mode="json", exclude_unset=True)
    if isinstance(item, dict):
        return {key: _plain(value) for key, value in item.items()}
    if isinstance(item, list):
        return [_plain(value) for value in item]
    return item


def _dsh_seed(format_name: str) -> list[dict[str, Any]]:
    events = decode_session(FIXTURE.read_bytes(), projected=True).unwrap()[1]
    return from_dsh(dsh_prefix(events), format_name).unwrap()  # type: ignore[arg-type]


def test_a_chat_seed_goes_to_chat_completions_create() -> None:
    """The parent's messages hold the SDK's ChatCompletionMessage objects; the seed (a list)
    is sent as it is and the body holds exactly its messages."""
    parent = ScriptedEndpoint([chat_body({"role": "assistant", "content": "Noted: BLUE."}),
                               chat_body({"role": "assistant", "content": None,
                                          "tool_calls": [CALL]})])
    client = parent.openai()
    messages: list[Any] = [{"role": "system", "content": "Be brief."},
                           {"role": "user", "content": "The colour is BLUE."}]
    messages.append(client.chat.completions.create(model="gpt-4o", messages=messages)
                    .choices[0].message)
    messages.append({"role": "user", "content": "Ask a fork."})
    messages.append(client.chat.completions.create(model="gpt-4o", messages=messages)
                    .choices[0].message)
    assert openai_chat.check_balance(messages).failure().rule == "unanswered-call"
    seed = openai_chat.completed_turn_prefix(messages)
    assert len(seed) == 3 and seed[2] is messages[2]
    for handed in (seed, dsh := _dsh_seed("openai-chat")):
        child = ScriptedEndpoint([chat_body({"role": "assistant", "content": "BLUE"})])
        reply = child.openai().chat.completions.create(model="gpt-4o", messages=handed)
        assert reply.choices[0].message.content == "BLUE"
        assert child.bodies[0]["messages"] == [_plain(m) for m in handed]
        assert openai_chat.check_balance(child.bodies[0]["messages"]).unwrap().is_balanced
    assert len(dsh) == 3


def test_a_responses_seed_goes_to_responses_create() -> None:
    """The parent's input holds the SDK's output items (a reasoning item and the open call
    last); the seed leaves that turn out and is sent as it is."""
    parent = ScriptedEndpoint([
        responses_body([{"type": "message", "id": "msg_1", "role": "assistant",
                         "status": "completed", "content": [
                             {"type": "output_text", "text": "Noted: BLUE.",
                              "annotations": []}]}]),
        responses_body([{"type": "reasoning", "id": "rs_2", "summary": []},
                        {"type": "function_call", "id": "fc_2", "call_id": "call_fork",
                         "name": "fork", "arguments": "{}", "status": "completed"}])])
    client = parent.openai()
    items: list[Any] = [{"role": "user", "content": "The colour is BLUE."}]
    items.extend(client.responses.create(model="gpt-4o", input=items).output)
    items.append({"role": "user", "content": "Ask a fork."})
    items.extend(client.responses.create(model="gpt-4o", input=items).output)
    assert openai_responses.check_balance(items).failure().rule == "unanswered-call"
    seed = openai_responses.completed_turn_prefix(items)
    assert len(seed) == 2 and seed[1] is items[1]
    for handed in (seed, _dsh_seed("openai-responses")):
        child = ScriptedEndpoint([responses_body([])])
        child.openai().responses.create(model="gpt-4o", input=handed)
        assert child.bodies[0]["input"] == [_plain(item) for item in handed]
        assert openai_responses.check_balance(child.bodies[0]["input"]).unwrap().is_balanced


def test_an_anthropic_seed_goes_to_messages_create() -> None:
    """The parent's assistant messages hold the SDK's content blocks (a tool_use last, still
    running); the seed is the completed turn, sent as it is."""
    pytest.importorskip("anthropic", reason=EXTRA)
    parent = ScriptedEndpoint([
        anthropic_message([{"type": "text", "text": "Noted: BLUE."}]),
        anthropic_message([{"type": "tool_use", "id": "toolu_fork", "name": "fork",
                            "input": {"prompt": "Which colour?"}}], stop_reason="tool_use")])
    client = parent.anthropic()
    messages: list[Any] = [{"role": "user", "content": "The colour is BLUE."}]
    for prompt in ("Ask a fork.", None):
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=64,
                                       messages=messages)
        messages.append({"role": "assistant", "content": reply.content})
        if prompt is not None:
            messages.append({"role": "user", "content": prompt})
    assert anthropic.check_balance(messages).failure().rule == "unanswered-call"
    seed = anthropic.completed_turn_prefix(messages)
    assert len(seed) == 2 and seed[1] is messages[1]
    for handed in (seed, _dsh_seed("anthropic")):
        child = ScriptedEndpoint([anthropic_message([{"type": "text", "text": "BLUE"}])])
        child.anthropic().messages.create(model="claude-sonnet-4-5", max_tokens=64,
                                          messages=handed)
        assert child.bodies[0]["messages"] == [_plain(m) for m in handed]
        assert anthropic.check_balance(child.bodies[0]["messages"]).unwrap().is_balanced


def test_a_responses_seed_goes_to_runner_run() -> None:
    """`Runner.run(agent, seed)` with the seed as returned (the SDK copies its input list):
    the child runs to completion and its model receives exactly the seed."""
    agents = pytest.importorskip("agents", reason=EXTRA)
    agents.set_tracing_disabled(True)
    parent = ScriptedEndpoint([responses_body([
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Noted: BLUE.", "annotations": []}]}])])
    model = agents.OpenAIResponsesModel("gpt-4o", parent.async_openai())
    first = asyncio.run(agents.Runner.run(agents.Agent(name="parent", model=model),
                                          "The colour is BLUE."))
    items = [*first.to_input_list(), {"role": "user", "content": "Ask a fork."},
             {"type": "function_call", "call_id": "call_fork", "name": "fork",
              "arguments": "{}"}]
    seed = openai_responses.completed_turn_prefix(items)
    assert len(seed) == 2
    child = ScriptedEndpoint([responses_body([
        {"type": "message", "id": "msg_c", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "BLUE", "annotations": []}]}])])
    agent = agents.Agent(name="child",
                         model=agents.OpenAIResponsesModel("gpt-4o", child.async_openai()))
    result = asyncio.run(agents.Runner.run(agent, seed))
    assert result.final_output == "BLUE"
    assert json.loads(json.dumps(child.bodies[0]["input"])) == [_plain(i) for i in seed]
    assert len(seed) == 2  # the run did not change the caller's seed
