"""The provider registry: registration, lookup, removal, capabilities, refusals before creation."""

from __future__ import annotations

import pytest
from _shell_helpers import make_host, run
from _subagent_helpers import finish, request, subagent_host, texts
from msgspec import Raw

from turnfork.core import Capabilities, ToolRestriction
from turnfork.shell import (
    AbortController,
    ForkProvider,
    Reply,
    SpawnProvider,
    SubagentRuntime,
    SubagentStartError,
)
from turnfork.shell.subagents import ALL_CAPABILITIES, SubagentAbortedError


def test_runtime_attaches_to_the_host() -> None:
    """Creating a runtime sets host.subagents; of() returns it; a second runtime is refused."""
    host = make_host()
    runtime = SubagentRuntime(host)
    assert host.subagents is runtime and SubagentRuntime.of(host) is runtime
    with pytest.raises(ValueError, match="already has a subagent runtime"):
        SubagentRuntime(host)
    other = make_host()
    assert SubagentRuntime.of(other) is other.subagents


def test_register_get_list_in_insertion_order() -> None:
    """Providers are found by name and listed in registration order; duplicates fail loudly."""
    runtime = SubagentRuntime(make_host())
    spawn, fork = SpawnProvider(), ForkProvider()
    runtime.register_provider(spawn)
    runtime.register_provider(fork)
    assert runtime.list() == (spawn, fork)
    assert runtime.get_provider("fork") is fork and runtime.get_provider("nope") is None
    with pytest.raises(ValueError, match='a subagent provider named "fork" is already registered'):
        runtime.register_provider(ForkProvider())
    assert runtime.list() == (spawn, fork)


def test_capabilities_are_advertised() -> None:
    """Both providers support every capability; only fork inherits the parent's context."""
    fork, spawn = ForkProvider(), SpawnProvider()
    expected = Capabilities(output_schema=True, depth_limit=True, tool_filter=True, persona=True)
    assert fork.capabilities == spawn.capabilities == expected == ALL_CAPABILITIES
    assert fork.inherits_parent_context is True and spawn.inherits_parent_context is False
    assert (fork.provider_name, spawn.provider_name) == ("fork", "spawn")
    assert ForkProvider("subagent_fork").provider_name == "subagent_fork"


def test_unknown_provider_is_refused_with_dsh_text() -> None:
    """start() with an unregistered name raises NO_PROVIDER (SubagentError) and creates nothing."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host()
        with pytest.raises(SubagentStartError) as refused:
            await host.subagents.start("codex", request("x"), parent=parent)
        assert refused.value.error.code == "NO_PROVIDER"
        assert refused.value.error.name == "SubagentError"
        assert str(refused.value) == 'no subagent provider registered for "codex"'
        assert host.sessions.list() == (parent.id,) and host.agents.list() == (parent,)
        await finish(parent, recorder)

    run(main)


def test_missing_capability_is_refused_before_anything_exists() -> None:
    """A provider without the persona capability refuses a persona request: no session made."""

    class PlainSpawn(SpawnProvider):
        def __init__(self) -> None:
            super().__init__("plain")
            self.capabilities = Capabilities(output_schema=True)

    async def main() -> None:
        host, parent, model, recorder = subagent_host()
        host.subagents.register_provider(PlainSpawn())
        with pytest.raises(SubagentStartError) as refused:
            await host.subagents.start("plain", request("x", persona="terse"), parent=parent)
        assert refused.value.error.code == "UNSUPPORTED_CAPABILITY"
        assert str(refused.value) == ('subagent provider "plain" does not support the "persona" '
                                      'capability')
        assert host.sessions.list() == (parent.id,) and len(host.agents) == 1
        assert model.calls == 0
        await finish(parent, recorder)

    run(main)


def test_core_refusals_leave_nothing_behind() -> None:
    """Depth, schema and tool-filter refusals of the core plan are raised before creation."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host(subagent_depth=2)
        cases = [
            (request("x", max_depth=2), "DEPTH", "subagent depth 3 exceeds maxDepth 2", None),
            (request("x", output_schema=Raw(b'{"type":"array"}')), "UNSUPPORTED_SCHEMA",
             'unsupported JSON schema: schema.type must be "object" (structured output is '
             'object-rooted)', "JsonSchemaError"),
            (request("x", tool_filter=ToolRestriction(allow=("web",))), "INVALID_TOOL_FILTER",
             'tools.restrict() names unknown global tool "web"; known global tools: (none)',
             None),
        ]
        for start_request, code, message, name in cases:
            with pytest.raises(SubagentStartError) as refused:
                await host.subagents.start("spawn", start_request, parent=parent)
            assert (refused.value.error.code, str(refused.value)) == (code, message)
            assert refused.value.error.name == name
        assert host.sessions.list() == (parent.id,) and len(host.agents) == 1
        await finish(parent, recorder)

    run(main)


def test_unregistering_stops_new_starts_but_not_existing_runs() -> None:
    """After unregister, start fails NO_PROVIDER; a run returned before still completes."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([Reply.text("ok")])
        registration = host.subagents.register_provider(SpawnProvider("worker"))
        held = await host.subagents.start("worker", request("go"), parent=parent)
        registration.unregister()
        registration.unregister()  # idempotent
        assert not registration.active and host.subagents.get_provider("worker") is None
        with pytest.raises(SubagentStartError, match='registered for "worker"'):
            await host.subagents.start("worker", request("again"), parent=parent)
        result = await held.result
        assert (result.stop_reason, texts(result.output)) == ("completed", "ok")
        host.subagents.unregister_provider("spawn")
        with pytest.raises(KeyError):
            host.subagents.unregister_provider("spawn")
        assert [p.provider_name for p in host.subagents.list()] == ["fork"]
        await held.dispose()
        assert model.calls == 1
        await finish(parent, recorder)

    run(main)


def test_no_provider_is_handed_a_start_whose_signal_already_aborted() -> None:
    """A start whose signal aborted before the call is refused by the runtime itself
    (``SubagentAbortedError``, DSH's text) after its request checks and before any provider is
    called — a custom provider included (on earlier code the custom provider got the aborted
    signal, and a background job killed before its start ran never settled)."""

    class Custom:
        provider_name = "custom"
        capabilities = ALL_CAPABILITIES
        inherits_parent_context = False

        def __init__(self) -> None:
            self.calls: list[object] = []

        async def start(self, *args: object, **kwargs: object) -> object:
            self.calls.append(args)
            raise AssertionError("never called")

    async def main() -> None:
        host, parent, _, recorder = subagent_host()
        custom = Custom()
        host.subagents.register_provider(custom)  # type: ignore[arg-type]
        controller = AbortController()
        controller.abort("gave up")
        with pytest.raises(SubagentAbortedError, match="subagent request was aborted before "
                                                       "child publication"):
            await host.subagents.start("custom", request("p"), parent=parent,
                                       signal=controller.signal)
        assert custom.calls == [] and recorder.events == []
        await finish(parent, recorder)

    run(main)
