"""What an agent and its owner agree on: the owner's services, the agent's errors, and the end
of ``when_idle`` (an agent's, or a stand-in's running one elsewhere), apart from the loop."""

from __future__ import annotations

from typing import Any, Literal, Protocol, TypeAlias

from ..core import RetryPolicy
from .approval import ApprovalPolicy, Approver
from .clock import Clock, IdFactory
from .models.base import Model
from .session import Session
from .telemetry import Telemetry
from .tools import PromptSections

__all__ = [
    "AgentServices", "AgentDisposedError", "AgentLoopError", "SandboxMode", "IdleReporter",
    "report_idle",
]

SandboxMode: TypeAlias = Literal["read-only", "workspace-write", "danger-full-access"]


class AgentServices(Protocol):
    """What an agent needs of its owner (a :class:`~turnfork.shell.Host` is one); the agent is
    typed ``Any`` so that this module needs nothing of ``agent.py``."""

    clock: Clock
    ids: IdFactory
    prompt_sections: PromptSections
    approver: Approver | None
    sandbox_mode: SandboxMode | None
    approval_default: ApprovalPolicy
    telemetry: Telemetry
    workspace_root: str | None

    def model(self, provider: str) -> Model: ...

    def retry_policy(self, provider: str) -> RetryPolicy | None: ...

    def agent_disposed(self, agent: Any) -> None:
        """The agent is disposed and its loop quiet: forget it."""

    async def release_children(self, agent: Any) -> None: ...


class AgentDisposedError(RuntimeError):
    """The agent was disposed; it takes no more input."""


class AgentLoopError(RuntimeError):
    """The loop itself failed (not a model or tool failure, which end the turn instead)."""


class IdleReporter(Protocol):
    """What :func:`report_idle` needs: an agent or a stand-in running one elsewhere."""

    session: Session
    #: A failure of the loop itself, kept until it is raised once.
    failure: BaseException | None

    @property
    def id(self) -> str: ...


async def report_idle(owner: IdleReporter, upto: int | None = None) -> None:
    """The end of ``when_idle`` once the loop is quiet (docs/api-shell-runtime.md): a turn
    reported done has reached the disk, not only the file."""
    if owner.failure is None:
        try:
            await owner.session.wait_durable(upto)
        except OSError as exc:
            owner.failure = exc
    if owner.failure is not None:
        failure, owner.failure = owner.failure, None
        raise AgentLoopError(f"agent {owner.id}: {failure}") from failure
