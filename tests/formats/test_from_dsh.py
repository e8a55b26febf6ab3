"""A DSH log's model history converts to each format (core.wire_seed, the DSH side of the
formats); a fork seed converts to a balanced one."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from _budget import examples
from hypothesis import given, settings

from turnfork.core import (
    AssistantMessage,
    Event,
    Message,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
    completed_turn_prefix,
    decode_log,
    decode_session,
    model_history,
    trace_log,
)
from turnfork.core.formats import anthropic, openai_chat, openai_responses
from turnfork.core.strategies import session_logs
from turnfork.core.wire_seed import from_dsh, from_model_history

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dsh"
FORMATS = (openai_chat, openai_responses, anthropic)
NAMES = {openai_chat: "openai-chat", openai_responses: "openai-responses",
         anthropic: "anthropic"}
Log = tuple[Event, ...]


def _derived_parent() -> Log:
    path = FIXTURES / "derived" / "fork-parent-inflight-at-subagent-call.DERIVED.jsonl"
    return decode_session(path.read_bytes(), projected=True).unwrap()[1]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_the_seed_of_a_real_in_flight_parent_converts_balanced(fmt: ModuleType) -> None:
    """DSH's parent caught at its subagent call: the raw log is unbalanced, its seed is not."""
    events = _derived_parent()
    whole = from_dsh(events, NAMES[fmt]).unwrap()
    assert fmt.check_balance(whole).failure().rule == "unanswered-call"
    seed = from_dsh(completed_turn_prefix(events), NAMES[fmt]).unwrap()
    history = fmt.check_balance(seed).unwrap()
    assert history.ends_at_completed_turn
    assert fmt.completed_turn_cut(whole) == len(seed)


def test_chat_conversion_is_the_shells_projection() -> None:
    """The openai-chat projection sends what the shell's OpenAI model sends."""
    from turnfork.core import LlmCallConfig
    from turnfork.shell.models.base import ModelRequest
    from turnfork.shell.models.openai_chat import chat_request_body

    events = decode_log((FIXTURES / "generated" / "K10-parent.events.jsonl").read_bytes())
    messages = model_history(trace_log(events.unwrap()).unwrap())
    request = ModelRequest(config=LlmCallConfig(provider="p", model="m"), system=None, tools=(),
                           messages=messages)
    assert len(messages) > 10
    assert from_model_history(messages, "openai-chat") == chat_request_body(request,
                                                                            "m")["messages"]


def test_a_log_that_breaks_a_rule_gives_its_violation() -> None:
    """from_dsh traces the log first and hands back the trace's violation."""
    events = _derived_parent()
    broken = (*events[:5], *events[6:])
    for fmt in FORMATS:
        assert from_dsh(broken, NAMES[fmt]).failure().rule == "seq"


def _pairs_every_call(messages: tuple[Message, ...]) -> bool:
    """Every tool call of the model history is answered by the tool results right after it.

    Stated on DSH's own messages, not through any format's checker. DSH's compaction never
    splits a call from its result (compaction-basic's region.ts); a generated log may.
    """
    waiting: set[str] = set()
    for message in messages:
        if isinstance(message, ToolResultMessage):
            block = message.content[0]
            assert isinstance(block, ToolResultBlock)
            if block.tool_call_id not in waiting:
                return False
            waiting.discard(block.tool_call_id)
            continue
        if waiting:
            return False
        if isinstance(message, AssistantMessage):
            waiting = {b.id for b in message.content if isinstance(b, ToolCallBlock)}
    return not waiting


@settings(max_examples=examples(200), deadline=None)
@given(session_logs())
def test_every_fork_seed_converts_to_a_history_balanced_as_its_model_history(log: Log) -> None:
    """A seed's history is balanced in all three formats exactly when its calls pair up."""
    seed = completed_turn_prefix(log)
    pairs = _pairs_every_call(model_history(trace_log(seed).unwrap()))
    for fmt in FORMATS:
        history = fmt.decode_history(from_dsh(seed, NAMES[fmt]).unwrap())
        assert history.is_balanced == pairs, (fmt.__name__, history)
        if not pairs:
            problem = history.violation or history.end_violation
            assert problem is not None and problem.rule in ("unanswered-call", "orphan-result")
