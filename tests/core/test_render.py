"""What the parent model sees (wire-format §7.5): result texts and the tool's wording."""

from __future__ import annotations

import msgspec
import pytest
from _delegation_helpers import SNAPSHOTS, load, tool_result

from turnfork.core import (
    SUBAGENT_TOOL_NAME,
    ReasoningBlock,
    StartError,
    SubagentResult,
    TextBlock,
    ToolCallBlock,
    ToolErrorInfo,
    render_infrastructure_failure,
    render_result_and_dispose_failure,
    render_start_error,
    render_tool_result,
    subagent_prompt_description,
    subagent_tool_description,
    subagent_tool_parameters,
    subagent_tool_schema,
)


def test_success_is_the_concatenated_text_blocks_only() -> None:
    """Ensures reasoning and tool-call blocks are dropped and texts joined without separator."""
    result = SubagentResult(output=(ReasoningBlock(text="hmm"), TextBlock(text="A"),
                                    ToolCallBlock(id="c", name="t", arguments="{}"),
                                    TextBlock(text="B")), stop_reason="completed")
    rendered = render_tool_result(result)
    assert (rendered.text, rendered.is_error, rendered.error) == ("AB", False, None)
    assert rendered.blocks == (TextBlock(text="AB"),)


def test_success_without_text_is_an_empty_result() -> None:
    """Ensures a completed run with no text is an empty, non-error result."""
    assert render_tool_result(SubagentResult(output=(), stop_reason="completed")).text == ""


@pytest.mark.parametrize(("reason", "headline"), [
    ("aborted", "subagent run was cancelled"),
    ("error", "subagent run failed"),
    ("max-tokens", "subagent run hit its token limit before finishing"),
    ("refusal", "subagent declined the task"),
    ("paused", "subagent run ended abnormally (paused)"),
])
def test_headlines(reason: str, headline: str) -> None:
    """Ensures every non-completed stop reason is an error with DSH's exact headline."""
    rendered = render_tool_result(SubagentResult(output=(), stop_reason=reason))
    assert rendered.text == f"Error: {headline}"
    assert rendered.is_error and rendered.error is None


def test_partial_output_text_matches_dsh_example() -> None:
    """Ensures the partial-output part is DSH's real example, byte for byte."""
    result = SubagentResult(output=(TextBlock(text="partial one"),), stop_reason="max-tokens")
    assert render_tool_result(result).text == (
        "Error: subagent run hit its token limit before finishing\n"
        "Partial output before the run ended:\npartial one")


def test_diagnostic_comes_before_partial_output() -> None:
    """Ensures the diagnostic line sits between the headline and the partial output."""
    result = SubagentResult(output=(TextBlock(text="x"),), diagnostic="exit 3", stop_reason="error")
    assert render_tool_result(result).text == (
        "Error: subagent run failed\nDiagnostic: exit 3\nPartial output before the run ended:\nx")


def test_infrastructure_failure() -> None:
    """Ensures a rejected result is `Error: <message>`."""
    rendered = render_infrastructure_failure("snapshot published run failed")
    assert (rendered.text, rendered.is_error) == ("Error: snapshot published run failed", True)


def test_result_and_dispose_failure_matches_the_fixture() -> None:
    """Ensures the double failure text equals the published-run-failure fixture's result."""
    _, events = load(SNAPSHOTS + "subagent-published-run-failure__session.jsonl")
    rendered = render_result_and_dispose_failure(
        "Error: snapshot published run failed", "Error: snapshot published handle disposal failed")
    assert (rendered.text, rendered.is_error) == tool_result(events[16])
    assert rendered.error is None


def test_start_error_carries_error_info_when_named() -> None:
    """Ensures a SubagentError start refusal gets the `error` key, a plain one does not."""
    named = StartError(code="UNSUPPORTED_CAPABILITY", name="SubagentError", message="m")
    assert render_start_error(named).error == ToolErrorInfo(name="SubagentError",
                                                            code="UNSUPPORTED_CAPABILITY")
    assert render_start_error(StartError(code="DEPTH", message="m")).error is None
    assert render_start_error(named).text == "Error: m"


def test_fork_and_spawn_wording() -> None:
    """The wording is DSH's, derived from ``inheritsParentContext`` (tool-subagent.spec.ts
    "derives tool wording from the provider's inheritsParentContext"): fork inherits this
    conversation's completed turns, spawn does not see it; the suffix says how it runs."""
    fork, spawn = subagent_tool_description(True), subagent_tool_description(False)
    assert "inherits this conversation" in fork
    assert "does not see the current in-flight turn" in fork
    assert "does not see this conversation" in spawn
    for text in (fork, spawn):
        assert text.endswith(" This call waits for the subagent and returns its result.")
    assert "job_output" in subagent_tool_description(False, "one-shot")
    continuable = subagent_tool_description(False, "continuable")
    assert "send_message" in continuable and "runs in the background by default" in continuable
    assert "job_output" not in continuable and "job_kill" not in continuable
    assert "completed turns" in subagent_prompt_description(True)
    assert "include everything it needs" in subagent_prompt_description(False)


@pytest.mark.parametrize("inherits", [True, False])
def test_tool_parameters_are_two_required_strings(inherits: bool) -> None:
    """The parameters schema has `description` and `prompt`, both required strings, and
    `run_in_background` only when background runs are enabled."""
    schema = msgspec.json.decode(subagent_tool_parameters(inherits))
    assert schema["type"] == "object"
    assert schema["required"] == ["description", "prompt"]
    assert {name: spec["type"] for name, spec in schema["properties"].items()} == {
        "description": "string", "prompt": "string"}
    assert schema["properties"]["description"]["description"] == \
        "A short (3-5 word) description of the delegated task, for display."
    tool = subagent_tool_schema(inherits)
    assert tool.name == SUBAGENT_TOOL_NAME == "subagent"
    assert tool.description == subagent_tool_description(inherits)
    background = msgspec.json.decode(subagent_tool_parameters(inherits, "continuable"))
    assert background["properties"]["run_in_background"]["description"].startswith(
        "Whether to run in the background and return a durable subagent id immediately.")
    assert background["required"] == ["description", "prompt"]
