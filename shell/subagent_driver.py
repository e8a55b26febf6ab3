"""The fork and spawn providers and the one run driver they share (wire-format §2.10-2.13,
§6.6, §7.1, §7.9).

Rules:

* Fork and spawn differ only in the seed: fork passes the parent's completed-turn prefix as a
  view with the parent's trace at the cut (``Session.completed_prefix()``, O(1): nothing is
  copied or replayed); spawn passes none, and so does fork before the parent's first completed
  turn (its child is then exactly a spawn child).
* Everything read of the parent is read synchronously, before any await; the core's
  :func:`core.plan_child` decides the child (depth, header, options, policy, descriptor,
  prompt sections, tool filter, structured output) or refuses before anything exists.
* The child is built unpublished: its session (header, seed, ``session/end-seed``), the delegated
  policy events, then its prompt sections, tool restriction and structured-output tool in a
  fresh tool scope over the host's global tools (the parent's scope and its restrictions are
  never inherited); approval is pinned to ``never``. The setup window ends with one checkpoint:
  an abort or a cancellation seen there deletes the child's session (and anything persisted)
  and leaves nothing anywhere. Then the child is published (``host.agents``,
  :class:`~shell.subagent_run.SubagentStart`) and given the prompt verbatim.
* The one-shot ``subagent/descriptor`` is appended by a pre-step hook inside the child's first
  turn, after ``turn/start`` and the claim, before its first ``step/start``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..core import (
    ApprovalPolicyData,
    Capabilities,
    ChildPlan,
    Event,
    ParentView,
    RuntimeOptions,
    SandboxModeData,
    SandboxModeEvent,
    StartRequest,
    Trace,
    check_capabilities,
    plan_child,
)
from .abort import AbortSignal
from .agent import Agent
from .host import Host, UnknownProviderError
from .store import SessionNotFoundError
from .subagent_run import (
    StructuredCapture,
    SubagentAbortedError,
    SubagentRun,
    raise_on_failure,
)
from .tools import ToolScope

if TYPE_CHECKING:
    from .subagents import SubagentRuntime

__all__ = [
    "ALL_CAPABILITIES",
    "ForkSeed",
    "InProcessProvider",
    "ForkProvider",
    "SpawnProvider",
    "drive_child",
]

#: What both in-process providers support.
ALL_CAPABILITIES = Capabilities(output_schema=True, depth_limit=True, tool_filter=True,
                                persona=True)


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
        return await drive_child(runtime, self, request, parent, signal)

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
        raise_on_failure(check_capabilities(self.provider_name, self.capabilities, request))
        return self.capture_seed(parent)


class SpawnProvider(InProcessProvider):
    """Children start empty: they see only their prompt."""

    def __init__(self, provider_name: str = "spawn") -> None:
        super().__init__(provider_name)


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


def _install(agent: Agent, plan: ChildPlan) -> StructuredCapture | None:
    for section in plan.sections:
        agent.prompt_sections.set(section.name, section.text, order=int(section.order))
    if plan.tool_filter is not None:
        agent.tools.restrict(plan.tool_filter)
    capture = None
    if plan.structured is not None:
        capture = StructuredCapture(plan.structured)
        capture.install(agent)
    return capture


def _discard(host: Host, child_id: str) -> None:
    """Undo an unpublished child: its live session and anything persisted of it."""
    with contextlib.suppress(SessionNotFoundError):
        host.sessions.delete(child_id)


async def drive_child(runtime: SubagentRuntime, provider: InProcessProvider,
                      request: StartRequest, parent: Agent,
                      signal: AbortSignal | None) -> SubagentRun:
    """The driver both in-process providers share: plan, create unpublished, set up,
    checkpoint, publish, prompt (see the module rules).

    Raises:
        SubagentStartError: the core's plan refused; :class:`SubagentAbortedError` when the
            signal aborted during setup (then nothing is left, as after a cancellation).
        UnknownProviderError: the child's model provider is not registered.
    """
    host = runtime.host
    # Everything read of the parent is read here, synchronously, before any await.
    seed = provider.capture_seed(parent)
    planned = plan_child(_parent_view(parent), request, provider.kind,
                         provider_name=provider.provider_name, child_id=host.ids(),
                         created_at=host.clock(), capabilities=provider.capabilities,
                         known_tools=host.tools.names())
    raise_on_failure(planned)
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
    if seed is not None and seed.trace is parent.session.completed_prefix()[1]:
        # Siblings seeded at the same cut share the parent's history there, computed once.
        session.adopt_history(parent.session.completed_prefix_history)
    try:
        agent = Agent(host, session, provider=options.provider, model=options.model,
                      max_tokens=options.max_tokens, subagent_depth=plan.depth,
                      approval=parent.approval_composed, tools=ToolScope(host.tools),
                      preamble=(plan.descriptor,))
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
    host.agents.add(agent)
    run = SubagentRun(runtime, provider=provider.provider_name, label=request.label,
                      parent=parent, agent=agent, seed_length=seed_length, capture=capture,
                      signal=signal)
    run._begin(plan.prompt)
    return run
