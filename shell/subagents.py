"""The subagent runtime (``host.subagents``): providers by name, the live runs, observers.

Rules:

* :meth:`SubagentRuntime.start` refuses before anything exists: an unknown provider
  (``NO_PROVIDER``, DSH's text), a capability the provider lacks, an abort already signalled;
  the provider's driver then applies the core's plan. Refusals raise
  :class:`~shell.subagent_run.SubagentStartError` carrying the core's :class:`core.StartError`.
* Unregistering a provider stops new starts only: runs already returned are never revoked.
* Observers get :class:`~shell.subagent_run.SubagentStart` after a child is published and
  :class:`~shell.subagent_run.SubagentEnd` when its run settles; an observer that raises is
  reported to the event loop and never breaks a run.

This module is also the face of the subsystem: it re-exports the providers
(:mod:`shell.subagent_driver`), runs and errors (:mod:`shell.subagent_run`), abort signals
(:mod:`shell.abort`); the parent's tool lives in :mod:`shell.subagent_tool`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from ..core import Capabilities, StartRequest, check_capabilities
from .abort import AbortController, AbortListener, AbortSignal
from .agent import Agent
from .host import Host
from .subagent_driver import (
    ALL_CAPABILITIES,
    ForkProvider,
    ForkSeed,
    InProcessProvider,
    SpawnProvider,
)
from .subagent_run import (
    ABORTED,
    NO_PROVIDER,
    StructuredCapture,
    SubagentAbortedError,
    SubagentEnd,
    SubagentEvent,
    SubagentListener,
    SubagentRun,
    SubagentStart,
    SubagentStartError,
    raise_on_failure,
)

__all__ = [
    "SubagentRuntime",
    "SubagentProvider",
    "Registration",
    "ForkProvider",
    "SpawnProvider",
    "InProcessProvider",
    "ForkSeed",
    "ALL_CAPABILITIES",
    "SubagentRun",
    "SubagentStart",
    "SubagentEnd",
    "SubagentEvent",
    "SubagentListener",
    "StructuredCapture",
    "SubagentStartError",
    "SubagentAbortedError",
    "NO_PROVIDER",
    "ABORTED",
    "AbortController",
    "AbortSignal",
    "AbortListener",
]


class SubagentProvider(Protocol):
    """A way to run a child: registered by name, asked to start runs by the runtime."""

    @property
    def provider_name(self) -> str: ...

    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def inherits_parent_context(self) -> bool: ...

    async def start(self, runtime: SubagentRuntime, request: StartRequest, *, parent: Agent,
                    signal: AbortSignal | None) -> SubagentRun:
        """Create, publish and start a child (capabilities were already checked)."""
        ...


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


class SubagentRuntime:
    """``host.subagents``: providers by name, the live runs, and their observers.

    ``host.subagents`` creates one on first use; creating one explicitly attaches it to
    ``host`` and fails if the host already has one.
    """

    def __init__(self, host: Host) -> None:
        host._attach_subagents(self)
        self.host = host
        self._providers: dict[str, SubagentProvider] = {}
        self._listeners: list[SubagentListener] = []
        self._provider_watchers: list[Callable[[], None]] = []
        self._runs: dict[str, SubagentRun] = {}

    @classmethod
    def of(cls, host: Host) -> SubagentRuntime:
        """The runtime attached to ``host``, attaching a new one if there is none."""
        return host.subagents

    # ------------------------------------------------------------------ providers

    def register_provider(self, provider: SubagentProvider) -> Registration:
        """Register ``provider`` under its name.

        Raises:
            ValueError: a provider with that name is already registered.
        """
        name = provider.provider_name
        if name in self._providers:
            raise ValueError(f'a subagent provider named "{name}" is already registered')
        self._providers[name] = provider
        self._providers_changed()
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
            watcher()

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
                asyncio.get_running_loop().call_exception_handler(
                    {"message": "a subagent listener failed", "exception": error})

    # ------------------------------------------------------------------ runs

    async def start(self, name: str, request: StartRequest, *, parent: Agent,
                    signal: AbortSignal | None = None) -> SubagentRun:
        """Start a child of ``parent`` with the provider registered as ``name``.

        Returns once the child is published (in ``host.agents``, :class:`SubagentStart`
        emitted) and its prompt delivered.

        Raises:
            SubagentStartError: ``NO_PROVIDER``, a missing capability, or a rule of the
                core's plan; :class:`SubagentAbortedError` when ``signal`` aborted first.
                Cancelling the awaiting task before publication leaves nothing behind either.
            UnknownProviderError: the child's model provider is not registered.
        """
        provider = self._providers.get(name)
        if provider is None:
            raise SubagentStartError.no_provider(name)
        raise_on_failure(check_capabilities(provider.provider_name, provider.capabilities,
                                             request))
        if signal is not None and signal.aborted:
            raise SubagentAbortedError()
        return await provider.start(self, request, parent=parent, signal=signal)

    def runs(self) -> tuple[SubagentRun, ...]:
        """Runs started and not yet disposed, in start order."""
        return tuple(self._runs.values())

    async def aclose(self) -> None:
        """Dispose every live run (concurrently)."""
        await asyncio.gather(*(run.dispose() for run in self.runs()))
