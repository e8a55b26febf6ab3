"""Carrying out the turn machine's commands for an agent, each feeding what happened back
through the agent's ``feed`` (the rules: docs/api-shell-runtime.md, "Agents")."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import random
import reprlib
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from returns.result import Failure, Result

from ..core import (
    ABORTED_BEFORE_DISPATCH_TEXT,
    Backoff,
    BackoffDone,
    CallModel,
    Chunk,
    Command,
    EndStream,
    LoopInput,
    PrepareStep,
    PromptSection,
    RunTools,
    StepBlocked,
    StepPrepared,
    Stop,
    StreamChunk,
    StreamEnded,
    ToolCallBlock,
    ToolDone,
    ToolOutcome,
    merge_sections,
    missing_route,
    policy_sections,
    retry_note,
    step_context,
    step_header,
    step_system_prompt,
)
from .agent_contract import AgentServices
from .approval import ApprovalPolicy
from .clock import sleep
from .models.base import ModelRequest
from .telemetry import AgentSpans, log_safely
from .tools import (
    CallingAgent,
    PromptSections,
    ToolContext,
    ToolScope,
    runtime_context,
)

__all__ = ["StepAgent", "system_prompt_of", "runtime_context_of", "prepared_step", "carry_out"]

T = TypeVar("T")
A = TypeVar("A", bound="StepAgent")


class StepAgent(CallingAgent, Protocol):
    """What a step reads of its agent (an :class:`~turnfork.shell.Agent` is one)."""

    host: AgentServices
    provider: str | None
    model: str | None
    max_tokens: int | None
    tools: ToolScope
    prompt_sections: PromptSections
    approval_composed: bool
    approval_policy: ApprovalPolicy

    def system_prompt(self) -> str: ...

    def runtime_context(self) -> tuple[PromptSection, ...]: ...


def _unwrapped(result: Result[T, str]) -> T:
    if isinstance(result, Failure):
        raise ValueError(result.failure())
    return result.unwrap()


def _variables(agent: StepAgent) -> dict[str, str | None]:
    cwd = agent.session.header.cwd
    return {"provider": agent.provider, "model": agent.model,
            "cwd": cwd if isinstance(cwd, str) else None}


def system_prompt_of(agent: StepAgent) -> str:
    """The agent's system prompt for its next step (``ValueError``: a variable unfilled)."""
    scope = agent.tools
    hidden = frozenset(name for name in scope.registry.names() if not scope.offers(name))
    return _unwrapped(step_system_prompt(
        merge_sections(agent.host.prompt_sections.sections(), agent.prompt_sections.sections()),
        hidden_tools=hidden, variables=_variables(agent)))


def runtime_context_of(agent: StepAgent) -> tuple[PromptSection, ...]:
    """The agent's runtime-context contributions for its next step, variables filled in."""
    mode, override = agent.host.sandbox_mode, agent.session.trace.sandbox_mode
    if mode is not None and override is not None:
        mode = override.mode
    cwd = agent.session.header.cwd
    workspace = "" if mode is None else (
        cwd if isinstance(cwd, str) else agent.host.workspace_root or os.getcwd())
    own = policy_sections(sandbox_mode=mode, workspace=workspace, approval_policy=(
        agent.approval_policy if agent.approval_composed else None))
    layered = runtime_context(agent.host.prompt_sections, agent.prompt_sections)
    return _unwrapped(step_context(own, layered, _variables(agent)))


def prepared_step(agent: StepAgent) -> StepPrepared:
    """What the agent's next step is made with."""
    if not agent.provider or not agent.model:
        raise RuntimeError(missing_route(agent.id))
    tools = agent.tools.tools()
    header = step_header(provider=agent.provider, model=agent.model,
                         max_tokens=agent.max_tokens, system=agent.system_prompt(),
                         tools=[tool.schema for tool in tools])
    return StepPrepared(
        header=header, parallel_tools=frozenset(tool.name for tool in tools
                                                if tool.concurrency_safe),
        context=agent.runtime_context(), context_id=agent.host.ids(),
        retry=agent.host.retry_policy(agent.provider))


async def _prepare_step(agent: A, hooks: Sequence[Callable[[A, int, int], object]],
                        command: PrepareStep, feed: Callable[[LoopInput], Command | None],
                        ) -> Command | None:
    for hook in list(hooks):  # ``False`` blocks the step
        verdict = hook(agent, command.turn, command.step)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if verdict is False:
            return feed(StepBlocked())
    return feed(prepared_step(agent))


async def _call_model(agent: StepAgent, command: CallModel,
                      feed: Callable[[LoopInput], Command | None],
                      spans: AgentSpans | None) -> Command | None:
    """Stream the call into the machine until it ends the stream; the stream is closed and the
    span ended whatever happens."""
    header = command.header
    request = ModelRequest(
        config=header.config, system=header.system if isinstance(header.system, str) else None,
        tools=header.tools if isinstance(header.tools, tuple) else (),
        messages=agent.session.history())
    span = None if spans is None else spans.model_call(header.config)
    error: BaseException | None = None
    try:
        stream = agent.host.model(header.config.provider).stream(request)
        try:
            async for chunk in stream:
                if not isinstance(chunk, StreamChunk):  # a model of the user's own, say
                    raise TypeError(
                        f"the model for provider {header.config.provider!r} streamed a "
                        f"{type(chunk).__name__} ({reprlib.repr(chunk)}), not a stream chunk "
                        "(turnfork.core.StreamChunk)")
                if span is not None:
                    span.chunk(chunk)
                answer = feed(Chunk(chunk=chunk))
                if isinstance(answer, Stop):
                    return answer
                if isinstance(answer, EndStream):
                    break
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
    except Exception as exc:
        error = exc
        raise
    finally:
        if span is not None:
            span.end(error)
    return feed(StreamEnded(message_id=agent.host.ids(), draw=random.random()))


async def _run_tools(agent: StepAgent, command: RunTools,
                     feed: Callable[[LoopInput], Command | None],
                     dispatched: set[str]) -> Command | None:
    """One call alone, several at once; each outcome fed in the calls' order."""
    calls, answer = command.calls, None
    dispatched.clear()

    async def execute(call: ToolCallBlock) -> ToolOutcome:
        if agent.cancel_cause is not None:
            return ToolOutcome(ABORTED_BEFORE_DISPATCH_TEXT, is_error=True)
        dispatched.add(call.id)
        return await agent.tools.call(ToolContext(
            agent=agent, call_id=call.id, tool_name=call.name, turn=command.turn,
            step=command.step, arguments=call.arguments))

    def done(call: ToolCallBlock, outcome: ToolOutcome) -> Command | None:
        return feed(ToolDone(call_id=call.id, outcome=outcome, message_id=agent.host.ids()))

    if len(calls) == 1:  # runs alone: no task needed
        return done(calls[0], await execute(calls[0]))
    async with asyncio.TaskGroup() as group:
        running = [group.create_task(execute(call)) for call in calls]
        for call, task in zip(calls, running, strict=True):
            answer = done(call, await task)
    return answer


async def carry_out(agent: A, command: Command, feed: Callable[[LoopInput], Command | None], *,
                    hooks: Sequence[Callable[[A, int, int], object]], spans: AgentSpans | None,
                    dispatched: set[str], logger: logging.Logger) -> Command | None:
    """Carry out one of the machine's commands; the machine's answer. A step's calls are on
    disk before their effects, a scheduled retry before its wait."""
    if isinstance(command, PrepareStep):
        return await _prepare_step(agent, hooks, command, feed)
    if isinstance(command, CallModel):
        return await _call_model(agent, command, feed, spans)
    if isinstance(command, RunTools):
        await agent.session.wait_durable()
        with contextlib.nullcontext() if spans is None else spans.tools():
            return await _run_tools(agent, command, feed, dispatched)
    if isinstance(command, Backoff):
        log_safely(logger, logging.WARNING, "agent %s: %s", agent.id,
                   retry_note(command.retry, command.delay_ms))
        await agent.session.wait_durable()
        await sleep(agent.host.clock, command.delay_ms)
        return feed(BackoffDone())
    raise AssertionError(f"unexpected command {command!r}")
