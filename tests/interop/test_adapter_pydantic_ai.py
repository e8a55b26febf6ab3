"""`turnfork.adapters.pydantic_ai` with the real package: a parent Agent (on FunctionModel) forks
inside a tool with one line, the child runs to completion on the seed, the parent continues; the
checks speak pydantic-ai's terms; a structured-output run counts as a completed turn."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest
from _capture import EXTRA

pydantic_ai = pytest.importorskip("pydantic_ai", reason=EXTRA)

from pydantic import BaseModel  # noqa: E402
from pydantic_ai import Agent, RunContext  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from turnfork.adapters.pydantic_ai import (  # noqa: E402
    check_balance,
    completed_turn_cut,
    completed_turn_seed,
)


def _parent_model() -> FunctionModel:
    """Run 1: an answer. Run 2: the fork call, then an answer quoting the fork's result."""
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        returned = [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(f"The fork says {returned[0].content}.")])
        if sum(isinstance(m, ModelRequest) for m in messages) == 1:
            return ModelResponse(parts=[TextPart("Noted: the colour is BLUE.")])
        return ModelResponse(parts=[ToolCallPart("fork", {"prompt": "Which colour?"},
                                                 tool_call_id="call_fork")])
    return FunctionModel(respond)


def test_a_fork_inside_a_tool_takes_one_line() -> None:
    """ctx.messages → seed (the parent's first run, whole messages, the caller's objects); the
    child sees it plus its prompt, answers, and the parent's run completes with that answer."""
    seen: dict[str, Any] = {}

    async def child_respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["child_saw"] = messages
        return ModelResponse(parts=[TextPart("BLUE")])

    child = Agent(FunctionModel(child_respond))
    parent = Agent(_parent_model())

    @parent.tool
    async def fork(ctx: RunContext[None], prompt: str) -> str:
        """Hand the task to a fork child."""
        seen["parent_messages"] = list(ctx.messages)
        result = await child.run(prompt, message_history=completed_turn_seed(ctx.messages))
        return result.output

    async def run() -> str:
        first = await parent.run("Remember: the colour is BLUE.")
        second = await parent.run("Ask a fork.", message_history=first.all_messages())
        seen["first"] = first.all_messages()
        return second.output

    assert asyncio.run(run()) == "The fork says BLUE."
    at_fork = seen["parent_messages"]
    violation = check_balance(at_fork).failure()
    assert (violation.index, violation.rule) == (len(at_fork) - 1, "unanswered-call")
    assert "ModelResponse 3: tool calls without their ToolReturnPart" in violation.problem
    assert "call_fork" in violation.problem
    seed = completed_turn_seed(at_fork)
    assert len(seed) == 2 and all(a is b for a, b in zip(seed, at_fork, strict=False))
    assert [type(m) for m in seen["child_saw"]] == [ModelRequest, ModelResponse, ModelRequest]
    assert "call_fork" not in repr(seen["child_saw"])
    assert check_balance(seen["first"]).unwrap() == seen["first"]


class Colour(BaseModel):
    name: str


def test_a_structured_output_run_is_a_completed_turn() -> None:
    """A run that ends on its output tool's return is complete: the next run's fork seed holds
    it, where the projection alone (a request of tool results at its end) would hold nothing."""
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tool = info.output_tools[0].name
        return ModelResponse(parts=[ToolCallPart(tool, {"name": "BLUE"}, tool_call_id="out1")])

    agent = Agent(FunctionModel(respond), output_type=Colour)
    first = asyncio.run(agent.run("Which colour?")).all_messages()
    assert isinstance(first[-1], ModelRequest)  # the output tool's return closes the run
    assert completed_turn_cut(first) == 0  # nothing after it yet: where it ends is ambiguous
    forking = [*first, ModelRequest(parts=[UserPromptPart("Fork now.")]),
               ModelResponse(parts=[ToolCallPart("fork", {}, tool_call_id="call_fork")])]
    assert completed_turn_cut(forking) == len(first)
    assert completed_turn_seed(forking) == first


def test_orphans_and_duplicates_are_named_in_pydantic_ais_terms() -> None:
    """A tool result for no call, a second result, two calls with one id; pydantic-ai's own
    repair drops or invents what the check names."""
    prompt = ModelRequest(parts=[UserPromptPart("q")])
    call = ModelResponse(parts=[ToolCallPart("f", {}, tool_call_id="c1")])
    answer = ModelResponse(parts=[TextPart("a")])
    ret = ToolReturnPart("f", "ok", tool_call_id="c1")
    stray = ToolReturnPart("f", "ok", tool_call_id="c9")
    orphan = check_balance([prompt, call, ModelRequest(parts=[ret, stray]), answer]).failure()
    assert (orphan.index, orphan.rule) == (2, "orphan-result")
    assert orphan.problem == ("ModelRequest 2: a tool result for c9 answers no tool call of the "
                              "ModelResponse before it")
    twice = check_balance([prompt, call, ModelRequest(parts=[ret, ret]), answer]).failure()
    assert twice.problem == "ModelRequest 2: a second tool result for c1"
    same = ModelResponse(parts=[ToolCallPart("f", {}, tool_call_id="c1"),
                                ToolCallPart("g", {}, tool_call_id="c1")])
    dup = check_balance([prompt, same, ModelRequest(parts=[ret])]).failure()
    assert dup.problem == "ModelResponse 1: tool_call_id c1 is used by two tool calls"
    repaired = repair_messages([prompt, call, ModelRequest(parts=[ret, stray]), answer])
    assert check_balance(repaired).unwrap()


def test_importing_the_adapters_package_loads_no_runtime() -> None:
    """`import turnfork.adapters` imports neither pydantic_ai nor agents."""
    code = ("import sys, turnfork.adapters\n"
            "assert 'pydantic_ai' not in sys.modules and 'agents' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
