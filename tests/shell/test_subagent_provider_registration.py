"""Registering and unregistering providers: the typed duplicate refusal, the rollback when a
provider watcher raises, and unregistering that never raises a watcher's error.

Ports DSH's ``packages/subagent/subagent/tests/service.spec.ts`` ("rejects duplicate and
absent provider names with typed errors", "rolls registration back when provider-added
throws", "contains synchronous and asynchronous lifecycle observer failures" for
``subagent/provider-removed``) and, for the watcher that raises in practice,
``packages/subagent/tool-subagent/tests/tool-subagent.spec.ts`` ("rejects a numeric maxDepth on
a provider without the depthLimit capability at mount", with the provider registered after the
tool).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _shell_helpers import make_host, run
from _subagent_helpers import request, subagent_host

from turnfork.core import Capabilities
from turnfork.shell import (
    ForkProvider,
    SpawnProvider,
    SubagentRuntime,
    SubagentStartError,
    SubagentTool,
)
from turnfork.shell.subagents import SubagentError

NO_DEPTH_LIMIT = ('tool-subagent: provider "external" cannot enforce maxDepth (no depthLimit '
                  "capability) — set maxDepth: 'provider-managed' to leave the recursion budget "
                  "to the provider")


class _NoDepthLimit(SpawnProvider):
    """A provider that cannot enforce a depth cap (DSH: ``depthLimit: false``)."""

    def __init__(self) -> None:
        super().__init__("external")
        self.capabilities = Capabilities()


def test_a_duplicate_provider_is_a_typed_error() -> None:
    """A second provider under a registered name: SubagentError DUPLICATE_PROVIDER (name
    SubagentError) with DSH's text; the first stays registered. An absent name: NO_PROVIDER."""

    async def main() -> None:
        host, parent, _, _ = subagent_host()
        runtime = host.subagents
        first = runtime.get_provider("fork")
        with pytest.raises(SubagentError) as duplicate:
            runtime.register_provider(ForkProvider())
        assert duplicate.value.code == "DUPLICATE_PROVIDER"
        assert duplicate.value.error.name == "SubagentError"
        assert str(duplicate.value) == 'a subagent provider named "fork" is already registered'
        assert runtime.get_provider("fork") is first
        with pytest.raises(SubagentStartError) as missing:
            await runtime.start("missing", request("x"), parent=parent)
        assert missing.value.code == "NO_PROVIDER"
        await parent.dispose()

    run(main)


def test_a_watcher_that_raises_rolls_the_registration_back() -> None:
    """A provider watcher raising while a provider registers: its error propagates, the
    provider is not registered, the other watchers see it gone, and a later registration
    works."""
    runtime = SubagentRuntime(make_host())
    seen: list[tuple[str, ...]] = []

    def boom() -> None:
        raise RuntimeError("added boom")

    unwatch = runtime.watch_providers(boom)
    runtime.watch_providers(lambda: seen.append(tuple(p.provider_name
                                                      for p in runtime.list())))
    with pytest.raises(RuntimeError, match=r"^added boom$"):
        runtime.register_provider(SpawnProvider("alpha"))
    assert runtime.get_provider("alpha") is None and runtime.list() == ()
    assert seen[-1] == ()
    unwatch()
    registration = runtime.register_provider(SpawnProvider("alpha"))
    assert registration.active and seen[-1] == ("alpha",)


def test_a_tool_that_cannot_enforce_its_cap_rolls_a_later_provider_back() -> None:
    """A subagent tool with a numeric max_depth installed first; a provider without the depth
    capability registering later is refused with DSH's mount text and left unregistered, and
    the tool stays hidden."""
    host = make_host()
    runtime = SubagentRuntime(host)
    tool = SubagentTool(provider="external", max_depth=1)
    tool.install(host)
    assert not tool.visible
    with pytest.raises(ValueError) as refused:
        runtime.register_provider(_NoDepthLimit())
    assert str(refused.value) == NO_DEPTH_LIMIT
    assert runtime.get_provider("external") is None
    assert not tool.visible and host.tools.get("subagent") is None


def test_unregistering_never_raises_a_watchers_error() -> None:
    """Watchers that raise when a provider is removed are reported to the event loop; the
    removal happens, unregister() returns, and later watchers still run."""

    async def main() -> None:
        reported: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: reported.append(context))
        runtime = SubagentRuntime(make_host())
        registration = runtime.register_provider(SpawnProvider("contained"))
        heard: list[tuple[str, ...]] = []

        def sync_boom() -> None:
            raise RuntimeError("sync boom")

        runtime.watch_providers(sync_boom)
        runtime.watch_providers(lambda: heard.append(tuple(p.provider_name
                                                           for p in runtime.list())))
        registration.unregister()
        assert not registration.active and runtime.get_provider("contained") is None
        assert heard == [()]
        assert [str(context["exception"]) for context in reported] == ["sync boom"]
        reported.clear()
        with pytest.raises(RuntimeError, match=r"^sync boom$"):  # on add it propagates...
            runtime.register_provider(SpawnProvider("third"))
        # ...and the rollback's own notification of the removal is contained
        assert runtime.get_provider("third") is None and heard[-1] == ()
        assert [str(context["exception"]) for context in reported] == ["sync boom"]

    run(main)
