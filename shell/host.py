"""The composition root: the registries a run needs, and the factory for agents
(docs/api-shell-runtime.md, "Composition root")."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from ..core import (
    DEFAULT_MAX_STEPS,
    PERSONA_SECTION_NAME,
    PERSONA_SECTION_ORDER,
    Event,
    PromptSection,
    RetryPolicy,
    SessionHeader,
    SubagentDescriptorData,
    Trace,
)
from .agent import Agent, ApprovalPolicy, Approver, SandboxMode
from .clock import Clock, IdFactory, system_clock, uuid_ids
from .models.base import Model
from .registries import AgentExistsError, AgentRegistry, ModelRegistry, UnknownProviderError
from .session import Session
from .store import MemorySessionStore, SessionStore
from .subagents import SubagentRuntime
from .subagents.continuation import delegated_resume
from .subagents.contract import SubagentRuntimeView
from .telemetry import Telemetry
from .tools import PromptSections, ToolRegistry, ToolScope

__all__ = ["Host", "ModelRegistry", "AgentRegistry", "UnknownProviderError", "AgentExistsError"]

#: The header fields ``header_meta`` may set: all but the format version and the identity.
_HEADER_META_KEYS = frozenset(SessionHeader.__struct_fields__) - {"version", "id", "created_at"}


class Host:
    """Owns what a run needs (the arguments: docs/api-shell-runtime.md)."""

    def __init__(self, *, store: SessionStore | None = None, clock: Clock | None = None,
                 ids: IdFactory | None = None, approver: Approver | None = None,
                 session_titles: bool = True, sandbox_mode: SandboxMode | None = None,
                 approval_default: ApprovalPolicy = "ask",
                 tracer_provider: Any | None = None,
                 workspace_root: str | None = None) -> None:
        self.clock: Clock = clock or system_clock
        self.ids: IdFactory = ids or uuid_ids
        self.models = ModelRegistry()
        self.tools = ToolRegistry()
        self.sessions: SessionStore = store or MemorySessionStore(clock=self.clock)
        self.agents = AgentRegistry()
        self.prompt_sections = PromptSections()
        self.approver = approver
        self.session_titles = session_titles
        self.sandbox_mode = sandbox_mode
        self.approval_default: ApprovalPolicy = approval_default
        self.telemetry = Telemetry(tracer_provider)
        self.workspace_root = None if workspace_root is None else os.path.abspath(workspace_root)
        self._subagents: SubagentRuntimeView | None = None

    @property
    def subagents(self) -> SubagentRuntime:
        """The subagent runtime: providers, live runs, observers (created on first use)."""
        if self._subagents is None:
            SubagentRuntime(self)
        assert isinstance(self._subagents, SubagentRuntime)
        return self._subagents

    def attach_subagents(self, runtime: SubagentRuntimeView) -> None:
        """Make ``runtime`` this host's :attr:`subagents` (``ValueError`` if it has one)."""
        if self._subagents is not None:
            raise ValueError("this host already has a subagent runtime")
        self._subagents = runtime

    def create_agent(self, session_id: str | None = None, *, provider: str, model: str,
                     max_tokens: int | None = None, system: str | None = None,
                     seed: Sequence[Event] | None = None, seed_trace: Trace | None = None,
                     header_meta: Mapping[str, Any] | None = None, cwd: str | None = None,
                     subagent_depth: int | None = None, approval: bool = False,
                     tools_scope: ToolScope | None = None,
                     max_steps: int | None = DEFAULT_MAX_STEPS) -> Agent:
        """An agent over a new session, or over one the store holds (resumed when no ``seed``
        is given; a delegated child through ``delegated_resume``); see the docs."""
        if provider not in self.models:
            raise UnknownProviderError(provider)
        sid = session_id or self.ids()
        if sid in self.agents:
            raise AgentExistsError(f"an agent with id {sid!r} is already live")
        meta = dict(header_meta or {})
        if cwd is not None:
            meta["cwd"] = cwd
        unknown = sorted(set(meta) - _HEADER_META_KEYS)
        if unknown:
            raise ValueError(f"unknown header field(s): {', '.join(unknown)}")
        if "cwd" in meta and not os.path.isabs(meta["cwd"]):
            raise ValueError(f"a session cwd must be an absolute path, not {meta['cwd']!r}")
        resume = seed is None and session_id is not None and self.sessions.exists(sid)
        restore: Callable[[Agent], None] | None = None
        if resume:
            if meta or seed_trace is not None:
                raise ValueError(f"session {sid!r} exists: header meta and seed_trace apply "
                                 "only to a new session")
            was_live = self.sessions.get(sid) is not None
            session = self.sessions.get(sid) or self.sessions.load(sid, clock=self.clock)
            try:
                tools_scope, restore = delegated_resume(self, session, tools_scope)
            except BaseException:
                if not was_live:
                    self.sessions.release(sid)
                raise
        else:
            header = SessionHeader(id=sid, created_at=self.clock(), **meta)
            session = self.sessions.create(header, seed=seed, seed_trace=seed_trace,
                                           clock=self.clock)
        if not session.trace.is_closed:
            if not resume:
                self.sessions.release(sid)
            raise ValueError(f"session {sid!r}: the seed must be balanced (no open turn, step "
                             "or tool call)")
        agent = self.build_agent(session, provider=provider, model=model,
                                 max_tokens=max_tokens, subagent_depth=subagent_depth,
                                 approval=approval, tools_scope=tools_scope, max_steps=max_steps)
        if system:
            agent.prompt_sections.set(PERSONA_SECTION_NAME, system, order=PERSONA_SECTION_ORDER)
        if restore is not None:
            restore(agent)
        self.agents.add(agent)
        return agent

    def build_agent(self, session: Session, *, provider: str | None, model: str | None,
                    max_tokens: int | None = None, subagent_depth: int | float | None = None,
                    approval: bool = False, tools_scope: ToolScope | None = None,
                    preamble: tuple[SubagentDescriptorData, ...] = (),
                    max_steps: int | None = DEFAULT_MAX_STEPS,
                    approval_policy: ApprovalPolicy | None = None,
                    sections: Iterable[PromptSection] = ()) -> Agent:
        """An agent over ``session`` that is not live yet: publish it with
        ``host.agents.add(agent)``, or delete its session (what an unpublished child is)."""
        return Agent(self, session, provider=provider, model=model, max_tokens=max_tokens,
                     subagent_depth=subagent_depth, approval=approval,
                     tools=tools_scope if tools_scope is not None else ToolScope(self.tools),
                     preamble=preamble, max_steps=max_steps, titles=self.session_titles,
                     approval_policy=approval_policy, sections=sections)

    def model(self, provider: str) -> Model:
        return self.models.get(provider)

    def retry_policy(self, provider: str) -> RetryPolicy | None:
        return self.models.retry_policy(provider)

    def agent_disposed(self, agent: Agent) -> None:
        self.agents.remove(agent)
        self.sessions.release(agent.id)

    async def release_children(self, agent: Agent) -> None:
        if self._subagents is not None:
            await self.subagents.release(agent)

    async def aclose(self) -> None:
        """Dispose every live subagent run, then every live agent."""
        if self._subagents is not None:
            await self.subagents.aclose()
        await asyncio.gather(*(agent.dispose() for agent in self.agents.list()))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.aclose()
