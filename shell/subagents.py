"""The subagent runtime: the provider registry, the fork and spawn providers, and the one run
driver they share (wire-format §2.10-2.13, §6.6, §7).

Rules:

* ``SubagentRuntime.start`` refuses before anything exists: an unknown provider
  (``NO_PROVIDER``), a capability the provider lacks, an abort already signalled, and every rule
  of the core's :func:`core.plan_child` (depth, schema, tool filter). Refusals raise
  :class:`SubagentStartError` carrying the core's :class:`core.StartError`.
* Fork and spawn differ only in the seed: fork passes the parent's completed-turn prefix as a
  view with the trace at the cut (``Session.completed_prefix()``, O(1)); spawn passes none, and so
  does fork before the parent's first completed turn.
* The child is built unpublished: its session (header, seed, ``session/end-seed``), the delegated
  policy events, then its own prompt sections, tool restriction and structured-output tool, all
  in a fresh tool scope over the host's global tools (the parent's scope is never inherited).
  The setup window ends with one checkpoint; an abort or a cancellation seen there removes the
  child's session (and its files) and nothing is left anywhere. Only then is the child
  published: added to ``host.agents``, announced with :class:`SubagentStart`, and given the
  prompt verbatim as its user message.
* The one-shot ``subagent/descriptor`` is appended by a pre-step hook inside the child's first
  turn, after ``turn/start`` and the claim, before its first ``step/start``.
* A run's result is read with :func:`core.read_result` from the child's own events only
  (past its seed). Child failures are stop reasons; only a failing loop (an infrastructure
  fault) fails the result. Aborting after publication cancels the child's turn with cause
  ``parent``; ``dispose()`` cancels with ``disposed``; both make a non-completed stop reason
  ``aborted``. A completed turn stays completed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

import msgspec
from msgspec import Raw
from returns.result import Failure, Result, Success

from core import (
    ApprovalPolicyData,
    Capabilities,
    CancelParent,
    ChildPlan,
    ContentBlock,
    Event,
    ParentView,
    RuntimeOptions,
    SandboxModeData,
    SandboxModeEvent,
    StartError,
    StartRequest,
    StructuredOutputContract,
    SubagentDescriptorEvent,
    SubagentResult,
    Trace,
    already_recorded_message,
    check_capabilities,
    final_assistant_output,
    plan_child,
    render_invalid_arguments,
    render_structured_recorded,
    read_result,
    validate_structured_arguments,
)

from .abort import AbortSignal
from .agent import Agent
from .host import Host, UnknownProviderError
from .store import SessionNotFoundError
from .tools import Tool, ToolContext, ToolOutcome, ToolScope

__all__ = [
    "NO_PROVIDER",
    "ABORTED",
    "SubagentStartError",
    "SubagentAbortedError",
    "SubagentStart",
    "SubagentEnd",
    "SubagentEvent",
    "SubagentListener",
    "SubagentProvider",
    "Registration",
    "SubagentRuntime",
    "SubagentRun",
    "ForkSeed",
    "InProcessProvider",
    "ForkProvider",
    "SpawnProvider",
    "ALL_CAPABILITIES",
]

#: ``StartError.code`` of a start naming no registered provider (DSH ``SubagentError``).
NO_PROVIDER = "NO_PROVIDER"
#: ``StartError.code`` of a start aborted before its child was published.
ABORTED = "ABORTED"
#: What both in-process providers support.
ALL_CAPABILITIES = Capabilities(output_schema=True, depth_limit=True, tool_filter=True,
                                persona=True)


class SubagentStartError(Exception):
    """A start refused or abandoned before any child was published; ``error`` says why."""

    def __init__(self, error: StartError) -> None:
        super().__init__(error.message)
        self.error = error


class SubagentAbortedError(SubagentStartError):
    """The start was aborted before its child was published: nothing was left behind."""

    def __init__(self) -> None:
        super().__init__(StartError(code=ABORTED, name="AbortError",
                                    message="subagent start was aborted before the child was "
                                            "published"))


# ---------------------------------------------------------------------------- observers


@dataclass(frozen=True, slots=True)
class SubagentStart:
    """A child was published (``subagent/start``)."""

    run: SubagentRun
    run_id: str
    provider: str
    parent_id: str
    child_id: str
    label: str | None
    seed_length: int


@dataclass(frozen=True, slots=True)
class SubagentEnd:
    """A run settled (``subagent/end``). ``failure`` is set for an infrastructure fault (then
    ``stop_reason`` is ``error``)."""

    run: SubagentRun
    run_id: str
    provider: str
    parent_id: str
    child_id: str
    stop_reason: str
    #: The child's final assistant output (wire-format §7.4) from its own events, if any.
    last_assistant_message: tuple[ContentBlock, ...] | None
    failure: BaseException | None = None


SubagentEvent: TypeAlias = SubagentStart | SubagentEnd
SubagentListener: TypeAlias = Callable[[SubagentEvent], None]


def _report(error: BaseException, what: str) -> None:
    asyncio.get_running_loop().call_exception_handler({"message": what, "exception": error})


# ---------------------------------------------------------------------------- providers


class SubagentProvider(Protocol):
    """A way to run a child: registered by name, asked to start runs by the runtime."""

    @property
    def provider_name(self) -> str: ...

    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def inherits_parent_context(self) -> bool: ...

    async def start(self, runtime: SubagentRuntime, request: StartRequest, *, parent: Agent,
                    signal: AbortSignal | None) -> SubagentRun:
        """Create, publish and start a child (capabilities were already checked)."""
        ...


@dataclass(frozen=True, slots=True)
class ForkSeed:
    """A fork child's seed: the parent's completed-turn prefix (a view, never a copy) and the
    parent's trace at the cut. Both are fixed for good: logs are append-only."""

    events: Sequence[Event]
    trace: Trace

    def __len__(self) -> int:
        return len(self.events)


class InProcessProvider:
    """A provider that runs its children as agents of the same host through the shared driver.

    Subclasses differ only in :meth:`capture_seed`.
    """

    kind: Literal["fork", "spawn"] = "spawn"
    inherits_parent_context: bool = False

    def __init__(self, provider_name: str) -> None:
        if not provider_name:
            raise ValueError("a subagent provider name must not be empty")
        self.provider_name = provider_name
        self.capabilities = ALL_CAPABILITIES

    def capture_seed(self, parent: Agent) -> ForkSeed | None:
        """The seed of a child of ``parent`` as it stands now (``None``: no seed)."""
        return None

    async def start(self, runtime: SubagentRuntime, request: StartRequest, *, parent: Agent,
                    signal: AbortSignal | None) -> SubagentRun:
        return await _drive(runtime, self, request, parent, signal)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider_name={self.provider_name!r})"


class ForkProvider(InProcessProvider):
    """Children start from the parent's completed turns (``inherits_parent_context``)."""

    kind: Literal["fork", "spawn"] = "fork"
    inherits_parent_context = True

    def __init__(self, provider_name: str = "fork") -> None:
        super().__init__(provider_name)

    def capture_seed(self, parent: Agent) -> ForkSeed | None:
        prefix, trace = parent.session.completed_prefix()
        return ForkSeed(events=prefix, trace=trace) if len(prefix) else None

    def prepare_continuable(self, request: StartRequest, parent: Agent) -> ForkSeed | None:
        """The seed a continuable fork child of ``parent`` would start from, captured once.

        ``None`` before the parent's first completed turn; else the prefix through its last
        ``turn/end`` (each event's seq equals its index).

        Raises:
            SubagentStartError: the request needs a capability this provider lacks.
        """
        _raise_on_failure(check_capabilities(self.provider_name, self.capabilities, request))
        return self.capture_seed(parent)


class SpawnProvider(InProcessProvider):
    """Children start empty: they see only their prompt."""

    def __init__(self, provider_name: str = "spawn") -> None:
        super().__init__(provider_name)


def _raise_on_failure(result: Result[object, StartError]) -> None:
    match result:
        case Failure(error):
            raise SubagentStartError(error)


# ---------------------------------------------------------------------------- registry


class Registration:
    """A provider's place in a runtime; :meth:`unregister` stops new starts (idempotent)."""

    __slots__ = ("_runtime", "provider")

    def __init__(self, runtime: SubagentRuntime, provider: SubagentProvider) -> None:
        self._runtime = runtime
        self.provider = provider

    @property
    def active(self) -> bool:
        return self._runtime.get_provider(self.provider.provider_name) is self.provider

    def unregister(self) -> None:
        """Remove the provider if it is still the one registered under its name. Runs already
        started are not touched."""
        if self.active:
            self._runtime.unregister_provider(self.provider.provider_name)


class SubagentRuntime:
    """``host.subagents``: providers by name, the live runs, and their observers.

    Creating one attaches it to ``host`` (use :meth:`of` to get the attached one).
    """

    def __init__(self, host: Host) -> None:
        if host.subagents is not None:
            raise ValueError("this host already has a subagent runtime")
        self.host = host
        self._providers: dict[str, SubagentProvider] = {}
        self._listeners: list[SubagentListener] = []
        self._provider_watchers: list[Callable[[], None]] = []
        self._runs: dict[str, SubagentRun] = {}
        host.subagents = self

    @classmethod
    def of(cls, host: Host) -> SubagentRuntime:
        """The runtime attached to ``host``, attaching a new one if there is none."""
        runtime = host.subagents
        if runtime is None:
            return cls(host)
        if not isinstance(runtime, SubagentRuntime):
            raise TypeError(f"host.subagents is a {type(runtime).__name__}, not a "
                            "SubagentRuntime")
        return runtime

    # ------------------------------------------------------------------ providers

    def register_provider(self, provider: SubagentProvider) -> Registration:
        """Register ``provider`` under its name.

        Raises:
            ValueError: a provider with that name is already registered.
        """
        name = provider.provider_name
        if name in self._providers:
            raise ValueError(f'a subagent provider named "{name}" is already registered')
        self._providers[name] = provider
        self._providers_changed()
        return Registration(self, provider)

    def unregister_provider(self, name: str) -> None:
        """Stop new starts with that provider; runs already returned are unaffected.

        Raises:
            KeyError: no provider has that name.
        """
        if self._providers.pop(name, None) is None:
            raise KeyError(f'no subagent provider named "{name}"')
        self._providers_changed()

    def get_provider(self, name: str) -> SubagentProvider | None:
        return self._providers.get(name)

    def list(self) -> tuple[SubagentProvider, ...]:
        """The registered providers, in registration order."""
        return tuple(self._providers.values())

    def watch_providers(self, watcher: Callable[[], None]) -> Callable[[], None]:
        """Call ``watcher()`` after every registration change; returns the unsubscriber."""
        self._provider_watchers.append(watcher)
        return lambda: self._provider_watchers.remove(watcher) \
            if watcher in self._provider_watchers else None

    def _providers_changed(self) -> None:
        for watcher in list(self._provider_watchers):
            watcher()

    # ------------------------------------------------------------------ observers

    def subscribe(self, listener: SubagentListener) -> Callable[[], None]:
        """Receive :class:`SubagentStart` and :class:`SubagentEnd`; returns the unsubscriber."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) \
            if listener in self._listeners else None

    def _emit(self, event: SubagentEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception as error:  # an observer never breaks a run
                _report(error, "a subagent listener failed")

    # ------------------------------------------------------------------ runs

    async def start(self, name: str, request: StartRequest, *, parent: Agent,
                    signal: AbortSignal | None = None) -> SubagentRun:
        """Start a child of ``parent`` with the provider registered as ``name``.

        Returns once the child is published (in ``host.agents``, :class:`SubagentStart`
        emitted) and its prompt delivered.

        Raises:
            SubagentStartError: ``NO_PROVIDER``, a missing capability, or a rule of the
                core's plan; :class:`SubagentAbortedError` when ``signal`` aborted first.
                Cancelling the awaiting task before publication leaves nothing behind either.
            UnknownProviderError: the child's model provider is not registered.
        """
        provider = self._providers.get(name)
        if provider is None:
            raise SubagentStartError(StartError(
                code=NO_PROVIDER, name="SubagentError",
                message=f'no subagent provider registered for "{name}"'))
        _raise_on_failure(check_capabilities(provider.provider_name, provider.capabilities,
                                             request))
        if signal is not None and signal.aborted:
            raise SubagentAbortedError()
        return await provider.start(self, request, parent=parent, signal=signal)

    def runs(self) -> tuple[SubagentRun, ...]:
        """Runs started and not yet disposed, in start order."""
        return tuple(self._runs.values())

    async def aclose(self) -> None:
        """Dispose every live run (concurrently)."""
        await asyncio.gather(*(run.dispose() for run in self.runs()))


# ---------------------------------------------------------------------------- runs


class _StructuredCapture:
    """A child's ``structured_output`` runtime: its tool, its guard, and what it captured."""

    def __init__(self, contract: StructuredOutputContract) -> None:
        self.contract = contract
        self.value: Raw | None = None
        self._installed = False
        parameters = msgspec.json.decode(contract.tool.parameters)
        # The core validates the raw arguments; the shell's own schema check is bypassed.
        self.tool = Tool(contract.tool.name, contract.tool.description, parameters,
                         self._call, validate=lambda args: ())

    async def _call(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        match validate_structured_arguments(self.contract.compiled, ctx.arguments):
            case Failure(invalid):
                rendered = render_invalid_arguments(invalid)
                return ToolOutcome(content=rendered.content(), is_error=True,
                                   error=rendered.error)
            case Success(value):
                self.value = value
        return ToolOutcome(content=render_structured_recorded().content(), conclude_turn=True)

    def guard(self, ctx: ToolContext) -> str | None:
        """After the capture, every call (of any tool) is denied."""
        return None if self.value is None else already_recorded_message(ctx.tool_name)

    def install(self, agent: Agent) -> None:
        """Add the tool and the guard to the child's own scope (its section is in the plan)."""
        agent.tools.add(self.tool)
        agent.tools.guards.append(self.guard)
        self._installed = True

    def uninstall(self, agent: Agent) -> None:
        """Remove the tool, the guard and the section again (once the run has settled)."""
        if self._installed:
            self._installed = False
            agent.tools.guards.remove(self.guard)
            agent.tools.remove(self.tool.name)
            agent.prompt_sections.remove(self.contract.section.name)


class SubagentRun:
    """One published child run. Made by :meth:`SubagentRuntime.start`.

    ``id`` is the child's session id; ``local_agent`` the child agent; ``result`` an awaitable
    :class:`core.SubagentResult`. Always :meth:`dispose` a run.
    """

    def __init__(self, runtime: SubagentRuntime, *, provider: str, label: str | None,
                 parent: Agent, agent: Agent, seed_length: int,
                 capture: _StructuredCapture | None, signal: AbortSignal | None) -> None:
        self.runtime = runtime
        self.provider = provider
        self.label = label
        self.parent = parent
        self.local_agent = agent
        self.seed_length = seed_length
        self._capture = capture
        self._signal = signal
        self._cancelled = False
        self._disposing = False
        self._task: asyncio.Task[SubagentResult] | None = None

    @property
    def id(self) -> str:
        return self.local_agent.id

    @property
    def cancelled(self) -> bool:
        """Whether the run was aborted or disposed before it settled."""
        return self._cancelled

    @property
    def done(self) -> bool:
        """Whether the result is settled."""
        return self._task is not None and self._task.done()

    @property
    def result(self) -> asyncio.Future[SubagentResult]:
        """The run's result; awaiting it never cancels the run, even if the awaiter is."""
        assert self._task is not None, "the run has not begun"
        return asyncio.shield(self._task)

    def own_events(self) -> Sequence[Event]:
        """The child's events past its seed (what the result is read from)."""
        return self.local_agent.session.events[self.seed_length:]

    def abort(self, reason: object = None) -> None:
        """Cancel the child's running turn with cause ``parent`` (the parent's signal)."""
        if self.done:
            return
        self._cancelled = True
        self.local_agent.cancel(CancelParent())

    async def dispose(self) -> None:
        """Cancel what remains (cause ``disposed``), wait for the result and the child's
        quiescence, and remove the child from ``host.agents``. Idempotent; safe to call
        concurrently; never raises the result's failure."""
        if not self._disposing:
            self._disposing = True
            if not self.done:
                self._cancelled = True
            self._detach()
            self.runtime._runs.pop(self.id, None)
        await self.local_agent.dispose()
        task = self._task
        if task is not None:
            await asyncio.wait([task])
            if not task.cancelled():
                task.exception()  # the failure stays readable through ``result``

    # ------------------------------------------------------------------ driver side

    def _begin(self, prompt: tuple[ContentBlock, ...]) -> None:
        if self._signal is not None:
            self._signal.add_listener(self.abort)
        self.runtime._runs[self.id] = self
        self.runtime._emit(SubagentStart(
            run=self, run_id=self.id, provider=self.provider, parent_id=self.parent.id,
            child_id=self.id, label=self.label, seed_length=self.seed_length))
        if not self._cancelled:  # an observer may have aborted it already
            self.local_agent.followup(prompt)
        self._task = asyncio.get_running_loop().create_task(self._watch(),
                                                            name=f"subagent:{self.id}")

    def _detach(self) -> None:
        if self._signal is not None:
            self._signal.remove_listener(self.abort)

    async def _watch(self) -> SubagentResult:
        failure: BaseException | None = None
        try:
            await self.local_agent.when_idle()
        except Exception as error:  # the loop itself failed: an infrastructure fault
            failure = error
        finally:
            self._detach()
            if self._capture is not None:
                self._capture.uninstall(self.local_agent)
        own = self.own_events()
        result = None if failure is not None else read_result(
            own, self._cancelled, None if self._capture is None else self._capture.value,
            structured_requested=self._capture is not None)
        self.runtime._emit(SubagentEnd(
            run=self, run_id=self.id, provider=self.provider, parent_id=self.parent.id,
            child_id=self.id, stop_reason="error" if result is None else result.stop_reason,
            last_assistant_message=final_assistant_output(own), failure=failure))
        if failure is not None:
            raise failure
        assert result is not None
        return result

    def __repr__(self) -> str:
        return f"SubagentRun(id={self.id!r}, provider={self.provider!r})"


# ---------------------------------------------------------------------------- the driver


def _parent_view(parent: Agent) -> ParentView:
    session = parent.session
    return ParentView(
        header=session.header,
        options=RuntimeOptions(provider=parent.provider, model=parent.model,
                               max_tokens=parent.max_tokens,
                               subagent_depth=parent.subagent_depth),
        events=session.events, trace=session.trace,
        approval_in_use=parent.approval_composed)


def _apply_policy(agent: Agent, plan: ChildPlan) -> None:
    for policy in plan.policy:
        if isinstance(policy, SandboxModeData):
            agent.session.append(SandboxModeEvent, policy)
        elif isinstance(policy, ApprovalPolicyData):
            agent.set_approval_policy(policy.policy, source="delegation")
    # Pinned whether or not an approval service is composed: a child never asks.
    agent.approval_policy = "never"


def _install(agent: Agent, plan: ChildPlan) -> _StructuredCapture | None:
    for section in plan.sections:
        agent.prompt_sections.set(section.name, section.text, order=int(section.order))
    if plan.tool_filter is not None:
        agent.tools.restrict(plan.tool_filter)
    capture = None
    if plan.structured is not None:
        capture = _StructuredCapture(plan.structured)
        capture.install(agent)
    descriptor = plan.descriptor

    def append_descriptor(child: Agent, turn: int, step: int) -> None:
        child.pre_step_hooks.remove(append_descriptor)
        child.session.append(SubagentDescriptorEvent, descriptor)

    agent.pre_step_hooks.insert(0, append_descriptor)
    return capture


def _discard(host: Host, child_id: str) -> None:
    """Undo an unpublished child: its live session and anything persisted of it."""
    try:
        host.sessions.delete(child_id)
    except SessionNotFoundError:
        pass


async def _drive(runtime: SubagentRuntime, provider: InProcessProvider, request: StartRequest,
                 parent: Agent, signal: AbortSignal | None) -> SubagentRun:
    """The shared driver: plan, create unpublished, set up, checkpoint, publish, prompt."""
    host = runtime.host
    # Everything read of the parent is read here, synchronously, before any await.
    seed = provider.capture_seed(parent)
    planned = plan_child(_parent_view(parent), request, provider.kind,
                         provider_name=provider.provider_name, child_id=host.ids(),
                         created_at=host.clock(), capabilities=provider.capabilities,
                         known_tools=host.tools.names())
    _raise_on_failure(planned)
    plan = planned.unwrap()
    seed_length = 0 if seed is None else len(seed)
    if len(plan.seed or ()) != seed_length:
        raise RuntimeError(f"the fork cut disagrees: plan {len(plan.seed or ())}, session "
                           f"{seed_length}")
    options = plan.options
    if options.provider is None or options.model is None:
        raise ValueError("the child has no model route (provider and model)")
    if options.provider not in host.models:
        raise UnknownProviderError(options.provider)
    session = host.sessions.create(plan.header, seed=None if seed is None else seed.events,
                                   seed_trace=None if seed is None else seed.trace,
                                   clock=host.clock)
    try:
        agent = Agent(host, session, provider=options.provider, model=options.model,
                      max_tokens=options.max_tokens, subagent_depth=plan.depth,
                      approval=parent.approval_composed, tools=ToolScope(host.tools))
        _apply_policy(agent, plan)
        capture = _install(agent, plan)
        # The end of the unpublished setup window: an abort or a cancellation that arrived
        # while the child was being built is honoured here, before anyone can see it.
        await asyncio.sleep(0)
        if signal is not None and signal.aborted:
            raise SubagentAbortedError()
    except BaseException:
        _discard(host, session.id)
        raise
    host.agents._add(agent)
    run = SubagentRun(runtime, provider=provider.provider_name, label=request.label,
                      parent=parent, agent=agent, seed_length=seed_length, capture=capture,
                      signal=signal)
    run._begin(plan.prompt)
    return run
