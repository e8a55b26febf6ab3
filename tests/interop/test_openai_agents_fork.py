"""An OpenAI Agents SDK agent forks a child mid-turn: seeded with our cut of the parent's input
items, the child's first request is balanced; the naive copy is not, and the SDK sends it as
it is (it prunes orphan calls from the items it generated itself, not from the caller's).

The parent runs on a scripted `Model`; its `fork` tool runs inside the parent's turn, after the
model answered with a reasoning item and the fork call. The child runs on a scripted `Model`
(the input items the runner hands a model), and on the SDK's own OpenAI Responses and Chat
Completions models against a recording endpoint (the JSON they would send).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _capture import EXTRA, RecordingEndpoint

agents = pytest.importorskip("agents", reason=EXTRA)

from agents import (  # noqa: E402
    Agent,
    ModelResponse,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.models.interface import Model  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)

from turnfork.core.formats import openai_chat, openai_responses  # noqa: E402

set_tracing_disabled(True)


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda o: o.model_dump(exclude_none=True)))


class ScriptedModel(Model):
    """Answers each model call with the next scripted output; records what it was given."""

    def __init__(self, outputs: list[list[Any]]) -> None:
        self.outputs = outputs
        self.inputs: list[list[dict[str, Any]]] = []
        self.answered: list[list[dict[str, Any]]] = []

    async def get_response(self, system_instructions: str | None, input: Any,  # noqa: PLR0917 (the SDK's Model signature)
                           model_settings: Any, tools: Any, output_schema: Any, handoffs: Any,
                           tracing: Any, *, previous_response_id: str | None = None,
                           conversation_id: str | None = None, prompt: Any = None,
                           ) -> ModelResponse:
        self.inputs.append(_plain([{"role": "user", "content": input}]
                                  if isinstance(input, str) else input))
        output = self.outputs.pop(0)
        self.answered.append(_plain(output))
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def history(self) -> list[dict[str, Any]]:
        """The items the parent holds now: its last input and the model's answer to it."""
        return [*self.inputs[-1], *self.answered[-1]]


def _message(text: str, item_id: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id=item_id, type="message", role="assistant",
                                 status="completed", content=[ResponseOutputText(
                                     type="output_text", text=text, annotations=[])])


def _child_models() -> dict[str, tuple[Model, Any, Any]]:
    """Child models by name, each with how to read its first request and its format."""
    responses, chat = RecordingEndpoint("BLUE"), RecordingEndpoint("BLUE")
    scripted = ScriptedModel([[_message("BLUE", "msg_child")]])
    return {
        "scripted": (scripted, lambda: scripted.inputs[0], openai_responses),
        "responses": (OpenAIResponsesModel("gpt-4o", responses.client),
                      responses.first_history, openai_responses),
        "chat": (OpenAIChatCompletionsModel("gpt-4o", chat.client), chat.first_history,
                 openai_chat),
    }


def _fork_inside_the_parents_turn(child_model: str, seed: str) -> tuple[Any, Any, list[Any]]:
    """Run the parent; its fork tool seeds a child (`naive` copy or `cut`); what it sent."""
    parent_model = ScriptedModel([
        [_message("Noted: the colour is BLUE.", "msg_p1")],
        [ResponseReasoningItem(id="rs_p2", type="reasoning", summary=[]),
         ResponseFunctionToolCall(id="fc_p2", type="function_call", call_id="call_fork",
                                  name="fork", arguments='{"prompt": "Which colour?"}',
                                  status="completed")],
        [_message("The fork says BLUE.", "msg_p3")],
    ])
    model, first_request, fmt = _child_models()[child_model]
    child = Agent(name="child", model=model)
    held: list[Any] = []

    @function_tool
    async def fork(ctx: ToolContext[Any], prompt: str) -> str:
        """Hand the task to a fork child."""
        parent_items = parent_model.history()
        held.extend(parent_items)
        assert parent_items[-1]["call_id"] == ctx.tool_call_id  # mid-turn: the call is open
        base = (parent_items if seed == "naive"
                else list(openai_responses.completed_turn_prefix(parent_items)))
        result = await Runner.run(child, [*base, {"role": "user", "content": prompt}])
        return str(result.final_output)

    parent = Agent(name="parent", model=parent_model, tools=[fork])

    async def run() -> None:
        first = await Runner.run(parent, "Remember: the colour is BLUE.")
        second = await Runner.run(parent, [*first.to_input_list(),
                                           {"role": "user", "content": "Ask a fork."}])
        assert second.final_output == "The fork says BLUE."

    asyncio.run(run())
    return first_request(), fmt, held


@pytest.mark.parametrize("child_model", ["scripted", "responses", "chat"])
def test_a_forked_agents_sdk_child_sends_a_balanced_first_request(child_model: str) -> None:
    """Our cut: the child's first request is balanced and holds the parent's completed turn."""
    sent, fmt, parent_items = _fork_inside_the_parents_turn(child_model, "cut")
    history = fmt.check_balance(sent).unwrap()
    assert history.is_balanced
    assert "Noted: the colour is BLUE." in json.dumps(sent)
    assert "call_fork" not in json.dumps(sent) and "rs_p2" not in json.dumps(sent)
    assert openai_responses.check_balance(parent_items).failure().rule == "unanswered-call"


@pytest.mark.parametrize("child_model", ["scripted", "responses", "chat"])
def test_the_naive_copy_reaches_the_provider_unbalanced(child_model: str) -> None:
    """The naive copy: the SDK passes the parent's open fork call on; our checker refuses it."""
    sent, fmt, _ = _fork_inside_the_parents_turn(child_model, "naive")
    violation = fmt.check_balance(sent).failure()
    assert violation.rule == "unanswered-call"
    assert "call_fork" in violation.problem
