"""The fork and spawn providers and the one run driver they share (wire-format §2.10-2.13,
§6.6, §7.1, §7.9; DSH's subagent-{fork,spawn}-in-process and subagent-in-process-driver).
Fork and spawn differ only in their kind (a fork child is seeded with the parent's
completed-turn prefix). The driver carries out the core's plan (:func:`turnfork.core.plan_child`)
and decides nothing itself: it reads the parent before any await, builds the child unpublished
and ends that window with one checkpoint (an abort, a cancellation or the parent's disposal
there leaves nothing). Its steps: docs/api-shell-subagents.md.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Literal

import msgspec

from ...core import (
    ApprovalPolicyEvent,
    Capabilities,
    CheckedRequest,
    ChildPlan,
    ContinuablePlan,
    HistorySnapshot,
    ParentView,
    PromptSection,
    SandboxModeData,
    SandboxModeEvent,
    cache_preserving_context,
    plan_child,
)
from ..abort import AbortSignal
from ..agent import Agent
from ..session import Session
from ..store import SessionNotFoundError
from ..tools import Tool, ToolScope
from .contract import (
    ContinuableRequest,
    ContinuableSeed,
    SubagentHost,
    SubagentRuntimeView,
    SubagentStartError,
    _check_aborted,
    _owner_disposed,
    parent_view,
    unwrap_start,
)
from .run import StructuredCapture, SubagentRun

__all__ = [
    "ALL_CAPABILITIES", "ContinuableRequest", "ContinuableSeed",
    "InProcessProvider", "ForkProvider", "SpawnProvider",
    "ChildSetup", "parent_view", "plan_setup", "seed_history", "create_child_session",
    "configure_child", "setup_checkpoint", "discard_child", "drive_child",
]

#: What both in-process providers support.
ALL_CAPABILITIES = Capabilities(output_schema=True, depth_limit=True, tool_filter=True,
                                persona=True)


class _ProviderBase:
    """What the in-process and the Ray providers share: a name, every capability, a kind."""

    kind: Literal["fork", "spawn"] = "spawn"
    #: Whether fork children keep their parent's request head (see :class:`ForkProvider`).
    cache_preserving: bool = False

    def __init__(self, provider_name: str) -> None:
        if not provider_name:
            raise ValueError("a subagent provider name must not be empty")
        self.provider_name = provider_name
        self.capabilities = ALL_CAPABILITIES

    @property
    def inherits_parent_context(self) -> bool:
        return self.kind == "fork"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider_name={self.provider_name!r})"


class InProcessProvider(_ProviderBase):
    """Children as agents of the same host, through the shared driver."""

    def start(self, runtime: SubagentRuntimeView, request: CheckedRequest, *, parent: Agent,
              signal: AbortSignal | None) -> Coroutine[Any, Any, SubagentRun]:
        # The driver's coroutine handed on, not awaited in one more of its own.
        return drive_child(runtime.host, self, request, parent, signal)

    def prepare_continuable(self, request: ContinuableRequest) -> ContinuableSeed:
        """What a continuable child starts from, captured now (offering this is the capability)."""
        if self.kind == "spawn":
            return ContinuableSeed()
        prefix, trace = request.parent.session.completed_prefix()
        return ContinuableSeed(events=prefix, trace=trace) if len(prefix) else ContinuableSeed()


class ForkProvider(InProcessProvider):
    """Children start from the parent's completed turns. ``cache_preserving=True`` (not DSH's):
    a seeded child's system prompt and tool list are its parent's, its own persona, filter and
    schema ride in its runtime context (:mod:`turnfork.core.delegation.cache_fork`)."""

    kind: Literal["fork", "spawn"] = "fork"

    def __init__(self, provider_name: str = "fork", *, cache_preserving: bool = False) -> None:
        super().__init__(provider_name)
        self.cache_preserving = cache_preserving


class SpawnProvider(InProcessProvider):
    """Children start empty: they see only their prompt."""

    def __init__(self, provider_name: str = "spawn") -> None:
        super().__init__(provider_name)


# ---------------------------------------------------------------------------- the driver


def discard_child(host: SubagentHost, child_id: str) -> None:
    """Undo an unpublished child (its live session and anything persisted)."""
    with contextlib.suppress(SessionNotFoundError):
        host.sessions.delete(child_id)


class ChildSetup(msgspec.Struct, frozen=True):
    """The core's plan and what was read of the parent with it (before any await); a provider
    that runs the child elsewhere ships it and calls :func:`configure_child` there."""

    plan: ChildPlan
    #: Whether the parent composes an approval service (the child then gets its sentence).
    approval: bool
    #: The parent's deployment sections (not its runtime context), then the plan's.
    sections: tuple[PromptSection, ...]
    parent: ParentView | None = None
    #: A cache-preserving child's tool list: its parent's.
    listed: tuple[Tool, ...] | None = None

    def capture(self) -> StructuredCapture | None:
        structured = self.plan.structured
        return (None if structured is None
                else StructuredCapture(structured, in_answer=self.listed is not None))


def plan_setup(host: SubagentHost, request: CheckedRequest, parent: Agent,
               signal: AbortSignal | None, *, kind: Literal["fork", "spawn"],
               provider_name: str, cache_preserving: bool = False) -> ChildSetup:
    """Refuse an aborted start, then plan the child with the core (a refusal raises)."""
    _check_aborted(signal)
    # The known tools matter only to a tool filter (and checking the collection costs).
    known = None if request.request.tool_filter is None else host.tools.names()
    view = parent_view(parent)
    plan = unwrap_start(plan_child(view, request, kind, provider_name=provider_name,
                                   child_id=host.ids(), created_at=host.clock(),
                                   known_tools=known))
    deployment = parent.prompt_sections.sections()
    if cache_preserving and plan.seed is not None:
        context = (*plan.context, *cache_preserving_context(plan.persona, plan.structured))
        kept, listed = [s for s in deployment if s.kind == "section"], parent.tools.tools()
    else:
        context, listed = plan.context, None
        kept = [section for section in (*deployment, *plan.sections)
                if section.kind == "section" or section in context]
    return ChildSetup(plan=plan, approval=parent.approval_composed,
                      sections=(*kept, *context), parent=view, listed=listed)


def seed_history(parent: Agent, plan: ChildPlan, view: ParentView | None = None,
                 ) -> Callable[[], HistorySnapshot] | None:
    """The parent's model history at the cut, for a child seeded exactly there (siblings at
    one cut share it); ``None`` otherwise."""
    kept = (parent.session.completed_prefix()[1] if view is None
            else None if view.completed is None else view.completed.trace)
    if plan.seed_trace is not None and plan.seed_trace is kept:
        return parent.session.completed_prefix_history
    return None


def create_child_session(host: SubagentHost, plan: ChildPlan | ContinuablePlan,
                         history: Callable[[], HistorySnapshot] | None = None) -> Session:
    """The child's session, one-shot or continuable, unpublished (``history``: its model
    history at the seed, when that is the parent's at the cut); on failure nothing is left."""
    session = host.sessions.create(plan.header, seed=plan.seed, seed_trace=plan.seed_trace,
                                   clock=host.clock)
    try:
        if history is not None:
            session.adopt_history(history)
        for policy in plan.policy if isinstance(plan, ChildPlan) else plan.terms.policy:
            if isinstance(policy, SandboxModeData):
                session.append(SandboxModeEvent, policy)
            else:
                session.append(ApprovalPolicyEvent, policy)
    except BaseException:
        discard_child(host, session.id)
        raise
    return session


def configure_child(host: SubagentHost, session: Session, setup: ChildSetup, *,
                    descriptor_logged: bool = False) -> tuple[Agent, StructuredCapture | None]:
    """The child agent over ``session``, unpublished; no descriptor preamble when
    ``descriptor_logged`` (a child rebuilt from a log that has it)."""
    plan = setup.plan
    options = plan.options
    capture = setup.capture()
    # Built complete: its scope, policy and sections are passed in, nothing is patched after.
    scope = ToolScope(host.tools, () if capture is None else capture.tools, plan.tool_filter,
                      setup.listed, guards=() if capture is None else capture.guards)
    agent = host.build_agent(
        session, provider=options.provider, model=options.model,
        max_tokens=options.max_tokens, subagent_depth=plan.depth, approval=setup.approval,
        tools_scope=scope, preamble=() if descriptor_logged else (plan.descriptor,),
        # Pinned whether or not an approval service is composed: a child never asks.
        approval_policy="never", sections=setup.sections)
    if capture is not None:
        capture.installed(agent)
    return agent, capture


async def setup_checkpoint(child_id: str, parent: Agent, signal: AbortSignal | None) -> None:
    """The end of the unpublished setup window: an abort, the parent's disposal or a
    cancellation seen here raises."""
    await _one_turn()
    _end_of_setup(child_id, parent, signal)


@types.coroutine
def _one_turn() -> Generator[None, None, None]:
    # What ``asyncio.sleep(0)`` does, without its coroutine.
    yield


def _end_of_setup(child_id: str, parent: Agent, signal: AbortSignal | None) -> None:
    _check_aborted(signal)
    if parent.disposed:
        raise SubagentStartError(_owner_disposed(child_id))


async def drive_child(host: SubagentHost, provider: InProcessProvider, request: CheckedRequest,
                      parent: Agent, signal: AbortSignal | None) -> SubagentRun:
    """Plan, build unpublished, checkpoint, publish, run."""
    setup = plan_setup(host, request, parent, signal, kind=provider.kind,
                       provider_name=provider.provider_name,
                       cache_preserving=provider.cache_preserving)
    plan = setup.plan
    session = create_child_session(host, plan, seed_history(parent, plan, setup.parent))
    try:
        agent, capture = configure_child(host, session, setup)
        # The setup checkpoint (:func:`setup_checkpoint`), without its coroutines.
        await _one_turn()
        _end_of_setup(plan.header.id, parent, signal)
    except BaseException:
        discard_child(host, session.id)
        raise
    host.agents.add(agent)
    return SubagentRun(provider=provider.provider_name, label=request.request.label,
                       parent=parent, child=agent,
                       seed_length=0 if plan.seed is None else len(plan.seed),
                       prompt=plan.prompt, capture=capture, signal=signal)
