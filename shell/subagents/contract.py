"""What the subagent runtime (:mod:`.registry`), its providers, its runs and the continuation
manager agree on: refusal codes and errors, protocols, lifecycle records. It imports none of
them (the runtime is known here as :class:`SubagentRuntimeView`), so no import cycle, not even
a type-level one, runs through it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar

from returns.result import Failure, Result, Success

from ...core import (
    Capabilities,
    CheckedRequest,
    ContentBlock,
    Event,
    ParentView,
    PromptSection,
    RuntimeOptions,
    StartError,
    SubagentDescriptorData,
    SubagentResult,
    Trace,
)
from ..abort import AbortSignal
from ..agent import Agent
from ..clock import Clock, IdFactory

if TYPE_CHECKING:
    from ..approval import ApprovalPolicy
    from ..registries import AgentRegistry, ModelRegistry
    from ..session import Session
    from ..store import SessionStore
    from ..tools import PromptSections, ToolRegistry, ToolScope

__all__ = [
    "NO_PROVIDER", "ABORTED", "DUPLICATE_PROVIDER", "INACTIVE_PARENT", "OWNER_DISPOSED",
    "SubagentError", "SubagentStartError", "SubagentAbortedError", "raise_on_failure",
    "unwrap_start", "SubagentHost", "SubagentRuntimeView", "SubagentProvider",
    "SubagentRunHandle", "SubagentStart", "SubagentEnd", "SubagentEvent", "SubagentListener",
    "ContinuableRequest", "ContinuableSeed", "parent_view",
]

T = TypeVar("T")

#: ``StartError.code`` of a start naming no registered provider (DSH ``SubagentError``).
NO_PROVIDER = "NO_PROVIDER"
#: ``StartError.code`` of a start aborted before its child was published.
ABORTED = "ABORTED"
#: ``StartError.code`` of a second provider under a registered name (DSH ``SubagentError``).
DUPLICATE_PROVIDER = "DUPLICATE_PROVIDER"
#: ``StartError.code`` of a start whose parent is (being) disposed.
INACTIVE_PARENT = "INACTIVE_PARENT"
#: ``StartError.code`` of a start whose parent was disposed during the child's setup.
OWNER_DISPOSED = "OWNER_DISPOSED"


class SubagentError(ValueError):
    """A refusal of the subagent runtime; ``error`` holds its code, DSH name and text."""

    def __init__(self, error: StartError) -> None:
        super().__init__(error.message)
        self.error = error

    @property
    def code(self) -> str:
        return self.error.code


class SubagentStartError(SubagentError):
    """A start refused or abandoned before any child was published; ``error`` says why."""

    @classmethod
    def no_provider(cls, name: str) -> SubagentStartError:
        """No provider is registered under ``name`` (DSH's ``SubagentError`` text)."""
        return cls(StartError(code=NO_PROVIDER, name="SubagentError",
                              message=f'no subagent provider registered for "{name}"'))


class SubagentAbortedError(SubagentStartError):
    """The start was aborted before its child was published (a plain error in DSH)."""

    def __init__(self) -> None:
        super().__init__(StartError(
            code=ABORTED, message="subagent request was aborted before child publication"))


def _check_aborted(signal: AbortSignal | None) -> None:
    """Raise :class:`SubagentAbortedError` when ``signal`` has aborted."""
    if signal is not None and signal.aborted:
        raise SubagentAbortedError()


def _inactive_parent(parent_id: str) -> StartError:
    """The refusal of a start whose parent is (being) disposed (DSH's text)."""
    return StartError(code=INACTIVE_PARENT, message=f'cannot create effect on inactive context: '
                                                   f'agent "{parent_id}" is disposed')


def _owner_disposed(child_id: str) -> StartError:
    """The refusal of a child whose parent was disposed in its setup window (DSH's text, which
    names the agent being set up)."""
    return StartError(code=OWNER_DISPOSED,
                      message=f'agent "{child_id}" setup aborted: owner disposed during setup')


def raise_on_failure(result: object) -> None:
    """Raise :class:`SubagentStartError` for a core refusal (a ``Failure``); else nothing."""
    match result:
        case Failure(error) if isinstance(error, StartError):
            raise SubagentStartError(error)


def unwrap_start(result: Result[T, StartError]) -> T:
    """The value of a core success; :func:`raise_on_failure` then ``unwrap`` otherwise."""
    # Told by its exact class: ``Result`` is an ``ABCMeta`` class, and the start path need not
    # pay for the abstract ``isinstance`` checks of a ``match``.
    if type(result) is Success:
        value: T = result.unwrap()
        return value
    raise_on_failure(result)
    return result.unwrap()


class SubagentHost(Protocol):
    """What the subagent runtime needs of its host (a :class:`~turnfork.shell.Host` is one)."""

    clock: Clock
    ids: IdFactory
    models: ModelRegistry
    tools: ToolRegistry
    sessions: SessionStore
    agents: AgentRegistry
    prompt_sections: PromptSections

    @property
    def subagents(self) -> SubagentRuntimeView:
        """The host's subagent runtime (a :class:`~.registry.SubagentRuntime`)."""

    def attach_subagents(self, runtime: SubagentRuntimeView) -> None:
        """Make ``runtime`` the host's ``subagents`` (raises ``ValueError`` if it has one)."""

    def build_agent(self, session: Session, *, provider: str | None, model: str | None,
                    max_tokens: int | None = None, subagent_depth: int | float | None = None,
                    approval: bool = False, tools_scope: ToolScope | None = None,
                    preamble: tuple[SubagentDescriptorData, ...] = (),
                    approval_policy: ApprovalPolicy | None = None,
                    sections: Iterable[PromptSection] = ()) -> Agent:
        """An agent over ``session`` that is not live yet (publish: ``agents.add``)."""


class SubagentRuntimeView(Protocol):
    """What the providers, the continuation manager and the job registry use of the subagent
    runtime (:class:`~.registry.SubagentRuntime` is the one)."""

    @property
    def host(self) -> SubagentHost: ...
    def get_provider(self, name: str) -> SubagentProvider | None: ...
    def publish(self, provider: str, run: SubagentRunHandle, parent: Agent) -> None: ...
    def runs(self) -> tuple[SubagentRunHandle, ...]: ...
    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None: ...
    def on_release(self, releaser: Callable[[Agent], Awaitable[None]], *,
                   owns: Callable[[Agent], bool]) -> None: ...


class SubagentRunHandle(Protocol):
    """What the runtime reads of any provider's run."""

    @property
    def id(self) -> str: ...
    @property
    def result(self) -> asyncio.Future[SubagentResult]: ...
    @property
    def disposed(self) -> bool: ...
    @property
    def local_agent(self) -> Agent | None: ...
    @property
    def parent(self) -> Agent: ...
    @property
    def label(self) -> str | None: ...
    @property
    def seed_length(self) -> int: ...
    async def dispose(self) -> None: ...


class SubagentProvider(Protocol):
    """A way to run a child: registered by name, handed checked requests by the runtime."""

    @property
    def provider_name(self) -> str: ...
    @property
    def capabilities(self) -> Capabilities: ...
    @property
    def inherits_parent_context(self) -> bool: ...
    async def start(self, runtime: SubagentRuntimeView, request: CheckedRequest, *,
                    parent: Agent,
                    signal: AbortSignal | None) -> SubagentRunHandle:
        """Create, publish and start a child (the runtime already checked the request)."""


@dataclass(frozen=True, slots=True)
class ContinuableRequest:
    """What a provider is asked for a continuable child (DSH ``prepareContinuable``'s
    ``{sessionId, parent, signal}``)."""

    session_id: str
    parent: Agent
    signal: AbortSignal | None = None


@dataclass(frozen=True, slots=True)
class ContinuableSeed:
    """What a continuable child starts from (DSH ``prepareContinuable``'s ``{seed?}``): a fork's
    completed-turn prefix (a view: logs are append-only) and the trace there; a spawn's nothing."""

    events: Sequence[Event] | None = None
    trace: Trace | None = None

    def __len__(self) -> int:
        return 0 if self.events is None else len(self.events)


def _call_each(listeners: Sequence[Callable[..., object]], *args: object, failure: str) -> None:
    """Call each of ``listeners`` (a snapshot) with ``args``; one that raises is reported to the
    running loop's exception handler as ``failure`` and never reaches the caller. A listener
    that returns a coroutine (a coroutine function) has it run as a task, whose failure is
    reported the same way (DSH runs a listener's promise and logs its rejection)."""
    for listener in list(listeners):
        try:
            returned = listener(*args)
        except Exception as error:
            _report(failure, error)
            continue
        if asyncio.iscoroutine(returned):
            try:
                task = asyncio.ensure_future(returned)
            except RuntimeError:  # no loop to run it on
                returned.close()
                continue
            _listener_tasks.add(task)
            task.add_done_callback(lambda done: _listener_done(done, failure))


#: Coroutine listeners' tasks, held until they end (the loop keeps only weak references).
_listener_tasks: set[asyncio.Future[object]] = set()


def _listener_done(task: asyncio.Future[object], failure: str) -> None:
    _listener_tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        _report(failure, task.exception())


def _report(failure: str, error: BaseException | None) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop: nothing to report to
        return
    loop.call_exception_handler({"message": failure, "exception": error})


def _listen(listeners: list[T], listener: T) -> Callable[[], None]:
    """Append ``listener``; returns its remover (idempotent)."""
    listeners.append(listener)
    return lambda: listeners.remove(listener) if listener in listeners else None


def parent_view(parent: Agent) -> ParentView:
    """What the core's plans read of a live parent, read at once (before any await)."""
    session = parent.session
    return ParentView(
        header=session.header,
        options=RuntimeOptions(provider=parent.provider, model=parent.model,
                               max_tokens=parent.max_tokens,
                               subagent_depth=parent.subagent_depth),
        events=session.events, trace=session.trace, completed=session.completed(),
        approval_in_use=parent.approval_composed)


# ---------------------------------------------------------------------------- observers


@dataclass(frozen=True, slots=True)
class _RunRecord:
    """What both lifecycle records say of the run (DSH: runId, provider, id, local)."""

    run: SubagentRunHandle
    #: A fresh id per run (never the child's id).
    run_id: str
    provider: str
    #: The run's id: the child's session id for a local run.
    id: str
    #: Whether the run has a local child agent.
    local: bool
    parent_id: str

    @property
    def child_id(self) -> str:
        return self.id


@dataclass(frozen=True, slots=True)
class SubagentStart(_RunRecord):
    """A run's child was published (DSH ``subagent/start``)."""

    label: str | None
    seed_length: int


@dataclass(frozen=True, slots=True)
class SubagentEnd(_RunRecord):
    """A run settled (DSH ``subagent/end``). ``failure`` is the rejected result's error (then
    ``stop_reason`` is ``error`` and there is no last message)."""

    stop_reason: str
    #: The run's output when it has one (DSH's ``lastAssistantMessage``).
    last_assistant_message: tuple[ContentBlock, ...] | None
    failure: BaseException | None = None


SubagentEvent: TypeAlias = SubagentStart | SubagentEnd
SubagentListener: TypeAlias = Callable[[SubagentEvent], None]
