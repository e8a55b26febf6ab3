"""An agent: one session, and a task that carries out what the core's turn machine decides.

Rules:

* Every turn decision is :func:`turnfork.core.loop.feed`'s: the agent feeds it what happened
  (input, a chunk, a tool outcome, a hook verdict, a cancellation), appends the events it
  returns and carries out its command. The agent keeps no turn, step or header state.
* The task exists only while there is work: ``Wake`` starts it, ``Stop`` ends it, so an idle
  agent owns no task and nothing can leak.
* ``cancel(cause)`` tells the machine, then cancels the task. Whatever it was awaiting (a hook,
  the model stream, a tool), the task ends, and :meth:`Agent._reap` — a done-callback that a
  cancelled caller cannot skip — feeds ``Cancelled``: the log is balanced again before
  ``when_idle``/``dispose`` return. A tool that swallows the cancellation changes nothing: the
  machine answers it with ``Stop``.
* A failure of the loop itself (a hook raising, a model call failing, a refused write) ends the
  turn ``error``; a write that still fails is kept in :attr:`Agent.failure` and raised once by
  :meth:`when_idle`. The turn a failed write left open is closed before the next one starts.
* ``dispose`` is idempotent and safe to run concurrently: it cancels with ``disposed`` and
  tells the agent's owner once the loop is quiet.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

import msgspec
from msgspec import UNSET

from ..core import (
    ApprovalPolicyData,
    ApprovalPolicyEvent,
    CancelCause,
    CancelDisposed,
    CancelUser,
    ContentBlock,
    EpochHeader,
    LlmCallConfig,
    LlmFailure,
    MessageSource,
    PromptSection,
    SubagentDescriptorData,
    TextBlock,
    ToolCallBlock,
    UserMessage,
    approval_policy_section,
    sandbox_policy_section,
)
from ..core.loop import (
    DEFAULT_MAX_STEPS,
    Begin,
    CallModel,
    Cancelled,
    CancelRequested,
    Chunk,
    Command,
    EndStream,
    Failed,
    Followup,
    LoopInput,
    LoopState,
    PrepareStep,
    RunTools,
    Steer,
    StepBlocked,
    StepPrepared,
    Stop,
    StreamEnded,
    ToolDone,
    ToolOutcome,
    Wake,
    feed,
    initial_loop_state,
)
from .approval import ApprovalPolicy, ApprovalRefusedError, Approver, request_approval
from .clock import Clock, IdFactory
from .models.base import Model, ModelRequest
from .session import Session
from .store import SessionEventError
from .tools import (
    PromptSections,
    Tool,
    ToolContext,
    ToolRefusal,
    ToolScope,
    compose_system_prompt,
    error_outcome,
    execute_call,
    runtime_context,
)

__all__ = [
    "Agent",
    "AgentDisposedError",
    "AgentLoopError",
    "AgentServices",
    "ApprovalRefusedError",
    "Approver",
    "PreStepHook",
    "ApprovalPolicy",
    "SandboxMode",
    "Prompt",
    "user_message",
    "failure_of",
    "IdleReporter",
    "report_idle",
]

SandboxMode: TypeAlias = Literal["read-only", "workspace-write", "danger-full-access"]
#: Called before every ``step/start`` with (agent, turn, step); returning ``False`` blocks the
#: step (the turn ends ``blocked``). May be sync or async.
PreStepHook: TypeAlias = Callable[["Agent", int, int], "Awaitable[bool | None] | bool | None"]
#: A follow-up: text, content blocks or a whole user message.
Prompt: TypeAlias = str | Sequence[ContentBlock] | UserMessage


T = TypeVar("T")


class AgentServices(Protocol):
    """What an agent needs of its owner (a :class:`~turnfork.shell.Host` is one)."""

    clock: Clock
    ids: IdFactory
    #: The owner's prompt sections; the agent's own override them by name.
    prompt_sections: PromptSections
    #: The owner-wide approver, for agents whose policy is ``ask`` and that have none.
    approver: Approver | None
    #: The deployment's sandbox mode (its file-policy contribution); ``None``: no sandbox.
    sandbox_mode: SandboxMode | None
    #: The approval policy of an agent with an approval service, until its log sets another.
    approval_default: ApprovalPolicy

    def model(self, provider: str) -> Model:
        """The model serving ``provider`` (raises ``UnknownProviderError``)."""
        ...

    def agent_disposed(self, agent: Agent) -> None:
        """The agent is disposed and its loop quiet: forget it."""
        ...

    async def release_children(self, agent: Agent) -> None:
        """Dispose every child ``agent`` started, however it was started."""
        ...


class AgentDisposedError(RuntimeError):
    """The agent was disposed; it takes no more input."""


class AgentLoopError(RuntimeError):
    """The loop itself failed (not a model or tool failure, which end the turn instead)."""


def user_message(prompt: Prompt, message_id: str) -> UserMessage:
    """A follow-up as the user message it is queued and logged as."""
    if isinstance(prompt, UserMessage):
        return prompt
    content = (TextBlock(text=prompt),) if isinstance(prompt, str) else tuple(prompt)
    return UserMessage(content=content, source=MessageSource(kind="user"), id=message_id)


def failure_of(error: BaseException) -> LlmFailure:
    """A non-model failure as DSH flattens it: the error chain text, code ``UNKNOWN``."""
    parts: list[str] = []
    current: BaseException | None = error
    while current is not None and len(parts) < 8:
        text = str(current) or type(current).__name__
        if not parts or parts[-1] != text:  # a re-raise that repeats its cause says it once
            parts.append(text)
        current = current.__cause__ or (None if current.__suppress_context__
                                        else current.__context__)
    return LlmFailure(message=": ".join(parts), code="UNKNOWN")


class IdleReporter(Protocol):
    """What :func:`report_idle` needs: an agent or a stand-in running one elsewhere."""

    session: Session
    #: A failure of the loop itself, kept until it is raised once.
    failure: BaseException | None

    @property
    def id(self) -> str: ...


async def report_idle(owner: IdleReporter) -> None:
    """The end of ``when_idle`` once the loop is quiet: wait until the closed log is durable (a
    turn reported done has reached the disk, not only the file; a refused commit becomes the
    failure), then raise the kept failure once as :class:`AgentLoopError`."""
    if owner.failure is None:
        try:
            await owner.session.wait_durable()
        except OSError as exc:
            owner.failure = exc
    if owner.failure is not None:
        failure, owner.failure = owner.failure, None
        raise AgentLoopError(f"agent {owner.id}: {failure}") from failure


class Agent:
    """A model-driven agent over one session. Made by :meth:`turnfork.shell.Host.create_agent`."""

    def __init__(self, services: AgentServices, session: Session, *, provider: str | None,
                 model: str | None, max_tokens: int | None = None,
                 subagent_depth: int | float | None = None,
                 approval: bool = False, tools: ToolScope,
                 preamble: tuple[SubagentDescriptorData, ...] = (),
                 max_steps: int | None = DEFAULT_MAX_STEPS, titles: bool = True) -> None:
        self.host = services
        self.session = session
        self.provider = provider
        self.model = model
        self.max_tokens = max_tokens
        self.subagent_depth = subagent_depth
        self.tools = tools
        #: Agent-level sections; they override the host's of the same name.
        self.prompt_sections = PromptSections()
        self.pre_step_hooks: list[PreStepHook] = []
        #: Whether an approval service is composed (DSH pins a child's policy to never then).
        self.approval_composed = approval
        self.approval_policy: ApprovalPolicy = services.approval_default if approval else "never"
        self.approver: Approver | None = None
        #: The last failure of the loop itself, if any (see :meth:`when_idle`).
        self.failure: BaseException | None = None
        self._state: LoopState = initial_loop_state(preamble=preamble, max_steps=max_steps,
                                                    titles=titles, trace=session.trace)
        self._task: asyncio.Task[None] | None = None
        self._disposed = False
        self._forgotten = False
        #: The running maintenance job (``run_maintenance``); a wake waits until it ends.
        self._maintenance: asyncio.Future[Any] | None = None
        #: Resolved when maintenance has ended and its deferred wake, if any, has started.
        self._maintenance_over: asyncio.Future[None] | None = None

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
        return self._state.inbox + self._state.steering

    @property
    def cancel_cause(self) -> CancelCause | None:
        """Why the running loop is being cancelled, once it is."""
        return self._state.cancel

    def system_prompt(self) -> str:
        return compose_system_prompt(self.host.prompt_sections, self.prompt_sections)

    def runtime_context(self) -> tuple[PromptSection, ...]:
        """What the next step's runtime-context snapshot holds: the deployment's file policy
        (by the session's effective sandbox mode) and approval policy (with an approval
        service), then the host's and the agent's own contributions, in order."""
        own: list[PromptSection] = []
        if self.host.sandbox_mode is not None:
            override = self.session.trace.sandbox_mode
            mode = self.host.sandbox_mode if override is None else override.mode
            own.append(sandbox_policy_section(mode, self.session.header.cwd
                                              if isinstance(self.session.header.cwd, str)
                                              else os.getcwd()))
        if self.approval_composed:
            own.append(approval_policy_section(self.approval_policy))
        layered = runtime_context(self.host.prompt_sections, self.prompt_sections)
        return tuple(sorted((*own, *layered), key=lambda section: section.order))

    # ------------------------------------------------------------------ control

    def followup(self, prompt: Prompt) -> UserMessage:
        """Queue input for a turn of its own and wake the loop; returns the queued message.

        Must be called with an event loop running.
        """
        return self._queue(Followup, prompt)

    def steer(self, prompt: Prompt) -> UserMessage:
        """Queue input for the running turn's next step boundary (or a new turn when idle)."""
        return self._queue(Steer, prompt)

    def inject(self, prompt: Prompt) -> UserMessage:
        """Queue input for the next step boundary without waking an idle agent (DSH's
        ``inject``): it waits for whatever wakes the agent next."""
        return self._queue(Steer, prompt, wake=False)

    def _queue(self, kind: type[Followup] | type[Steer], prompt: Prompt, *,
               wake: bool = True) -> UserMessage:
        if self._disposed:
            raise AgentDisposedError(f"agent {self.id} was disposed")
        message = user_message(prompt, self.host.ids())
        given = Followup(message=message) if kind is Followup else Steer(message=message,
                                                                          wake=wake)
        step = feed(self._state, self.session.trace, given, time=self.host.clock())
        self.session.extend(step.events)  # a refused write queues nothing
        self._state = step.state
        self._poll()
        if isinstance(step.command, Wake) and self._maintenance is None:
            self._start()  # during maintenance the wake waits for its end
        return message

    async def run_maintenance(self, job: Callable[[], Awaitable[T]]) -> T:
        """Run ``job`` while the agent is idle and hold it idle meanwhile: input queued during
        the job waits, and wakes the agent when the job ends (DSH's ``runMaintenance``).

        :meth:`when_idle` waits for the job too; :meth:`cancel` and :meth:`dispose` cancel it.

        Raises:
            RuntimeError: the agent has active work (a turn running or about to, or another
                maintenance job).
            AgentDisposedError: the agent was disposed.
        """
        self._poll()
        if self._disposed:
            raise AgentDisposedError(f"agent {self.id} was disposed")
        if self._task is not None or self._maintenance is not None:
            raise RuntimeError(f'agent "{self.id}" already has active work')
        loop = asyncio.get_running_loop()
        work: asyncio.Future[T] = asyncio.ensure_future(job())
        self._maintenance = work
        self._maintenance_over = over = loop.create_future()
        try:
            return await work
        finally:
            self._maintenance = None
            if self._state.awaiting == "wake" and self._task is None and not self._disposed:
                self._start()
            over.set_result(None)

    def cancel(self, cause: CancelCause | None = None, *, keep_queued: bool = False) -> None:
        """Cancel the running turn; a no-op when idle.

        Queued input is dropped (a ``canceled`` splice), unless ``keep_queued``: then it stays
        parked until the next follow-up or steer wakes the agent (DSH's interrupt). Cancelling
        an idle agent drops the input parked in it.
        """
        self._poll()
        if self._maintenance is not None:
            self._maintenance.cancel()
        task = self._task
        if task is None:
            if not keep_queued and self.pending:
                self._feed(CancelRequested(cause=CancelUser() if cause is None else cause))
            return
        if self._state.cancel is None:
            self._feed(CancelRequested(cause=CancelUser() if cause is None else cause,
                                       keep_queued=keep_queued))
        task.cancel()

    async def when_idle(self) -> None:
        """Wait until no turn is running or queued, the log is closed and durable (committed by
        the store: it survives a crash of the machine).

        Raises:
            AgentLoopError: the loop itself failed (e.g. the disk refused a write); raised once.
        """
        await self._quiesce()
        await report_idle(self)

    async def dispose(self) -> None:
        """Cancel with ``disposed``, wait for quiescence, dispose every child the agent
        started (foreground, background or continuable), leave the owner's registries.

        Idempotent and safe to call concurrently; the store keeps persisted files.
        """
        if not self._disposed:
            self._disposed = True
            self.cancel(CancelDisposed())
            if self._task is None:
                self._forget()
        await self._quiesce()
        await self.host.release_children(self)

    # ------------------------------------------------------------------ approval

    def set_approval_policy(self, policy: ApprovalPolicy, *,
                            source: Literal["delegation"] | None = None) -> None:
        """Log an ``approval/policy`` event and apply it."""
        data = (ApprovalPolicyData(policy=policy) if source is None
                else ApprovalPolicyData(policy=policy, source=source))
        self.session.append(ApprovalPolicyEvent, data)
        self.approval_policy = policy

    async def request_approval(self, tool_name: str, detail: str, *,
                               call_id: str | None = None) -> None:
        """Ask to run an action that needs approval; the ask and its decision are logged
        (``approval/asked``, ``approval/decided``), whatever the outcome (DSH's user-approval).

        Raises:
            ApprovalRefusedError: policy ``never``, no approver, or the approver said no.
        """
        await request_approval(self, tool_name, detail, call_id=call_id)

    # ------------------------------------------------------------------ the machine

    def _feed(self, given: LoopInput) -> Command | None:
        """One input into the machine; its events are appended before its command returns.

        The new state is kept even if the write fails: the machine re-reads the log's trace
        and closes whatever the failed write left open. A tool result the store will not
        hold (its loader could not read it back) becomes that call's error result instead.
        """
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
        return step.command

    # ------------------------------------------------------------------ task lifecycle

    def _start(self) -> None:
        task = asyncio.get_running_loop().create_task(self._drive(), name=f"agent:{self.id}")
        self._task = task
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
                command = self._feed(Cancelled(message_id=self.host.ids()))
            elif error is not None:
                command = self._feed(Failed(failure=failure_of(error)))
        except Exception as exc:  # the log stays as written; the failure is reported
            error = exc
        if error is not None:
            self.failure = error
        elif isinstance(command, Wake) and not self._disposed:
            self._start()  # input queued after the cancel
        if self._disposed and self._task is None:
            self._forget()

    def _forget(self) -> None:
        if not self._forgotten:
            self._forgotten = True
            self.host.agent_disposed(self)

    # ------------------------------------------------------------------ carrying out

    async def _drive(self) -> None:
        command = self._feed(Begin())
        while command is not None and not isinstance(command, Stop):
            try:
                command = await self._carry_out(command)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failing hook, model or write ends the turn
                command = self._feed(Failed(failure=failure_of(exc)))

    async def _carry_out(self, command: Command) -> Command | None:
        if isinstance(command, PrepareStep):
            return await self._prepare_step(command)
        if isinstance(command, CallModel):
            return await self._call_model(command)
        if isinstance(command, RunTools):
            await self.session.wait_durable()  # the calls are on disk before their effects
            return await self._run_tools(command)
        raise AssertionError(f"unexpected command {command!r}")

    async def _prepare_step(self, command: PrepareStep) -> Command | None:
        for hook in list(self.pre_step_hooks):
            verdict = hook(self, command.turn, command.step)
            if inspect.isawaitable(verdict):
                verdict = await verdict
            if verdict is False:
                return self._feed(StepBlocked())
        if not self.provider or not self.model:
            raise RuntimeError(
                f'agent "{self.id}" has no provider/model: set AgentOptions.provider and '
                "AgentOptions.model or supply both via the agent/request waterfall")
        config = (LlmCallConfig(provider=self.provider, model=self.model)
                  if self.max_tokens is None else
                  LlmCallConfig(provider=self.provider, model=self.model,
                                max_tokens=self.max_tokens))
        tools = self.tools.tools()
        header = EpochHeader(config=config, system=self.system_prompt() or UNSET,
                             tools=tuple(tool.schema for tool in tools) or UNSET)
        parallel = frozenset(tool.name for tool in tools if tool.concurrency_safe)
        return self._feed(StepPrepared(
            header=header, parallel_tools=parallel,
            context=self.runtime_context(),
            context_id=self.host.ids()))

    async def _call_model(self, command: CallModel) -> Command | None:
        header = command.header
        request = ModelRequest(
            config=header.config,
            system=header.system if isinstance(header.system, str) else None,
            tools=header.tools if isinstance(header.tools, tuple) else (),
            messages=self.session.history())
        stream = self.host.model(header.config.provider).stream(request)
        try:
            async for chunk in stream:
                answer = self._feed(Chunk(chunk=chunk))
                if isinstance(answer, EndStream | Stop):
                    if isinstance(answer, Stop):
                        return answer
                    break
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        return self._feed(StreamEnded(message_id=self.host.ids()))

    async def _run_tools(self, command: RunTools) -> Command | None:
        calls = command.calls
        if len(calls) == 1:  # runs alone: no task needed
            outcome = await self._execute(calls[0], command)
            return self._feed(ToolDone(call_id=calls[0].id, outcome=outcome,
                                       message_id=self.host.ids()))
        answer: Command | None = None
        async with asyncio.TaskGroup() as group:
            running = [group.create_task(self._execute(call, command)) for call in calls]
            for call, task in zip(calls, running, strict=True):
                outcome = await task
                answer = self._feed(ToolDone(call_id=call.id, outcome=outcome,
                                             message_id=self.host.ids()))
        return answer

    async def _execute(self, call: ToolCallBlock, command: RunTools) -> ToolOutcome:
        tool: Tool | ToolRefusal = self.tools.resolve(call.name)
        context = ToolContext(agent=self, call_id=call.id, tool_name=call.name,
                              turn=command.turn, step=command.step, arguments=call.arguments)
        denied = self.tools.guard(context)
        if denied is not None:
            return denied
        return await execute_call(tool, call.arguments, context)

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, provider={self.provider!r}, model={self.model!r})"
