"""An agent: one session, an inbox of follow-ups, and the loop that turns them into turns.

Lifecycle rules:

* ``followup`` logs the input (an inbox splice, between turns) and wakes the loop. The loop is
  one asyncio task, started when there is input and ended when there is none; so an idle agent
  owns no task and nothing can leak.
* ``cancel(cause)`` cancels that task. Whatever it was awaiting (a hook, the model stream, a
  tool, the next step), the task ends and :meth:`Agent._reap` — a plain callback that a
  cancelled caller cannot skip — closes the log: the delivered part of an interrupted stream
  (``interrupted: true``), then the core's closers with ``aborted(cause)``; input still queued at
  the cancel is dropped with a ``canceled`` splice. The log is balanced again before
  ``when_idle``/``dispose`` return.
* ``dispose`` is idempotent and safe to run concurrently: it cancels with ``disposed``, and the
  agent and its live session leave the host's registries once the loop is quiet.

A turn writes DSH's order (wire-format §6.4): ``turn/start``, the claim splice, pre-step hooks,
``step/start``, ``user/message``s, ``request/header`` (initial / resume / change), the model's
``assistant/chunk``s, ``assistant/message``, ``tool/call``s and ``tool/result``s (safe calls start
together, results commit in model order), ``step/end``, more steps while the model calls tools,
``turn/end``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, TypeAlias

import msgspec
from msgspec import UNSET

from ..core import (
    ApprovalPolicyData,
    ApprovalPolicyEvent,
    AssistantChunkData,
    AssistantChunkEvent,
    AssistantMessage,
    AssistantMessageData,
    AssistantMessageEvent,
    CancelCause,
    CancelDisposed,
    CancelUser,
    EpochHeader,
    FinishChunk,
    FinishMaxTokens,
    FinishReason,
    FinishStop,
    FinishToolCalls,
    InboxSplicedData,
    InboxSplicedEvent,
    LlmCallConfig,
    LlmFailure,
    MessageSource,
    RequestHeaderData,
    RequestHeaderEvent,
    StepData,
    StepEndEvent,
    StepStartEvent,
    ToolCallBlock,
    ToolCallData,
    ToolCallEvent,
    ToolResultBlock,
    ToolResultData,
    ToolResultEvent,
    ToolResultMessage,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnEndReason,
    TurnError,
    TurnMaxTokens,
    TurnStartData,
    TurnStartEvent,
    UserMessage,
    UserMessageEvent,
    close_open_turn,
)
from .models.base import ModelRequest
from .session import Session
from .tools import (
    PromptSections,
    Tool,
    ToolContext,
    ToolOutcome,
    ToolRefusal,
    ToolScope,
    compose_system_prompt,
    execute_call,
)
from .turns import (
    Prompt,
    StreamState,
    assembled_content,
    failure_of,
    header_reason,
    interrupted_content,
    model_source,
    start_groups,
    user_message,
)

if TYPE_CHECKING:
    from .host import Host

__all__ = [
    "Agent",
    "AgentDisposedError",
    "AgentLoopError",
    "ApprovalRefusedError",
    "Approver",
    "PreStepHook",
    "ApprovalPolicy",
]

ApprovalPolicy: TypeAlias = Literal["ask", "never"]
#: Called before every ``step/start`` with (agent, turn, step); returning ``False`` blocks the
#: step (the turn ends ``blocked``). May be sync or async.
PreStepHook: TypeAlias = Callable[["Agent", int, int], "Awaitable[bool | None] | bool | None"]
#: Decides an approval ask: (agent, tool name, detail) -> granted.
Approver: TypeAlias = Callable[["Agent", str, str], Awaitable[bool]]

class AgentDisposedError(RuntimeError):
    """The agent was disposed; it takes no more input."""


class AgentLoopError(RuntimeError):
    """The loop itself failed (not a model or tool failure, which end the turn instead)."""


class ApprovalRefusedError(Exception):
    """An approval ask was refused; a tool raising it gets an ``Error:`` result."""


class Agent:
    """A model-driven agent over one session. Made by :meth:`shell.Host.create_agent`."""

    def __init__(self, host: Host, session: Session, *, provider: str, model: str,
                 max_tokens: int | None = None, subagent_depth: int | None = None,
                 approval: bool = False, tools: ToolScope | None = None) -> None:
        self.host = host
        self.session = session
        self.provider = provider
        self.model = model
        self.max_tokens = max_tokens
        self.subagent_depth = subagent_depth
        self.tools = tools if tools is not None else ToolScope(host.tools)
        #: Agent-level sections; they override the host's of the same name.
        self.prompt_sections = PromptSections()
        self.pre_step_hooks: list[PreStepHook] = []
        #: Whether an approval service is composed (DSH pins a child's policy to never then).
        self.approval_composed = approval
        self.approval_policy: ApprovalPolicy = "ask" if approval else "never"
        self.approver: Approver | None = None
        #: The last failure of the loop itself, if any (see :meth:`when_idle`).
        self.failure: BaseException | None = None
        self._pending: list[UserMessage] = []
        self._task: asyncio.Task[None] | None = None
        self._cancel_cause: CancelCause | None = None
        self._cancel_drop = 0
        self._stream: StreamState | None = None
        self._disposed = False
        self._unregistered = False
        self._requested = False
        self._header_seen = False
        self._last_header: bytes | None = None

    # ------------------------------------------------------------------ state

    @property
    def id(self) -> str:
        """The agent's id: its session's id."""
        return self.session.id

    @property
    def disposed(self) -> bool:
        return self._disposed

    @property
    def running(self) -> bool:
        """Whether the loop task exists (a turn is running or about to)."""
        return self._task is not None

    @property
    def pending(self) -> tuple[UserMessage, ...]:
        """Queued input not yet claimed by a turn."""
        return tuple(self._pending)

    @property
    def cancel_cause(self) -> CancelCause | None:
        """Why the running loop is being cancelled, once it is."""
        return self._cancel_cause

    def system_prompt(self) -> str:
        return compose_system_prompt(self.host.prompt_sections, self.prompt_sections)

    # ------------------------------------------------------------------ control

    def followup(self, prompt: Prompt) -> UserMessage:
        """Queue input (text, content blocks or a UserMessage) and wake the loop.

        Must be called with an event loop running. Returns the queued message.
        """
        if self._disposed:
            raise AgentDisposedError(f"agent {self.id} was disposed")
        message = user_message(prompt, self.host.ids())
        self.session.append(InboxSplicedEvent, InboxSplicedData(
            target="next-turn", start=len(self._pending), inserted=(message,)))
        self._pending.append(message)
        self._poll()
        if self._task is None:
            self._start()
        return message

    def cancel(self, cause: CancelCause | None = None) -> None:
        """Cancel the running turn (and drop queued input); a no-op when idle."""
        self._poll()
        task = self._task
        if task is None:
            return
        if self._cancel_cause is None:
            self._cancel_cause = CancelUser() if cause is None else cause
            self._cancel_drop = len(self._pending)
        task.cancel()

    async def when_idle(self) -> None:
        """Wait until no turn is running or queued and the log is closed.

        Raises:
            AgentLoopError: the loop itself failed (e.g. the disk refused a write); raised once.
        """
        await self._quiesce()
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise AgentLoopError(f"agent {self.id}: {failure}") from failure

    async def dispose(self) -> None:
        """Cancel with ``disposed``, wait for quiescence, leave the host's registries.

        Idempotent and safe to call concurrently; the store keeps persisted files.
        """
        if not self._disposed:
            self._disposed = True
            self.cancel(CancelDisposed())
            if self._task is None:
                self._unregister()
        await self._quiesce()

    # ------------------------------------------------------------------ approval

    def set_approval_policy(self, policy: ApprovalPolicy, *,
                            source: Literal["delegation"] | None = None) -> None:
        """Log an ``approval/policy`` event and apply it."""
        data = (ApprovalPolicyData(policy=policy) if source is None
                else ApprovalPolicyData(policy=policy, source=source))
        self.session.append(ApprovalPolicyEvent, data)
        self.approval_policy = policy

    async def request_approval(self, tool_name: str, detail: str) -> None:
        """Ask to run an action that needs approval.

        Raises:
            ApprovalRefusedError: policy ``never``, no approver, or the approver said no.
        """
        if self.approval_policy == "never":
            raise ApprovalRefusedError(
                f"{tool_name} needs approval ({detail}), but approval prompts are disabled in "
                "this session: the action was rejected")
        approver = self.approver or self.host.approver
        if approver is None:
            raise ApprovalRefusedError(
                f"{tool_name} needs approval ({detail}), but no approver is available")
        if not await approver(self, tool_name, detail):
            raise ApprovalRefusedError(f"{tool_name} was not approved ({detail})")

    # ------------------------------------------------------------------ task lifecycle

    def _start(self) -> None:
        task = asyncio.get_running_loop().create_task(self._run(), name=f"agent:{self.id}")
        self._task = task
        task.add_done_callback(self._reap)

    def _poll(self) -> None:
        """Reap a finished loop task whose done-callback has not run yet."""
        if self._task is not None and self._task.done():
            self._reap(self._task)

    async def _quiesce(self) -> None:
        while (task := self._task) is not None:
            await asyncio.wait([task])
            self._reap(task)

    def _reap(self, task: asyncio.Task[None]) -> None:
        """Close what the loop task left open. Idempotent; runs as its done-callback."""
        if self._task is not task:
            return
        self._task = None
        cause, drop = self._cancel_cause, self._cancel_drop
        self._cancel_cause, self._cancel_drop = None, 0
        cancelled = task.cancelled()
        error = None if cancelled else task.exception()
        try:
            if cancelled:
                self._close_turn(TurnAborted(reason=cause or CancelDisposed()))
                if drop:
                    del self._pending[:drop]
                    self.session.append(InboxSplicedEvent, InboxSplicedData(
                        target="next-turn", start=0, removed_count=drop, inserted=(),
                        outcome="canceled"))
            elif error is not None:
                self._close_turn(TurnError(error=failure_of(error)))
        except Exception as exc:  # the log stays as written; the failure is reported
            error = exc
        if error is not None:
            self.failure = error
        elif self._pending and not self._disposed:
            self._start()  # input queued after the cancel
        if self._disposed and self._task is None:
            self._unregister()

    def _unregister(self) -> None:
        if not self._unregistered:
            self._unregistered = True
            self.host.agents._remove(self)
            self.host.sessions.release(self.id)

    def _checkpoint(self) -> None:
        """Stop at once when cancelled, even if a tool swallowed the CancelledError."""
        if self._cancel_cause is not None:
            raise asyncio.CancelledError

    def _close_turn(self, reason: TurnEndReason) -> None:
        """Close an open turn: the interrupted part of a stream (aborts only), then closers."""
        stream, self._stream = self._stream, None
        session = self.session
        trace = session.trace
        if trace.open_turn is None:
            return
        if (isinstance(reason, TurnAborted) and stream is not None
                and trace.open_step == stream.step):
            content = interrupted_content(stream)
            if content:
                message = AssistantMessage(content=content, id=self.host.ids(),
                                           source=model_source(self.provider, self.model))
                session.append(AssistantMessageEvent, AssistantMessageData(
                    turn=stream.turn, step=stream.step, message=message, interrupted=True),
                    source_event_seqs=tuple(stream.chunk_seqs), surface_op="append")
        session.extend(close_open_turn(session.trace, session.events, reason,
                                       time=self.host.clock()))

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        while self._pending:
            await self._run_turn()

    async def _run_turn(self) -> None:
        session = self.session
        turn = session.trace.next_turn
        session.append(TurnStartEvent, TurnStartData(turn=turn))
        claimed = tuple(self._pending)
        self._pending.clear()
        session.append(InboxSplicedEvent, InboxSplicedData(
            target="next-turn", start=0, removed_count=len(claimed), inserted=()))
        try:
            reason = await self._run_steps(turn, claimed)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failing model, hook or bug ends the turn, not the agent
            self._close_turn(TurnError(error=failure_of(exc)))
            return
        session.append(TurnEndEvent, TurnEndData(turn=turn, reason=reason))

    async def _run_steps(self, turn: int, claimed: tuple[UserMessage, ...]) -> TurnEndReason:
        session = self.session
        max_tokens = False
        step = 0
        while True:
            step += 1
            if not await self._pre_step(turn, step):
                return TurnBlocked()
            session.append(StepStartEvent, StepData(turn=turn, step=step))
            if step == 1:
                for user_input in claimed:
                    session.append(UserMessageEvent, user_input, surface_op="append")
            message, finish = await self._call_model(turn, step)
            if message is None:
                session.append(StepEndEvent, StepData(turn=turn, step=step))
                failure = getattr(finish, "failure", None) or LlmFailure(
                    message="the model stream ended without a finish chunk", code="UNKNOWN")
                return TurnError(error=failure)
            max_tokens = max_tokens or isinstance(finish, FinishMaxTokens)
            calls = [block for block in message.content if isinstance(block, ToolCallBlock)]
            conclude = await self._run_tools(turn, step, calls) if calls else True
            session.append(StepEndEvent, StepData(turn=turn, step=step))
            if conclude:
                return TurnMaxTokens() if max_tokens else TurnCompleted()

    async def _pre_step(self, turn: int, step: int) -> bool:
        for hook in list(self.pre_step_hooks):
            verdict = hook(self, turn, step)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            self._checkpoint()
            if verdict is False:
                return False
        return True

    def _epoch_header(self) -> EpochHeader:
        config = (LlmCallConfig(provider=self.provider, model=self.model)
                  if self.max_tokens is None else
                  LlmCallConfig(provider=self.provider, model=self.model,
                                max_tokens=self.max_tokens))
        system = self.system_prompt()
        tools = self.tools.schemas()
        return EpochHeader(config=config, system=system or UNSET, tools=tools or UNSET)

    def _log_has_header(self) -> bool:
        if not self._header_seen:  # one forward scan per agent: a log's first model call
            # writes its first header, so this stops early even under a long fork seed
            self._header_seen = any(isinstance(event, RequestHeaderEvent)
                                    for event in self.session.events)
        return self._header_seen

    async def _call_model(self, turn: int, step: int,
                          ) -> tuple[AssistantMessage | None, FinishReason | None]:
        session = self.session
        header = self._epoch_header()
        encoded = msgspec.json.encode(header)
        reason = header_reason(first_of_instance=not self._requested,
                               log_has_header=self._log_has_header(),
                               changed=encoded != self._last_header)
        if reason is not None:
            session.append(RequestHeaderEvent, RequestHeaderData(header=header, reason=reason))
            self._header_seen = True
        self._requested, self._last_header = True, encoded
        request = ModelRequest(
            config=header.config,
            system=header.system if isinstance(header.system, str) else None,
            tools=header.tools if isinstance(header.tools, tuple) else (),
            messages=session.history())
        state = self._stream = StreamState(turn=turn, step=step)
        stream = self.host.models.get(self.provider).stream(request)
        try:
            async for chunk in stream:
                event = session.append(AssistantChunkEvent, AssistantChunkData(
                    turn=turn, step=step, chunk=chunk))
                state.add(event.seq, chunk)
                self._checkpoint()
                if isinstance(chunk, FinishChunk):
                    break  # nothing may follow a finish
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        finish = state.finish_reason
        if not isinstance(finish, FinishStop | FinishToolCalls | FinishMaxTokens):
            self._stream = None
            return None, finish
        content, replay = assembled_content(
            state, drop_tool_calls=isinstance(finish, FinishMaxTokens))
        message = AssistantMessage(content=content, id=self.host.ids(),
                                   source=model_source(self.provider, self.model, replay))
        session.append(AssistantMessageEvent, AssistantMessageData(
            turn=turn, step=step, message=message, usage=state.usage or UNSET),
            source_event_seqs=tuple(state.chunk_seqs), surface_op="append")
        self._stream = None
        return message, finish

    async def _run_tools(self, turn: int, step: int, calls: list[ToolCallBlock]) -> bool:
        """Run a step's calls; returns whether a tool concluded the turn."""
        session = self.session
        resolved = [(call, self.tools.resolve(call.name)) for call in calls]
        conclude = False
        for group in start_groups(resolved, lambda pair: isinstance(pair[1], Tool)
                                  and pair[1].concurrency_safe):
            seqs = [session.append(ToolCallEvent, ToolCallData(
                turn=turn, step=step, call_id=call.id, name=call.name,
                arguments=call.arguments)).seq for call, _ in group]
            if len(group) == 1:  # runs alone: no task needed
                outcome = await self._execute(*group[0], turn, step)
                self._checkpoint()
                self._append_result(turn, step, group[0][0], seqs[0], outcome)
                conclude = conclude or outcome.conclude_turn
                continue
            async with asyncio.TaskGroup() as tasks:
                started = [tasks.create_task(self._execute(call, tool, turn, step))
                           for call, tool in group]
                for (call, _), seq, running in zip(group, seqs, started, strict=True):
                    outcome = await running  # results commit in model order
                    self._checkpoint()
                    self._append_result(turn, step, call, seq, outcome)
                    conclude = conclude or outcome.conclude_turn
        return conclude

    async def _execute(self, call: ToolCallBlock, tool: Tool | ToolRefusal, turn: int,
                       step: int) -> ToolOutcome:
        context = ToolContext(agent=self, call_id=call.id, tool_name=call.name, turn=turn,
                              step=step, arguments=call.arguments)
        denied = self.tools.guard(context)
        if denied is not None:
            return denied
        return await execute_call(tool, call.arguments, context)

    def _append_result(self, turn: int, step: int, call: ToolCallBlock, call_seq: int,
                       outcome: ToolOutcome) -> None:
        message = ToolResultMessage(
            source=MessageSource(kind="tool", call_id=call.id), id=self.host.ids(),
            content=(ToolResultBlock(tool_call_id=call.id, content=outcome.blocks,
                                     is_error=outcome.is_error),))
        data = (ToolResultData(turn=turn, step=step, message=message) if outcome.error is None
                else ToolResultData(turn=turn, step=step, message=message, error=outcome.error))
        self.session.append(ToolResultEvent, data, source_event_seqs=(call_seq,),
                            surface_op="append")

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, provider={self.provider!r}, model={self.model!r})"
