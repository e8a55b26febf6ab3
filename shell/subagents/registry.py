"""The subagent runtime (``host.subagents``): providers by name, the live runs, their observers
(DSH ``SubagentRuntime``, packages/subagent/subagent/src/index.ts, lifecycle.ts).

* :meth:`SubagentRuntime.start` refuses before any provider is called (an unknown provider, a
  disposed parent, the core's :func:`turnfork.core.check_request`, an aborted signal); the
  provider gets the checked request and nothing is checked twice.
* Every run gets a fresh ``run_id`` and the lifecycle: :class:`SubagentStart` once
  ``provider.start`` returned it, :class:`SubagentEnd` when its result settles (rejected:
  ``error``). A provider whose start fails emits nothing.
* Observers are contained (one that raises is reported to the event loop); a provider watcher
  that raises during a registration rolls it back. Unregistering a provider stops new starts
  only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

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
    INACTIVE_PARENT,
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
    raise_on_failure,
    unwrap_start,
)
from .run import SubagentRun

__all__ = [
    "NO_PROVIDER",
    "ABORTED",
    "DUPLICATE_PROVIDER",
    "SubagentError",
    "SubagentStartError",
    "SubagentAbortedError",
    "raise_on_failure",
    "SubagentHost",
    "SubagentProvider",
    "SubagentRunHandle",
    "Registration",
    "SubagentStart",
    "SubagentEnd",
    "SubagentEvent",
    "SubagentListener",
    "SubagentRuntime",
]

def _report(message: str, error: BaseException) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop: nothing to report to, and the caller must not see it
        return
    loop.call_exception_handler({"message": message, "exception": error})


class Registration:
    """A provider's place in a runtime; :meth:`unregister` stops new starts (idempotent)."""

    __slots__ = ("_runtime", "provider")

    def __init__(self, runtime: SubagentRuntime, provider: SubagentProvider) -> None:
        self._runtime = runtime
        self.provider = provider

    @property
    def active(self) -> bool:
        return self._runtime.get_provider(self.provider.provider_name) is self.provider

    def unregister(self) -> None:
        """Remove the provider if it is still the one registered under its name. Runs already
        started are not touched."""
        if self.active:
            self._runtime.unregister_provider(self.provider.provider_name)


class _Watch:
    """What the runtime keeps to observe one run: its end (:class:`SubagentEnd`, made only
    for listeners) and its disposal (the runtime then forgets it)."""

    __slots__ = ("local", "parent", "provider", "run", "run_id", "runtime")

    def __init__(self, runtime: SubagentRuntime, run: SubagentRunHandle, run_id: str,
                 provider: str, parent: Agent) -> None:
        self.runtime = runtime
        self.run = run
        self.run_id = run_id
        self.provider = provider
        self.parent = parent
        self.local = run.local_agent is not None

    def __call__(self, result: asyncio.Future[SubagentResult]) -> None:
        """The run's result settled."""
        failure = None if result.cancelled() else result.exception()  # (retrieved)
        runtime = self.runtime
        if not runtime._listeners:  # nobody to tell: no record is made
            return
        outcome = None if failure is not None or result.cancelled() else result.result()
        run = self.run
        runtime._emit(SubagentEnd(
            run=run, run_id=self.run_id, provider=self.provider, id=run.id, local=self.local,
            parent_id=self.parent.id,
            stop_reason="error" if outcome is None else outcome.stop_reason,
            last_assistant_message=(outcome.output or None) if outcome else None,
            failure=failure))

    def forget(self) -> None:
        self.runtime._runs.pop(self.run_id, None)


class SubagentRuntime:
    """``host.subagents``: providers by name, the live runs, and their observers.

    ``host.subagents`` makes one on first use; making one explicitly attaches it to ``host``
    and fails (``ValueError``) if the host has one already.
    """

    def __init__(self, host: SubagentHost) -> None:
        host.attach_subagents(self)
        self.host = host
        self._providers: dict[str, SubagentProvider] = {}
        self._listeners: list[SubagentListener] = []
        self._provider_watchers: list[Callable[[], None]] = []
        self._runs: dict[str, SubagentRunHandle] = {}
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
        """Register ``provider`` under its name, all or nothing.

        Raises:
            SubagentError: ``DUPLICATE_PROVIDER``, a provider with that name is registered.
            Exception: a provider watcher's error; the registration was rolled back.
        """
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
            self._providers_changed()
            raise
        return Registration(self, provider)

    def unregister_provider(self, name: str) -> None:
        """Stop new starts with that provider; runs already returned are unaffected.

        Raises:
            KeyError: no provider has that name.
        """
        if self._providers.pop(name, None) is None:
            raise KeyError(f'no subagent provider named "{name}"')
        self._providers_changed()

    def get_provider(self, name: str) -> SubagentProvider | None:
        return self._providers.get(name)

    def list(self) -> tuple[SubagentProvider, ...]:
        """The registered providers, in registration order."""
        return tuple(self._providers.values())

    def watch_providers(self, watcher: Callable[[], None]) -> Callable[[], None]:
        """Call ``watcher()`` after every registration change; returns the unsubscriber."""
        self._provider_watchers.append(watcher)
        return lambda: self._provider_watchers.remove(watcher) \
            if watcher in self._provider_watchers else None

    def _providers_changed(self) -> None:
        for watcher in list(self._provider_watchers):
            try:
                watcher()
            except Exception as error:
                _report("a subagent provider watcher failed", error)

    # ------------------------------------------------------------------ observers

    def subscribe(self, listener: SubagentListener) -> Callable[[], None]:
        """Receive :class:`SubagentStart` and :class:`SubagentEnd`; returns the unsubscriber."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) \
            if listener in self._listeners else None

    def _emit(self, event: SubagentEvent) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception as error:  # an observer never breaks a run
                _report("a subagent listener failed", error)

    # ------------------------------------------------------------------ runs

    async def start(self, name: str, request: StartRequest, *, parent: Agent,
                    signal: AbortSignal | None = None) -> SubagentRunHandle:
        """Start a child of ``parent`` with the provider registered as ``name``.

        Returns once the child is published and :class:`SubagentStart` emitted.

        Raises:
            SubagentStartError: ``NO_PROVIDER``, a disposed parent, a refused request, or the
                provider's refusal; :class:`SubagentAbortedError` when ``signal`` aborted before
                publication. Cancelling the awaiting task before publication leaves nothing.
        """
        provider = self._providers.get(name)
        if provider is None:
            raise SubagentStartError.no_provider(name)
        if parent.disposed:
            raise SubagentStartError(StartError(
                code=INACTIVE_PARENT,
                message=f'cannot create effect on inactive context: agent "{parent.id}" is '
                        "disposed"))
        checked = unwrap_start(check_request(provider.provider_name, provider.capabilities,
                                             request))
        if signal is not None and signal.aborted:
            raise SubagentAbortedError()  # no provider is handed a start already given up
        run = await provider.start(self, checked, parent=parent, signal=signal)
        self._observe(provider.provider_name, run, parent)
        return run

    def publish(self, provider: str, run: SubagentRunHandle, parent: Agent) -> None:
        """Observe a run published outside :meth:`start` (a continuable child's residency
        epoch): :class:`SubagentStart` now, :class:`SubagentEnd` when its result settles."""
        self._observe(provider, run, parent)

    @property
    def continuation(self) -> ContinuationManager:
        """The continuation manager of this runtime's continuable children (made on first
        use; see :mod:`.continuation`)."""
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
        """Have :meth:`release` await ``releaser(parent)`` when a parent that ``owns`` says
        has something there is disposed (the job registry kills its jobs, the continuation
        manager disposes its children)."""
        self._releasers.append((owns, releaser))

    async def release(self, parent: Agent) -> None:
        """Dispose every child ``parent`` started, however it was started: its runs, and what
        each :meth:`on_release` owner keeps for it. Idempotent; returns at once (without
        yielding) when there is nothing; else waits for all of them, and raises the first
        failure only after every branch settled."""
        branches = [*(releaser(parent) for owns, releaser in self._releasers if owns(parent)),
                    *(run.dispose() for run in self.runs() if run.parent is parent)]
        if not branches:
            return
        failures = [outcome for outcome in await asyncio.gather(*branches,
                                                                return_exceptions=True)
                    if isinstance(outcome, BaseException)]
        if failures:
            raise failures[0]

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Have :meth:`aclose` await ``closer()`` before it disposes the runs (the continuation
        manager's drain, a background-job registry's teardown)."""
        self._closers.append(closer)

    def _observe(self, provider: str, run: SubagentRunHandle, parent: Agent) -> None:
        watch = _Watch(self, run, self.host.ids(), provider, parent)
        self._runs[watch.run_id] = run
        if isinstance(run, SubagentRun):
            # Watched on its result task itself (what ``result`` shields): no shield future
            # is made per run just to watch it.
            run.watched(watch, watch.forget)
        else:
            run.result.add_done_callback(watch)
            forget = getattr(run, "on_disposed", None)
            if forget is not None:
                forget(watch.forget)
        if self._listeners:
            self._emit(SubagentStart(run=run, run_id=watch.run_id, provider=provider, id=run.id,
                                     local=watch.local, parent_id=parent.id, label=run.label,
                                     seed_length=run.seed_length))

    def runs(self) -> tuple[SubagentRunHandle, ...]:
        """Runs started and not yet disposed, in start order."""
        for run_id in [key for key, run in self._runs.items() if run.disposed]:
            del self._runs[run_id]
        return tuple(self._runs.values())

    async def aclose(self) -> None:
        """Run the closers (:meth:`on_close`), then dispose every live run (concurrently)."""
        await asyncio.gather(*(closer() for closer in self._closers))
        await asyncio.gather(*(run.dispose() for run in self.runs()))

    def __repr__(self) -> str:
        return f"SubagentRuntime(providers={list(self._providers)!r})"

