"""Fork and spawn children on a Ray cluster: the providers, their worker pool, and the stand-in
that carries a remote child's events into a session of the parent's host (rules:
``docs/ray.md``). A start is the in-process driver's steps on the parent's host, and what is
decided before publication is refused before it (the ``RAY_*`` codes). A worker's death is
learnt from its lifeline call, not from a failing child. Ray never retries a child's calls: a
model turn is not replayed behind the parent's back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import itertools
import re
import socket
import threading
import uuid
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

import msgspec

from ...core import (
    CancelCause,
    CancelDisposed,
    CancelUser,
    CheckedRequest,
    Event,
    StartError,
    TextBlock,
    TurnInterrupted,
    close_open_turn,
    decode_log,
    encode_log,
)
from ..abort import AbortSignal
from ..agent import Agent, Prompt, report_idle, user_message
from ..session import Session
from ..subagents.providers import (
    ALL_CAPABILITIES,
    _ProviderBase,
    create_child_session,
    discard_child,
    plan_setup,
    setup_checkpoint,
)
from ..subagents.registry import SubagentHost, SubagentRuntime, SubagentStartError
from ..subagents.run import StructuredCapture, SubagentRun
from ._ray import (
    PlacementGroupSchedulingStrategy,
    exceptions,
    placement_group,
    ray,
    remove_placement_group,
)
from .cluster import probe_address
from .worker import (
    CONTROL,
    CONTROL_CONCURRENCY,
    DEFAULT_FLUSH_INTERVAL,
    ChildDone,
    ChildSpec,
    ChildStart,
    ChildWorker,
    EventsBatch,
    WorkerInfo,
    WorkerSetup,
    decode_batch,
    encode_wire,
)

__all__ = ["RAY_CAPABILITIES", "RAY_NOT_CONNECTED", "RAY_WORKER_UNAVAILABLE", "RAY_CLUSTER_LOST",
           "RAY_SEED_NOT_STORED", "RECOVERY_PROMPT", "PLACEMENT_STRATEGIES", "RayWorker",
           "RayWorkerPool", "RemoteChild", "RayProvider", "RayForkProvider", "RaySpawnProvider"]

#: The in-process providers' own: the worker configures the child with the driver's step.
RAY_CAPABILITIES = ALL_CAPABILITIES

#: ``StartError.code`` values of the refusals (``docs/ray.md``).
RAY_NOT_CONNECTED = "RAY_NOT_CONNECTED"
RAY_WORKER_UNAVAILABLE = "RAY_WORKER_UNAVAILABLE"
RAY_CLUSTER_LOST = "RAY_CLUSTER_LOST"
RAY_SEED_NOT_STORED = "RAY_SEED_NOT_STORED"

#: A recovered child's new turn: its interrupted one is in its history, closed.
RECOVERY_PROMPT = ("Your previous turn was interrupted because the machine running it was "
                   "lost. Continue the task from where it stopped.")

PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")

#: About 5 s of missed GCS probes make the cluster lost: well inside the 60 s after which Ray
#: ends a driver whose GCS is gone.
_PROBE_INTERVAL = 1.0
_PROBES_MISSED = 5
#: A call Ray calls transiently unavailable is sent again after a delay, so many times.
_RETRY_DELAY = 0.2
_RETRIES = 50
_OWN_OPTIONS = {
    "max_concurrency": "RayWorkerPool(max_concurrency=...)",
    "concurrency_groups": "nothing: the pool's workers have their own (the control calls')",
    "name": "RayWorkerPool(name=...)",
}
_pool_numbers = itertools.count(1)


def _refusal(code: str, message: str) -> SubagentStartError:
    return SubagentStartError(StartError(code=code, name="SubagentError", message=message))


_TERMINAL_CONTROLS = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x09\x0b-\x1f\x7f]")
_LINE_CHARACTERS = 240


def _first_line(error: BaseException) -> str:
    """A Ray error in a line or two: its first line, and its last when that names the cause
    (Ray puts a remote traceback in between), terminal controls removed."""
    text = _TERMINAL_CONTROLS.sub("", str(error))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    name = type(error).__name__
    if not lines:
        return name
    first = lines[0][:_LINE_CHARACTERS]
    if not first.startswith(name):
        first = f"{name}: {first}"
    if len(lines) > 1 and lines[-1] not in first:
        first += f" … {lines[-1][:_LINE_CHARACTERS]}"
    return first


def _on_loop(loop_ref: weakref.ref[asyncio.AbstractEventLoop],
             work: Callable[..., None], *args: Any) -> None:
    # From any thread; nothing if the loop is gone or closed.
    loop = loop_ref()
    if loop is not None:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(work, *args)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass(eq=False)
class RayWorker:
    """One pool actor."""

    handle: Any
    index: int
    name: str
    info: WorkerInfo | None = None
    load: int = 0
    alive: bool = True
    #: False while Ray says the worker is unavailable (it gets no new children then).
    reachable: bool = True
    problem: str | None = None
    #: The incarnation its lifeline follows.
    watched: str | None = None
    links: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Link] = field(
        default_factory=weakref.WeakKeyDictionary)

    @property
    def pid(self) -> int | None:
        return None if self.info is None else self.info.pid

    @property
    def started(self) -> bool:
        return self.info is not None

    def where(self) -> str:
        return "" if self.info is None else f" (pid {self.info.pid})"


@dataclass
class _Watch:
    """The GCS probe thread and the children it loses when the cluster is lost."""

    children: set[RemoteChild] = field(default_factory=set)
    thread: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    lost: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(eq=False)
class RayWorkerPool:
    """Async actors, each running many children on its own event loop (the arguments:
    ``docs/ray.md``; ``ValueError`` for one out of range, or an option the pool owns). Holds
    no event-loop state: one pool serves hosts on any loop."""

    setup: WorkerSetup | None = None
    _: KW_ONLY
    size: int = 2
    #: ``size`` when not given.
    max_size: int | None = None
    max_children: int | None = None
    max_concurrency: int = 10_000
    start_timeout: float = 60.0
    stop_timeout: float = 10.0
    unavailable_timeout: float = 30.0
    flush_interval: float = DEFAULT_FLUSH_INTERVAL
    placement: str | None = None
    recover: int = 0
    name: str | None = None
    actor_options: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("a Ray worker pool needs at least one worker")
        if self.max_size is not None and self.max_size < self.size:
            raise ValueError(f"max_size ({self.max_size}) is smaller than size ({self.size})")
        if self.max_children is not None and self.max_children < 1:
            raise ValueError("max_children must be at least 1")
        if self.recover < 0:
            raise ValueError("recover must be 0 or more")
        if self.placement is not None and self.placement not in PLACEMENT_STRATEGIES:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENT_STRATEGIES)}, "
                             f"not {self.placement!r}")
        options = dict(self.actor_options or {})
        for key, instead in _OWN_OPTIONS.items():
            if key in options:
                raise ValueError(f"actor_options[{key!r}]: the pool sets it; use {instead}")
        if options.get("max_task_retries", 0) != 0:
            raise ValueError("actor_options['max_task_retries'] must be 0: a remote child's "
                             "calls are never retried (a model turn is not replayed behind "
                             "the parent's back); RayWorkerPool(recover=...) resumes a lost "
                             "child instead")
        if self.placement is not None and "scheduling_strategy" in options:
            raise ValueError("give placement or actor_options['scheduling_strategy'], "
                             "not both")
        spread = {"scheduling_strategy": "SPREAD"} if self.placement is None else {}
        self._options = {"num_cpus": 0, "max_restarts": 0, **spread, **options,
                         "max_task_retries": 0, "max_concurrency": self.max_concurrency}
        self.max_size = self.max_size or self.size
        self.name = self.name or f"turnfork-pool-{next(_pool_numbers)}"
        self._actor: Any = None
        self._group: Any = None
        self._workers: list[RayWorker] = []
        self._created = 0
        self._closed = False
        # Worker states change in Ray's threads (a call answered) and on host loops: the lock
        # guards the counters and the waiters, never a Ray call; spawning is the host's.
        self._lock = threading.Lock()
        self._spawning = threading.Lock()
        self._waiters: list[tuple[weakref.ref[asyncio.AbstractEventLoop],
                                  asyncio.Future[None]]] = []
        self._waiting = 0
        self._watch = _Watch()
        self._puts = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                           thread_name_prefix="turnfork-ray")
        # What Ray's answers call back: never on Ray's own thread, which a Ray call blocks.
        self._answers = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="turnfork-ray-pool")
        #: Seeds this pool put into the object store, and their bytes.
        self.seeds_stored = 0
        self.seed_bytes_stored = 0

    @property
    def workers(self) -> tuple[RayWorker, ...]:
        """The live workers (started or not)."""
        return tuple(worker for worker in self._workers if worker.alive)

    def check_connected(self) -> None:
        """Refuse a start that cannot run (``RAY_NOT_CONNECTED``, ``RAY_CLUSTER_LOST``)."""
        if self._watch.lost is not None:
            raise _refusal(RAY_CLUSTER_LOST, self._watch.lost)
        if self._closed:
            raise _refusal(RAY_NOT_CONNECTED, "the Ray worker pool is closed")
        if not ray.is_initialized():
            raise _refusal(RAY_NOT_CONNECTED,
                           "Ray is not connected in this process: call ray.init(address=...) "
                           "or turnfork.shell.ray.connect_cluster(...) before starting children "
                           "on a Ray provider")

    def _placement_group(self) -> Any:
        if self._group is None:
            options = self._options
            bundle = {"CPU": float(options.get("num_cpus") or 0),
                      "GPU": float(options.get("num_gpus") or 0),
                      **{key: float(value)
                         for key, value in (options.get("resources") or {}).items()}}
            if options.get("memory"):
                bundle["memory"] = float(options["memory"])
            bundle = {key: value for key, value in bundle.items() if value > 0}
            # A bundle must ask for something; a worker that needs nothing takes a sliver.
            self._group = placement_group([bundle or {"CPU": 0.01}] * self.size,
                                          strategy=self.placement, name=f"{self.name}-placement")
        return self._group

    def _spawn(self) -> None:
        if self._actor is None:
            self._actor = ray.remote(
                concurrency_groups={CONTROL: CONTROL_CONCURRENCY})(ChildWorker)
        index = self._created
        self._created += 1
        name = f"{self.name}-{index}"
        options = dict(self._options, name=name)
        if self.placement is not None:
            options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                self._placement_group(), placement_group_bundle_index=index % self.size)
        try:
            worker = RayWorker(handle=self._actor.options(**options).remote(
                self.setup, flush_interval=self.flush_interval), index=index, name=name)
            self._ask(worker, "ready", self._answered)
        except Exception as error:  # e.g. the name is taken in this namespace
            worker = RayWorker(handle=None, index=index, name=name, alive=False,
                               problem=f"a Ray worker could not start: {_first_line(error)}")
        self._workers.append(worker)

    def _ask(self, worker: RayWorker, method: str,
             then: Callable[[RayWorker, concurrent.futures.Future[Any]], None]) -> None:
        # ``then`` runs on the pool's thread: never Ray's own, which a Ray call blocks.

        def answered(done: concurrent.futures.Future[Any]) -> None:
            with contextlib.suppress(RuntimeError):  # closed: nothing to follow
                self._answers.submit(then, worker, done)

        getattr(worker.handle, method).remote().future().add_done_callback(answered)

    def _followed(self, worker: RayWorker) -> bool:
        # (A Ray call after ray.shutdown() would start a cluster.)
        return not self._closed and worker.alive and ray.is_initialized()

    def _unreachable(self, worker: RayWorker) -> None:
        worker.reachable = False
        timer = threading.Timer(_RETRY_DELAY * 5, self._ask_ready, args=(worker,))
        timer.daemon = True
        timer.start()

    def _answered(self, worker: RayWorker, future: concurrent.futures.Future[Any], *,
                  lifeline: bool = False) -> None:
        # ``ready`` answered, or ``lifeline``, the call that never answers, did: the worker
        # is gone, or transiently unavailable.
        error = None if future.cancelled() else future.exception()
        if lifeline:
            worker.watched = None
        if not self._followed(worker):
            return
        if isinstance(error, exceptions.ActorUnavailableError):
            self._unreachable(worker)
        elif lifeline:
            worker.problem = (f"the Ray worker {worker.name}{worker.where()} died: "
                              f"{_first_line(error) if error else 'it stopped'}")
            self._drop(worker)
        elif error is not None:
            worker.problem = f"a Ray worker could not start: {_first_line(error)}"
            self._drop(worker)
        else:
            info = worker.info = future.result()
            worker.reachable = True
            if worker.watched != info.incarnation:
                worker.watched = info.incarnation
                with contextlib.suppress(Exception):  # killed meanwhile: nothing to follow
                    self._ask(worker, "lifeline", functools.partial(self._answered,
                                                                    lifeline=True))
        self._changed()

    def _ask_ready(self, worker: RayWorker) -> None:
        if self._followed(worker):
            with contextlib.suppress(Exception):
                self._ask(worker, "ready", self._answered)

    def _drop(self, worker: RayWorker) -> None:
        if worker.alive:
            worker.alive = False
            if worker.handle is not None and ray.is_initialized():
                with contextlib.suppress(Exception):
                    ray.kill(worker.handle)

    def _changed(self) -> None:
        """Wake every start waiting for a worker, on its own loop."""
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for loop, waiter in waiters:
            _on_loop(loop, _wake, waiter)

    def _top_up(self) -> None:
        """Keep ``size`` workers; grow toward ``max_size`` while the waiting starts outnumber
        the free slots (pending workers counted as free)."""
        self._workers = [worker for worker in self._workers if worker.alive]
        while len(self._workers) < self.size:
            self._spawn()
        if self.max_children is None:
            return
        free = sum(self.max_children - worker.load for worker in self._workers
                   if worker.reachable and worker.load < self.max_children)
        while free < self._waiting and len(self._workers) < (self.max_size or self.size):
            self._spawn()
            free += self.max_children

    def _choose(self, exclude: Collection[RayWorker]) -> RayWorker | None:
        ready = [worker for worker in self._workers
                 if worker.alive and worker.started and worker.reachable
                 and worker not in exclude
                 and (self.max_children is None or worker.load < self.max_children)]
        return min(ready, key=lambda worker: (worker.load, worker.index), default=None)

    def _why_none(self, spawned: Collection[RayWorker]) -> str | None:
        """Why no worker can take a child now and none will: ``None`` while one may."""
        alive = self.workers
        if any(not worker.started or not worker.reachable for worker in alive):
            return None  # one may start or come back
        if alive and self.max_children is not None:
            return None  # full: one may free a slot
        problems = sorted({worker.problem for worker in spawned if worker.problem})
        return "; ".join(problems) or "no Ray worker is available"

    async def acquire(self, *, exclude: Collection[RayWorker] = ()) -> RayWorker:
        """The least loaded started worker not in ``exclude``, counted one more child until
        :meth:`release` (a refusal: ``SubagentStartError``)."""
        self.check_connected()
        self._watch_cluster()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.start_timeout
        with self._lock:
            self._waiting += 1
        try:
            with self._spawning:
                before = set(self._workers)
                self._top_up()
                spawned = [worker for worker in self._workers if worker not in before]
            while True:
                with self._lock:
                    waiter = self._waiter(loop)
                    chosen = self._choose(exclude)
                    if chosen is not None:
                        chosen.load += 1
                        return chosen
                problem = self._why_none(spawned)
                if problem is not None:
                    raise _refusal(RAY_WORKER_UNAVAILABLE, problem)
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise _refusal(RAY_WORKER_UNAVAILABLE, self._waited())
                await asyncio.wait([waiter], timeout=remaining)
                self.check_connected()
        finally:
            with self._lock:
                self._waiting -= 1

    async def wait_ready(self) -> tuple[RayWorker, ...]:
        """Start the missing workers and wait (at most ``start_timeout``) until none is
        starting; returns the started ones."""
        self.check_connected()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.start_timeout
        with self._spawning:
            self._top_up()
        while True:
            with self._lock:
                waiter = self._waiter(loop)
            workers = self.workers
            remaining = deadline - loop.time()
            if all(worker.started for worker in workers) or remaining <= 0:
                return tuple(worker for worker in workers if worker.started)
            await asyncio.wait([waiter], timeout=remaining)

    def _waiter(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        # Registered before the look it follows: a worker that starts right after wakes it.
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append((weakref.ref(loop), waiter))
        return waiter

    def _waited(self) -> str:
        alive = self.workers
        pending = sum(not worker.started for worker in alive)
        unreachable = sum(worker.started and not worker.reachable for worker in alive)
        parts = []
        if pending:
            parts.append(f"{pending} still pending (the cluster cannot place them yet)")
        if unreachable:
            parts.append(f"{unreachable} unavailable")
        if not parts and self.max_children is not None:
            parts.append(f"every worker runs max_children={self.max_children} children")
        return (f"no Ray worker could take the child within {self.start_timeout:g} s: "
                + ", ".join(parts or ["none is available"]))

    def release(self, worker: RayWorker) -> None:
        with self._lock:
            worker.load = max(0, worker.load - 1)
        if self.max_children is not None:
            self._changed()

    def lost(self, worker: RayWorker, problem: str | None = None) -> None:
        """Drop a dead worker (the next start replaces it)."""
        if worker.alive and problem is not None:
            worker.problem = problem
        self._drop(worker)
        self._changed()

    def _reachable(self, worker: RayWorker, reachable: bool) -> None:
        if worker.reachable != reachable:
            worker.reachable = reachable
            self._changed()

    def link(self, worker: RayWorker) -> _Link:
        """The running event loop's link to ``worker``."""
        loop = asyncio.get_running_loop()
        link = worker.links.get(loop)
        if link is None:
            link = worker.links[loop] = _Link(self, worker, loop)
        return link

    async def live_children(self) -> tuple[str, ...]:
        """Ids of the children running on the live workers (asks each)."""
        asked = [asyncio.wrap_future(worker.handle.live_children.remote().future())
                 for worker in self.workers if worker.started]
        found: list[str] = []
        for answer in await asyncio.gather(*asked, return_exceptions=True):
            if isinstance(answer, exceptions.RayActorError):
                continue  # a dead worker runs nothing
            if isinstance(answer, BaseException):
                raise answer
            found.extend(answer)
        return tuple(found)

    def put(self, events: Sequence[Event]) -> concurrent.futures.Future[Any]:
        """Encode and store ``events``, off the event loop: their object reference."""

        def stored() -> Any:
            data = encode_log(events)
            reference = ray.put(data)
            self.seeds_stored += 1
            self.seed_bytes_stored += len(data)
            return reference

        return self._puts.submit(stored)

    def close(self) -> None:
        """Kill every worker (their children are lost), remove the placement group."""
        self._closed = True
        self._watch.stop.set()
        with self._spawning:
            workers, self._workers = self._workers, []
            group, self._group = self._group, None
        for worker in workers:
            self._drop(worker)
        if group is not None:
            with contextlib.suppress(Exception):
                remove_placement_group(group)
        self._puts.shutdown(wait=False)
        self._answers.shutdown(wait=False)
        self._changed()

    def follow(self, child: RemoteChild) -> None:
        """Lose ``child`` if the cluster is found lost while it runs."""
        with self._watch.lock:
            self._watch.children.add(child)

    def unfollow(self, child: RemoteChild) -> None:
        with self._watch.lock:
            self._watch.children.discard(child)

    def _watch_cluster(self) -> None:
        watch = self._watch
        with watch.lock:
            if watch.thread is not None and watch.thread.is_alive():
                return
            address = probe_address()
            if address is None:
                return
            watch.thread = threading.Thread(target=self._probe, args=(address,),
                                            name="turnfork-ray-gcs-probe", daemon=True)
            watch.thread.start()

    def _probe(self, address: str) -> None:
        """Ray ends this process some time after its GCS is lost, without an exception; until
        then, the children running here are closed so that what the host persisted is
        balanced and says what happened."""
        watch = self._watch
        host, _, port = address.rpartition(":")
        missed, lost = 0, ""
        while not watch.stop.wait(_PROBE_INTERVAL):
            try:
                with socket.create_connection((host, int(port)), timeout=_PROBE_INTERVAL):
                    missed = 0
            except OSError as error:
                missed += 1
                if missed == _PROBES_MISSED:
                    lost = watch.lost = (f"the Ray cluster's GCS at {address} stopped "
                                         f"answering ({error.strerror or error}); Ray ends "
                                         "this process when it does not come back")
                    break
        else:
            return
        with watch.lock:
            children = list(watch.children)
        for child in children:
            child.lose_threadsafe(lost)
        self._changed()

    def __repr__(self) -> str:
        return f"RayWorkerPool(name={self.name!r}, workers={len(self.workers)})"


@dataclass
class _Call:
    """A call of a link's worker, sent again while Ray calls the worker unavailable;
    ``answered(error, result)`` follows its last attempt."""

    method: str
    arguments: tuple[Any, ...]
    name: str | None = None
    answered: Callable[[BaseException | None, Any], None] | None = None
    attempt: int = 0


class _Link:
    """One worker's children started from one host event loop: a tick's starts, cancels and
    stops go in one call of each kind, and one poll at a time brings back their events."""

    def __init__(self, pool: RayWorkerPool, worker: RayWorker,
                 loop: asyncio.AbstractEventLoop) -> None:
        self._pool = pool
        self._worker = worker
        self._loop = weakref.ref(loop)
        self.id = ""
        self.children: dict[str, RemoteChild] = {}
        #: The worker incarnation that started each child (what its start call answered).
        self._started_on: dict[str, str] = {}
        self._starts: list[tuple[ChildStart, Any]] = []
        self._cancels: list[tuple[str, CancelCause]] = []
        self._stops: list[str] = []
        self._flushing = False
        self._poller: asyncio.Task[None] | None = None

    def start(self, child: RemoteChild, start: ChildStart, seed: Any) -> None:
        if self._poller is None:  # a new generation, with a new outbox on the worker
            self.id = uuid.uuid4().hex
            self._poller = asyncio.get_running_loop().create_task(
                self._poll(self.id), name=f"ray-events:{self._worker.name}")
        self.children[child.id] = child
        self._starts.append((start, seed))
        self._schedule()

    def cancel(self, child_id: str, cause: CancelCause) -> None:
        self._cancels.append((child_id, cause))
        self._schedule()

    def stop(self, child_id: str) -> None:
        self._stops.append(child_id)
        self._schedule()

    def forget(self, child_id: str) -> None:
        self.children.pop(child_id, None)
        self._started_on.pop(child_id, None)
        poller = self._poller
        if not self.children and poller is not None and poller is not asyncio.current_task():
            # Its last child left (given up on, or resumed elsewhere): the poll in flight is
            # for no one, and the next start polls a new generation.
            self._poller = None
            poller.cancel()

    def _schedule(self) -> None:
        # What the loop's current tick asks of this worker goes in one call of each kind.
        if not self._flushing:
            self._flushing = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flushing = False
        starts, self._starts = self._starts, []
        starts = [(start, seed) for start, seed in starts if start.spec.plan.header.id
                  in self.children]
        if starts:
            # Each seed reference once in the call; a start names its seed by its index there.
            seeds = {id(seed): seed for _, seed in starts if seed is not None}
            numbers = {key: number for number, key in enumerate(seeds)}
            records = [start if seed is None
                       else msgspec.structs.replace(start, seed=numbers[id(seed)])
                       for start, seed in starts]
            ids = [record.spec.plan.header.id for record in records]
            name = (f"start child {ids[0]}" if len(ids) == 1
                    else f"start {len(ids)} children: {ids[0]} … {ids[-1]}")
            self._call(_Call("start_children",
                             (self.id, encode_wire(records), list(seeds.values())), name,
                             functools.partial(self._starts_answered, ids)))
        if self._cancels:
            cancels, self._cancels = self._cancels, []
            self._call(_Call("cancel_children", (encode_wire(cancels),)))
        if self._stops:
            stops, self._stops = self._stops, []
            self._call(_Call("stop_children", (stops,)))

    def _call(self, call: _Call) -> None:
        # Nothing once the worker is gone: its poll fails, which loses (or recovers) the
        # children.
        if not self._worker.alive or not ray.is_initialized():
            return
        try:
            method = getattr(self._worker.handle, call.method)
            if call.name is not None:
                method = method.options(name=call.name)
            future = method.remote(*call.arguments).future()
        except Exception as error:
            if call.answered is not None:
                call.answered(error, None)
            return
        future.add_done_callback(functools.partial(_on_loop, self._loop, self._answered, call))

    def _answered(self, call: _Call, future: concurrent.futures.Future[Any]) -> None:
        error = future.exception()
        loop = self._loop()
        if (isinstance(error, exceptions.ActorUnavailableError) and call.attempt < _RETRIES
                and loop is not None):
            # The same call again: the worker runs each child once.
            call.attempt += 1
            loop.call_later(_RETRY_DELAY, self._call, call)
        elif call.answered is not None:
            call.answered(error, None if error is not None else future.result())

    def _starts_answered(self, ids: Sequence[str], error: BaseException | None,
                         incarnation: str) -> None:
        if error is None:
            self._started_on.update(dict.fromkeys(ids, incarnation))
            return
        if isinstance(error, exceptions.RayActorError) and not isinstance(
                error, exceptions.ActorUnavailableError):
            return  # the worker died: its poll says so
        for child_id in ids:
            child = self.children.pop(child_id, None)
            if child is not None:
                child.lost(f"the Ray worker{self._worker.where()} could not start the child: "
                           f"{_first_line(error)}")

    async def _poll(self, link: str) -> None:
        worker, pool = self._worker, self._pool
        loop = asyncio.get_running_loop()
        acked = 0
        incarnation: str | None = None
        unavailable_since: float | None = None
        try:
            while self.children:
                future = worker.handle.poll.options(name=f"events of {worker.name}").remote(
                    link, acked).future()
                try:
                    data = await asyncio.wrap_future(future)
                except exceptions.RayActorError as error:
                    unavailable = isinstance(error, exceptions.ActorUnavailableError)
                    if unavailable and worker.alive:
                        now = loop.time()
                        unavailable_since = unavailable_since or now
                        pool._reachable(worker, False)
                        if now - unavailable_since < pool.unavailable_timeout:
                            await asyncio.sleep(_RETRY_DELAY)
                            continue
                        what = f"was unavailable for {pool.unavailable_timeout:g} s"
                        pool.lost(worker, f"the Ray worker {worker.name}{worker.where()} {what}")
                        what += f": {_first_line(error)}"
                    elif unavailable:  # its lifeline says it died (its node was lost)
                        what = f"died before it finished: {worker.problem}"
                    else:
                        pool.lost(worker, f"the Ray worker {worker.name}{worker.where()} died: "
                                          f"{_first_line(error)}")
                        what = f"died before it finished: {_first_line(error)}"
                    self._lose_all(f"the Ray worker{worker.where()} running this child {what}",
                                   recoverable=True)
                    return
                except Exception as error:
                    self._lose_all(f"the child's events could not be read from its Ray "
                                   f"worker: {_first_line(error)}")
                    return
                if unavailable_since is not None:
                    unavailable_since = None
                    pool._reachable(worker, True)
                try:
                    batch = decode_batch(data)
                except msgspec.DecodeError as error:
                    self._fail_all(f"a batch from the Ray worker cannot be decoded: {error}")
                    return
                if batch.incarnation != incarnation:
                    # A restarted worker's batches count from the start again.
                    acked = 0 if incarnation is not None else acked
                    incarnation = batch.incarnation
                    self._restarted(incarnation)
                    if worker.info is not None and worker.info.incarnation != incarnation:
                        pool._ask_ready(worker)  # what the pool knows of it is stale
                if batch.seq == acked + 1:
                    acked = batch.seq
                    self._deliver(batch)
        finally:
            if self._poller is asyncio.current_task():
                self._poller = None
            self._call(_Call("close_link", (link,)))

    def _restarted(self, incarnation: str) -> None:
        # Ray restarted the worker (``max_restarts``): what its last process ran is lost.
        gone = [child_id for child_id, started_on in self._started_on.items()
                if started_on != incarnation]
        for child_id in gone:
            self._started_on.pop(child_id, None)
            child = self.children.pop(child_id, None)
            if child is not None:
                child.lost(f"the Ray worker{self._worker.where()} running this child was "
                           "restarted by Ray before the child finished", recoverable=True)

    def _deliver(self, batch: EventsBatch) -> None:
        decoded = decode_log(batch.jsonl)
        try:
            events = decoded.unwrap()
        except Exception:
            self._fail_all(f"a batch from the Ray worker cannot be decoded: "
                           f"{decoded.failure()}")
            return
        offset = 0
        for child_id, count in batch.counts:
            part = events[offset:offset + count]
            offset += count
            child = self.children.get(child_id)
            if child is not None:
                child.take(part)
        for done in batch.done:
            child = self.children.get(done.id)
            if child is not None:
                child.finish(done)

    def _lose_all(self, reason: str, *, recoverable: bool = False) -> None:
        for child in self._drop_all():
            child.lost(reason, recoverable=recoverable)

    def _fail_all(self, problem: str) -> None:
        for child in self._drop_all():
            child.fail(_HostSideError(problem))

    def _drop_all(self) -> list[RemoteChild]:
        children = list(self.children.values())
        self.children.clear()
        self._started_on.clear()
        return children


@dataclass(eq=False, kw_only=True)
class RemoteChild:
    """A child running on a pool worker; ``session`` is its session on the parent's host."""

    pool: RayWorkerPool
    worker: RayWorker
    host: SubagentHost
    session: Session
    spec: ChildSpec
    #: The object reference of its seed (``None``: a spawn child, or once it has finished).
    seed: Any
    capture: StructuredCapture | None

    def __post_init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._idle: asyncio.Future[None] = self._loop.create_future()
        self._stopped: asyncio.Future[None] | None = None
        self._link: _Link | None = None
        self._started = False
        self._holds_worker = True
        self._cause: CancelCause | None = None
        self._resuming: asyncio.Task[None] | None = None
        # What the worker rebuilds by itself before a resumed child's acknowledged events:
        # the header, the seed and its end.
        self._setup_length = len(self.session) - len(self.spec.policy)
        #: Why the child ended abnormally, when its worker or the cluster let it down.
        self.diagnostic: str | None = None
        #: A failure of the host's side, raised once by :meth:`when_idle`.
        self.failure: BaseException | None = None
        self.received = 0
        self.batches = 0
        #: Why it resumed on another worker, each time (the pool's ``recover``).
        self.recoveries: list[str] = []

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def running(self) -> bool:
        return self._started and not self._idle.done()

    def followup(self, prompt: Prompt) -> None:
        if self._started:
            raise RuntimeError(f"the remote child {self.id} was started already")
        self._started = True
        self.pool.follow(self)
        self._send(ChildStart(spec=self.spec, prompt=user_message(prompt, "").content,
                              cause=self._cause))

    def _send(self, start: ChildStart) -> None:
        self._link = self.pool.link(self.worker)
        self._link.start(self, start, self.seed)

    def cancel(self, cause: CancelCause | None = None) -> None:
        """Cancel the child's turn on its worker (the first cause wins)."""
        if self._cause is not None:
            return
        self._cause = cause or CancelUser()
        if self.running and self._link is not None and self._resuming is None:
            self._link.cancel(self.id, self._cause)

    async def when_idle(self) -> None:
        """Wait until the child stopped (or was given up on) and its log here is durable, as
        an agent's ``when_idle`` does (raises :attr:`failure` once)."""
        await asyncio.wait([self._idle])
        await report_idle(self)

    async def dispose(self) -> None:
        """Cancel with ``disposed``, wait for the child to stop, release its session here
        (the store keeps its file). Idempotent, concurrent-safe."""
        self.cancel(CancelDisposed())
        if not self._started:
            self._finish()
        if self._stopped is None:
            self._stopped = self._loop.create_future()
            try:
                await self._stop()
            finally:
                _wake(self._stopped)
        else:
            await asyncio.wait([self._stopped])
        self.host.sessions.release(self.id)

    async def _stop(self) -> None:
        timeout = self.pool.stop_timeout
        done, _ = await asyncio.wait([self._idle], timeout=timeout)
        if not done and self._link is not None:
            self._link.stop(self.id)
            done, _ = await asyncio.wait([self._idle], timeout=timeout)
        if not done:
            self.lost(f"the child did not stop within {2 * timeout:g} s of being cancelled "
                      "and was given up on; its worker may still be running it")

    def lose_threadsafe(self, reason: str) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing is running
            self._loop.call_soon_threadsafe(self.lost, reason)

    def take(self, events: Sequence[Event]) -> None:
        if not events or self._idle.done():
            return
        try:
            self.session.extend(events)
        except Exception as error:
            self.fail(_HostSideError(str(error)))
            return
        self.received += len(events)
        self.batches += 1

    def finish(self, done: ChildDone) -> None:
        if self._idle.done():
            return
        if self.capture is not None and done.captured is not None:
            self.capture.value = msgspec.Raw(done.captured)
        if done.failure is not None:
            self.failure = RuntimeError(f"the child's loop failed on its Ray worker: "
                                        f"{done.failure}")
        if done.error is not None:
            self._close(done.error)
        self._finish()

    def fail(self, failure: BaseException) -> None:
        """The host cannot follow the child: stop it there, close it here."""
        if self._idle.done():
            return
        self.failure = failure
        if self._link is not None:
            self._link.stop(self.id)
        with contextlib.suppress(Exception):
            self._close_turn()
        self._finish()

    def lost(self, reason: str, *, recoverable: bool = False) -> None:
        """The child is lost for ``reason`` (resumed elsewhere when ``recoverable`` and the
        pool's ``recover`` allows)."""
        if self._idle.done() or self._resuming is not None:
            return
        if (recoverable and self._cause is None
                and len(self.recoveries) < self.pool.recover):
            self._recover(reason)
            return
        self._close(reason)
        self._finish()

    def _recover(self, reason: str) -> None:
        self.recoveries.append(reason)
        if self._link is not None:
            self._link.forget(self.id)
        try:
            self._close_turn()
        except Exception as error:
            self.failure = error
            self._finish()
            return
        self._release_worker()
        self._resuming = self._loop.create_task(self._resume(reason),
                                                name=f"ray-resume:{self.id}")

    async def _resume(self, reason: str) -> None:
        try:
            try:
                worker = await self.pool.acquire(exclude=(self.worker,))
            except SubagentStartError as refused:
                self._close(f"{reason}; it could not resume on another Ray worker: {refused}")
                self._finish()
                return
            if self._cause is not None or self._idle.done():
                self.pool.release(worker)
                self._finish()
                return
            self.worker, self._holds_worker = worker, True
            acknowledged = self.session.events[self._setup_length:]
            self._send(ChildStart(
                spec=self.spec, prompt=(TextBlock(text=RECOVERY_PROMPT),),
                resumed=encode_log(acknowledged)))
        finally:
            self._resuming = None

    def _close(self, reason: str) -> None:
        self.diagnostic = (f"{reason}; the child's log was closed on the parent's host after "
                           f"the {self.received} events received from it")
        try:
            self._close_turn()
        except Exception as error:
            self.failure = error

    def _close_turn(self) -> None:
        session = self.session
        closers = close_open_turn(session.trace, session.events, TurnInterrupted(),
                                  time=self.host.clock())
        if closers:
            session.extend(closers)

    def _release_worker(self) -> None:
        if self._holds_worker:
            self._holds_worker = False
            self.pool.release(self.worker)

    def _finish(self) -> None:
        if self._idle.done():
            return
        self._idle.set_result(None)
        self._release_worker()
        self.pool.unfollow(self)
        if self._link is not None:
            self._link.forget(self.id)
        # Nothing of a finished child pins the object store or the link.
        self.seed = None
        self._link = None

    def __repr__(self) -> str:
        return f"RemoteChild(id={self.id!r}, worker={self.worker.index})"


class _HostSideError(Exception):
    """The host could not take a batch of the child's events."""


class _SeedRefs:
    """A provider's stored seeds: one per parent, at its latest fork point."""

    def __init__(self, pool: RayWorkerPool) -> None:
        self._pool = pool
        #: Each parent's cut and the put of its seed there.
        self._by_parent: dict[str, tuple[int, concurrent.futures.Future[Any]]] = {}
        self._runtimes: weakref.WeakSet[SubagentRuntime] = weakref.WeakSet()

    def _follow(self, runtime: SubagentRuntime) -> None:
        # A parent's seed goes as soon as the runtime releases the parent.
        if runtime in self._runtimes:
            return
        self._runtimes.add(runtime)
        seeds = weakref.ref(self)

        async def release(parent: Agent) -> None:
            held = seeds()
            if held is not None:
                held._by_parent.pop(parent.id, None)

        def owns(parent: Agent) -> bool:
            held = seeds()
            return held is not None and parent.id in held._by_parent

        runtime.on_release(release, owns=owns)

    def held(self) -> int:
        return len(self._by_parent)

    async def reference(self, runtime: SubagentRuntime, parent: Agent,
                        seed: Sequence[Event]) -> Any:
        self._follow(runtime)
        stored = self._by_parent.get(parent.id)
        if stored is None or stored[0] != len(seed):
            stored = self._by_parent[parent.id] = (len(seed), self._pool.put(seed))
        try:
            reference = await asyncio.shield(asyncio.wrap_future(stored[1]))
        except Exception as error:
            if self._by_parent.get(parent.id) is stored:
                del self._by_parent[parent.id]
            raise _refusal(RAY_SEED_NOT_STORED,
                           f"the fork seed ({len(seed)} events of {parent.id}) could not be "
                           f"put into Ray's object store: {_first_line(error)}") from error
        if parent.disposed:  # released meanwhile: keep nothing for it
            self._by_parent.pop(parent.id, None)
        return reference


def _route_pool(pools: Mapping[str, RayWorkerPool], request: CheckedRequest) -> str:
    """The pool named like the child's model provider, else the first."""
    options = request.request.agent_options
    wanted = None if options is None else options.provider
    return wanted if wanted is not None and wanted in pools else next(iter(pools))


class RayProvider(_ProviderBase):
    """Children on a :class:`RayWorkerPool`; subclasses differ only in :attr:`kind`.

    ``pool`` is one pool or several by name; ``pool_for(request)`` names the one a child runs
    on (how a child asks for resources: each pool's ``actor_options`` are its own).
    """

    def __init__(self, pool: RayWorkerPool | Mapping[str, RayWorkerPool], provider_name: str,
                 *, pool_for: Callable[[CheckedRequest], str] | None = None,
                 cache_preserving: bool = False) -> None:
        super().__init__(provider_name)
        pools = {"default": pool} if isinstance(pool, RayWorkerPool) else dict(pool)
        if not pools:
            raise ValueError("a Ray provider needs at least one pool")
        self.pools: Mapping[str, RayWorkerPool] = pools
        self.pool = next(iter(pools.values()))
        self._pool_for = pool_for or functools.partial(_route_pool, pools)
        self._seeds = {name: _SeedRefs(each) for name, each in pools.items()}
        self.cache_preserving = cache_preserving

    def seeds_held(self) -> int:
        """Stored seeds still referenced (one per parent and pool at most)."""
        return sum(seeds.held() for seeds in self._seeds.values())

    def _chosen(self, request: CheckedRequest) -> str:
        name = self._pool_for(request)
        if name not in self.pools:
            raise _refusal(RAY_WORKER_UNAVAILABLE,
                           f"no Ray worker pool named {name!r} (this provider has "
                           f"{', '.join(map(repr, self.pools))})")
        return name

    async def start(self, runtime: SubagentRuntime, request: CheckedRequest, *, parent: Agent,
                    signal: AbortSignal | None) -> SubagentRun:
        host = runtime.host
        setup = plan_setup(host, request, parent, signal, kind=self.kind,
                           provider_name=self.provider_name,
                           cache_preserving=self.cache_preserving)
        name = self._chosen(request)
        pool = self.pools[name]
        pool.check_connected()
        plan = setup.plan
        session = create_child_session(host, plan)
        try:
            worker = await pool.acquire()
            try:
                seed = (None if plan.seed is None
                        else await self._seeds[name].reference(runtime, parent, plan.seed))
                await setup_checkpoint(session.id, parent, signal)
            except BaseException:
                pool.release(worker)
                raise
        except BaseException:
            discard_child(host, session.id)
            raise
        spec = ChildSpec.planned(setup, host_sections=host.prompt_sections.sections(),
                                 sandbox_mode=getattr(host, "sandbox_mode", None),
                                 session_titles=bool(getattr(host, "session_titles", True)))
        capture = setup.capture()
        child = RemoteChild(pool=pool, worker=worker, host=host, session=session,
                            spec=spec, seed=seed, capture=capture)
        return SubagentRun(provider=self.provider_name, label=request.request.label,
                           parent=parent, child=child,
                           seed_length=0 if plan.seed is None else len(plan.seed),
                           prompt=plan.prompt, capture=capture, signal=signal,
                           diagnostic=lambda: child.diagnostic)


class RayForkProvider(RayProvider):
    """Children start from the parent's completed turns; ``cache_preserving``: as
    ``ForkProvider(cache_preserving=True)``."""

    kind: Literal["fork", "spawn"] = "fork"

    def __init__(self, pool: RayWorkerPool | Mapping[str, RayWorkerPool],
                 provider_name: str = "ray-fork", *,
                 pool_for: Callable[[CheckedRequest], str] | None = None,
                 cache_preserving: bool = False) -> None:
        super().__init__(pool, provider_name, pool_for=pool_for,
                         cache_preserving=cache_preserving)


class RaySpawnProvider(RayProvider):
    """Children start empty: they see only their prompt."""

    def __init__(self, pool: RayWorkerPool | Mapping[str, RayWorkerPool],
                 provider_name: str = "ray-spawn", *,
                 pool_for: Callable[[CheckedRequest], str] | None = None) -> None:
        super().__init__(pool, provider_name, pool_for=pool_for)
