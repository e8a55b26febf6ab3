"""What runs on a Ray worker: a pool actor that runs many children, each a turnfork agent on the
actor's own event loop.

Rules:

* :class:`ChildWorker` is a plain class; the pool wraps it with ``ray.remote(...)`` where it is
  used (Ray pickles only the thin wrapper by value: this module travels by reference, so the
  workers must be able to import turnfork). Its ``setup`` callable configures the worker's
  registries once, when the actor starts: the models the children call and the tools they
  may use (see ``docs/ray.md``).
* A child is configured on the worker by the shared driver's own steps
  (:func:`~turnfork.shell.subagents.providers.create_child_session` and
  :func:`~turnfork.shell.subagents.providers.configure_child`) from the :class:`ChildSpec`
  its provider planned on the parent's host: nothing is decided here. Its host mirrors the
  parent's host (prompt sections, sandbox mode, session titles) over the worker's models,
  tools and live agents.
* The worker's host (:class:`WorkerHost`, the one ``setup`` configures) holds every child it
  runs as live and as the child of a run held on the parent's host, from the child's
  publication to its disposal: a service installed there judges it as the parent's host
  judges an in-process child (``ask_user_question`` refuses it as ``DELEGATED_CALLER``).
* A fork child's seed arrives as an object-store reference, fetched, decoded and traced once
  per fork point on each worker and shared by every child seeded there (a view, as in
  process); the reference is nested in the call's arguments so Ray does not fetch it per
  child.
* :meth:`ChildWorker.run_child` streams the child's own events, everything committed after its
  setup, as JSONL batches: what accumulated within the flush interval (20 ms by default) of
  the first unsent event, and last one :class:`ChildDone` with the remaining events, the
  captured structured value and the loop's failure, if any.
* :meth:`ChildWorker.cancel_child` cancels a child's turn with the given cause through its own
  turn machine, so its log closes there and the closing events still stream back; a cancel
  that arrives before its child registers is kept and honoured at the child's start. A
  Ray-level cancellation of the stream (``ray.cancel``) cancels the child with ``disposed``.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgspec
from msgspec import Raw
from returns.result import Failure

from ...core import (
    CancelCause,
    CancelDisposed,
    ContentBlock,
    Event,
    PrefixView,
    PromptSection,
    SessionHeader,
    Trace,
    decode_log,
    encode_log,
    structured_output_contract,
    validate_output_schema,
)
from ..agent import Agent, SandboxMode
from ..host import Host
from ..session import Session
from ..subagents.providers import ChildSetup, configure_child, create_child_session
from ..tools import CallingAgent
from ._ray import ray

__all__ = [
    "WorkerSetup",
    "WorkerHost",
    "ChildSpec",
    "EventsBatch",
    "ChildDone",
    "WorkerInfo",
    "ChildWorker",
]

#: Configures a worker's registries when its actor starts: register the children's models
#: (``host.models``) and tools (``host.tools``). Must be importable on the workers (a
#: module-level function of an installed module), as Ray pickles it by reference.
WorkerSetup = Callable[[Host], None]

#: Seconds a child's committed events may wait on its worker for more to join them in one
#: stream item (they leave at once when the child goes idle).
DEFAULT_FLUSH_INTERVAL = 0.02
#: Decoded seeds kept per worker once no child uses them (a later sibling reuses them).
_IDLE_SEEDS = 2
#: Cancels kept for children not started here yet (Ray does not order an async actor's calls).
_EARLY_CANCELS = 10_000


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """One child as its provider planned it on the parent's host, shipped to a worker."""

    #: The shared driver's setup, without the seed, its trace and the compiled
    #: structured-output contract (they are rebuilt there).
    setup: ChildSetup
    #: The requested output schema's JSON text, compiled again on the worker.
    output_schema: Raw | None
    #: The parent host's prompt sections (the deployment's), mirrored by the child's host.
    host_sections: tuple[PromptSection, ...]
    sandbox_mode: SandboxMode | None
    session_titles: bool


@dataclass(frozen=True, slots=True)
class EventsBatch:
    """Events the child committed, in order, as JSONL (the wire codec)."""

    jsonl: bytes


@dataclass(frozen=True, slots=True)
class ChildDone:
    """The child is idle: its last events (JSONL), the structured value it captured (JSON),
    the loop's own failure."""

    jsonl: bytes
    captured: bytes | None
    failure: str | None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A started worker: where it runs and what its setup registered."""

    pid: int
    node_id: str
    models: tuple[str, ...]
    tools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Seed:
    prefix: PrefixView
    trace: Trace
    history: Callable[[], Any]


def _decoded_seed(data: bytes) -> _Seed:
    """Decode and trace a seed once (CPU work: run in a thread, off the actor's loop)."""
    decoded = decode_log(data)
    if isinstance(decoded, Failure):
        raise ValueError(f"the seed in the object store cannot be decoded: {decoded.failure()}")
    # A private session holds the seed: its cut and its model history are computed once and
    # shared by every child seeded here, as a parent's are in process.
    holder = Session(SessionHeader(id="seed", created_at=0), seed=decoded.unwrap())
    prefix, trace = holder.completed_prefix()
    return _Seed(prefix=prefix, trace=trace, history=holder.completed_prefix_history)


class _Seeds:
    """Seeds by object reference: loaded once, shared, a few kept once idle."""

    def __init__(self) -> None:
        self._loading: dict[str, asyncio.Future[_Seed]] = {}
        self._users: dict[str, int] = {}
        self._idle: OrderedDict[str, None] = OrderedDict()

    async def acquire(self, ref: Any) -> tuple[str, _Seed]:
        key = str(ref.hex())
        future = self._loading.get(key)
        if future is None:
            future = self._loading[key] = asyncio.ensure_future(self._load(ref))
        self._users[key] = self._users.get(key, 0) + 1
        self._idle.pop(key, None)
        try:
            return key, await asyncio.shield(future)
        except BaseException:
            self.release(key)
            if future.done() and (future.cancelled() or future.exception() is not None):
                self._loading.pop(key, None)  # a failed load is retried by the next child
            raise

    @staticmethod
    async def _load(ref: Any) -> _Seed:
        data = await ref
        return await asyncio.to_thread(_decoded_seed, bytes(data))

    def release(self, key: str) -> None:
        users = self._users.get(key, 0) - 1
        if users > 0:
            self._users[key] = users
            return
        self._users.pop(key, None)
        self._idle[key] = None
        while len(self._idle) > _IDLE_SEEDS:
            stale, _ = self._idle.popitem(last=False)
            self._loading.pop(stale, None)


class WorkerHost(Host):
    """A worker's host: the registries ``setup`` fills, shared by every child's host, and the
    children the worker runs, each the child of a live subagent run held on its parent's host
    (a :class:`~turnfork.shell.questions.DelegateHost`)."""

    def __init__(self) -> None:
        super().__init__()
        self._children: dict[str, Agent] = {}

    def children(self) -> tuple[str, ...]:
        """Ids of the children running here now."""
        return tuple(self._children)

    def child(self, child_id: str) -> Agent | None:
        return self._children.get(child_id)

    def add_child(self, agent: Agent) -> None:
        """``agent`` runs here for its run on the parent's host (until :meth:`remove_child`)."""
        self._children[agent.id] = agent

    def remove_child(self, child_id: str) -> None:
        self._children.pop(child_id, None)

    def remote_owner(self, agent: CallingAgent) -> str | None:
        """The parent (on its own host) of ``agent``, when ``agent`` is a child run here."""
        if self._children.get(agent.id) is not agent:
            return None
        parent = agent.session.header.parent_session
        return parent if isinstance(parent, str) else None


class ChildWorker:
    """A pool actor's body: many children, each an agent on this actor's event loop."""

    def __init__(self, setup: WorkerSetup | None = None, *,
                 flush_interval: float = DEFAULT_FLUSH_INTERVAL) -> None:
        self.host = WorkerHost()
        self._flush_interval = flush_interval
        if setup is not None:
            setup(self.host)
        self._early_cancels: dict[str, CancelCause] = {}
        self._seeds = _Seeds()

    async def ready(self) -> WorkerInfo:
        """Where this worker runs and what its setup registered (the pool awaits it once)."""
        return WorkerInfo(pid=os.getpid(), node_id=str(ray.get_runtime_context().get_node_id()),
                          models=self.host.models.list(), tools=self.host.tools.names())

    async def live_children(self) -> tuple[str, ...]:
        """Ids of the children running here now."""
        return self.host.children()

    async def cancel_child(self, child_id: str, cause: CancelCause) -> bool:
        """Cancel a child's turn with ``cause``; ``False``: it had not started here yet (the
        cause is kept for its start)."""
        agent = self.host.child(child_id)
        if agent is None:
            self._early_cancels.setdefault(child_id, cause)
            while len(self._early_cancels) > _EARLY_CANCELS:  # late ones for children gone
                del self._early_cancels[next(iter(self._early_cancels))]
            return False
        agent.cancel(cause)
        return True

    def _child_host(self, spec: ChildSpec) -> Host:
        host = Host(session_titles=spec.session_titles, sandbox_mode=spec.sandbox_mode)
        host.models = self.host.models
        host.tools = self.host.tools
        host.agents = self.host.agents
        for section in spec.host_sections:
            host.prompt_sections.add(section)
        return host

    async def run_child(self, spec: ChildSpec, seed: Sequence[Any] | None,
                        prompt: tuple[ContentBlock, ...]) -> AsyncIterator[EventsBatch | ChildDone]:
        """Run one child to idle, streaming its events; see the module rules."""
        plan = spec.setup.plan
        child_id = plan.header.id
        seed_key: str | None = None
        agent = None
        outbox: list[Event] = []
        wake = asyncio.Event()

        def forward(events: Sequence[Event]) -> None:
            outbox.extend(events)
            wake.set()

        try:
            history = None
            if seed is not None:
                seed_key, loaded = await self._seeds.acquire(seed[0])
                plan = msgspec.structs.replace(plan, seed=loaded.prefix, seed_trace=loaded.trace)
                history = loaded.history
            if spec.output_schema is not None:
                compiled = validate_output_schema(spec.output_schema).unwrap()
                plan = msgspec.structs.replace(
                    plan, structured=structured_output_contract(compiled))
            host = self._child_host(spec)
            session = create_child_session(host, plan, history)
            agent, capture = configure_child(host, session, replace(spec.setup, plan=plan))
            host.agents.add(agent)
            self.host.add_child(agent)
            session.listeners.append(forward)
            early = self._early_cancels.pop(child_id, None)
            if early is None:
                agent.followup(prompt)
            idle = asyncio.ensure_future(agent.when_idle())
            try:
                while not idle.done():
                    if not outbox:
                        waiting = asyncio.ensure_future(wake.wait())
                        await asyncio.wait([idle, waiting], return_when=asyncio.FIRST_COMPLETED)
                        waiting.cancel()
                        continue
                    # Events wait up to the flush interval (unless the child goes idle first,
                    # when they travel with ChildDone): one stream item costs Ray far more
                    # than a few more events in it.
                    await asyncio.wait([idle], timeout=self._flush_interval)
                    if not idle.done():
                        batch = outbox[:]
                        outbox.clear()
                        wake.clear()
                        yield EventsBatch(jsonl=encode_log(batch))
            finally:
                if not idle.done():
                    idle.cancel()
            error = None if idle.cancelled() else idle.exception()
            captured = None if capture is None or capture.value is None else bytes(capture.value)
            last = outbox[:]
            outbox.clear()
            yield ChildDone(jsonl=encode_log(last), captured=captured,
                            failure=None if error is None else str(error))
        finally:
            try:
                if agent is not None:
                    # A Ray-level cancellation lands here: the child stops as disposed.
                    agent.cancel(CancelDisposed())
                    await agent.dispose()
            finally:
                self.host.remove_child(child_id)  # listed while anything of it runs
                if seed_key is not None:
                    self._seeds.release(seed_key)
