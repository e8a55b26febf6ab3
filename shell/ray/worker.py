"""What runs on a Ray worker: a pool actor that runs many children, each a turnfork agent on the
actor's own event loop, and what travels between it and the parent's host (rules:
``docs/ray.md``). Nothing is decided here: a child is configured by the shared driver's steps
from the :class:`ChildSpec` planned on the parent's host. A batch is kept until the next poll
acknowledges it, so a transient loss of the worker loses and repeats nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import msgspec
from msgspec import Raw
from returns.result import Failure

from ...core import (
    ApprovalPolicyData,
    CancelCause,
    CancelDisposed,
    ChildPlan,
    ContentBlock,
    Event,
    PrefixView,
    PromptSection,
    SandboxModeData,
    SessionHeader,
    SubagentDescriptorEvent,
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
from ..tools import CallingAgent, Tool
from ._ray import ray

__all__ = ["CONTROL", "WorkerSetup", "WorkerHost", "ChildSpec", "ChildStart", "EventsBatch",
           "ChildDone", "WorkerInfo", "ChildWorker"]

#: Registers a worker's models (``host.models``) and tools (``host.tools``) when it starts;
#: importable on the workers (Ray pickles it by reference).
WorkerSetup = Callable[[Host], None]

#: The concurrency group of the control calls (cancel, stop, list, lifeline).
CONTROL = "control"
#: Calls the control group runs at once (one lifeline per host process among them).
CONTROL_CONCURRENCY = 100
_Method = TypeVar("_Method", bound=Callable[..., Any])


def _control(method: _Method) -> _Method:
    return cast(_Method, ray.method(concurrency_group=CONTROL)(method))


#: Seconds a child's committed events may wait on its worker for more to join them.
DEFAULT_FLUSH_INTERVAL = 0.02
#: Seconds a poll waits with nothing to send before answering empty.
DEFAULT_POLL_WAIT = 1.0
#: Bytes of events one batch carries before the rest waits for the next poll: Ray passes a
#: reply under 100 KiB inline, a larger one through the object store.
BATCH_BYTES = 64 * 2**10
#: Decoded seeds kept per worker once no child uses them (a later sibling reuses them).
_IDLE_SEEDS = 2
#: Cancels kept for children not started here yet (Ray does not order calls across groups),
#: and ids of children started here, so that a repeated start is not run twice.
_REMEMBERED = 10_000


class _SandboxPolicy(msgspec.Struct, frozen=True, tag="sandbox"):
    data: SandboxModeData


class _ApprovalPolicy(msgspec.Struct, frozen=True, tag="approval"):
    data: ApprovalPolicyData


class _ListedTool(msgspec.Struct, frozen=True, array_like=True):
    # The parameters travel as their JSON text: a msgspec.Raw would be taken for MessagePack.
    name: str
    description: str
    parameters: bytes


class _ShippedPlan(ChildPlan, frozen=True, kw_only=True):
    """A plan as it travels, every field of it shipped as it is but these: the seed and its
    trace (the worker fetches the seed from the object store), the policy (beside it,
    tagged: msgspec decodes a union of structs only by tag) and the compiled contract (as
    the output schema's JSON text)."""

    seed: None
    seed_trace: None
    policy: tuple[()]
    structured: None


class ChildSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A ``ChildSetup`` as shipped: the plan without its seed, seed trace and compiled
    contract (rebuilt on the worker), and what the child's host mirrors of the parent's."""

    plan: _ShippedPlan
    policy: tuple[_SandboxPolicy | _ApprovalPolicy, ...]
    approval: bool
    child_sections: tuple[PromptSection, ...]
    output_schema: bytes | None
    host_sections: tuple[PromptSection, ...]
    sandbox_mode: SandboxMode | None
    session_titles: bool
    listed: tuple[_ListedTool, ...] | None = None

    @classmethod
    def planned(cls, setup: ChildSetup, *, host_sections: tuple[PromptSection, ...],
                sandbox_mode: SandboxMode | None, session_titles: bool) -> ChildSpec:
        plan = setup.plan
        return cls(
            plan=_ShippedPlan(**(msgspec.structs.asdict(plan) | _LEFT_OUT)),
            policy=tuple(_SandboxPolicy(data=policy) if isinstance(policy, SandboxModeData)
                         else _ApprovalPolicy(data=policy) for policy in plan.policy),
            approval=setup.approval, child_sections=setup.sections,
            output_schema=(None if plan.structured is None
                           else bytes(plan.structured.output_schema.schema)),
            host_sections=host_sections, sandbox_mode=sandbox_mode,
            session_titles=session_titles,
            listed=None if setup.listed is None else tuple(
                _ListedTool(name=tool.name, description=tool.description,
                            parameters=bytes(tool.schema.parameters)) for tool in setup.listed))

    def setup(self, *, seed: PrefixView | None, seed_trace: Trace | None,
              with_policy: bool = True) -> ChildSetup:
        structured = (None if self.output_schema is None else structured_output_contract(
            validate_output_schema(Raw(self.output_schema)).unwrap()))
        plan = ChildPlan(**(msgspec.structs.asdict(self.plan) | {
            "seed": seed, "seed_trace": seed_trace, "structured": structured,
            "policy": tuple(wrapped.data for wrapped in self.policy) if with_policy else ()}))
        listed = (None if self.listed is None
                  else tuple(_listed_tool(schema) for schema in self.listed))
        return ChildSetup(plan=plan, approval=self.approval, sections=self.child_sections,
                          listed=listed)


#: What a plan leaves out of its shipped form.
_LEFT_OUT = {"seed": None, "seed_trace": None, "policy": (), "structured": None}


async def _not_in_scope(args: dict[str, Any], ctx: object) -> str:
    # Never called: a listed tool the child's scope lacks is refused as an unknown one.
    raise RuntimeError("a listed tool outside the child's scope was run")


def _listed_tool(listed: _ListedTool) -> Tool:
    # For the child's list only: a call runs the worker's own scope's tool.
    return Tool(name=listed.name, description=listed.description,
                parameters=msgspec.json.decode(listed.parameters), handler=_not_in_scope)


class ChildStart(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A child to start in a :meth:`ChildWorker.start_children` batch."""

    spec: ChildSpec
    prompt: tuple[ContentBlock, ...]
    #: An index into the call's seed references; ``None`` for a spawn child.
    seed: int | None = None
    #: Cancelled before it was sent: it is set up but takes no turn.
    cause: CancelCause | None = None
    #: A resumed child's events after its setup, as the host acknowledged them (JSONL).
    resumed: bytes | None = None


class ChildDone(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A child is idle and disposed on its worker; ``error``: it did not run to idle there."""

    id: str
    captured: bytes | None = None
    failure: str | None = None
    error: str | None = None


class EventsBatch(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """One poll's answer: events of many children (JSONL, grouped by child as ``counts``
    says), then the children gone idle. An empty answer repeats the last ``seq``; a
    restarted actor has a new ``incarnation``, and none of its last one's children."""

    seq: int
    incarnation: str
    jsonl: bytes = b""
    counts: tuple[tuple[str, int], ...] = ()
    done: tuple[ChildDone, ...] = ()


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A started worker: where it runs and what its setup registered."""

    pid: int
    node_id: str
    models: tuple[str, ...]
    tools: tuple[str, ...]
    incarnation: str


encode_wire = msgspec.msgpack.Encoder().encode
decode_batch = msgspec.msgpack.Decoder(EventsBatch).decode
_decode_starts = msgspec.msgpack.Decoder(list[ChildStart]).decode
_decode_cancels = msgspec.msgpack.Decoder(list[tuple[str, CancelCause]]).decode


#: A decoded seed: its completed prefix, that prefix's trace, and its model history.
_Seed = tuple[PrefixView, Trace, Callable[[], Any]]


def _decoded_seed(data: bytes) -> _Seed:
    # CPU work: run in a thread, off the actor's loop.
    decoded = decode_log(data)
    if isinstance(decoded, Failure):
        raise ValueError(f"the seed in the object store cannot be decoded: {decoded.failure()}")
    # A private session holds the seed: its cut and its model history are computed once and
    # shared by every child seeded here, as a parent's are in process.
    holder = Session(SessionHeader(id="seed", created_at=0), seed=decoded.unwrap())
    return (*holder.completed_prefix(), holder.completed_prefix_history)


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
    children it runs for runs held on their parents' host (a ``DelegateHost``)."""

    def __init__(self) -> None:
        super().__init__()
        self._children: dict[str, Agent] = {}

    def children(self) -> tuple[str, ...]:
        return tuple(self._children)

    def child(self, child_id: str) -> Agent | None:
        return self._children.get(child_id)

    def add_child(self, agent: Agent) -> None:
        self._children[agent.id] = agent

    def remove_child(self, child_id: str) -> None:
        self._children.pop(child_id, None)

    def remote_owner(self, agent: CallingAgent) -> str | None:
        if self._children.get(agent.id) is not agent:
            return None
        parent = agent.session.header.parent_session
        return parent if isinstance(parent, str) else None


class _Outbox:
    """What a link's children committed and not yet sent, and its last batch until acked."""

    def __init__(self, incarnation: str) -> None:
        self.incarnation = incarnation
        self.pending: dict[str, list[Event]] = {}
        self.done: list[ChildDone] = []
        self.children: set[str] = set()
        self.wake = asyncio.Event()
        self.lock = asyncio.Lock()
        self.seq = 0
        self.sent: tuple[int, bytes] | None = None
        #: The last batch left events behind: the next poll takes them at once.
        self.backlog = False

    def add(self, child_id: str, events: Sequence[Event]) -> None:
        self.pending.setdefault(child_id, []).extend(events)
        self.wake.set()

    def finish(self, done: ChildDone) -> None:
        self.children.discard(done.id)
        self.done.append(done)
        self.wake.set()

    def empty(self) -> bool:
        return not self.pending and not self.done

    def take(self) -> bytes:
        """Whole children's events up to :data:`BATCH_BYTES` (one child's at least), then the
        children done whose events have all gone."""
        counts: list[tuple[str, int]] = []
        parts: list[bytes] = []
        size = 0
        for child_id in list(self.pending):
            if size >= BATCH_BYTES:
                break
            events = self.pending.pop(child_id)
            part = encode_log(events, pack_chunks=True)
            counts.append((child_id, len(events)))
            parts.append(part)
            size += len(part)
        done = [finished for finished in self.done if finished.id not in self.pending]
        self.done = [finished for finished in self.done if finished.id in self.pending]
        self.seq += 1
        data = encode_wire(EventsBatch(seq=self.seq, incarnation=self.incarnation,
                                       jsonl=b"".join(parts), counts=tuple(counts),
                                       done=tuple(done)))
        if self.empty():
            self.wake.clear()
        self.sent = (self.seq, data)
        return data


def _error_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class ChildWorker:
    """A pool actor's body."""

    def __init__(self, setup: WorkerSetup | None = None, *,
                 flush_interval: float = DEFAULT_FLUSH_INTERVAL,
                 poll_wait: float = DEFAULT_POLL_WAIT) -> None:
        self.host = WorkerHost()
        self.incarnation = uuid.uuid4().hex
        self._flush_interval = flush_interval
        self._poll_wait = poll_wait
        if setup is not None:
            setup(self.host)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._outboxes: dict[str, _Outbox] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._early_cancels: OrderedDict[str, CancelCause] = OrderedDict()
        self._started: OrderedDict[str, None] = OrderedDict()
        self._seeds = _Seeds()

    async def ready(self) -> WorkerInfo:
        self._loop = asyncio.get_running_loop()
        return WorkerInfo(pid=os.getpid(), node_id=str(ray.get_runtime_context().get_node_id()),
                          models=self.host.models.list(), tools=self.host.tools.names(),
                          incarnation=self.incarnation)

    def _outbox(self, link: str) -> _Outbox:
        outbox = self._outboxes.get(link)
        if outbox is None:
            outbox = self._outboxes[link] = _Outbox(self.incarnation)
        return outbox

    async def start_children(self, link: str, batch: bytes, seeds: Sequence[Any]) -> str:
        """Start ``batch``'s :class:`ChildStart` records, their events going to ``link``;
        returns this process's incarnation."""
        self._loop = asyncio.get_running_loop()
        outbox = self._outbox(link)
        for start in _decode_starts(batch):
            child_id = start.spec.plan.header.id
            if child_id in self._started:
                continue
            self._started[child_id] = None
            while len(self._started) > _REMEMBERED:
                self._started.popitem(last=False)
            outbox.children.add(child_id)
            seed = None if start.seed is None else seeds[start.seed]
            self._tasks[child_id] = self._loop.create_task(
                self._run_child(outbox, start, seed), name=f"child:{child_id}")
        return self.incarnation

    async def poll(self, link: str, acked: int) -> bytes:
        """The next :class:`EventsBatch` of ``link`` after ``acked`` (MessagePack)."""
        outbox = self._outbox(link)
        async with outbox.lock:
            if outbox.sent is not None:
                seq, data = outbox.sent
                if seq > acked:  # its answer was lost on the way: again
                    return data
                outbox.sent = None
            if outbox.empty():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(outbox.wake.wait(), self._poll_wait)
            if outbox.empty():
                return encode_wire(EventsBatch(seq=outbox.seq, incarnation=self.incarnation))
            if not outbox.backlog:
                # Events wait up to the flush interval for more to join them: one call costs
                # Ray far more than many more events in it.
                await asyncio.sleep(self._flush_interval)
            data = outbox.take()
            outbox.backlog = not outbox.empty()
            return data

    def _child_host(self, spec: ChildSpec) -> Host:
        host = Host(session_titles=spec.session_titles, sandbox_mode=spec.sandbox_mode)
        host.models = self.host.models
        host.tools = self.host.tools
        host.agents = self.host.agents
        for section in spec.host_sections:
            host.prompt_sections.add(section)
        return host

    async def _run_child(self, outbox: _Outbox, start: ChildStart, seed_ref: Any) -> None:
        spec = start.spec
        child_id = spec.plan.header.id
        seed_key: str | None = None
        agent: Agent | None = None
        done = ChildDone(id=child_id, error="the child was stopped on its Ray worker before "
                                            "it finished")
        try:
            seed = seed_trace = history = None
            if seed_ref is not None:
                seed_key, (seed, seed_trace, history) = await self._seeds.acquire(seed_ref)
            resumed: Sequence[Event] = ()
            if start.resumed is not None:
                resumed = decode_log(start.resumed).unwrap()
            setup = spec.setup(seed=seed, seed_trace=seed_trace,
                               with_policy=start.resumed is None)
            host = self._child_host(spec)
            session = create_child_session(host, setup.plan, history)
            if resumed:
                session.extend(resumed)
            agent, capture = configure_child(
                host, session, setup,
                descriptor_logged=any(isinstance(event, SubagentDescriptorEvent)
                                      for event in resumed))
            host.agents.add(agent)
            self.host.add_child(agent)
            session.listeners.append(lambda events: outbox.add(child_id, events))
            cause = start.cause or self._early_cancels.pop(child_id, None)
            if cause is None:
                agent.followup(start.prompt)
            failure = None
            try:
                await agent.when_idle()
            except Exception as error:  # the loop's own failure: it travels with ChildDone
                failure = str(error)
            captured = (None if capture is None or capture.value is None
                        else bytes(capture.value))
            done = ChildDone(id=child_id, captured=captured, failure=failure)
        except asyncio.CancelledError:
            pass  # stopped (stop_children): it ends as disposed, below
        except Exception as error:
            done = ChildDone(id=child_id, error=f"the child could not run on its Ray worker: "
                                                f"{_error_line(error)}")
        finally:
            try:
                if agent is not None:
                    agent.cancel(CancelDisposed())
                    await agent.dispose()
            finally:
                # Listed, and not reported done, while anything of it runs.
                self.host.remove_child(child_id)
                self._tasks.pop(child_id, None)
                if seed_key is not None:
                    self._seeds.release(seed_key)
                outbox.finish(done)

    def _cancel(self, items: Sequence[tuple[str, CancelCause]]) -> None:
        for child_id, cause in items:
            agent = self.host.child(child_id)
            if agent is not None:
                agent.cancel(cause)
                continue
            # Not set up here yet (its start is on its way, or fetching its seed).
            self._early_cancels.setdefault(child_id, cause)
            while len(self._early_cancels) > _REMEMBERED:
                self._early_cancels.popitem(last=False)

    def _stop(self, child_ids: Sequence[str]) -> None:
        for child_id in child_ids:
            task = self._tasks.get(child_id)
            if task is not None:
                task.cancel()

    def _close(self, link: str) -> None:
        outbox = self._outboxes.get(link)
        if outbox is not None and not outbox.children:
            del self._outboxes[link]

    def _on_children_loop(self, work: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is not None:  # no loop yet: no child has started here
            loop.call_soon_threadsafe(work, *args)

    @_control
    async def cancel_children(self, batch: bytes) -> None:
        self._on_children_loop(self._cancel, _decode_cancels(batch))

    @_control
    async def stop_children(self, child_ids: Sequence[str]) -> None:
        """Cancel what still runs of these children's tasks (they end as disposed)."""
        self._on_children_loop(self._stop, tuple(child_ids))

    @_control
    async def close_link(self, link: str) -> None:
        self._on_children_loop(self._close, link)

    @_control
    async def live_children(self) -> tuple[str, ...]:
        return self.host.children()

    @_control
    async def lifeline(self) -> None:
        await asyncio.Event().wait()
