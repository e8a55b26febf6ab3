"""A pydantic-ai Agent forks a child mid-turn: seeded with our cut, the child's first request is
balanced; the naive copy of the parent's history is not, and pydantic-ai can only send it by
inventing a result for the parent's call, which is still running.

The seed is `turnfork.adapters.pydantic_ai.completed_turn_seed(ctx.messages)`, one line in the
tool (it replaced 21 lines projecting the messages to Chat by hand). The parent runs on
pydantic-ai's FunctionModel; its `fork` tool runs inside the parent's turn,
when the parent's last ModelResponse is the fork call itself. The child runs on pydantic-ai's
real provider models (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) against a
recording endpoint, so the test checks the very JSON pydantic-ai would send.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _capture import EXTRA, RecordingEndpoint

pydantic_ai = pytest.importorskip("pydantic_ai", reason=EXTRA)

from pydantic_ai import Agent, RunContext  # noqa: E402
from pydantic_ai.exceptions import UserError  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    repair_messages,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

from turnfork.adapters.pydantic_ai import completed_turn_seed  # noqa: E402
from turnfork.core.formats import anthropic, openai_chat, openai_responses  # noqa: E402


def _anthropic_model(endpoint: RecordingEndpoint) -> Any:
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    return AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(
        anthropic_client=endpoint.anthropic_client()))


#: The child's model, by the wire format it speaks, and that format's module.
FORMATS = {
    "chat": (lambda e: OpenAIChatModel("gpt-4o", provider=OpenAIProvider(
        openai_client=e.client)), openai_chat),
    "responses": (lambda e: OpenAIResponsesModel("gpt-4o", provider=OpenAIProvider(
        openai_client=e.client)), openai_responses),
    "anthropic": (_anthropic_model, anthropic),
}


def _is_invented(item: dict[str, Any]) -> bool:
    """The result pydantic-ai made up for the parent's fork call (a message, item or block)."""
    return item.get("tool_call_id") == "call_fork" or (
        item.get("call_id") == "call_fork" and item.get("type") == "function_call_output") or (
        item.get("type") == "tool_result" and item.get("tool_use_id") == "call_fork")


def _without_invented_result(sent: list[dict[str, Any]],
                             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the one invented result, the request without it): what a naive copy sends."""
    invented: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    for item in sent:
        if _is_invented(item):
            invented.append(item)
            continue
        blocks = item.get("content")
        if isinstance(blocks, list) and any(isinstance(b, dict) and _is_invented(b)
                                            for b in blocks):
            invented.extend(b for b in blocks if _is_invented(b))
            kept.append({**item, "content": [b for b in blocks if not _is_invented(b)]})
        else:
            kept.append(item)
    assert len(invented) == 1
    return invented, kept


def _parent_model() -> FunctionModel:
    """First run: a plain answer. Second run: the fork call, then a final answer."""
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        requests = sum(isinstance(m, ModelRequest) for m in messages)
        last = messages[-1]
        if requests == 1:
            return ModelResponse(parts=[TextPart("Noted: the colour is BLUE.")])
        if any(p.part_kind == "tool-return" for p in last.parts):
            return ModelResponse(parts=[TextPart("The fork says BLUE.")])
        return ModelResponse(parts=[ToolCallPart("fork", {"prompt": "Which colour?"},
                                                 tool_call_id="call_fork")])
    return FunctionModel(respond)


def _fork_inside_the_parents_turn(child_model: Any) -> dict[str, Any]:
    """Run the parent; its fork tool tries the naive copy and our cut, recording what happens."""
    seen: dict[str, Any] = {}
    parent = Agent(_parent_model())

    @parent.tool
    async def fork(ctx: RunContext[None], prompt: str) -> str:
        """Hand the task to a fork child."""
        naive = list(ctx.messages)
        seen["naive"] = naive
        repairing = RecordingEndpoint("BLUE")
        child = Agent(child_model(repairing))
        try:
            await child.run(prompt, message_history=naive)
        except UserError as refused:
            seen["refused"] = str(refused)
        await child.run(prompt, message_history=repair_messages(naive))
        seen["repaired"] = repairing.first_history()
        ours = RecordingEndpoint("BLUE")
        child = Agent(child_model(ours))
        seen["seed"] = completed_turn_seed(ctx.messages)
        result = await child.run(prompt, message_history=seen["seed"])
        seen["sent"] = ours.first_history()
        return result.output

    async def run() -> None:
        first = await parent.run("Remember: the colour is BLUE.")
        second = await parent.run("Ask a fork which colour it is.",
                                  message_history=first.all_messages())
        seen["answer"] = second.output

    asyncio.run(run())
    return seen


@pytest.mark.parametrize("wire", sorted(FORMATS))
def test_a_forked_pydantic_ai_child_sends_a_balanced_first_request(wire: str) -> None:
    """Our cut: balanced, the parent's completed turn plus the prompt, nothing invented."""
    child_model, fmt = FORMATS[wire]
    seen = _fork_inside_the_parents_turn(child_model)
    assert seen["answer"] == "The fork says BLUE."
    assert isinstance(seen["naive"][-1], ModelResponse)  # the fork call, still unanswered
    assert [type(m) for m in seen["seed"]] == [ModelRequest, ModelResponse]
    history = fmt.check_balance(seen["sent"]).unwrap()
    assert history.is_balanced
    texts = [str(item.get("content")) for item in seen["sent"]]
    assert len(texts) == 3 and "Remember: the colour is BLUE." in texts[0]
    assert "Noted: the colour is BLUE." in texts[1] and "Which colour?" in texts[2]
    assert "call_fork" not in str(seen["sent"])


@pytest.mark.parametrize("wire", sorted(FORMATS))
def test_the_naive_copy_is_unbalanced_and_pydantic_ai_papers_over_it(wire: str) -> None:
    """The naive copy fails our checker; pydantic-ai refuses it, or sends it with a made-up
    result claiming the running fork call was interrupted."""
    child_model, fmt = FORMATS[wire]
    seen = _fork_inside_the_parents_turn(child_model)
    assert "unprocessed tool calls" in seen["refused"]
    invented, naive_as_sent = _without_invented_result(seen["repaired"])
    assert "interrupted" in str(invented)
    violation = fmt.check_balance(naive_as_sent).failure()
    assert violation.rule == "unanswered-call"
    assert "call_fork" in violation.problem or "call_fork" in str(naive_as_sent[violation.index])
