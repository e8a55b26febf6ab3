"""Anthropic Messages histories, pinned where a mutation run of ``core.formats.anthropic``
found the tests loose: MCP tool use beside server tool use, redacted thinking beside thinking,
where each block may stand, and the sentences (Anthropic's words) each rule is named in."""

from __future__ import annotations

from typing import Any

import pytest

from turnfork.core.formats import FormatViolation, anthropic

USER = {"role": "user", "content": "q"}
ANSWER = {"role": "assistant", "content": "a"}
THINKING = {"type": "thinking", "thinking": "hm", "signature": "sig"}
REDACTED = {"type": "redacted_thinking", "data": "opaque"}


def _use(call_id: str = "t1") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "f", "input": {}}


def _result(call_id: str = "t1") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def _violation(messages: list[Any], **options: Any) -> FormatViolation:
    return anthropic.check_balance(messages, **options).failure()


@pytest.mark.parametrize(("use", "result"), [
    ({"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}},
     {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []}),
    ({"type": "mcp_tool_use", "id": "s1", "name": "lookup", "server_name": "docs", "input": {}},
     {"type": "mcp_tool_result", "tool_use_id": "s1", "content": []}),
])
def test_a_server_call_is_answered_in_its_own_turn(use: dict[str, Any],
                                                   result: dict[str, Any]) -> None:
    """Server and MCP tool use alike: the result in the same assistant turn (in the same
    message or a later one of the step); missing, named at the use with the tool's name, also
    across messages; a result with no use before it is an orphan."""
    text = {"type": "text", "text": "Found it."}
    for turn in ([{"role": "assistant", "content": [use, result, text]}],
                 [{"role": "assistant", "content": [use]},
                  {"role": "assistant", "content": [result, text]}]):
        history = anthropic.decode_history([USER, *turn, USER, ANSWER])
        assert history.is_balanced and history.completed_prefix_length == 3 + len(turn)
    missing = _violation([USER, ANSWER, USER, {"role": "assistant", "content": [text]},
                          {"role": "assistant", "content": [use, text]}, USER])
    assert (missing.index, missing.rule, missing.call_id) == (4, "server-call-unanswered",
                                                              "s1")
    assert missing.problem == (f"`{use['name']}` tool use with id `s1` was found without a "
                               "corresponding result block in its assistant turn")
    paused = anthropic.decode_history([USER, {"role": "assistant", "content": [use]}])
    assert paused.is_balanced and paused.completed_prefix_length == 0
    orphan = _violation([USER, {"role": "assistant", "content": [result, text]}])
    assert (orphan.index, orphan.rule, orphan.call_id) == (1, "orphan-result", "s1")
    kind = result["type"]
    assert orphan.problem == (f"unexpected `tool_use_id` found in `{kind}` blocks: s1. Each "
                              f"`{kind}` block must have a corresponding `server_tool_use` "
                              "block before it")


def test_an_unnamed_server_call_is_named_by_its_type() -> None:
    use = {"type": "mcp_tool_use", "id": "s1"}
    assert _violation([USER, {"role": "assistant", "content": [use]}, USER]).problem.startswith(
        "`mcp_tool_use` tool use with id `s1`")


@pytest.mark.parametrize("opening", [THINKING, REDACTED])
def test_either_thinking_block_keeps_an_open_tool_loop(opening: dict[str, Any]) -> None:
    """An open loop whose assistant message starts with thinking or redacted thinking is
    accepted; without it, and with thinking on (said, or seen in a block of either kind), it is
    not."""
    loop = [USER, {"role": "assistant", "content": [opening, _use()]},
            {"role": "user", "content": [_result()]}]
    assert anthropic.check_balance(loop).unwrap()
    assert anthropic.check_balance(loop, thinking=True).unwrap()
    stripped = [USER, {"role": "assistant", "content": [opening, {"type": "text", "text": "t"}]},
                USER, {"role": "assistant", "content": [_use()]},
                {"role": "user", "content": [_result()]}]
    violation = _violation(stripped)
    assert (violation.index, violation.rule) == (3, "thinking-first")
    assert violation.problem == (
        "Expected `thinking` or `redacted_thinking`, but found `tool_use`: with thinking "
        "enabled, the assistant message that opens the last tool loop must start with its "
        "thinking block")
    assert anthropic.check_balance(stripped, thinking=False).unwrap()


def test_a_tool_loop_opened_by_text_content_names_text() -> None:
    loop = [USER, {"role": "assistant", "content": "Let me look."},
            {"role": "assistant", "content": [_use()]}, {"role": "user", "content": [_result()]}]
    violation = _violation(loop, thinking=True)
    assert (violation.index, violation.rule) == (1, "thinking-first")
    assert "but found `text`" in violation.problem


@pytest.mark.parametrize(("message", "problem"), [
    ({"role": "robot", "content": "x"},
     "unexpected role 'robot': messages are 'user', 'assistant' or 'system'"),
    ({"role": "user", "content": [_use()]},
     "messages.1.content.0: a `tool_use` block belongs in an assistant message"),
    ({"role": "system", "content": [{"type": "server_tool_use", "id": "s1"}]},
     "messages.1.content.0: a `server_tool_use` block belongs in an assistant message"),
    ({"role": "assistant", "content": [{"type": "text", "text": "x"},
                                       {"type": "tool_use", "name": "f"}]},
     "messages.1.content.1.id: Field required"),
    ({"role": "assistant", "content": [{"type": "mcp_tool_use", "id": ""}]},
     "messages.1.content.0.id: Field required"),
    ({"role": "assistant", "content": [_result()]},
     "messages.1.content.0: a `tool_result` block belongs in a user message"),
    ({"role": "user", "content": [{"type": "tool_result"}]},
     "messages.1.content.0.tool_use_id: Field required"),
    ({"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
     "messages.1.content.0.thinking.signature: Field required"),
    ({"role": "assistant", "content": [{"type": "redacted_thinking"}]},
     "messages.1.content.0.redacted_thinking.data: Field required"),
])
def test_each_shape_rule_names_the_block(message: dict[str, Any], problem: str) -> None:
    history = anthropic.decode_history([USER, message, USER, ANSWER])
    assert history.violation == FormatViolation(index=1, rule="shape", problem=problem)
    assert history.completed_prefix_length == 0 and history.end_violation is None


def test_a_system_message_is_the_callers() -> None:
    """A system message reads, and ends a step like a user message without results."""
    system = {"role": "system", "content": "Be brief."}
    assert anthropic.decode_history([system, USER, ANSWER, system]).completed_prefix_length == 3
    cut = _violation([USER, {"role": "assistant", "content": [_use()]}, system,
                      {"role": "user", "content": [_result()]}])
    assert (cut.index, cut.rule) == (1, "unanswered-call")


@pytest.mark.parametrize(("messages", "index", "problem"), [
    ([USER, {"role": "user", "content": ""}, ANSWER], 1,
     "messages.1: all messages must have non-empty content except for the optional final "
     "assistant message"),
    ([USER, {"role": "assistant", "content": []}, USER, ANSWER], 1,
     "messages.1: all messages must have non-empty content except for the optional final "
     "assistant message"),
    ([USER, ANSWER, {"role": "user", "content": []}], 2,
     "messages.2: all messages must have non-empty content except for the optional final "
     "assistant message"),
    ([USER, {"role": "assistant", "content": [{"type": "text", "text": "a"},
                                             {"type": "text", "text": ""}]}], 1,
     "messages: text content blocks must be non-empty (messages.1.content.1)"),
    ([USER, {"role": "assistant", "content": [{"type": "text", "text": "\t"}]}], 1,
     "messages: text content blocks must contain non-whitespace text (messages.1.content.0)"),
    ([USER, {"role": "assistant", "content": [{"type": "text", "text": "a"},
                                             {**_use(), "input": "{}"}]},
      {"role": "user", "content": [_result()]}], 1,
     "messages.1.content.1.tool_use.input: Input should be a valid dictionary"),
])
def test_each_strict_rule_in_anthropics_words(messages: list[Any], index: int,
                                              problem: str) -> None:
    violation = _violation(messages, strict=True)
    assert (violation.index, violation.problem) == (index, problem)
    assert anthropic.check_balance(messages).unwrap()


def test_only_the_final_assistant_message_may_be_empty() -> None:
    for empty in ("", []):
        final = [USER, {"role": "assistant", "content": empty}]
        assert anthropic.check_balance(final, strict=True).unwrap()
        later = [*final, USER, ANSWER]
        assert _violation(later, strict=True).rule == "empty-content"


@pytest.mark.parametrize("calls", [1, 2, 3])
def test_results_first_counts_the_calls(calls: int) -> None:
    ids = [f"t{n}" for n in range(calls)]
    uses = {"role": "assistant", "content": [_use(i) for i in ids]}
    late = {"role": "user", "content": [{"type": "text", "text": "here"},
                                        *(_result(i) for i in ids)]}
    violation = _violation([USER, uses, late])
    assert (violation.index, violation.rule) == (2, "results-first")
    assert violation.problem == (
        f"Did not find {calls} `tool_result` block(s) at the beginning of this message. "
        "Messages following `tool_use` blocks must begin with a matching number of "
        "`tool_result` blocks")
    first = {"role": "user", "content": [*(_result(i) for i in ids),
                                         {"type": "text", "text": "here"}]}
    assert anthropic.check_balance([USER, uses, first, ANSWER]).unwrap()


def test_the_sentences_of_the_pairing_rules() -> None:
    uses = {"role": "assistant", "content": [_use("t1"), _use("t2")]}
    unanswered = _violation([USER, uses, {"role": "user", "content": [_result("t2")]}])
    assert (unanswered.index, unanswered.call_id) == (1, "t1")
    assert unanswered.problem == (
        "`tool_use` ids were found without `tool_result` blocks immediately after: t1. Each "
        "`tool_use` block must have a corresponding `tool_result` block in the next message")
    both = _violation([USER, uses, USER])
    assert (both.call_id, "t1, t2" in both.problem) == ("t1", True)
    twice = _violation([USER, {"role": "assistant", "content": [_use("t1"), _use("t1")]}])
    assert (twice.index, twice.rule, twice.call_id, twice.problem) == (
        1, "duplicate-call", "t1", "`tool_use` id t1 is used twice")
    again = _violation([USER, uses, {"role": "user", "content": [
        _result("t1"), _result("t2"), _result("t1")]}])
    assert (again.index, again.rule, again.call_id, again.problem) == (
        2, "duplicate-result", "t1", "a second `tool_result` for t1")
    orphan = _violation([USER, uses, {"role": "user", "content": [
        _result("t1"), _result("t9"), _result("t2")]}])
    assert (orphan.index, orphan.rule, orphan.call_id) == (2, "orphan-result", "t9")
    assert orphan.problem == (
        "unexpected `tool_use_id` found in `tool_result` blocks: t9. Each `tool_result` block "
        "must have a corresponding `tool_use` block in the previous message")
    stray = _violation([USER, ANSWER, {"role": "user", "content": [_result("t3")]}])
    assert (stray.index, stray.rule, stray.call_id, stray.problem) == (
        2, "orphan-result", "t3", "unexpected `tool_use_id` found in `tool_result` blocks: t3: "
        "the previous message made no tool call")


@pytest.mark.parametrize("blocks", [["t0", "text", "t1"], ["t0", "text", "t1", "t2"],
                                    ["t0", "t1", "text", "t2"]])
def test_every_result_must_come_before_the_first_other_block(blocks: list[str]) -> None:
    """A text block among the results breaks the rule, wherever it stands among them."""
    ids = [b for b in blocks if b != "text"]
    uses = {"role": "assistant", "content": [_use(i) for i in ids]}
    content = [{"type": "text", "text": "x"} if b == "text" else _result(b) for b in blocks]
    violation = _violation([USER, uses, {"role": "user", "content": content}])
    assert (violation.index, violation.rule) == (2, "results-first")


def test_results_after_no_call_name_the_first_one() -> None:
    stray = {"role": "user", "content": [_result("t3"), _result("t4")]}
    violation = _violation([USER, ANSWER, stray])
    assert (violation.index, violation.rule, violation.call_id) == (2, "orphan-result", "t3")
    assert violation.problem == ("unexpected `tool_use_id` found in `tool_result` blocks: t3: "
                                 "the previous message made no tool call")


def test_thinking_first_names_the_first_block_found() -> None:
    opening = {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                                                _use()]}
    violation = _violation([USER, opening, {"role": "user", "content": [_result()]}],
                           thinking=True)
    assert (violation.index, violation.rule) == (1, "thinking-first")
    assert "but found `text`:" in violation.problem
