"""DSH ``packages/subagent/subagent/tests/continuation.spec.ts``, "SubagentRuntime.startContinuable"
(lines 182–484), case by case: each test names the line of the case it ports."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import Any

import pytest
from _continuation_spec import (
    eventually,
    gate,
    has_user_text,
    no_activation,
    persisted,
    request,
    spec_host,
    start,
    user_texts,
)
from _shell_helpers import make_host, of_type, run

from turnfork.core import (
    InboxSplicedEvent,
    SessionHeader,
    SubagentDescriptorData,
    SubagentDescriptorEvent,
    ToolRestriction,
    TurnStartEvent,
)
from turnfork.shell import (
    AbortController,
    Agent,
    Host,
    JsonlSessionStore,
    Reply,
    SpawnProvider,
    SubagentRuntime,
    Tool,
    ToolContext,
)
from turnfork.shell.subagents import SubagentAbortedError, SubagentError, SubagentStart


def _routeless(host: Host, session_id: str) -> Agent:
    """An agent with no model route (DSH's ``agentLoop.create(id, {})``), over a new session
    or the persisted one of that id."""
    session = (host.sessions.load(session_id, clock=host.clock)
               if host.sessions.exists(session_id) else
               host.sessions.create(SessionHeader(id=session_id, created_at=host.clock()),
                                    clock=host.clock))
    agent = host.build_agent(session, provider=None, model=None)
    host.agents.add(agent)
    return agent


def test_returns_both_identities_at_inbox_acceptance(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:183 — the start returns the child id and the accepted inbox
    message's id; at the insertion nothing was logged yet and no model was asked; the turn
    runs afterwards on its own."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first answer"), Reply.text("parent ack")])
        enqueued: list[tuple[str, bool]] = []

        def watch(child: Agent) -> Any:
            def listener(events: Any) -> None:
                for event in events:
                    if isinstance(event, InboxSplicedEvent) and event.data.inserted:
                        enqueued.append((event.data.inserted[0].id,
                                         has_user_text(child.session.events, "child task")))
            child.session.listeners.append(listener)
            return lambda: child.session.listeners.remove(listener)

        spec.manager.register_setup(watch)
        started = await start(spec)
        assert enqueued == [(started.message_id, False)] and spec.model.calls == 0
        await no_activation(spec.host, started.child_id)
        assert has_user_text(persisted(spec.host, started.child_id), "child task")
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_a_caller_reserved_id_is_used_and_a_duplicate_refused(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:205 — a reserved child id is the child's; reserving it again
    while it is live, and again once it is only persisted, is ``DUPLICATE_CHILD``, and no
    agent is left under that id."""

    async def main() -> None:
        entry, release = gate(Reply.text("reserved answer"))
        spec = spec_host(tmp_path, [entry, Reply.text("parent ack")])
        reserved = "00000000-0000-4000-8000-000000000123"
        started = await start(spec, child_id=reserved)
        assert started.child_id == reserved
        await eventually(lambda: spec.model.calls == 1)
        with pytest.raises(SubagentError) as caught:
            await start(spec, child_id=reserved)
        assert caught.value.code == "DUPLICATE_CHILD"
        release.set()
        await no_activation(spec.host, reserved)
        assert spec.host.sessions.exists(reserved)
        with pytest.raises(SubagentError) as caught:
            await start(spec, child_id=reserved)
        assert caught.value.code == "DUPLICATE_CHILD"
        assert spec.host.agents.get(reserved) is None
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_a_provider_without_prepare_continuable_is_refused(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:237 — a provider with no ``prepare_continuable`` is refused
    (``does not support continuable children``) before it is asked anything; no child agent
    and no session exist."""

    started: list[object] = []

    class OneShot:
        provider_name = "one-shot"
        capabilities = SpawnProvider().capabilities
        inherits_parent_context = False

        async def start(self, *args: object, **kwargs: object) -> object:
            started.append(args)
            raise AssertionError("must not dispatch")

    async def main() -> None:
        spec = spec_host(tmp_path)
        spec.host.subagents.register_provider(OneShot())  # type: ignore[arg-type]
        with pytest.raises(SubagentError, match="does not support continuable children"):
            await start(spec, provider="one-shot")
        assert started == [] and spec.host.agents.list() == (spec.parent,)
        assert spec.host.sessions.list() == (spec.parent.id,)
        await spec.host.aclose()

    run(main)


def test_no_persistence_is_refused_before_anything_awaits() -> None:
    """DSH continuation.spec.ts:254 — without a store that persists sessions the start is
    refused (``require session persistence``) synchronously: the coroutine raises on its
    first step, before it awaits anything."""

    async def main() -> None:
        spec = spec_host(None, [Reply.text("unused")])
        coroutine = spec.manager.start_continuable("spawn", request(), parent=spec.parent)
        with pytest.raises(SubagentError, match="require session persistence"):
            coroutine.send(None)
        await spec.host.aclose()

    run(main)


def test_the_reserved_child_is_published_with_its_pre_turn_descriptor(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:260 — the persisted child holds its descriptor before its first
    ``turn/start``: ``{version: 2, mode: continuable, provider: spawn, label, agentProvider,
    agentModel}``, model-hidden (no ``surfaceOp``); its header names the parent and origin."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("answer"), Reply.text("parent ack")])
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        events = persisted(spec.host, started.child_id)
        (descriptor,) = of_type(events, SubagentDescriptorEvent)
        first_turn = next(e for e in events if isinstance(e, TurnStartEvent))
        assert descriptor.seq < first_turn.seq
        assert descriptor.data == SubagentDescriptorData(
            version=2, mode="continuable", provider="spawn", label="child task",
            agent_provider="mock", agent_model="mock")
        assert "surface_op" not in type(descriptor).__struct_fields__  # model-hidden
        store = spec.host.sessions
        assert isinstance(store, JsonlSessionStore)
        header = store.inspect(started.child_id).header
        assert header is not None
        assert (header.id, header.parent_session, header.origin) == (
            started.child_id, "parent", "subagent")
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_an_abort_in_the_creation_window_rolls_the_child_back(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:286 — the caller's signal aborted inside the child's creation
    window (from a setup that runs there, DSH's ``agent/created``) refuses the start; no
    Activation, no child agent, no session is left."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("unused")])
        controller = AbortController()

        def abort(child: Agent) -> Any:
            controller.abort("caller gave up")
            return lambda: None

        spec.manager.register_setup(abort)
        with pytest.raises(SubagentAbortedError):
            await start(spec, signal=controller.signal)
        assert spec.host.agents.list() == (spec.parent,)
        assert spec.manager.activations() == ()
        assert spec.host.sessions.list() == (spec.parent.id,)
        await spec.host.aclose()

    run(main)


def test_an_abort_between_publication_and_acceptance_rolls_the_child_back(
        tmp_path: Path) -> None:
    """DSH continuation.spec.ts:302 — an abort from a ``SubagentStart`` observer (the epoch is
    resident, its prompt not yet accepted) refuses the start; the child is disposed without a
    turn, its session deleted, its parent told nothing."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("unused")])
        controller = AbortController()
        spec.host.subagents.subscribe(
            lambda event: controller.abort("caller gave up")
            if isinstance(event, SubagentStart) else None)
        with pytest.raises(SubagentAbortedError):
            await start(spec, signal=controller.signal)
        await eventually(lambda: spec.host.agents.list() == (spec.parent,))
        assert spec.manager.activations() == () and spec.model.calls == 0
        assert spec.host.sessions.list() == (spec.parent.id,)
        assert spec.parent.pending == () and not spec.parent.running
        await spec.host.aclose()

    run(main)


def test_a_failed_lifecycle_publication_rolls_the_child_back(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:318 — when publishing the epoch's lifecycle fails, the start
    fails with that error and the Activation is rolled back: no child agent, no ``SubagentEnd``
    for a start nobody saw, and a drain afterwards has nothing to do."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("unused")])

        def failing(*args: object) -> None:
            raise RuntimeError("start publication failed")

        spec.host.subagents.publish = failing  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="start publication failed"):
            await start(spec)
        await eventually(lambda: spec.host.agents.list() == (spec.parent,))
        await asyncio.sleep(0.01)  # an end, were one owed, would have come by now
        assert spec.lifecycle.ends() == [] and spec.manager.activations() == ()
        assert spec.host.sessions.list() == (spec.parent.id,)
        await spec.manager.drain()
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize(("max_depth", "text"), [
    (0, "subagent depth 1 exceeds maxDepth 0"),
    (math.nan, "subagent maxDepth must be a non-negative safe integer")])
def test_a_depth_cap_the_child_breaks_or_a_malformed_cap_is_refused(
        tmp_path: Path, max_depth: float, text: str) -> None:
    """DSH continuation.spec.ts:336 (a child that would exceed ``maxDepth: 0``) and :345 (a cap
    of NaN, refused before the provider prepares anything): DSH's texts, nothing created."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        with pytest.raises(SubagentError) as caught:
            await spec.manager.start_continuable(
                "spawn", request("deep", max_depth=max_depth), parent=spec.parent)
        assert str(caught.value) == text
        assert spec.host.agents.list() == (spec.parent,)
        assert spec.host.sessions.list() == (spec.parent.id,)
        await spec.host.aclose()

    run(main)


def test_undeclared_composition_fields_are_absent_from_the_descriptor(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:354 — a routeless parent and a start with no persona or tool
    filter: the descriptor is ``{version, mode, provider, label}`` only."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        routeless = _routeless(spec.host, "routeless")
        started = await start(spec, routeless)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        (descriptor,) = of_type(child.session.events, SubagentDescriptorEvent)
        assert descriptor.data == SubagentDescriptorData(
            version=2, mode="continuable", provider="spawn", label="child task")
        await spec.manager.drain()
        await spec.host.aclose()

    run(main)


def test_a_declared_tool_filter_is_recorded_in_the_descriptor(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:376 — a filter naming a registered tool is recorded as it was
    given: ``toolFilter: {deny: [noop]}``, nothing else added."""

    async def main() -> None:
        spec = spec_host(tmp_path)

        async def noop(args: dict[str, Any], ctx: ToolContext) -> str:
            return "noop"

        spec.host.tools.register(Tool("noop", "does nothing", {"type": "object"}, noop))
        routeless = _routeless(spec.host, "routeless-filtered")
        started = await start(spec, routeless, prompt="filtered work",
                              tool_filter=ToolRestriction(deny=("noop",)))
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        (descriptor,) = of_type(child.session.events, SubagentDescriptorEvent)
        assert descriptor.data == SubagentDescriptorData(
            version=2, mode="continuable", provider="spawn", label="child task",
            tool_filter=ToolRestriction(deny=("noop",)))
        await spec.manager.drain()
        await spec.host.aclose()

    run(main)


def test_a_cold_resume_invents_no_route_the_descriptor_never_declared(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:411 — a routeless parent's child, resumed by another host over
    the same store (a restart), has no provider and no model."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first")])
        routeless = _routeless(spec.host, "routeless-resume")
        started = await start(spec, routeless)
        await no_activation(spec.host, started.child_id)
        await spec.host.aclose()

        fresh = make_host(JsonlSessionStore(tmp_path))
        SubagentRuntime(fresh).register_provider(SpawnProvider())
        again = _routeless(fresh, "routeless-resume")
        await fresh.subagents.continuation.followup(again, started.child_id, "resume routeless")
        resumed = fresh.agents.get(started.child_id)
        assert resumed is not None
        assert (resumed.provider, resumed.model) == (None, None)
        await fresh.subagents.continuation.drain()
        await fresh.aclose()

    run(main)


def test_a_fork_child_continues_the_turn_numbering_of_its_prefix(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:439 — after one completed parent turn a fork child's first turn
    (after its pre-turn descriptor) is turn 2, and its header's ``seedLength`` is positive."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("parent turn"), Reply.text("forked child"),
                                    Reply.text("parent ack")])
        spec.parent.followup("parent work")
        await spec.parent.when_idle()
        started = await start(spec, provider="fork")
        await no_activation(spec.host, started.child_id)
        events = persisted(spec.host, started.child_id)
        (descriptor,) = [e for e in of_type(events, SubagentDescriptorEvent)
                         if e.data.mode == "continuable"]
        first = next(e for e in events[descriptor.seq + 1:] if isinstance(e, TurnStartEvent))
        assert first.data.turn == 2
        store = spec.host.sessions
        assert isinstance(store, JsonlSessionStore)
        header = store.inspect(started.child_id).header
        assert header is not None and isinstance(header.seed_length, int)
        assert header.seed_length > 0
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_a_declared_persona_is_recorded_and_reapplied_on_cold_resume(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:462 — the persona is in the descriptor, and the child resumed
    from its log has it again (its system prompt) and runs the follow-up."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("scoped"), Reply.text("parent ack"),
                                    Reply.text("resumed"), Reply.text("parent ack")])
        started = await start(spec, prompt="scoped work", persona="You are scoped.")
        await no_activation(spec.host, started.child_id)
        (descriptor,) = of_type(persisted(spec.host, started.child_id),
                                SubagentDescriptorEvent)
        assert descriptor.data.persona == "You are scoped."
        await spec.parent.when_idle()
        await spec.manager.followup(spec.parent, started.child_id, "resume it")
        resumed = spec.host.agents.get(started.child_id)
        assert resumed is not None and "You are scoped." in resumed.system_prompt()
        await no_activation(spec.host, started.child_id)
        assert has_user_text(persisted(spec.host, started.child_id), "resume it")
        assert user_texts(persisted(spec.host, started.child_id)) == ["scoped work",
                                                                     "resume it"]
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)

