"""The subagent runtime (``host.subagents``): providers by name, the live runs, their observers
(DSH ``SubagentRuntime``, packages/subagent/subagent/src/index.ts, lifecycle.ts). Every run
gets a fresh ``run_id``, a :class:`SubagentStart` once its provider returned it and a
:class:`SubagentEnd` when its result settles; observers are contained (one that raises is
reported to the event loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ...core import (
    StartError,
    StartRequest,
    SubagentResult,
    check_request,
)
from ..abort import AbortSignal
from ..agent import Agent
from .continuation import ContinuationManager
from .contract import (
    ABORTED,
    DUPLICATE_PROVIDER,
    NO_PROVIDER,
    SubagentAbortedError,
    SubagentEnd,
    SubagentError,
    SubagentEvent,
    SubagentHost,
    SubagentListener,
    SubagentProvider,
    SubagentRunHandle,
    SubagentStart,
    SubagentStartError,
    _call_each,
    _check_aborted,
    _inactive_parent,
    _listen,
    raise_on_failure,
    unwrap_start,
)
from .run import SubagentRun

__all__ = [
    "NO_PROVIDER", "ABORTED", "DUPLICATE_PROVIDER",
    "SubagentError", "SubagentStartError", "SubagentAbortedError", "raise_on_failure",
    "SubagentHost", "SubagentProvider", "SubagentRunHandle", "Registration",
    "SubagentStart", "SubagentEnd", "SubagentEvent", "SubagentListener", "SubagentRuntime",
]


@dataclass(eq=False, repr=False, slots=True)
class Registration:
    """A provider's place in a runtime; :meth:`unregister` stops new starts (idempotent)."""

    _runtime: SubagentRuntime
    provider: SubagentProvider

    @property
    def active(self) -> bool:
        return self._runtime.get_provider(self.provider.provider_name) is self.provider

    def unregister(self) -> None:
        """Remove the provider if it is still the one registered under its name. Runs already
        started are not touched."""
        if self.active:
            self._runtime.unregister_provider(self.provider.provider_name)


class SubagentRuntime:
    """``host.subagents`` (made on first use); making one attaches it to ``host``
    (``ValueError`` if the host has one)."""

    def __init__(self, host: SubagentHost) -> None:
        host.attach_subagents(self)
        self.host = host
        self._providers: dict[str, SubagentProvider] = {}
        self._listeners: list[SubagentListener] = []
        self._provider_watchers: list[Callable[[], None]] = []
        self._runs: dict[str, SubagentRunHandle] = {}
        #: The runs by their parent's id, so that releasing an agent reads only its own.
        self._by_parent: dict[str, dict[str, SubagentRunHandle]] = {}
        #: Runs that cannot say when their disposal ends (no ``on_disposed``): dropped once
        #: disposed. The others are kept until their disposal ends.
        self._polled: dict[str, str] = {}  # run id -> its parent's id
        self._continuation: ContinuationManager | None = None
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self._releasers: list[tuple[Callable[[Agent], bool],
                                    Callable[[Agent], Awaitable[None]]]] = []

    @classmethod
    def of(cls, host: SubagentHost) -> SubagentRuntime:
        """The runtime attached to ``host``, attaching a new one if there is none."""
        runtime = host.subagents
        if not isinstance(runtime, SubagentRuntime):
            raise TypeError(f"{host!r}'s subagent runtime is not a SubagentRuntime")
        return runtime

    # ------------------------------------------------------------------ providers

    def register_provider(self, provider: SubagentProvider) -> Registration:
        """Register ``provider`` under its name, all or nothing: ``DUPLICATE_PROVIDER``, or a
        provider watcher's error (the registration rolled back)."""
        name = provider.provider_name
        if name in self._providers:
            raise SubagentError(StartError(
                code=DUPLICATE_PROVIDER, name="SubagentError",
                message=f'a subagent provider named "{name}" is already registered'))
        self._providers[name] = provider
        try:
            for watcher in list(self._provider_watchers):
                watcher()
        except BaseException:
            del self._providers[name]
            _call_each(self._provider_watchers, failure="a subagent provider watcher failed")
            raise
        return Registration(self, provider)

    def unregister_provider(self, name: str) -> None:
        """Stop new starts with that provider (``KeyError`` if none); runs are unaffected."""
        if self._providers.pop(name, None) is None:
            raise KeyError(f'no subagent provider named "{name}"')
        _call_each(self._provider_watchers, failure="a subagent provider watcher failed")

    def get_provider(self, name: str) -> SubagentProvider | None:
        return self._providers.get(name)

    def list(self) -> tuple[SubagentProvider, ...]:
        """The registered providers, in registration order."""
        return tuple(self._providers.values())

    def watch_providers(self, watcher: Callable[[], None]) -> Callable[[], None]:
        """Call ``watcher()`` after every registration change; returns the unsubscriber."""
        return _listen(self._provider_watchers, watcher)

    # ------------------------------------------------------------------ observers

    def subscribe(self, listener: SubagentListener) -> Callable[[], None]:
        """Receive :class:`SubagentStart` and :class:`SubagentEnd`; returns the unsubscriber."""
        return _listen(self._listeners, listener)

    def _emit(self, event: SubagentEvent) -> None:
        _call_each(self._listeners, event, failure="a subagent listener failed")

    # ------------------------------------------------------------------ runs

    async def start(self, name: str, request: StartRequest, *, parent: Agent,
                    signal: AbortSignal | None = None) -> SubagentRunHandle:
        """Start a child of ``parent`` with the provider registered as ``name``; returns once
        it is published. Every refusal (:class:`SubagentStartError`) comes before any provider
        is called, and the provider gets the checked request."""
        provider = self._providers.get(name)
        if provider is None:
            raise SubagentStartError.no_provider(name)
        if parent.disposed:
            raise SubagentStartError(_inactive_parent(parent.id))
        checked = unwrap_start(check_request(provider.provider_name, provider.capabilities,
                                             request))
        _check_aborted(signal)  # no provider is handed a start already given up
        run = await provider.start(self, checked, parent=parent, signal=signal)
        self.publish(provider.provider_name, run, parent)
        return run

    def publish(self, provider: str, run: SubagentRunHandle, parent: Agent) -> None:
        """Observe a run, as :meth:`start` does (and for a run published outside it: a
        continuable child's residency epoch): :class:`SubagentStart` now, :class:`SubagentEnd`
        when its result settles."""
        # SubagentEnd is made only for listeners; the run is forgotten once disposed.
        run_id, local = self.host.ids(), run.local_agent is not None
        self._runs[run_id] = run
        self._by_parent.setdefault(parent.id, {})[run_id] = run

        def settled(result: asyncio.Future[SubagentResult]) -> None:
            failure = None if result.cancelled() else result.exception()  # (retrieved)
            if not self._listeners:  # nobody to tell: no record is made
                return
            outcome = None if failure is not None or result.cancelled() else result.result()
            self._emit(SubagentEnd(
                run=run, run_id=run_id, provider=provider, id=run.id, local=local,
                parent_id=parent.id,
                stop_reason="error" if outcome is None else outcome.stop_reason,
                last_assistant_message=(outcome.output or None) if outcome else None,
                failure=failure))

        def forget() -> None:
            self._forget(run_id, parent.id)

        if isinstance(run, SubagentRun):
            # Watched on its result task itself (what ``result`` shields): no shield future
            # is made per run just to watch it.
            run.watched(settled, forget)
        else:
            run.result.add_done_callback(settled)
            on_disposed = getattr(run, "on_disposed", None)
            if on_disposed is None:
                self._polled[run_id] = parent.id
            else:
                on_disposed(forget)
        if self._listeners:
            self._emit(SubagentStart(run=run, run_id=run_id, provider=provider, id=run.id,
                                     local=local, parent_id=parent.id, label=run.label,
                                     seed_length=run.seed_length))

    @property
    def continuation(self) -> ContinuationManager:
        """The manager of this runtime's continuable children (made on first use)."""
        if self._continuation is None:
            self._continuation = ContinuationManager(self)
            self.on_close(self._continuation.drain)
            manager = self._continuation

            async def release(parent: Agent) -> None:
                await manager.drain_descendants([parent])

            def owns(parent: Agent) -> bool:
                return any(any(member is parent for member in activation.ancestry[1:])
                           for activation in manager.activations())

            self.on_release(release, owns=owns)
        return self._continuation

    def on_release(self, releaser: Callable[[Agent], Awaitable[None]], *,
                   owns: Callable[[Agent], bool]) -> None:
        """Have :meth:`release` await ``releaser(parent)`` for a parent ``owns`` says has
        something there (the job registry's jobs, the continuation manager's children)."""
        self._releasers.append((owns, releaser))

    async def release(self, parent: Agent) -> None:
        """Dispose every child ``parent`` started, however it was started (idempotent; no
        yield when there is nothing); the first failure is raised after every branch settled."""
        self._drop_disposed()
        started = self._by_parent.get(parent.id, {})
        branches = [*(releaser(parent) for owns, releaser in self._releasers if owns(parent)),
                    *(run.dispose() for run in list(started.values()) if run.parent is parent)]
        if not branches:
            return
        failures = [outcome for outcome in await asyncio.gather(*branches,
                                                                return_exceptions=True)
                    if isinstance(outcome, BaseException)]
        if failures:
            raise failures[0]

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Have :meth:`aclose` await ``closer()`` before it disposes the runs."""
        self._closers.append(closer)

    def runs(self) -> tuple[SubagentRunHandle, ...]:
        """Runs started and not yet disposed, in start order: a run whose disposal is under way
        is still one (releasing its parent or closing the runtime then waits for it)."""
        self._drop_disposed()
        return tuple(self._runs.values())

    def _drop_disposed(self) -> None:
        for run_id, parent_id in [(key, parent_id) for key, parent_id in self._polled.items()
                                  if self._runs[key].disposed]:
            self._forget(run_id, parent_id)

    def _forget(self, run_id: str, parent_id: str) -> None:
        self._polled.pop(run_id, None)
        if self._runs.pop(run_id, None) is None:
            return
        started = self._by_parent[parent_id]
        del started[run_id]
        if not started:
            del self._by_parent[parent_id]

    async def aclose(self) -> None:
        """Run the closers (:meth:`on_close`), then dispose every live run (concurrently). The
        continuation manager is drained too when nothing used it yet: its admission closes for
        good, as it does for one that served children."""
        _ = self.continuation  # made now if it was not: its drain is one of the closers
        await asyncio.gather(*(closer() for closer in self._closers))
        await asyncio.gather(*(run.dispose() for run in self.runs()))

    def __repr__(self) -> str:
        return f"SubagentRuntime(providers={list(self._providers)!r})"

