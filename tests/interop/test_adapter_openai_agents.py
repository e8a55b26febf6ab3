"""`turnfork.adapters.openai_agents` with the real SDK: a parent agent (on a fake `Model`) forks
inside a tool from `ctx.turn_input` in two lines, the child runs to completion (a fake `Model`,
and the SDK's own Responses model on a recording endpoint), the parent continues; run items map
back one to one, a pending approval never ends a seed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _capture import EXTRA, ScriptedEndpoint, responses_body

agents = pytest.importorskip("agents", reason=EXTRA)

from agents import Agent, OpenAIResponsesModel, Runner, function_tool  # noqa: E402
from agents.items import ToolApprovalItem, ToolCallItem  # noqa: E402
from agents.tool_context import ToolContext  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseReasoningItem,
)
from test_openai_agents_fork import ScriptedModel, _message  # noqa: E402

from turnfork.adapters.openai_agents import (  # noqa: E402
    check_balance,
    completed_turn_cut,
    completed_turn_seed,
)
from turnfork.core.formats import openai_responses  # noqa: E402

agents.set_tracing_disabled(True)


def _parent_model() -> ScriptedModel:
    return ScriptedModel([
        [_message("Noted: the colour is BLUE.", "msg_p1")],
        [ResponseReasoningItem(id="rs_p2", type="reasoning", summary=[]),
         ResponseFunctionToolCall(id="fc_p2", type="function_call", call_id="call_fork",
                                  name="fork", arguments='{"prompt": "Which colour?"}',
                                  status="completed")],
        [_message("The fork says BLUE.", "msg_p3")],
    ])


@pytest.mark.parametrize("child_kind", ["fake-model", "responses-model"])
def test_a_fork_inside_a_tool_takes_two_lines(child_kind: str) -> None:
    """ctx.turn_input → seed (the first turn, the caller's objects); the child answers from it;
    the parent's turn completes with that answer."""
    endpoint = ScriptedEndpoint([responses_body([
        {"type": "message", "id": "msg_c", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "BLUE", "annotations": []}]}])])
    fake = ScriptedModel([[_message("BLUE", "msg_child")]])
    model = fake if child_kind == "fake-model" else OpenAIResponsesModel(
        "gpt-4o", endpoint.async_openai())
    child = Agent(name="child", model=model)
    seen: dict[str, Any] = {}

    @function_tool
    async def fork(ctx: ToolContext[Any], prompt: str) -> str:
        """Hand the task to a fork child."""
        seen["turn_input"] = list(ctx.turn_input)
        seed = completed_turn_seed(ctx.turn_input)
        result = await Runner.run(child, [*seed, {"role": "user", "content": prompt}])
        seen["seed"] = seed
        return str(result.final_output)

    parent = Agent(name="parent", model=_parent_model(), tools=[fork])

    async def run() -> Any:
        first = await Runner.run(parent, "Remember: the colour is BLUE.")
        return await Runner.run(parent, [*first.to_input_list(),
                                         {"role": "user", "content": "Ask a fork."}])

    second = asyncio.run(run())
    assert second.final_output == "The fork says BLUE."
    turn_input, seed = seen["turn_input"], seen["seed"]
    assert len(seed) == 2 and all(a is b for a, b in zip(seed, turn_input, strict=False))
    sent = fake.inputs[0] if child_kind == "fake-model" else endpoint.bodies[0]["input"]
    assert openai_responses.check_balance(sent).unwrap().is_balanced
    assert "Noted: the colour is BLUE." in json.dumps(sent)
    assert "call_fork" not in json.dumps(sent) and "Ask a fork." not in json.dumps(sent)


def test_run_items_map_back_one_to_one() -> None:
    """A run's new items (reasoning, the open call): the seed and the violation index are the
    caller's run items; a ToolApprovalItem is no input and never ends a seed."""
    parent = _parent_model()
    parent.outputs.pop(0)  # straight to the fork call

    @function_tool
    async def fork(prompt: str) -> str:
        """Never run: the check happens on the items."""
        return "x"

    agent = Agent(name="parent", model=parent, tools=[fork])
    ran = asyncio.run(Runner.run(agent, "Ask a fork."))
    items: list[Any] = [{"role": "user", "content": "Ask a fork."}, *ran.new_items]
    kinds = [type(i).__name__ for i in items]
    assert kinds[:3] == ["dict", "ReasoningItem", "ToolCallItem"], kinds
    assert check_balance(items).unwrap() == items  # the run answered its call
    open_turn = items[:3]
    violation = check_balance(open_turn).failure()
    assert (violation.index, violation.rule) == (2, "unanswered-call")
    assert completed_turn_cut(items) == len(items) and completed_turn_cut(open_turn) == 0
    call = next(i for i in items if isinstance(i, ToolCallItem))
    approval = ToolApprovalItem(agent=agent, raw_item=call.raw_item)
    pending = [*items, {"role": "user", "content": "Deploy?"}, approval]
    assert completed_turn_seed(pending) == items
