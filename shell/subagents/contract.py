"""What the subagent runtime, its providers and its runs agree on: the refusal codes and
errors, what a provider and a run must offer, what the runtime needs of its host, and the
lifecycle records observers get. Imported by the runtime (:mod:`.registry`), the providers and
the continuation manager alike, so none of them imports another to learn it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar

from returns.result import Failure, Result, Success

from ...core import (
    Capabilities,
    CheckedRequest,
    ContentBlock,
    PromptSection,
    StartError,
    SubagentDescriptorData,
    SubagentResult,
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
    from .registry import SubagentRuntime

__all__ = [
    "NO_PROVIDER",
    "ABORTED",
    "DUPLICATE_PROVIDER",
    "INACTIVE_PARENT",
    "SubagentError",
    "SubagentStartError",
    "SubagentAbortedError",
    "raise_on_failure",
    "unwrap_start",
    "SubagentHost",
    "SubagentProvider",
    "SubagentRunHandle",
    "SubagentStart",
    "SubagentEnd",
    "SubagentEvent",
    "SubagentListener",
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
    """The start was aborted before its child was published: nothing was left behind. A plain
    error in DSH (no ``error`` key in the parent's tool result)."""

    def __init__(self) -> None:
        super().__init__(StartError(
            code=ABORTED, message="subagent request was aborted before child publication"))


def raise_on_failure(result: object) -> None:
    """Raise :class:`SubagentStartError` for a core refusal (a ``Failure``); else nothing."""
    match result:
        case Failure(error) if isinstance(error, StartError):
            raise SubagentStartError(error)


def unwrap_start(result: Result[T, StartError]) -> T:
    """The value of a core success; :func:`raise_on_failure` then ``unwrap`` otherwise.

    A success is recognised by its exact class first: ``Result`` being an ``ABCMeta`` class,
    that spares the start path the abstract ``isinstance`` checks of a ``match``.
    """
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
    def subagents(self) -> SubagentRuntime:
        """The host's subagent runtime."""
        ...

    def attach_subagents(self, runtime: SubagentRuntime) -> None:
        """Make ``runtime`` the host's ``subagents`` (raises ``ValueError`` if it has one)."""
        ...

    def build_agent(self, session: Session, *, provider: str | None, model: str | None,
                    max_tokens: int | None = None, subagent_depth: int | float | None = None,
                    approval: bool = False, tools_scope: ToolScope | None = None,
                    preamble: tuple[SubagentDescriptorData, ...] = (),
                    approval_policy: ApprovalPolicy | None = None,
                    sections: Iterable[PromptSection] = ()) -> Agent:
        """An agent over ``session`` that is not live yet (publish: ``agents.add``)."""
        ...


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

    async def start(self, runtime: SubagentRuntime, request: CheckedRequest, *, parent: Agent,
                    signal: AbortSignal | None) -> SubagentRunHandle:
        """Create, publish and start a child (the runtime already checked the request)."""
        ...


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
