"""The continuation manager: continuable children a parent can talk to again (DSH's
``SubagentContinuationManager``, packages/subagent/subagent/src/continuation.ts). Every rule it
applies is the core's (:mod:`turnfork.core.continuation`); what it keeps is the live state:
one :class:`Activation` per resident child, whose durable session outlives it. Residency is
derived, never stored (running, waiting on its own resident children, or settled: disposed,
and cold-resumed from its log by the next follow-up). Authority, roll-backs, the teardown
order and listing: docs/api-shell-subagents.md, "Continuable children".
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, TypeVar

from returns.result import Failure

from ...core import (
    ACTIVATION_TEARDOWN_FAILED,
    MALFORMED_DESCRIPTOR,
    CancelParent,
    CancelUser,
    ContentBlock,
    ContinuableStart,
    ListingSlot,
    MessageSource,
    PromptSection,
    ResumeTerms,
    RuntimeOptions,
    SessionHeader,
    StartError,
    SubagentResult,
    TextBlock,
    ToolRestriction,
    UserMessage,
    cache_preserving_context,
    check_continuable,
    child_identity,
    epoch_stop_reason,
    final_assistant_output,
    listing_slots,
    plan_continuable,
    refusal,
    report_message,
    resume_terms,
    same_lifecycle,
    settlement_notice,
    teardown_failure_text,
    trace_log,
)
from ..abort import AbortSignal
from ..agent import Agent, failure_of
from ..clock import IdFactory
from ..store import SessionNotFoundError
from ..tools import ToolScope
from .contract import (
    ContinuableRequest,
    ContinuableSeed,
    SubagentAbortedError,
    SubagentError,
    SubagentHost,
    SubagentRuntimeView,
    SubagentStartError,
    _check_aborted,
    _inactive_parent,
    _listen,
    _owner_disposed,
    parent_view,
)
from .providers import create_child_session, discard_child

if TYPE_CHECKING:
    from ..logfile import LoadedLog
    from ..session import Session

__all__ = [
    "Activation", "AncestorAuthority", "ContinuableSetup", "ContinuableStarted",
    "ContinuationManager", "InterruptAuthority", "ListedChild", "ListedDiagnostic",
    "PersistentStore", "ReportDelivery", "UserAuthority",
    "apply_resume_terms", "delegated_resume", "delegated_resume_terms", "resumed_scope",
]

_log = logging.getLogger(__name__)

ReportDelivery: TypeAlias = Literal["next-step", "quiet"]
#: A contribution installed in every new Activation's unpublished creation window (fresh or
#: resumed): ``(child agent) -> undo``. The report tool is one.
ContinuableSetup: TypeAlias = Callable[[Agent], Callable[[], None]]


T = TypeVar("T")


class PersistentStore(Protocol):
    """What continuable children need of a store beyond ``SessionStore``: ``inspect`` a
    session without taking it, and (optionally) read its ``header``; either may be awaitable."""

    def inspect(self, session_id: str) -> LoadedLog | Awaitable[LoadedLog]: ...
    def header(self, session_id: str) -> SessionHeader | Awaitable[SessionHeader]: ...


@dataclass(frozen=True, slots=True)
class ContinuableStarted:
    """A continuable start, accepted: the child's durable id and its first message's id."""

    child_id: str
    message_id: str


@dataclass(frozen=True, slots=True)
class UserAuthority:
    """A human addressing a child through its durable parent's session id."""

    parent_session_id: str


@dataclass(frozen=True, slots=True)
class AncestorAuthority:
    """An agent interrupting a descendant: it must be an exact live ancestor on its lineage."""

    agent: Agent


InterruptAuthority: TypeAlias = UserAuthority | AncestorAuthority


@dataclass(frozen=True, slots=True)
class ListedChild:
    """A child of a listing (``live``: DSH's ``activity: running``)."""

    id: str
    mode: Literal["one-shot", "continuable"]
    label: str | None
    live: bool
    parent: str
    depth: int
    created_at: int
    has_children: bool = False


@dataclass(frozen=True, slots=True)
class ListedDiagnostic:
    """A child whose log could not be read or has no valid identity."""

    id: str
    reason: Literal["corrupt", "unsupported", "unavailable"]
    parent: str
    depth: int
    created_at: int


@dataclass(eq=False)
class Activation:
    """One resident continuable child, and the run of its epoch's lifecycle records."""

    manager: ContinuationManager
    child_id: str
    parent_session: str
    provider: str
    agent: Agent
    #: The exact live agents on its lineage at materialization, itself included (interrupt
    #: authority).
    ancestry: tuple[Agent, ...]
    parent: Agent
    label: str | None
    seed_length: int
    #: Log length when the epoch began: the epoch's own events come after it.
    boundary: int = 0
    #: Continuable children this one started that are still owned (block settlement): a
    #: settling child leaves the resident map before its notice, and this after it.
    owned: set[str] = field(default_factory=set)
    #: The memoized teardown; its presence is the admission cutoff.
    disposal: asyncio.Future[BaseException | None] | None = None
    #: The teardowns of its children that its own began.
    children: list[asyncio.Future[BaseException | None]] = field(default_factory=list)
    #: Whether any delivery was accepted (a notice is owed then).
    announced: bool = False
    poke: asyncio.Event = field(default_factory=asyncio.Event)
    undo: list[Callable[[], None]] = field(default_factory=list)
    watcher: asyncio.Task[None] | None = None
    #: Settles with the epoch's stop reason and closing message.
    result: asyncio.Future[SubagentResult] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())

    # -- the run handle the lifecycle observers see

    @property
    def id(self) -> str:
        return self.child_id

    @property
    def disposed(self) -> bool:
        return self.disposal is not None and self.disposal.done()

    @property
    def local_agent(self) -> Agent:
        return self.agent

    async def dispose(self) -> None:
        """Tear it down as a drain does; ``ACTIVATION_TEARDOWN_FAILED`` is raised after."""
        failure = await self.manager._dispose(self)
        if failure is not None:
            raise failure

    def __repr__(self) -> str:
        return f"Activation(child_id={self.child_id!r}, provider={self.provider!r})"


def _chain(error: BaseException) -> str:
    return failure_of(error).message


def delegated_resume_terms(session: Session) -> ResumeTerms | None:
    """What resuming ``session`` must restore when delegation created it (else ``None``);
    ``ValueError`` when its log does not record them (resuming would drop the restriction)."""
    header = session.header
    if header.origin != "subagent":
        return None
    terms = resume_terms(header, session.events)
    if isinstance(terms, Failure):
        if terms.failure().code == MALFORMED_DESCRIPTOR:
            raise ValueError(f"session {header.id!r}: {terms.failure().message}")
        parent = header.parent_session
        raise ValueError(
            f"session {header.id!r} is a one-shot subagent of {parent!r}: its log does not "
            "record the tool restriction its delegation imposed, so it cannot be resumed as an "
            "agent (only a continuable child can be resumed)")
    return terms.unwrap()


def apply_resume_terms(agent: Agent, terms: ResumeTerms) -> None:
    """Restore a resumed child's approval policy and own sections (tools: :func:`resumed_scope`)."""
    agent.approval_policy = terms.approval_policy
    for section in (*terms.sections, *terms.context):
        agent.prompt_sections.add(section)


def resumed_scope(host: SubagentHost, terms: ResumeTerms, scope: ToolScope | None = None,
                  ) -> ToolScope:
    """``scope`` (or a fresh one over the host's tools) narrowed by the recorded tool filter."""
    if scope is None:
        return ToolScope(host.tools, restriction=terms.tool_filter)
    if terms.tool_filter is not None:
        scope.restrict(terms.tool_filter)
    return scope


def delegated_resume(host: SubagentHost, session: Session, scope: ToolScope | None,
                     ) -> tuple[ToolScope | None, Callable[[Agent], None]]:
    """How ``host.create_agent`` resumes ``session``: the scope to build it with, and what to
    restore on it once built."""
    terms = delegated_resume_terms(session)
    if terms is None:
        return scope, lambda agent: None
    return resumed_scope(host, terms, scope), lambda agent: apply_resume_terms(agent, terms)


class ContinuationManager:
    """Continuable children of the agents of one host (``host.subagents.continuation``)."""

    def __init__(self, runtime: SubagentRuntimeView) -> None:
        self.runtime = runtime
        self.host: SubagentHost = runtime.host
        self._activations: dict[str, Activation] = {}
        self._setups: list[ContinuableSetup] = []
        self._draining = False
        #: Exact live roots whose descendants are being drained (admission closed below them).
        self._draining_roots: list[Agent] = []
        #: Unpublished creation windows in flight (a drain waits for them).
        self._materializing: set[asyncio.Future[None]] = set()
        #: One lock per child id, kept only while held or awaited (so weakly here).
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = \
            weakref.WeakValueDictionary()
        #: Where fresh child ids come from (default: the host's id factory).
        self.child_ids: IdFactory = runtime.host.ids

    # ------------------------------------------------------------------ composition

    def register_setup(self, setup: ContinuableSetup) -> Callable[[], None]:
        """Install ``setup`` in every later Activation's creation window; returns the remover."""
        return _listen(self._setups, setup)

    def _persistence(self) -> PersistentStore:
        store = self.host.sessions
        if not callable(getattr(store, "inspect", None)):
            raise SubagentError(refusal("no-persistence"))
        return store  # type: ignore[return-value]

    # ------------------------------------------------------------------ admission

    def _lineage(self, agent: Agent) -> list[Agent]:
        """``agent`` and its live ancestors, by the durable parent edge (cycle-safe)."""
        chain: list[Agent] = []
        current: Agent | None = agent
        while current is not None and all(current is not seen for seen in chain):
            chain.append(current)
            parent_id = current.session.header.parent_session
            current = self.host.agents.get(parent_id) if isinstance(parent_id, str) else None
        return chain

    def _admit(self, agent: Agent) -> None:
        if self._draining:
            raise SubagentError(refusal("draining"))
        self._draining_roots = [root for root in self._draining_roots
                                if self.host.agents.get(root.id) is root]
        for member in self._lineage(agent):
            if any(member is root for root in self._draining_roots):
                raise SubagentError(refusal("draining-below", member.id))

    def _closing(self, agent: Agent) -> bool:
        """Whether ``agent``'s own teardown (or its lineage's) already began."""
        if self._draining or agent.disposed:
            return True
        return any(((owner := self._owner_of(member)) is not None and owner.disposal is not None)
                   or any(member is root for root in self._draining_roots)
                   for member in self._lineage(agent))

    def _owner_of(self, parent: Agent) -> Activation | None:
        activation = self._activations.get(parent.id)
        return activation if activation is not None and activation.agent is parent else None

    # ------------------------------------------------------------------ start

    async def start_continuable(self, provider: str, request: ContinuableStart, *,
                                parent: Agent, signal: AbortSignal | None = None,
                                child_id: str | None = None) -> ContinuableStarted:
        """Start a continuable child of ``parent`` with the provider registered as ``provider``;
        returns once its first prompt is accepted (refusals and roll-backs: the API doc)."""
        self._admit(parent)
        self._persistence()
        if parent.disposed:
            raise SubagentError(_inactive_parent(parent.id))
        found = self.runtime.get_provider(provider)
        if found is None:
            raise SubagentError(SubagentStartError.no_provider(provider).error)
        prepare = getattr(found, "prepare_continuable", None)
        if not callable(prepare):
            raise SubagentError(refusal("no-capability", provider))
        checked = check_continuable(parent_view(parent), request, provider_name=provider,
                                    known_tools=self.host.tools.names())
        if isinstance(checked, Failure):
            raise SubagentError(checked.failure())
        terms = checked.unwrap()
        sid = child_id or self.child_ids()
        if sid in self.host.agents or self.host.sessions.exists(sid):
            raise SubagentError(refusal("duplicate", sid))
        _check_aborted(signal)
        seed: ContinuableSeed = prepare(ContinuableRequest(session_id=sid, parent=parent,
                                                           signal=signal))
        plan = plan_continuable(terms, seed=seed.events, seed_trace=seed.trace, child_id=sid,
                                created_at=self.host.clock())
        # The descriptor is model-hidden: a child seeded at the parent's cut has the parent's
        # history there, computed once for every child seeded there.
        session = create_child_session(
            self.host, plan, parent.session.completed_prefix_history
            if seed.trace is not None and seed.trace is parent.session.completed().trace
            else None)
        try:
            agent = self._build_child(
                session, parent, terms.options, terms.depth, request.tool_filter,
                provider=provider, seeded=seed.events is not None, approval_policy="never",
                own=(terms.sections, terms.context, request.persona))
            activation = await self._materialize(
                agent, parent, signal, provider=provider, label=request.label,
                seed_length=plan.seed_length)
            message = UserMessage(content=request.prompt, source=MessageSource(kind="user"),
                                  id=self.host.ids())
            await self._deliver(activation, parent, message, signal, fresh=True)
        except BaseException:
            discard_child(self.host, sid)  # nothing of a child that was not started is left
            raise
        return ContinuableStarted(child_id=sid, message_id=message.id)

    async def _deliver(self, activation: Activation, parent: Agent, message: UserMessage,
                       signal: AbortSignal | None, *, fresh: bool) -> None:
        """Queue ``message`` as the child's next turn after the final, await-free admission
        (what arrived meanwhile wins). A freshly published Activation gets its first message
        or is disposed: an abort, a drain or the parent's teardown that an observer of its start
        caused wins here."""
        try:
            _check_aborted(signal)
            self._admit(parent)
            if activation.disposal is not None:
                raise SubagentError(refusal("closing-message", activation.child_id))
            self._authorize(parent, activation.child_id, activation.parent_session)
            owner = self._owner_of(parent)
            if owner is not None and owner.disposal is not None:
                raise SubagentError(refusal("closing-parent", parent.id))
            activation.agent.followup(message)
        except BaseException:
            if fresh:
                with contextlib.suppress(Exception):
                    await self._dispose(activation)
            raise
        activation.announced = True
        activation.poke.set()

    def _build_child(self, session: Session, parent: Agent, options: RuntimeOptions,
                     depth: int | None, tool_filter: ToolRestriction | None, *, provider: str,
                     seeded: bool, approval_policy: Literal["ask", "never"],
                     own: tuple[tuple[PromptSection, ...], tuple[PromptSection, ...],
                                str | None]) -> Agent:
        """A continuable child's agent, fresh or resumed, built complete: the parent's
        deployment sections (its persona among them; not its runtime context), then the
        child's own (``own``: its sections, runtime context and persona)."""
        # A seeded child of a provider made cache-preserving (a ForkProvider option); a
        # resumed child follows the provider registered under its descriptor's name now.
        cached = seeded and getattr(self.runtime.get_provider(provider), "cache_preserving",
                                    False) is True
        sections, context, persona = own
        if cached:  # the runtime context alone, the persona moved into it
            sections, context = (), (*context, *cache_preserving_context(persona, None))
        deployment = (s for s in parent.prompt_sections.sections() if s.kind == "section")
        return self.host.build_agent(
            session, provider=options.provider, model=options.model,
            max_tokens=options.max_tokens, subagent_depth=depth,
            approval=parent.approval_composed, approval_policy=approval_policy,
            tools_scope=ToolScope(self.host.tools, restriction=tool_filter,
                                  listed=parent.tools.tools() if cached else None),
            sections=(*deployment, *sections, *context))

    async def _materialize(self, agent: Agent, parent: Agent, signal: AbortSignal | None, *,
                           provider: str, label: str | None, seed_length: int,
                           resuming: bool = False) -> Activation:
        """The unpublished creation window of a built child, fresh or resumed (a drain waits
        for it): set up, checkpointed, published; undone on any failure."""
        window: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._materializing.add(window)
        undo: list[Callable[[], None]] = []
        try:
            for setup in list(self._setups):
                undo.append(setup(agent))
            # The end of the window: whatever arrived meanwhile is honoured.
            await asyncio.sleep(0)
            _check_aborted(signal)
            if resuming and self.host.agents.get(parent.id) is not parent:
                raise SubagentError(refusal("exact-parent", agent.id))
            if parent.disposed:
                raise SubagentError(_owner_disposed(agent.id))
            self._admit(parent)
            owner = self._owner_of(parent)
            if owner is not None and owner.disposal is not None:
                raise SubagentError(refusal("closing-parent", parent.id))
            return await self._publish(agent, parent, provider, label=label,
                                       seed_length=seed_length, undo=undo)
        except BaseException:
            _undo(undo)
            raise
        finally:
            self._materializing.discard(window)
            if not window.done():
                window.set_result(None)

    async def _publish(self, agent: Agent, parent: Agent, provider: str, *, label: str | None,
                       seed_length: int, undo: list[Callable[[], None]]) -> Activation:
        """Make the child resident and observed (``SubagentStart``); a publication that fails
        rolls it back with no lifecycle (the caller drops a fresh child's session)."""
        owner = self._owner_of(parent)
        ancestry = (agent, *(owner.ancestry if owner is not None else self._lineage(parent)))
        self.host.agents.add(agent)
        activation = Activation(
            manager=self, child_id=agent.id, parent_session=parent.id, provider=provider,
            agent=agent, ancestry=ancestry, parent=parent, label=label,
            seed_length=seed_length, boundary=len(agent.session.events), undo=undo)
        self._activations[agent.id] = activation
        if owner is not None:
            owner.owned.add(agent.id)
        activation.undo.append(_listen(agent.session.listeners,
                                      lambda events: activation.poke.set()))
        try:
            self.runtime.publish(provider, activation, parent)
        except BaseException:
            unpublished: asyncio.Future[BaseException | None] = \
                asyncio.get_running_loop().create_future()
            unpublished.set_result(None)
            activation.disposal = unpublished  # the cutoff; the runtime forgets the run
            self._evict(activation)
            self._release(activation)
            with contextlib.suppress(Exception):
                await agent.dispose()
            self.host.sessions.release(agent.id)
            raise
        activation.watcher = asyncio.get_running_loop().create_task(
            self._watch(activation), name=f"continuable:{agent.id}")
        return activation

    # ------------------------------------------------------------------ delivery

    async def followup(self, parent: Agent, child_id: str,
                       content: Sequence[ContentBlock] | str, *,
                       source: MessageSource | None = None,
                       signal: AbortSignal | None = None) -> str:
        """Queue ``content`` as the next turn of ``parent``'s continuable child ``child_id``,
        cold-resuming a settled child from its log; returns the accepted message's id."""
        blocks = (TextBlock(text=content),) if isinstance(content, str) else tuple(content)
        origin = source or MessageSource(kind="coordinator", form="relay",
                                         sender_session_id=parent.id)
        while True:
            _check_aborted(signal)
            self._admit(parent)
            lock = self._locks.get(child_id)
            if lock is None:
                lock = self._locks[child_id] = asyncio.Lock()
            async with lock:  # deliveries to one child are taken one at a time
                activation = self._activations.get(child_id)
                closing = None if activation is None else activation.disposal
                if closing is None:
                    resumed = activation is None
                    if activation is None:
                        activation = await self._cold_resume(parent, child_id, signal)
                    message = UserMessage(content=blocks, source=origin, id=self.host.ids())
                    await self._deliver(activation, parent, message, signal, fresh=resumed)
                    return message.id
            # A delivery that lost the race with disposal resumes the child afterwards.
            await asyncio.wait([closing])

    def _authorize(self, parent: Agent, child_id: str, durable_parent: str | None) -> None:
        if self.host.agents.get(parent.id) is not parent:
            raise SubagentError(refusal("exact-parent", child_id))
        if durable_parent != parent.id:
            raise SubagentError(refusal("other-parent", child_id))

    async def _cold_resume(self, parent: Agent, child_id: str,
                           signal: AbortSignal | None) -> Activation:
        store = self._persistence()
        try:
            log = await _read(store.inspect, child_id, signal=signal)
        except _Aborted:
            raise SubagentAbortedError() from None
        except Exception as error:
            raise SubagentError(refusal("unavailable", child_id)) from error
        header = log.header
        if header is None:
            raise SubagentError(refusal("unavailable", child_id))
        self._admit(parent)
        self._authorize(parent, child_id,
                        header.parent_session if isinstance(header.parent_session, str)
                        else None)
        resumed = resume_terms(header, log.events)
        if isinstance(resumed, Failure):
            raise SubagentError(resumed.failure())
        terms = resumed.unwrap()
        if self.host.agents.get(child_id) is not None:
            # Some agent holds the id without the manager managing it: not adopted.
            raise SubagentError(refusal("unavailable", child_id))
        try:
            session = self.host.sessions.load(child_id, clock=self.host.clock)
        except Exception as error:
            raise SubagentError(refusal("unavailable", child_id)) from error
        seed_length = header.seed_length if isinstance(header.seed_length, int) else 0
        try:
            agent = self._build_child(
                session, parent, terms.options, None, terms.tool_filter,
                provider=terms.provider_name, seeded=seed_length > 0,
                approval_policy=terms.approval_policy,
                own=(terms.sections, terms.context, terms.persona))
            return await self._materialize(
                agent, parent, signal, provider=terms.provider_name, label=terms.label,
                seed_length=seed_length, resuming=True)
        except BaseException as error:
            if self.host.agents.get(child_id) is None:
                self.host.sessions.release(child_id)
            if isinstance(error, Exception) and not isinstance(error, SubagentError):
                raise SubagentError(refusal("unavailable", child_id)) from error
            raise

    def interrupt(self, target: str, authority: InterruptAuthority) -> None:
        """Stop ``target``'s current turn, keeping its queue parked until the next follow-up;
        an absent or settled target is a no-op. Returns without waiting."""
        caller = authority.agent if isinstance(authority, AncestorAuthority) else None
        if caller is not None:
            if self.host.agents.get(caller.id) is not caller:
                raise SubagentError(refusal("exact-ancestor", target))
            if caller.id == target:
                raise SubagentError(refusal("self-interrupt", caller.id))
        activation = self._activations.get(target)
        if activation is None:
            return
        if isinstance(authority, UserAuthority):
            if activation.parent_session != authority.parent_session_id:
                raise SubagentError(refusal("other-parent", target))
        elif not any(member is caller for member in activation.ancestry):
            assert caller is not None
            raise SubagentError(refusal("not-descendant", target, caller.id))
        if activation.disposal is not None:
            return
        cause = CancelUser() if isinstance(authority, UserAuthority) else CancelParent()
        activation.agent.cancel(cause, keep_queued=True)

    def report_from(self, child: Agent, content: Sequence[ContentBlock] | str, *,
                    delivery: ReportDelivery = "next-step") -> str:
        """Deliver ``content`` from the resident continuable ``child`` to its live direct
        parent's next step (``quiet``: without waking it); returns the parent's message id."""
        self._admit(child)
        activation = self._activations.get(child.id)
        if activation is None or activation.agent is not child:
            raise SubagentError(refusal("cannot-report", child.id))
        if activation.disposal is not None:
            raise SubagentError(refusal("closing-report", child.id))
        parent = self.host.agents.get(activation.parent_session)
        if parent is None:
            raise SubagentError(refusal("parent-unavailable"))
        blocks = (TextBlock(text=content),) if isinstance(content, str) else tuple(content)
        message = report_message(child.id, blocks, message_id=self.host.ids())
        try:
            if delivery == "quiet":
                parent.inject(message)
            else:
                parent.steer(message)
        except Exception as error:
            raise SubagentError(refusal("parent-unavailable")) from error
        return message.id

    # ------------------------------------------------------------------ residency

    async def _watch(self, activation: Activation) -> None:
        agent = activation.agent
        while activation.disposal is None:
            activation.poke.clear()
            if agent.running:
                await agent.when_quiet()  # a failure is the teardown's to report
                continue
            if not agent.pending and not activation.owned:  # settled
                self._open_disposal(activation)
                return
            await activation.poke.wait()

    def _open_disposal(self, activation: Activation) -> asyncio.Future[BaseException | None]:
        """Begin ``activation``'s teardown, memoized: its synchronous part (cutoff, turn
        cancelled, its children's teardowns begun top-down) runs before anything awaits."""
        if activation.disposal is not None:
            return activation.disposal
        task = asyncio.get_running_loop().create_task(
            self._teardown(activation), name=f"continuable-teardown:{activation.child_id}")
        activation.disposal = task
        activation.poke.set()
        activation.agent.cancel(CancelParent())
        # No child is published under it from here on (the creation window refuses one).
        activation.children = [self._open_disposal(self._activations[child])
                               for child in list(activation.owned) if child in self._activations]
        return task

    async def _dispose(self, activation: Activation) -> BaseException | None:
        return await asyncio.shield(self._open_disposal(activation))

    def _evict(self, activation: Activation) -> None:
        """No longer resident, its setups undone (its parent still owns it)."""
        _undo(activation.undo)
        if self._activations.get(activation.child_id) is activation:
            del self._activations[activation.child_id]

    def _release(self, activation: Activation) -> None:
        """Its parent's ownership released: the parent may settle now."""
        owner = self._owner_of(activation.parent)
        if owner is not None:
            owner.owned.discard(activation.child_id)
            owner.poke.set()

    async def _teardown(self, activation: Activation) -> BaseException | None:
        agent, child_id = activation.agent, activation.child_id
        failures: list[str] = []
        stop_reason, output = "error", None
        try:
            reasons = [_chain(failure) for failure in
                       await asyncio.gather(*(asyncio.shield(c) for c in activation.children))
                       if failure is not None]
            if reasons:
                failures.append(f'subagent "{child_id}" child teardown failed: '
                                f'{"; ".join(reasons)}')
            # Quiet before the flush: a turn still running would append what it cannot cover.
            await agent.when_quiet()
            if agent.failure is not None:  # its loop failed (a write refused)
                failure, agent.failure = agent.failure, None
                raise failure
            try:
                await agent.session.wait_durable()
            except Exception as error:
                _log.warning(f'subagent "{child_id}" best-effort final session flush failed; '
                             "the persisted state may be unavailable or stale on resume: "
                             f"{_chain(error)}")
            # Captured while the child is still live: its disposal unregisters it.
            epoch = agent.session.events[activation.boundary:]
            stop_reason, output = epoch_stop_reason(epoch), final_assistant_output(epoch)
        except Exception as error:
            failures.append(f'subagent "{child_id}" activation teardown failed: '
                            f"{_chain(error)}")
        try:
            await agent.dispose()
        except Exception as error:
            failures.append(f'subagent "{child_id}" activation handle disposal failed: '
                            f"{_chain(error)}")
        self._evict(activation)
        if failures:
            stop_reason, output = "error", None
        self._notify(activation, stop_reason, output)
        self._release(activation)
        result = activation.result
        if not result.done():
            result.set_result(SubagentResult(output=output or (), stop_reason=stop_reason))
        if activation.watcher is not None:
            await asyncio.wait([activation.watcher])  # it sees the disposal and ends
        if not failures:
            return None
        text = teardown_failure_text(child_id, failures)
        failure = SubagentError(StartError(code=ACTIVATION_TEARDOWN_FAILED,
                                           name="SubagentError", message=text))
        _log.warning(text)
        return failure

    def _notify(self, activation: Activation, stop_reason: str,
                output: tuple[ContentBlock, ...] | None) -> None:
        if not activation.announced:
            return
        try:
            parent = self.host.agents.get(activation.parent_session)
            if parent is None or parent.disposed:
                return  # the parent is gone: the child's log is the record
            notice = settlement_notice(activation.child_id, stop_reason, output,
                                       message_id=self.host.ids())
            if self._closing(parent):
                parent.inject(notice)  # teardown is no reason to start a turn
            elif parent.running:
                parent.steer(notice)
            else:
                parent.followup(notice)
        except Exception as error:
            _log.warning(f'subagent "{activation.child_id}" settlement notice was not delivered '
                         f"to its parent: {_chain(error)}")

    # ------------------------------------------------------------------ drains

    def _roots(self, activations: Iterable[Activation]) -> list[Activation]:
        chosen = list(activations)
        owned = {child for activation in chosen for child in activation.owned}
        return [activation for activation in chosen if activation.child_id not in owned]

    def _drain(self, chosen: Iterable[Activation], subject: str, name: str, *,
               windows: bool = True, leftover: bool = False) -> asyncio.Task[None]:
        """Begin the teardowns of ``chosen`` now (a parent's begins its children's); the task
        waits for the creation windows in flight (``leftover``: then disposes what they
        published) and raises ``ACTIVATION_TEARDOWN_FAILED`` after every branch settled."""
        roots = self._roots(chosen)
        for activation in roots:
            self._open_disposal(activation)

        async def settle(roots: list[Activation]) -> None:
            if windows and self._materializing:
                await asyncio.wait(list(self._materializing))
            if leftover:
                roots = [*roots, *(a for a in self._roots(self._activations.values())
                                   if all(a is not root for root in roots))]
            failures = [failure for failure in
                        await asyncio.gather(*(self._dispose(a) for a in roots))
                        if failure is not None]
            if failures:
                raise SubagentError(StartError(
                    code=ACTIVATION_TEARDOWN_FAILED,
                    message=f"continuable subagent teardown failed for {len(failures)} "
                            f"{subject}: " + "; ".join(_chain(failure) for failure in failures)))

        return asyncio.get_running_loop().create_task(settle(roots), name=name)

    def drain(self) -> asyncio.Task[None]:
        """Close admission for good and begin disposing every resident child now; the task
        waits for the creation windows in flight and every teardown (raising
        ``ACTIVATION_TEARDOWN_FAILED`` after every branch settled)."""
        self._draining = True
        return self._drain(self._activations.values(), "activation(s)", "continuable-drain",
                           leftover=True)

    def drain_descendants(self, parents: Iterable[Agent]) -> asyncio.Task[None]:
        """Close admission below each exact live agent in ``parents`` while it stays live
        and begin disposing its resident descendants now; the task is :meth:`drain`'s."""
        roots = [p for p in parents if self.host.agents.get(p.id) is p]
        for root in roots:
            if all(root is not r for r in self._draining_roots):
                self._draining_roots.append(root)
        return self._drain((a for a in self._activations.values()
                            if any(member is root for member in a.ancestry[1:] for root in roots)),
                           "scoped activation(s)", "continuable-drain-descendants")

    def drain_children(self, parent: Agent, child_ids: Iterable[str]) -> asyncio.Task[None]:
        """Begin disposing the named resident direct children of ``parent`` now (absent ids
        are no-ops; a stale parent or another's child is ``UNAUTHORIZED`` at once)."""
        if self.host.agents.get(parent.id) is not parent:
            raise SubagentError(refusal("teardown-parent"))
        chosen: list[Activation] = []
        for child_id in dict.fromkeys(child_ids):
            activation = self._activations.get(child_id)
            if activation is None:
                continue
            if activation.parent_session != parent.id:
                raise SubagentError(refusal("not-direct-child", child_id, parent.id))
            chosen.append(activation)
        return self._drain(chosen, "selected activation(s)", "continuable-drain-children",
                           windows=False)

    def activations(self) -> tuple[Activation, ...]:
        """The resident Activations (a snapshot, for hosts and tests)."""
        return tuple(self._activations.values())

    # ------------------------------------------------------------------ listing

    async def _enumerate(self, signal: AbortSignal | None) -> dict[str, SessionHeader]:
        """Every session's header, live or persisted, read without its events."""
        _check_listing(signal)
        store = self.host.sessions
        try:
            ids = await _read(store.list, signal=signal)
        except Exception:  # an abort's cancelled read included
            _check_listing(signal)
            raise
        _check_listing(signal)
        headers: dict[str, SessionHeader] = {}
        for session_id in ids:
            live = store.get(session_id)
            if live is not None:
                headers[session_id] = live.header
                continue
            try:
                headers[session_id] = await self._header(session_id, signal)
            except Exception:
                _check_listing(signal)
                continue  # no readable header: the session cannot be placed under a parent
        _check_listing(signal)
        return headers

    async def _header(self, session_id: str, signal: AbortSignal | None) -> SessionHeader:
        store = self._persistence()
        if callable(getattr(store, "header", None)):
            return await _read(store.header, session_id, signal=signal)
        log = await _read(store.inspect, session_id, signal=signal)  # a store with no header read
        if log.header is None:
            raise SessionNotFoundError(session_id)
        return log.header

    async def _resolve(self, slot: ListingSlot, signal: AbortSignal | None,
                       ) -> ListedChild | ListedDiagnostic | None:
        """One listed child: a live one from its events, a persisted one inspected (the only
        read of its events), checked to be the lifecycle its header was enumerated as."""
        header = slot.header

        def diagnostic(reason: Literal["corrupt", "unavailable"]) -> ListedDiagnostic:
            return ListedDiagnostic(id=header.id, reason=reason, parent=slot.parent,
                                    depth=slot.depth, created_at=header.created_at)

        live = self.host.sessions.get(header.id)
        if live is not None:
            identity = child_identity(live.events)
            if identity is None:
                return None  # still being created: no identity yet
        else:
            try:
                log = await _read(self._persistence().inspect, header.id, signal=signal)
            except Exception:
                _check_listing(signal)
                return diagnostic("unavailable")
            _check_listing(signal)
            if log.header is None or isinstance(trace_log(log.events), Failure):
                return diagnostic("unavailable")
            identity = child_identity(log.events)
            if identity is None or not same_lifecycle(log.header, header):
                return diagnostic("corrupt")
        return ListedChild(id=header.id, mode=identity.mode, label=identity.label,
                           live=live is not None, parent=slot.parent, depth=slot.depth,
                           created_at=header.created_at, has_children=slot.has_children)

    async def list_children(self, parent_id: str, *, signal: AbortSignal | None = None,
                            ) -> list[ListedChild | ListedDiagnostic]:
        """The subagent children of ``parent_id``, live or persisted, oldest first; only
        their logs are read (``CANCELLED`` once ``signal`` aborted)."""
        return await self._list(parent_id, signal, descendants=False)

    async def list_descendants(self, root_id: str, *, signal: AbortSignal | None = None,
                               ) -> list[ListedChild | ListedDiagnostic]:
        """Every subagent below ``root_id`` in stable pre-order, through sessions of any
        kind; as :meth:`list_children`."""
        return await self._list(root_id, signal, descendants=True)

    async def _list(self, root_id: str, signal: AbortSignal | None, *, descendants: bool,
                    ) -> list[ListedChild | ListedDiagnostic]:
        headers = await self._enumerate(signal)
        rows = [await self._resolve(slot, signal) for slot in
                listing_slots(tuple(headers.values()), root_id, descendants=descendants)]
        _check_listing(signal)
        return [row for row in rows if row is not None]


class _Aborted(Exception):
    """A read the listing's (or a delivery's) signal cancelled."""


async def _read(call: Callable[..., T | Awaitable[T]], *args: object,
                signal: AbortSignal | None) -> T:
    """``call(*args)`` of a store: awaited if awaitable, and cancelled (:class:`_Aborted`) when
    ``signal`` aborts."""
    value = call(*args)
    if not inspect.isawaitable(value):
        return value
    future: asyncio.Future[T] = asyncio.ensure_future(value)
    if signal is None:
        return await future

    def cancel(reason: object) -> None:
        future.cancel()

    signal.add_listener(cancel)
    try:
        if signal.aborted:
            future.cancel()
        return await future
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if signal.aborted and not (task is not None and task.cancelling() > 0):
            raise _Aborted() from None
        raise
    finally:
        signal.remove_listener(cancel)


def _check_listing(signal: AbortSignal | None) -> None:
    if signal is not None and signal.aborted:
        raise SubagentError(refusal("listing-cancelled"))


def _undo(undo: list[Callable[[], None]]) -> None:
    while undo:
        remove = undo.pop()
        try:
            remove()
        except Exception as error:
            _log.warning(f"a continuable-subagent setup failed to release: {_chain(error)}")

