"""An agent: one session, and a task that carries out what the core's turn machine decides
(docs/api-shell-runtime.md, "Agents"). The task exists only while there is work (``Wake`` starts
it, ``Stop`` ends it). ``cancel`` tells the machine, then cancels the task; :meth:`Agent._reap`,
its done-callback, balances the log before ``when_idle`` returns.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from types import TracebackType
from typing import Any, Literal, Self, TypeAlias, TypeVar

import msgspec
from msgspec import UNSET

from ..core import (
    DEFAULT_MAX_STEPS,
    ApprovalPolicyData,
    ApprovalPolicyEvent,
    Begin,
    CancelCause,
    CancelDisposed,
    Cancelled,
    CancelRequested,
    CancelUser,
    Command,
    Failed,
    LoopInput,
    LoopState,
    Prompt,
    PromptSection,
    RunResult,
    Stop,
    SubagentDescriptorData,
    ToolDone,
    UserMessage,
    Wake,
    failure_of,
    feed,
    initial_loop_state,
    pending_input,
    queued_input,
    turn_note,
    user_message,
)
from .agent_contract import (
    AgentDisposedError,
    AgentLoopError,
    AgentServices,
    IdleReporter,
    SandboxMode,
    report_idle,
)
from .approval import ApprovalPolicy, ApprovalRefusedError, Approver, request_approval
from .runs import RunWatches
from .session import Session
from .steps import carry_out, runtime_context_of, system_prompt_of
from .store import SessionEventError
from .telemetry import AgentSpans, log_safely
from .tools import PromptSections, ToolScope, error_outcome

__all__ = [
    "Agent", "AgentDisposedError", "AgentLoopError", "AgentServices", "ApprovalRefusedError",
    "Approver", "PreStepHook", "ApprovalPolicy", "SandboxMode", "Prompt", "user_message",
    "failure_of", "IdleReporter", "report_idle",
]

logger = logging.getLogger(__name__)

#: Called before every ``step/start``; ``False`` blocks the step.
PreStepHook: TypeAlias = Callable[["Agent", int, int], "Awaitable[bool | None] | bool | None"]
T = TypeVar("T")


class Agent:
    """A model-driven agent over one session, made by :meth:`turnfork.shell.Host.create_agent`;
    ``async with`` disposes it on exit."""

    def __init__(self, services: AgentServices, session: Session, *, provider: str | None,
                 model: str | None, max_tokens: int | None = None,
                 subagent_depth: int | float | None = None, approval: bool = False,
                 tools: ToolScope, preamble: tuple[SubagentDescriptorData, ...] = (),
                 max_steps: int | None = DEFAULT_MAX_STEPS, titles: bool = True,
                 approval_policy: ApprovalPolicy | None = None,
                 sections: Iterable[PromptSection] = ()) -> None:
        self.host, self.session, self.tools = services, session, tools
        self.provider, self.model, self.max_tokens = provider, model, max_tokens
        self.subagent_depth, self.prompt_sections = subagent_depth, PromptSections(sections)
        self.pre_step_hooks: list[PreStepHook] = []
        #: Whether an approval service is composed (DSH pins a child's policy to never then).
        self.approval_composed = approval
        self.approval_policy: ApprovalPolicy = (
            approval_policy if approval_policy is not None
            else services.approval_default if approval else "never")
        self.approver: Approver | None = None
        self.failure: BaseException | None = None
        self._state: LoopState = initial_loop_state(preamble=preamble, max_steps=max_steps,
                                                    titles=titles, trace=session.trace)
        self._task: asyncio.Task[None] | None = None
        self._dispatched: set[str] = set()  # calls of the running tool group that started
        self._disposed = self._forgotten = False
        #: The running maintenance job, and its end (once the wake it deferred has started).
        self._maintenance: asyncio.Future[Any] | None = None
        self._maintenance_over: asyncio.Future[None] | None = None
        self._runs = RunWatches()
        self._spans: AgentSpans | None = services.telemetry.agent_spans(session.id)

    @property
    def id(self) -> str:
        return self.session.header.id

    @property
    def disposed(self) -> bool:
        return self._disposed

    @property
    def running(self) -> bool:
        return self._task is not None

    @property
    def pending(self) -> tuple[UserMessage, ...]:
        return pending_input(self._state)

    @property
    def cancel_cause(self) -> CancelCause | None:
        return self._state.cancel

    def system_prompt(self) -> str:
        """The next step's system prompt (``ValueError`` for a variable it cannot fill)."""
        return system_prompt_of(self)

    def runtime_context(self) -> tuple[PromptSection, ...]:
        """The next step's runtime-context contributions, variables filled in."""
        return runtime_context_of(self)

    def followup(self, prompt: Prompt) -> UserMessage:
        """Queue input for a turn of its own and wake the loop (needs a running event loop)."""
        return self._queue(prompt, "followup")

    def steer(self, prompt: Prompt) -> UserMessage:
        """Queue input for the running turn's next step boundary (or a new turn when idle)."""
        return self._queue(prompt, "steer")

    def inject(self, prompt: Prompt) -> UserMessage:
        """Queue input for the next step boundary without waking an idle agent."""
        return self._queue(prompt, "inject")

    def _queue(self, prompt: Prompt, kind: Literal["followup", "steer", "inject"]) -> UserMessage:
        if self._disposed:
            raise AgentDisposedError(f"agent {self.id} was disposed")
        message = user_message(prompt, self.host.ids())
        step = feed(self._state, self.session.trace, queued_input(message, kind),
                    time=self.host.clock())
        before, self._state = self._state, step.state  # a listener of the splice sees it queued
        try:
            self.session.extend(step.events)
        except BaseException:
            self._state = before  # a refused write queues nothing
            raise
        self._poll()
        if self._state.awaiting == "wake" and self._task is None and self._maintenance is None:
            self._start()  # during maintenance the wake waits for its end
        return message

    async def run_maintenance(self, job: Callable[[], Awaitable[T]]) -> T:
        """Run ``job`` while holding the agent idle; input queued meanwhile wakes it after."""
        self._poll()
        if self._disposed:
            raise AgentDisposedError(f"agent {self.id} was disposed")
        if self._task is not None or self._maintenance is not None:
            raise RuntimeError(f'agent "{self.id}" already has active work')
        self._maintenance = work = asyncio.ensure_future(job())
        self._maintenance_over = over = asyncio.get_running_loop().create_future()
        try:
            return await work
        finally:
            self._maintenance = None
            if self._state.awaiting == "wake" and self._task is None and not self._disposed:
                self._start()
            over.set_result(None)

    def cancel(self, cause: CancelCause | None = None, *, keep_queued: bool = False) -> None:
        """Cancel the running turn, dropping queued input unless ``keep_queued``."""
        self._poll()
        if self._maintenance is not None:
            self._maintenance.cancel()
        task, given = self._task, CancelRequested(cause=CancelUser() if cause is None else cause,
                                                  keep_queued=keep_queued)
        if task is None:  # kept input stays parked; a wake maintenance deferred still follows
            # Maintenance deferred the wake, so no task will stop: the drop happens now.
            deferred = self._state.awaiting == "wake"
            if not keep_queued and (deferred or self.pending):
                self._feed(given)
                if deferred:
                    self._feed(Cancelled(message_id=self.host.ids()))
            return
        if self._state.cancel is None:
            self._feed(given)
        task.cancel()

    async def run(self, prompt: Prompt, *, raise_on_failure: bool = False) -> RunResult:
        """The result of the turn that takes follow-up ``prompt``, once closed and durable."""
        watch = self._runs.watch(self.followup(prompt).id)
        return await self._runs.result(watch, self, raise_on_failure=raise_on_failure)

    async def when_idle(self, *, raise_on_failure: bool = False) -> RunResult | None:
        """Wait until quiet and durable; the latest turn's result (``None`` before any)."""
        await self._quiesce()
        return await self._runs.latest(self, raise_on_failure=raise_on_failure)

    async def when_quiet(self) -> None:
        """Wait until no turn is running or queued and no maintenance job runs."""
        await self._quiesce()

    async def dispose(self) -> None:
        """Cancel with ``disposed``, wait until quiet, dispose the children (idempotent)."""
        if not self._disposed:
            self._disposed = True
            self.cancel(CancelDisposed())
            if self._task is None:
                self._forget()
        await self._quiesce()
        await self.host.release_children(self)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.dispose()

    def set_approval_policy(self, policy: ApprovalPolicy, *,
                            source: Literal["delegation"] | None = None) -> None:
        """Log an ``approval/policy`` event and apply it."""
        self.session.append(ApprovalPolicyEvent, ApprovalPolicyData(
            policy=policy, source=UNSET if source is None else source))
        self.approval_policy = policy

    async def request_approval(self, tool_name: str, detail: str, *,
                               call_id: str | None = None) -> None:
        """Ask to run an action that needs approval (raises ``ApprovalRefusedError``)."""
        await request_approval(self, tool_name, detail, call_id=call_id)

    def _feed(self, given: LoopInput) -> Command | None:
        """One input into the machine, its events appended before its command returns. The new
        state is kept even if the write fails (the machine closes what the write left open);
        a tool result the store will not hold becomes an error result."""
        before = self._state
        step = feed(before, self.session.trace, given, time=self.host.clock())
        self._state = step.state
        if step.events:
            try:
                self.session.extend(step.events)
            except SessionEventError as refused:
                if not isinstance(given, ToolDone):
                    raise
                unstored = error_outcome(f"the tool result was not stored: {refused.problem}")
                step = feed(before, self.session.trace,
                            msgspec.structs.replace(given, outcome=unstored),
                            time=self.host.clock())
                self._state = step.state
                self.session.extend(step.events)
            for event in step.events:  # what is appended is reported: logs, spans, runs
                if (note := turn_note(event)) is not None:
                    log_safely(logger, logging.WARNING if note[0] else logging.DEBUG,
                               "agent %s: %s", self.id, note[1])
                if self._spans is not None:
                    self._spans.observe(event)
            self._runs.observe(step.events, lambda: self._state.turn, lambda: self.pending)
        return step.command

    def _start(self) -> None:
        if self._spans is not None:
            self._spans.woken()
        self._task = task = asyncio.get_running_loop().create_task(self._drive(),
                                                                   name=f"agent:{self.id}")
        task.add_done_callback(self._reap)

    def _poll(self) -> None:
        """Reap a finished loop task whose done-callback has not run yet."""
        if self._task is not None and self._task.done():
            self._reap(self._task)

    async def _quiesce(self) -> None:
        while True:
            if (over := self._maintenance_over) is not None and not over.done():
                await asyncio.shield(over)
            elif (task := self._task) is not None:
                await asyncio.wait([task])
                self._reap(task)
            else:
                return

    def _reap(self, task: asyncio.Task[None]) -> None:
        """Close what the task left open. Idempotent; runs as its done-callback."""
        if self._task is not task:
            return
        self._task = None
        error = None if task.cancelled() else task.exception()
        command: Command | None = None
        try:
            if self._state.cancel is not None:
                command = self._feed(Cancelled(message_id=self.host.ids(),
                                               dispatched=frozenset(self._dispatched)))
            elif error is not None:
                command = self._feed(Failed(failure=failure_of(error)))
        except Exception as exc:  # the log stays as written; the failure is reported
            error = exc
        if error is not None:
            self.failure = error
            log_safely(logger, logging.WARNING, "agent %s: the loop failed: %s", self.id, error,
                       exc_info=(type(error), error, error.__traceback__))
        elif isinstance(command, Wake) and not self._disposed:
            self._start()  # input queued after the cancel
        if self._task is None:
            self._runs.left_open()
            if self._disposed:
                self._forget()

    def _forget(self) -> None:
        if not self._forgotten:
            self._forgotten = True
            if self._spans is not None:
                self._spans.close()
            self.host.agent_disposed(self)

    async def _drive(self) -> None:
        command = self._feed(Begin())
        while command is not None and not isinstance(command, Stop):
            try:
                command = await carry_out(
                    self, command, self._feed, hooks=self.pre_step_hooks, spans=self._spans,
                    dispatched=self._dispatched, logger=logger)
            except Exception as exc:  # a failing hook, model or write ends the turn
                command = self._feed(Failed(failure=failure_of(exc)))

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, provider={self.provider!r}, model={self.model!r})"
