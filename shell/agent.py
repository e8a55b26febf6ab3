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
* A failed model call the route's retry policy retries (``Backoff``) is logged at WARNING,
  made durable, then waited for on the host's clock (cancellably) before the call is made again.
* A failure of the loop itself (a hook raising, a model call failing, a refused write) ends the
  turn ``error``; a write that still fails is kept in :attr:`Agent.failure` and raised once by
  :meth:`when_idle`. The turn a failed write left open is closed before the next one starts.
* ``dispose`` is idempotent and safe to run concurrently: it cancels with ``disposed`` and
  tells the agent's owner once the loop is quiet.
* ``run(prompt)`` is a follow-up whose turn is watched: the turn that claims the message (its
  first step's claim) settles the run when its ``turn/end`` is appended, and input dropped
  before any turn claimed it settles it ``aborted``. The result is read by
  :func:`turnfork.core.read_turn` from the turn's events as the agent appended them (the
  agent keeps the latest turn's, references into its log, never copies).
* What the agent appends is also what it reports: turn and step boundaries open and close its
  OpenTelemetry spans (``shell/telemetry.py``) and are logged (``turnfork.shell.agent``); a
  model request that fails is a WARNING. No prompt or model text is logged above DEBUG.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import random
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Protocol, Self, TypeAlias, TypeVar

import msgspec
from msgspec import UNSET
from returns.result import Failure

from ..core import (
    ABORTED_BEFORE_DISPATCH_TEXT,
    DEFAULT_MAX_STEPS,
    ApprovalPolicyData,
    ApprovalPolicyEvent,
    Backoff,
    BackoffDone,
    Begin,
    CallModel,
    CancelCause,
    CancelDisposed,
    Cancelled,
    CancelRequested,
    CancelUser,
    Chunk,
    Command,
    ContentBlock,
    EndStream,
    EpochHeader,
    Event,
    Failed,
    Followup,
    InboxSplicedEvent,
    LlmCallConfig,
    LlmFailure,
    LoopInput,
    LoopState,
    MessageSource,
    PrepareStep,
    PromptSection,
    RetryPolicy,
    RunResult,
    RunTools,
    Steer,
    StepBlocked,
    StepPrepared,
    Stop,
    StreamEnded,
    SubagentDescriptorData,
    TextBlock,
    ToolCallBlock,
    ToolDone,
    ToolOutcome,
    TurnEndEvent,
    TurnError,
    TurnStartEvent,
    UserMessage,
    Wake,
    approval_policy_section,
    describe_failure,
    feed,
    initial_loop_state,
    interpolate_prompt,
    read_turn,
    sandbox_policy_section,
    stop_reason_for,
)
from .approval import ApprovalPolicy, ApprovalRefusedError, Approver, request_approval
from .clock import Clock, IdFactory, sleep
from .errors import model_error
from .models.base import Model, ModelRequest
from .session import Session
from .store import SessionEventError
from .telemetry import AgentSpans, Telemetry
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

logger = logging.getLogger(__name__)

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
    #: Where the agent's spans go (none without OpenTelemetry).
    telemetry: Telemetry
    #: The sandbox policy's workspace for a session without a cwd (``None``: the process's).
    workspace_root: str | None

    def model(self, provider: str) -> Model:
        """The model serving ``provider`` (raises ``UnknownProviderError``)."""
        ...

    def retry_policy(self, provider: str) -> RetryPolicy | None:
        """How ``provider``'s failed model requests are retried (``None``: they are not)."""
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


async def report_idle(owner: IdleReporter, upto: int | None = None) -> None:
    """The end of ``when_idle`` once the loop is quiet: wait until the closed log (its first
    ``upto`` events; default all) is durable (a turn reported done has reached the disk, not
    only the file; a refused commit becomes the failure), then raise the kept failure once as
    :class:`AgentLoopError`."""
    if owner.failure is None:
        try:
            await owner.session.wait_durable(upto)
        except OSError as exc:
            owner.failure = exc
    if owner.failure is not None:
        failure, owner.failure = owner.failure, None
        raise AgentLoopError(f"agent {owner.id}: {failure}") from failure


@dataclass(slots=True)
class _Watch:
    """A run waiting for the turn that claims its message."""

    message_id: str
    #: The turn's result; ``None``: the turn was left open (the loop failed).
    settled: asyncio.Future[RunResult | None]
    #: The seq of the claiming turn's ``turn/start``, and its number, once claimed.
    start: int | None = None
    turn: int | None = None
    #: The log's length through the turn's ``turn/end``.
    upto: int | None = None


class Agent:
    """A model-driven agent over one session. Made by :meth:`turnfork.shell.Host.create_agent`.

    ``async with`` an agent disposes it on exit (on an exception too).
    """

    def __init__(self, services: AgentServices, session: Session, *, provider: str | None,
                 model: str | None, max_tokens: int | None = None,
                 subagent_depth: int | float | None = None,
                 approval: bool = False, tools: ToolScope,
                 preamble: tuple[SubagentDescriptorData, ...] = (),
                 max_steps: int | None = DEFAULT_MAX_STEPS, titles: bool = True,
                 approval_policy: ApprovalPolicy | None = None,
                 sections: Iterable[PromptSection] = ()) -> None:
        self.host = services
        self.session = session
        self.provider = provider
        self.model = model
        self.max_tokens = max_tokens
        self.subagent_depth = subagent_depth
        self.tools = tools
        #: Agent-level sections; they override the host's of the same name.
        self.prompt_sections = PromptSections(sections)
        self.pre_step_hooks: list[PreStepHook] = []
        #: Whether an approval service is composed (DSH pins a child's policy to never then).
        self.approval_composed = approval
        self.approval_policy: ApprovalPolicy = (
            approval_policy if approval_policy is not None
            else services.approval_default if approval else "never")
        self.approver: Approver | None = None
        #: The last failure of the loop itself, if any (see :meth:`when_idle`).
        self.failure: BaseException | None = None
        self._state: LoopState = initial_loop_state(preamble=preamble, max_steps=max_steps,
                                                    titles=titles, trace=session.trace)
        self._task: asyncio.Task[None] | None = None
        #: Calls of the running tool group that were dispatched (the rest never started).
        self._dispatched: set[str] = set()
        self._disposed = False
        self._forgotten = False
        #: The running maintenance job (``run_maintenance``); a wake waits until it ends.
        self._maintenance: asyncio.Future[Any] | None = None
        #: Resolved when maintenance has ended and its deferred wake, if any, has started.
        self._maintenance_over: asyncio.Future[None] | None = None
        self._watches: list[_Watch] = []
        #: The events of the latest turn this instance ran, from its ``turn/start`` (what
        #: ``when_idle`` and ``run`` read), and whether that turn is still open.
        self._turn_events: list[Event] = []
        self._turn_open = False
        #: The model failure last logged, so that its turn's end does not log it again.
        self._spans: AgentSpans | None = services.telemetry.agent_spans(session.id)

    # ------------------------------------------------------------------ state

    @property
    def id(self) -> str:
        """The agent's id: its session's id."""
        return self.session.header.id

    @property
    def disposed(self) -> bool:
        return self._disposed

    @property
    def running(self) -> bool:
        """Whether the loop task exists (a turn is running or about to)."""
        return self._task is not None

    @property
    def pending(self) -> tuple[UserMessage, ...]:
        """Queued input not yet claimed by a turn (what a requested cancellation drops is no
        longer pending)."""
        state = self._state
        return state.inbox[state.drop_inbox:] + state.steering[state.drop_steering:]

    @property
    def cancel_cause(self) -> CancelCause | None:
        """Why the running loop is being cancelled, once it is."""
        return self._state.cancel

    def system_prompt(self) -> str:
        """The system prompt: the host's and the agent's sections (the agent's override the
        host's by name), a ``tool:<name>`` guidance section empty when this agent's scope
        hides that global tool, the prompt variables filled in.

        Raises:
            ValueError: a section references a prompt variable it cannot have.
        """
        merged = PromptSections()
        for layer in (self.host.prompt_sections, self.prompt_sections):
            for section in layer.sections():
                merged.add(section)
        for section in merged.sections():
            tool = section.name.removeprefix("tool:")
            hidden = tool != section.name and tool in self.tools.registry \
                and not self.tools.offers(tool)
            merged.add(msgspec.structs.replace(section, text="") if hidden
                       else self._interpolated(section))
        return compose_system_prompt(merged)

    def _interpolated(self, section: PromptSection) -> PromptSection:
        cwd = self.session.header.cwd
        filled = interpolate_prompt(section.text, {
            "provider": self.provider, "model": self.model,
            "cwd": cwd if isinstance(cwd, str) else None}, name=section.name, kind=section.kind)
        if isinstance(filled, Failure):
            raise ValueError(filled.failure())
        text = filled.unwrap()
        return section if text == section.text else msgspec.structs.replace(section, text=text)

    def runtime_context(self) -> tuple[PromptSection, ...]:
        """What the next step's runtime-context snapshot holds: the deployment's file policy
        (by the session's effective sandbox mode, over the session's cwd, else the host's
        workspace root, else the process's cwd) and approval policy (with an approval
        service), then the host's and the agent's own contributions, in order, the prompt
        variables filled in."""
        own: list[PromptSection] = []
        if self.host.sandbox_mode is not None:
            override = self.session.trace.sandbox_mode
            mode = self.host.sandbox_mode if override is None else override.mode
            cwd = self.session.header.cwd
            own.append(sandbox_policy_section(
                mode, cwd if isinstance(cwd, str) else self.host.workspace_root or os.getcwd()))
        if self.approval_composed:
            own.append(approval_policy_section(self.approval_policy))
        layered = runtime_context(self.host.prompt_sections, self.prompt_sections)
        return tuple(self._interpolated(section) for section in
                     sorted((*own, *layered), key=lambda section: section.order))

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
            if keep_queued:
                return  # parked input stays; a wake maintenance deferred still follows it
            given = CancelRequested(cause=CancelUser() if cause is None else cause)
            if self._state.awaiting == "wake":
                # Maintenance deferred the wake, so no task will stop: the drop happens now.
                self._feed(given)
                self._feed(Cancelled(message_id=self.host.ids()))
            elif self.pending:
                self._feed(given)
            return
        if self._state.cancel is None:
            self._feed(CancelRequested(cause=CancelUser() if cause is None else cause,
                                       keep_queued=keep_queued))
        task.cancel()

    async def run(self, prompt: Prompt, *, raise_on_failure: bool = False) -> RunResult:
        """Queue ``prompt`` as a follow-up and return the result of the turn that takes it,
        once that turn is closed and durable.

        A busy agent queues it as :meth:`followup` does: it gets a turn of its own after the
        input queued before it, and the result is that turn's (input queued later is not
        waited for). Input dropped before a turn took it (a cancellation, the agent's disposal)
        returns ``stop_reason="aborted"`` with no turn. Cancelling the awaiting task stops the
        wait, not the turn (use :meth:`cancel`).

        Raises:
            ModelError: ``raise_on_failure`` and the turn ended ``error``: the subclass of its
                failure's code (:func:`turnfork.shell.errors.model_error`), holding the result.
            AgentLoopError: the loop itself failed (e.g. the disk refused a write); raised once.
            AgentDisposedError: the agent was disposed.
        """
        message = self.followup(prompt)
        watch = _Watch(message.id, asyncio.get_running_loop().create_future())
        self._watches.append(watch)
        try:
            outcome = await asyncio.shield(watch.settled)
        finally:
            if watch in self._watches:
                self._watches.remove(watch)
        await report_idle(self, watch.upto)
        if outcome is None:  # the turn was left open; another caller took the loop's failure
            assert watch.start is not None
            outcome = read_turn(self.session.events[watch.start:])
        if raise_on_failure and outcome.failure is not None:
            raise model_error(outcome.failure, outcome)
        return outcome

    async def when_idle(self, *, raise_on_failure: bool = False) -> RunResult | None:
        """Wait until no turn is running or queued, the log is closed and durable (committed by
        the store: it survives a crash of the machine).

        Returns the result of the latest turn this agent ran (``None`` before its first), so a
        turn that failed is reported, not only logged; ``raise_on_failure`` raises its failure.

        Raises:
            AgentLoopError: the loop itself failed (e.g. the disk refused a write); raised once.
            ModelError: ``raise_on_failure`` and the latest turn ended ``error``.
        """
        await self._quiesce()
        await report_idle(self)
        if not self._turn_events:
            return None
        result = read_turn(self._turn_events)
        if raise_on_failure and result.failure is not None:
            raise model_error(result.failure, result)
        return result

    async def when_quiet(self) -> None:
        """Wait until no turn is running or queued and no maintenance job runs: what
        :meth:`when_idle` waits for, without its durability wait and without raising the
        kept :attr:`failure`."""
        await self._quiesce()

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

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.dispose()

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
            self._observe(step.events)
        return step.command

    def _observe(self, events: Sequence[Event]) -> None:
        """Report what was appended: turns for runs, logs and spans."""
        spans = self._spans
        for event in events:
            kind = type(event)
            if kind is TurnStartEvent:
                assert isinstance(event, TurnStartEvent)
                self._turn_events = [event]
                self._turn_open = True
                if self._watches:
                    self._claimed(event)
                logger.debug("agent %s: turn %d started", self.id, event.data.turn)
            elif self._turn_open:
                self._turn_events.append(event)
            if kind is TurnEndEvent:
                assert isinstance(event, TurnEndEvent)
                self._turn_open = False
                self._turn_ended(event)
            elif kind is InboxSplicedEvent and self._watches:
                assert isinstance(event, InboxSplicedEvent)
                if event.data.outcome == "canceled":
                    self._dropped()
            if spans is not None:
                spans.observe(event)

    def _claimed(self, start: TurnStartEvent) -> None:
        progress = self._state.turn
        if progress is None or progress.turn != start.data.turn:
            return  # a turn that claimed nothing (and has ended already)
        claimed = {message.id for message in progress.claimed}
        for watch in self._watches:
            if watch.start is None and watch.message_id in claimed:
                watch.start, watch.turn = start.seq, start.data.turn

    def _turn_ended(self, end: TurnEndEvent) -> None:
        reason = end.data.reason
        if isinstance(reason, TurnError):  # a retried failure was logged with its retry
            logger.warning("agent %s: turn %d failed: %s", self.id, end.data.turn,
                           describe_failure(reason.error))
        else:
            logger.debug("agent %s: turn %d ended: %s", self.id, end.data.turn,
                         stop_reason_for(reason))
        for watch in list(self._watches):
            if watch.turn == end.data.turn and watch.start is not None:
                watch.upto = end.seq + 1
                self._settle(watch, read_turn(self._turn_events))

    def _dropped(self) -> None:
        """Watched input that a cancellation dropped before a turn claimed it."""
        pending = {message.id for message in self.pending}
        for watch in list(self._watches):
            if watch.start is None and watch.message_id not in pending:
                self._settle(watch, RunResult(output="", stop_reason="aborted"))

    def _settle(self, watch: _Watch, result: RunResult | None) -> None:
        self._watches.remove(watch)
        if not watch.settled.done():
            watch.settled.set_result(result)

    # ------------------------------------------------------------------ task lifecycle

    def _start(self) -> None:
        if self._spans is not None:
            self._spans.woken()
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
                command = self._feed(Cancelled(message_id=self.host.ids(),
                                               dispatched=frozenset(self._dispatched)))
            elif error is not None:
                command = self._feed(Failed(failure=failure_of(error)))
        except Exception as exc:  # the log stays as written; the failure is reported
            error = exc
        if error is not None:
            self.failure = error
            logger.warning("agent %s: the loop failed: %s", self.id, error,
                           exc_info=(type(error), error, error.__traceback__))
        elif isinstance(command, Wake) and not self._disposed:
            self._start()  # input queued after the cancel
        if self._task is None and self._watches:
            for watch in list(self._watches):
                if watch.start is not None:  # claimed, and its turn was left open
                    self._settle(watch, None)
        if self._disposed and self._task is None:
            self._forget()

    def _forget(self) -> None:
        if not self._forgotten:
            self._forgotten = True
            if self._spans is not None:
                self._spans.close()
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
        if isinstance(command, Backoff):
            return await self._back_off(command)
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
            context_id=self.host.ids(), retry=self.host.retry_policy(self.provider)))

    async def _call_model(self, command: CallModel) -> Command | None:
        header = command.header
        request = ModelRequest(
            config=header.config,
            system=header.system if isinstance(header.system, str) else None,
            tools=header.tools if isinstance(header.tools, tuple) else (),
            messages=self.session.history())
        call = None if self._spans is None else self._spans.model_call(header.config)
        error: BaseException | None = None
        try:
            stream = self.host.model(header.config.provider).stream(request)
            try:
                async for chunk in stream:
                    if call is not None:
                        call.chunk(chunk)
                    answer = self._feed(Chunk(chunk=chunk))
                    if isinstance(answer, EndStream | Stop):
                        if isinstance(answer, Stop):
                            return answer
                        break
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
        except Exception as exc:
            error = exc
            raise
        finally:
            if call is not None:
                call.end(error)
        return self._feed(StreamEnded(message_id=self.host.ids(), draw=random.random()))

    async def _back_off(self, command: Backoff) -> Command | None:
        retry = command.retry
        budget = f"{retry.retry} of {retry.max_retries}" if retry.mode == "normal" \
            else f"{retry.retry} (always)"
        logger.warning("agent %s: the request to %s failed (%s: %s); retry %s in %.0f ms "
                       "(turn %d, step %d)", self.id, retry.provider, retry.failure.code,
                       retry.failure.message, budget, command.delay_ms, retry.turn, retry.step)
        await self.session.wait_durable()  # the scheduled retry is on disk before the wait
        await sleep(self.host.clock, command.delay_ms)
        return self._feed(BackoffDone())

    async def _run_tools(self, command: RunTools) -> Command | None:
        if self._spans is None:
            return await self._run_calls(command)
        with self._spans.tools():
            return await self._run_calls(command)

    async def _run_calls(self, command: RunTools) -> Command | None:
        calls = command.calls
        self._dispatched.clear()
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
        if self._state.cancel is not None:
            # The turn is being cancelled: no call is dispatched any more, so nothing it would
            # have started exists; the closers answer it as never dispatched.
            return ToolOutcome(ABORTED_BEFORE_DISPATCH_TEXT, is_error=True)
        self._dispatched.add(call.id)
        tool: Tool | ToolRefusal = self.tools.resolve(call.name)
        context = ToolContext(agent=self, call_id=call.id, tool_name=call.name,
                              turn=command.turn, step=command.step, arguments=call.arguments)
        denied = self.tools.guard(context)
        if denied is not None:
            return denied
        return await execute_call(tool, call.arguments, context)

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, provider={self.provider!r}, model={self.model!r})"
