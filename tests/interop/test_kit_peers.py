"""What the kit's examples say about the peers, shown once more with fixed histories:
langchain-core's `trim_messages` keeps an orphan `ToolMessage` without `start_on`; pydantic-ai,
given a history processor that keeps such an orphan, drops the result itself before the
request, so its model never sees it."""

from __future__ import annotations

import asyncio

import pytest
from _capture import EXTRA

for _package in ("langchain_core", "pydantic_ai"):
    pytest.importorskip(_package, reason=EXTRA)

from langchain_core.messages import (  # noqa: E402
    convert_to_messages,
    convert_to_openai_messages,
    trim_messages,
)
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.capabilities import ProcessHistory  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from turnfork.adapters.pydantic_ai import check_balance  # noqa: E402
from turnfork.testing import assert_balanced  # noqa: E402

CHAT = [{"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."}]


def test_trim_last_without_start_on_keeps_an_orphan_tool_message() -> None:
    kept = trim_messages(convert_to_messages(CHAT), max_tokens=2, token_counter=len,
                         strategy="last")
    with pytest.raises(AssertionError, match="rule orphan-result, item 0, call id c1"):
        assert_balanced(convert_to_openai_messages(kept), "openai-chat")
    safe = trim_messages(convert_to_messages(CHAT), max_tokens=2, token_counter=len,
                         strategy="last", start_on="human")
    assert_balanced(convert_to_openai_messages(safe), "openai-chat")  # nothing fits: empty


def test_pydantic_ai_drops_the_orphan_a_history_processor_kept() -> None:
    """The processor's output breaks orphan-result; the model is handed a history without that
    result (pydantic-ai's own repair), one the adapter finds balanced."""
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Weather?")]),
        ModelResponse(parts=[ToolCallPart("weather", {}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("weather", "sunny", tool_call_id="c1")]),
        ModelResponse(parts=[TextPart("Sunny.")]),
    ]
    processed: list[list[ModelMessage]] = []
    received: list[list[ModelMessage]] = []

    def keep_last_three(messages: list[ModelMessage]) -> list[ModelMessage]:
        kept = messages[-3:]
        processed.append(kept)
        return kept

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(messages)
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(model), capabilities=[ProcessHistory(keep_last_three)])
    assert asyncio.run(agent.run("And tomorrow?", message_history=history)).output == "ok"
    violation = check_balance(processed[0]).failure()
    assert (violation.index, violation.rule) == (0, "orphan-result")
    sent = received[0]
    assert check_balance(sent).unwrap()
    returned = [p for m in sent for p in m.parts if isinstance(p, ToolReturnPart)]
    assert returned == []  # the result the trim kept never reached the model
