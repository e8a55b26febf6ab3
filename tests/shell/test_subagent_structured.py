"""Structured output: captured once in the child's own scope, nothing left registered."""

from __future__ import annotations

import msgspec
import pytest
from _shell_helpers import echo_tool, of_type, run
from _subagent_helpers import (
    assert_all_balanced,
    finish,
    request,
    result_texts,
    subagent_host,
    turn_ends,
)
from msgspec import UNSET, Raw

from turnfork.core import (
    STRUCTURED_OUTPUT_DESCRIPTION,
    STRUCTURED_OUTPUT_INSTRUCTION,
    ToolErrorInfo,
    ToolResultEvent,
    TurnCompleted,
)
from turnfork.shell import Agent, Host, Reply, SubagentStartError

SCHEMA = Raw(b'{"type":"object","properties":{"answer":{"type":"string"},'
             b'"score":{"type":"integer"}},"required":["answer"]}')


def _nothing_registered(host: Host, *agents: Agent) -> None:
    assert "structured_output" not in host.tools
    for agent in agents:
        assert "structured_output" not in [tool.name for tool in agent.tools.tools()]
        assert agent.tools.guards == []
        assert "tool:structured_output" not in agent.prompt_sections


def _still_registered(child: Agent) -> None:
    """Settled but not disposed: the capture still rides the child (DSH structured.spec.ts
    "registrations ride the child fiber: disposing the run removes them")."""
    assert "structured_output" in [tool.name for tool in child.tools.tools()]
    assert "tool:structured_output" in child.prompt_sections


def test_structured_output_is_captured_through_a_seeded_child() -> None:
    """A fork child calls structured_output: the value is captured exactly, the result text is
    DSH's, the turn completes, and only the child ever saw the tool and its section."""

    async def main() -> None:
        host, parent, model, _ = subagent_host([
            Reply.text("one"),
            Reply.tool_call("structured_output", '{"answer": "42", "score": 7}'),
            Reply.text("never reached")])
        parent.followup("one")
        await parent.when_idle()
        forked = await host.subagents.start(
            "fork", request("answer", output_schema=SCHEMA), parent=parent)
        result = await forked.result
        assert forked.seed_length > 0
        assert result.stop_reason == "completed"
        assert isinstance(result.structured, Raw)
        assert bytes(result.structured) == b'{"answer": "42", "score": 7}'
        assert result_texts(forked.own_events()) == ["Structured output recorded."]
        assert turn_ends(forked.own_events()) == [TurnCompleted()]
        child_request = model.requests[1]
        assert [tool.name for tool in child_request.tools] == ["structured_output"]
        assert child_request.tools[0].description == STRUCTURED_OUTPUT_DESCRIPTION
        assert msgspec.json.decode(child_request.tools[0].parameters) == msgspec.json.decode(
            SCHEMA)
        assert child_request.system is not None
        assert child_request.system.endswith(STRUCTURED_OUTPUT_INSTRUCTION)
        assert model.calls == 2
        parent_request = model.requests[0]
        assert parent_request.tools == () and STRUCTURED_OUTPUT_INSTRUCTION not in (
            parent_request.system or "")
        _still_registered(forked.local_agent)
        await forked.dispose()
        _nothing_registered(host, parent, forked.local_agent)
        await parent.dispose()
        assert_all_balanced(parent, forked.local_agent)

    run(main)


def test_invalid_arguments_then_capture_then_every_later_call_is_denied() -> None:
    """Invalid args get INVALID_ARGS and may be retried; after the capture, later calls of any
    tool (even in the same message) are denied with DSH's text and no error key."""

    async def main() -> None:
        host, parent, _, _ = subagent_host([
            Reply.tool_call("structured_output", {"score": "high"}),
            Reply.tool_calls([("structured_output", {"answer": "yes"}),
                              ("echo", {"text": "late"}),
                              ("structured_output", {"answer": "again"})])])
        host.tools.register(echo_tool(safe=False))
        spawned = await host.subagents.start("spawn", request("go", output_schema=SCHEMA),
                                             parent=parent)
        result = await spawned.result
        own = spawned.own_events()
        assert result_texts(own) == [
            'Error: invalid arguments: missing required property "value.answer"; '
            '"value.score" must be an integer',
            "Structured output recorded.",
            "Error: structured output already recorded: the run is complete, so `echo` is not "
            "executed",
            "Error: structured output already recorded: the run is complete, so "
            "`structured_output` is not executed"]
        errors = [event.data.error for event in of_type(own, ToolResultEvent)]
        assert errors == [ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS"),
                          UNSET, UNSET, UNSET]
        assert isinstance(result.structured, Raw)
        assert bytes(result.structured) == b'{"answer":"yes"}'
        assert result.stop_reason == "completed"
        assert turn_ends(own) == [TurnCompleted()]
        _still_registered(spawned.local_agent)
        await spawned.dispose()
        _nothing_registered(host, parent, spawned.local_agent)
        assert_all_balanced(spawned.local_agent)

    run(main)


def test_a_clean_turn_without_a_capture_reports_error() -> None:
    """Answering in plain text instead of calling the tool is a failure, not a success."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("just text")])
        spawned = await host.subagents.start("spawn", request("go", output_schema=SCHEMA),
                                             parent=parent)
        result = await spawned.result
        assert turn_ends(spawned.own_events()) == [TurnCompleted()]
        assert result.stop_reason == "error" and result.structured is UNSET
        _still_registered(spawned.local_agent)
        await spawned.dispose()
        _nothing_registered(host, parent, spawned.local_agent)
        await finish(parent, recorder)

    run(main)


@pytest.mark.parametrize(("schema", "violation"), [
    (b'{"type":"object","oneOf":[]}', "schema cannot declare both type and oneOf"),
    (b'{"type":"object","default":1e999}', "schema.default annotation must be lossless JSON data"),
])
def test_a_schema_outside_the_subset_is_refused_before_any_child(schema: bytes,
                                                                 violation: str) -> None:
    """A schema outside the subset, or carrying a value JSON cannot hold, is refused as
    `JsonSchemaError` before any child exists (DSH structured.spec.ts "rejects a schema outside
    the subset loud", "a schema carrying non-JSON values fails as JsonSchemaError")."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host()
        with pytest.raises(SubagentStartError) as refused:
            await host.subagents.start("spawn", request("go", output_schema=Raw(schema)),
                                       parent=parent)
        assert str(refused.value) == f"unsupported JSON schema: {violation}"
        assert (refused.value.error.name, refused.value.error.code) == (
            "JsonSchemaError", "UNSUPPORTED_SCHEMA")
        assert host.sessions.list() == (parent.id,) and len(host.agents) == 1
        assert model.calls == 0
        await finish(parent, recorder)

    run(main)
