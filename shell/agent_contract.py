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
    """What an agent needs of its owner (a :class:`~turnfork.shell.Host` is one). The agent
    an owner is told of is typed ``Any``: this module needs nothing of ``agent.py``."""

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

    def retry_policy(self, provider: str) -> RetryPolicy | None:
        """How ``provider``'s failed model requests are retried (``None``: they are not)."""

    def agent_disposed(self, agent: Any) -> None:
        """The agent is disposed and its loop quiet: forget it."""

    async def release_children(self, agent: Any) -> None:
        """Dispose every child ``agent`` started, however it was started."""


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
