"""Fork and spawn children on a Ray cluster: the providers, their worker pool, and the stand-in
that carries a remote child's events into a session of the parent's host.

Rules:

* The shared driver's rules, not a copy: a start is the in-process driver's steps
  (:func:`~turnfork.shell.subagents.providers.plan_setup`, ``create_child_session``,
  ``setup_checkpoint``) on the parent's host, and the child agent is configured on a worker by
  ``configure_child`` from what was planned here. The run is a
  :class:`~turnfork.shell.subagents.run.SubagentRun`, so result reading, abort, disposal and
  their separate failure channels are the in-process run's.
* What is decided before publication is refused before publication, with nothing left: Ray
  not connected (``RAY_NOT_CONNECTED``), no worker that starts (``RAY_WORKER_UNAVAILABLE``),
  a cluster found lost (``RAY_CLUSTER_LOST``), a seed the object store refuses
  (``RAY_SEED_NOT_STORED``); an abort or the parent's disposal during the setup window
  (``setup_checkpoint``).
* A fork child's seed is encoded once per fork point (parent and cut) and put into the object
  store once; every child forked there gets the same reference. A parent keeps one stored
  seed, replaced when its cut moves, dropped once it is disposed.
* The child's session lives on the parent's host (``host.sessions``: the store's file, read
  like any local session); each batch the worker streams is decoded and appended there, where
  the trace checks it. The worker's copy is a working copy.
* Cancelling a run (the parent's signal, cause ``parent``; disposal, cause ``disposed``) asks
  the worker to cancel the child through its own turn machine; its closing events stream back.
  A child that has not stopped ``stop_timeout`` seconds later is cancelled by Ray
  (``ray.cancel``), then given up on.
* A child that is lost — its worker died, Ray cancelled it, the cluster's GCS stopped
  answering, the stream failed — has its turn closed on the parent's host by the core's crash
  closers (reason ``interrupted``: a started tool call's outcome is unknown), after every
  event already received; its result is not ``completed`` and its diagnostic says what
  happened. A batch the host cannot decode or append stops the child and rejects its result
  (as a failing write does in process). Siblings on other workers are not affected; a dead
  worker is replaced for later children (Ray never restarts actors or retries calls here:
  a model turn is not replayed).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import re
import socket
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import msgspec

from ...core import (
    CancelCause,
    CancelDisposed,
    CancelUser,
    Capabilities,
    CheckedRequest,
    ContentBlock,
    Event,
    StartError,
    TurnInterrupted,
    close_open_turn,
    decode_log,
    encode_log,
)
from ..abort import AbortSignal
from ..agent import Agent, Prompt, report_idle, user_message
from ..session import Session
from ..subagents.providers import (
    create_child_session,
    discard_child,
    plan_setup,
    setup_checkpoint,
)
from ..subagents.registry import SubagentHost, SubagentRuntime, SubagentStartError
from ..subagents.run import StructuredCapture, SubagentRun
from ._ray import exceptions, ray
from .cluster import gcs_address
from .worker import (
    DEFAULT_FLUSH_INTERVAL,
    ChildDone,
    ChildSpec,
    ChildWorker,
    EventsBatch,
    WorkerInfo,
    WorkerSetup,
)

__all__ = [
    "RAY_CAPABILITIES",
    "RAY_NOT_CONNECTED",
    "RAY_WORKER_UNAVAILABLE",
    "RAY_CLUSTER_LOST",
    "RAY_SEED_NOT_STORED",
    "RayWorker",
    "RayWorkerPool",
    "RemoteChild",
    "RayProvider",
    "RayForkProvider",
    "RaySpawnProvider",
]

#: Everything the in-process providers support: the worker configures the child with the
#: shared driver's own step.
RAY_CAPABILITIES = Capabilities(output_schema=True, depth_limit=True, tool_filter=True,
                                persona=True)

#: ``StartError.code`` of a start while this process is not connected to Ray.
RAY_NOT_CONNECTED = "RAY_NOT_CONNECTED"
#: ``StartError.code`` of a start no pool worker could take (none started, or all died).
RAY_WORKER_UNAVAILABLE = "RAY_WORKER_UNAVAILABLE"
#: ``StartError.code`` of a start after the pool found the cluster's GCS gone.
RAY_CLUSTER_LOST = "RAY_CLUSTER_LOST"
#: ``StartError.code`` of a fork whose seed the object store refused.
RAY_SEED_NOT_STORED = "RAY_SEED_NOT_STORED"

#: Seconds between two probes of the GCS (each may take as long), and probes missed in a row
#: before the cluster counts as lost: about 5 s, well inside the 60 s after which Ray ends a
#: driver whose GCS is gone.
_PROBE_INTERVAL = 1.0
_PROBES_MISSED = 5


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


# ---------------------------------------------------------------------------- the pool


@dataclass(eq=False)
class RayWorker:
    """One pool actor: its handle, what it reported when it started, its live children."""

    handle: Any
    index: int
    ready: concurrent.futures.Future[Any]
    info: WorkerInfo | None = None
    load: int = 0
    alive: bool = True

    @property
    def pid(self) -> int | None:
        """The worker process's id, once started."""
        return None if self.info is None else self.info.pid


@dataclass
class _Watch:
    """The GCS probe thread and the children it fails when the cluster is lost."""

    children: set[RemoteChild] = field(default_factory=set)
    thread: threading.Thread | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    lost: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class RayWorkerPool:
    """A fixed number of async actors, each running many children on its own event loop.

    Args:
        setup: configures each worker's registries when it starts (its models and tools); an
            importable module-level function (Ray pickles it by reference).
        size: workers to keep (for a multi-node cluster, a few per node).
        max_concurrency: calls one worker runs at once (children plus control calls).
        start_timeout: seconds a new worker may take to start before a start is refused.
        stop_timeout: seconds a cancelled child may take to stop before Ray cancels it (and
            again before it is given up on).
        flush_interval: seconds a child's events may wait on its worker for more to join
            them in one stream item (they leave at once when the child goes idle).
        actor_options: further ``ray.remote`` options for the workers (resources, a
            ``runtime_env``, a node label, …). ``num_cpus`` is 0 unless given, and the
            scheduling strategy ``SPREAD``; Ray never restarts a worker or retries its calls.

    The pool holds no event-loop state: one pool serves hosts on any loop. :meth:`close` kills
    its workers.
    """

    def __init__(self, setup: WorkerSetup | None = None, *, size: int = 2,
                 max_concurrency: int = 10_000, start_timeout: float = 60.0,
                 stop_timeout: float = 10.0, flush_interval: float = DEFAULT_FLUSH_INTERVAL,
                 actor_options: Mapping[str, Any] | None = None) -> None:
        if size < 1:
            raise ValueError("a Ray worker pool needs at least one worker")
        self.setup = setup
        self.size = size
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.flush_interval = flush_interval
        options: dict[str, Any] = {"num_cpus": 0, "scheduling_strategy": "SPREAD",
                                   **(actor_options or {})}
        options.update(max_concurrency=max_concurrency, max_restarts=0, max_task_retries=0)
        self._options = options
        self._workers: list[RayWorker] = []
        self._created = 0
        self._closed = False
        self._watch = _Watch()
        self._puts = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                           thread_name_prefix="turnfork-ray")
        #: Seeds this pool put into the object store, and their bytes.
        self.seeds_stored = 0
        self.seed_bytes_stored = 0

    @property
    def workers(self) -> tuple[RayWorker, ...]:
        """The live workers, in creation order."""
        return tuple(worker for worker in self._workers if worker.alive)

    def check_connected(self) -> None:
        """Refuse a start that cannot run: not connected, closed, or the cluster lost.

        Raises:
            SubagentStartError: ``RAY_NOT_CONNECTED`` or ``RAY_CLUSTER_LOST``.
        """
        if self._watch.lost is not None:
            raise _refusal(RAY_CLUSTER_LOST, self._watch.lost)
        if self._closed:
            raise _refusal(RAY_NOT_CONNECTED, "the Ray worker pool is closed")
        if not ray.is_initialized():
            raise _refusal(RAY_NOT_CONNECTED,
                           "Ray is not connected in this process: call ray.init(address=...) "
                           "or turnfork.shell.ray.connect_cluster(...) before starting children "
                           "on a Ray provider")

    def _spawn(self) -> RayWorker:
        actor = ray.remote(ChildWorker).options(**self._options)
        handle = actor.remote(self.setup, flush_interval=self.flush_interval)
        worker = RayWorker(handle=handle, index=self._created,
                           ready=handle.ready.remote().future())
        self._created += 1
        self._workers.append(worker)
        return worker

    async def _started(self, worker: RayWorker) -> RayWorker | str:
        """The worker once started, or why it did not (then it is dropped)."""
        if worker.info is not None:
            return worker
        try:
            # Shielded: a start that gives up must not cancel the readiness others await.
            info = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(worker.ready)),
                                          self.start_timeout)
        except TimeoutError:
            self.lost(worker)
            return f"a Ray worker did not start within {self.start_timeout:g} s"
        except Exception as error:
            self.lost(worker)
            return f"a Ray worker could not start: {_first_line(error)}"
        worker.info = info
        return worker

    async def acquire(self) -> RayWorker:
        """The least loaded started worker (starting the missing ones); its load counts one
        more child until :meth:`release`.

        Raises:
            SubagentStartError: ``RAY_NOT_CONNECTED``, ``RAY_CLUSTER_LOST``, or
                ``RAY_WORKER_UNAVAILABLE`` when no worker starts.
        """
        self.check_connected()
        self._watch_cluster()
        while len(self.workers) < self.size:
            self._spawn()
        ready = self.workers
        if any(worker.info is None for worker in ready):  # some are starting: wait for them
            started = await asyncio.gather(*(self._started(worker) for worker in ready))
            ready = tuple(worker for worker in started
                          if isinstance(worker, RayWorker) and worker.alive)
            if not ready:
                problems = sorted({reason for reason in started if isinstance(reason, str)})
                raise _refusal(RAY_WORKER_UNAVAILABLE, "; ".join(problems)
                               or "no Ray worker is available")
        chosen = min(ready, key=lambda worker: (worker.load, worker.index))
        chosen.load += 1
        return chosen

    def release(self, worker: RayWorker) -> None:
        """A child of ``worker`` ended (or never ran)."""
        worker.load = max(0, worker.load - 1)

    def lost(self, worker: RayWorker) -> None:
        """``worker`` died or would not start: drop it (the next start replaces it)."""
        if worker.alive:
            worker.alive = False
            with contextlib.suppress(Exception):
                ray.kill(worker.handle)

    async def live_children(self) -> tuple[str, ...]:
        """Ids of the children running on the live workers now (asks each worker)."""
        found: list[str] = []
        for worker in self.workers:
            found.extend(await worker.handle.live_children.remote())
        return tuple(found)

    def put(self, events: Sequence[Event]) -> concurrent.futures.Future[tuple[Any, int]]:
        """Encode ``events`` and put them into the object store, off the event loop; the
        future gives the reference and its size."""

        def stored() -> tuple[Any, int]:
            data = encode_log(events)
            reference = ray.put(data)
            self.seeds_stored += 1
            self.seed_bytes_stored += len(data)
            return reference, len(data)

        return self._puts.submit(stored)

    def close(self) -> None:
        """Kill every worker (any child still on one is lost) and stop the GCS probe."""
        self._closed = True
        self._watch.stop.set()
        for worker in self._workers:
            self.lost(worker)
        self._workers.clear()
        self._puts.shutdown(wait=False)

    # ------------------------------------------------------------------ the GCS probe

    def follow(self, child: RemoteChild) -> None:
        """Fail ``child`` if the cluster is found lost while it runs."""
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
            address = gcs_address()
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
        missed = 0
        while not watch.stop.wait(_PROBE_INTERVAL):
            try:
                with socket.create_connection((host, int(port)), timeout=_PROBE_INTERVAL):
                    missed = 0
                    continue
            except OSError as error:
                missed += 1
                if missed < _PROBES_MISSED:
                    continue
                watch.lost = (f"the Ray cluster's GCS at {address} stopped answering "
                              f"({error.strerror or error}); Ray ends this process when it "
                              "does not come back")
            with watch.lock:
                children = list(watch.children)
            for child in children:
                child.lose_threadsafe(watch.lost)
            return


# ---------------------------------------------------------------------------- a remote child


class RemoteChild:
    """A child running on a pool worker, as its run drives it: ``session`` is the child's
    session on the parent's host, where its streamed events land (see the module rules)."""

    def __init__(self, *, pool: RayWorkerPool, worker: RayWorker, host: SubagentHost,
                 session: Session, spec: ChildSpec, seed: Any,
                 capture: StructuredCapture | None) -> None:
        self.pool = pool
        self.worker = worker
        self.session = session
        self._host = host
        self._spec = spec
        self._seed = seed
        self._capture = capture
        self._loop = asyncio.get_running_loop()
        self._cause: CancelCause | None = None
        self._pump: asyncio.Task[None] | None = None
        self._stream: Any = None
        self._released = False
        self._stopping: asyncio.Task[None] | None = None
        self._lost_reason: str | None = None
        self._messages: set[asyncio.Task[None]] = set()
        #: Why the child ended abnormally, when its worker or the cluster let it down.
        self.diagnostic: str | None = None
        #: A failure of the host's side (a batch it could not decode or append), raised once
        #: by :meth:`when_idle`.
        self.failure: BaseException | None = None
        #: Events received from the worker and appended here, in how many stream items.
        self.received = 0
        self.batches = 0

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def running(self) -> bool:
        return self._pump is not None and not self._pump.done()

    def followup(self, prompt: Prompt) -> None:
        """Start the child on its worker with ``prompt`` (once)."""
        if self._pump is not None:
            raise RuntimeError(f"the remote child {self.id} was started already")
        self.pool.follow(self)
        self._pump = self._loop.create_task(self._run(user_message(prompt, "").content),
                                            name=f"ray-child:{self.id}")

    def cancel(self, cause: CancelCause | None = None) -> None:
        """Cancel the child's turn with ``cause`` (the first cause wins), on its worker."""
        if self._cause is not None:
            return
        self._cause = cause or CancelUser()
        if self._stream is not None and self.running:
            self._send_cancel()

    def _send_cancel(self) -> None:
        assert self._cause is not None
        try:
            sent = self.worker.handle.cancel_child.remote(self.id, self._cause)
        except Exception:  # the worker is gone: the stream says so
            return
        # Awaited so that a dead worker's error is read, not reported as unhandled.
        message = self._loop.create_task(_settled(sent))
        self._messages.add(message)
        message.add_done_callback(self._messages.discard)

    async def when_idle(self) -> None:
        """Wait until the child stopped (on its worker, or given up on) and its log here is
        durable (committed by the host's store), as an agent's ``when_idle`` does.

        Raises:
            AgentLoopError: the host could not take the child's events; raised once.
        """
        if self._pump is not None:
            await asyncio.wait([self._pump])
        await report_idle(self)

    async def dispose(self) -> None:
        """Cancel with ``disposed``, wait for the child to stop (see the module rules), and
        release its session here (the store keeps its file). Idempotent, concurrent-safe."""
        if self._stopping is None:
            self.cancel(CancelDisposed())
            self._stopping = self._loop.create_task(self._stop())
        await asyncio.wait([self._stopping])
        self._release()

    async def _stop(self) -> None:
        pump = self._pump
        if pump is None:
            return
        timeout = self.pool.stop_timeout
        done, _ = await asyncio.wait([pump], timeout=timeout)
        if not done and self._stream is not None:
            with contextlib.suppress(Exception):
                ray.cancel(self._stream)
            done, _ = await asyncio.wait([pump], timeout=timeout)
        if not done:
            self._lose(f"the child did not stop within {2 * timeout:g} s of being cancelled "
                       "and was given up on; its worker may still be running it")

    def lose_threadsafe(self, reason: str) -> None:
        """:meth:`_lose` from another thread (the pool's GCS probe)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing is running
            self._loop.call_soon_threadsafe(self._lose, reason)

    def _lose(self, reason: str) -> None:
        """Stop waiting for the worker: the child is lost for ``reason``."""
        if self._lost_reason is None and self.running:
            self._lost_reason = reason
            assert self._pump is not None
            self._pump.cancel()

    # ------------------------------------------------------------------ the stream

    async def _run(self, prompt: tuple[ContentBlock, ...]) -> None:
        try:
            seed = None if self._seed is None else [self._seed]
            self._stream = self.worker.handle.run_child.remote(self._spec, seed, prompt)
            if self._cause is not None:  # cancelled before the stream existed
                self._send_cancel()
            async for reference in self._stream:
                item = await reference
                if isinstance(item, EventsBatch):
                    self._append(item)
                elif isinstance(item, ChildDone):
                    self._done(item)
        except asyncio.CancelledError:
            if self._lost_reason is None:
                raise
            self._close(self._lost_reason)
        except _HostSideError as error:
            self.failure = error
            self._abandon()
        except exceptions.RayActorError as error:
            self.pool.lost(self.worker)
            where = "" if self.worker.info is None else f" (pid {self.worker.info.pid})"
            self._close(f"the Ray worker{where} running this child died before it finished: "
                        f"{_first_line(error)}")
        except exceptions.TaskCancelledError:
            self._close("Ray cancelled the child on its worker before it finished")
        except Exception as error:
            self._close(f"the child's stream from its Ray worker failed: {_first_line(error)}")
        finally:
            self.pool.unfollow(self)
            if not self._released:
                self.pool.release(self.worker)
                self._released = True

    def _append(self, batch: EventsBatch) -> None:
        decoded = decode_log(batch.jsonl)
        try:
            events = decoded.unwrap()
        except Exception as error:
            raise _HostSideError(f"a batch from the Ray worker cannot be decoded: "
                                 f"{decoded.failure()}") from error
        if not events:
            return
        try:
            self.session.extend(events)
        except Exception as error:
            raise _HostSideError(str(error)) from error
        self.received += len(events)
        self.batches += 1

    def _done(self, done: ChildDone) -> None:
        self._append(EventsBatch(jsonl=done.jsonl))
        if self._capture is not None and done.captured is not None:
            self._capture.value = msgspec.Raw(done.captured)
        if done.failure is not None:
            self.failure = RuntimeError(f"the child's loop failed on its Ray worker: "
                                        f"{done.failure}")

    def _abandon(self) -> None:
        """The host cannot follow the child any more: stop it there, close it here."""
        if self._stream is not None:
            with contextlib.suppress(Exception):
                ray.cancel(self._stream)
        with contextlib.suppress(Exception):
            self._close_turn()

    def _close(self, reason: str) -> None:
        """Close the child's open turn here, after every event received, and say why."""
        self.diagnostic = (f"{reason}; the child's log was closed on the parent's host after "
                           f"the {self.received} events received from it")
        try:
            self._close_turn()
        except Exception as error:
            self.failure = error

    def _close_turn(self) -> None:
        session = self.session
        closers = close_open_turn(session.trace, session.events, TurnInterrupted(),
                                  time=self._host.clock())
        if closers:
            session.extend(closers)

    def _release(self) -> None:
        self._host.sessions.release(self.id)

    def __repr__(self) -> str:
        return f"RemoteChild(id={self.id!r}, worker={self.worker.index})"


class _HostSideError(Exception):
    """The host could not take a batch of the child's events."""


async def _settled(reference: Any) -> None:
    with contextlib.suppress(Exception):
        await reference


# ---------------------------------------------------------------------------- seeds


@dataclass
class _StoredSeed:
    cut: int
    parent: weakref.ref[Agent]
    put: concurrent.futures.Future[tuple[Any, int]]


class _SeedRefs:
    """A provider's stored seeds: one per parent, at its latest fork point."""

    def __init__(self, pool: RayWorkerPool) -> None:
        self._pool = pool
        self._by_parent: dict[str, _StoredSeed] = {}

    def _sweep(self) -> None:
        for parent_id, stored in list(self._by_parent.items()):
            parent = stored.parent()
            if parent is None or parent.disposed:
                del self._by_parent[parent_id]

    async def reference(self, parent: Agent, seed: Sequence[Event]) -> Any:
        self._sweep()
        stored = self._by_parent.get(parent.id)
        if stored is None or stored.cut != len(seed):
            stored = _StoredSeed(cut=len(seed), parent=weakref.ref(parent),
                                 put=self._pool.put(seed))
            self._by_parent[parent.id] = stored
        try:
            reference, _ = await asyncio.shield(asyncio.wrap_future(stored.put))
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if self._by_parent.get(parent.id) is stored:
                del self._by_parent[parent.id]
            raise _refusal(RAY_SEED_NOT_STORED,
                           f"the fork seed ({len(seed)} events of {parent.id}) could not be "
                           f"put into Ray's object store: {_first_line(error)}") from error
        return reference

    def clear(self) -> None:
        self._by_parent.clear()


# ---------------------------------------------------------------------------- providers


class RayProvider:
    """A provider whose children run on a :class:`RayWorkerPool`; subclasses differ only in
    :attr:`kind`, as the in-process ones do."""

    kind: Literal["fork", "spawn"] = "spawn"

    def __init__(self, pool: RayWorkerPool, provider_name: str) -> None:
        if not provider_name:
            raise ValueError("a subagent provider name must not be empty")
        self.pool = pool
        self.provider_name = provider_name
        self.capabilities = RAY_CAPABILITIES
        self._seeds = _SeedRefs(pool)

    @property
    def inherits_parent_context(self) -> bool:
        """Whether children see the parent's completed turns (a fork) or not (a spawn)."""
        return self.kind == "fork"

    async def start(self, runtime: SubagentRuntime, request: CheckedRequest, *, parent: Agent,
                    signal: AbortSignal | None) -> SubagentRun:
        """Plan on this host, run on a worker (see the module rules)."""
        host = runtime.host
        setup = plan_setup(host, request, parent, signal, kind=self.kind,
                           provider_name=self.provider_name)
        self.pool.check_connected()
        plan = setup.plan
        session = create_child_session(host, plan)
        try:
            worker = await self.pool.acquire()
            try:
                seed = (None if plan.seed is None
                        else await self._seeds.reference(parent, plan.seed))
                await setup_checkpoint(session.id, parent, signal)
            except BaseException:
                self.pool.release(worker)
                raise
        except BaseException:
            discard_child(host, session.id)
            raise
        structured = plan.structured
        spec = ChildSpec(
            setup=replace(setup, plan=msgspec.structs.replace(plan, seed=None, seed_trace=None,
                                                              structured=None)),
            output_schema=None if structured is None else structured.output_schema.schema,
            host_sections=host.prompt_sections.sections(),
            sandbox_mode=getattr(host, "sandbox_mode", None),
            session_titles=bool(getattr(host, "session_titles", True)))
        capture = None if structured is None else StructuredCapture(structured)
        child = RemoteChild(pool=self.pool, worker=worker, host=host, session=session,
                            spec=spec, seed=seed, capture=capture)

        def diagnostic() -> str | None:
            return child.diagnostic

        return SubagentRun(provider=self.provider_name, label=request.request.label,
                           parent=parent, child=child,
                           seed_length=0 if plan.seed is None else len(plan.seed),
                           prompt=plan.prompt, capture=capture, signal=signal,
                           diagnostic=diagnostic)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(provider_name={self.provider_name!r})"


class RayForkProvider(RayProvider):
    """Children start from the parent's completed turns, their seed shipped once per fork
    point through the object store."""

    kind: Literal["fork", "spawn"] = "fork"

    def __init__(self, pool: RayWorkerPool, provider_name: str = "ray-fork") -> None:
        super().__init__(pool, provider_name)


class RaySpawnProvider(RayProvider):
    """Children start empty: they see only their prompt."""

    def __init__(self, pool: RayWorkerPool, provider_name: str = "ray-spawn") -> None:
        super().__init__(pool, provider_name)
