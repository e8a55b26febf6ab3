"""Starting a continuable child (DSH continuation.spec.ts, "SubagentRuntime.startContinuable";
subagent-fork-in-process.spec.ts "contributes the completed-turn prefix as a continuable
child's seed"): the ids at inbox acceptance, the descriptor as the creation seed's last event,
the fork seed, and every refusal leaving nothing behind."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _continuation_helpers import (
    continuable_host,
    finish,
    gated,
    manager,
    settle,
    splices,
    start,
    user_texts,
)
from _shell_helpers import echo_tool, make_host, run, types
from msgspec import UNSET

from turnfork.core import (
    AgentOptions,
    SubagentDescriptorData,
    SubagentDescriptorEvent,
    TextBlock,
    ToolRestriction,
    TurnStartEvent,
)
from turnfork.core.continuation import ContinuableStart
from turnfork.shell import (
    AbortController,
    Reply,
    ScriptedModel,
    SpawnProvider,
    SubagentRuntime,
)
from turnfork.shell.subagents import SubagentAbortedError, SubagentError


def _request(prompt: str = "child task", **fields: object) -> ContinuableStart:
    return ContinuableStart(prompt=(TextBlock(text=prompt),), label=prompt, **fields)  # type: ignore[arg-type]


def test_returns_both_ids_at_inbox_acceptance(tmp_path: Path) -> None:
    """Ensures that the start returns the child id and its prompt's message id once the prompt
    is queued, before any model call; the turn then runs on its own."""

    async def main() -> None:
        gate = asyncio.Event()
        host, parent, model, lifecycle = continuable_host(tmp_path, approval=True)
        model.add(gated(Reply.text("CHILD_OK"), gate))
        started = await manager(host).start_continuable("spawn", _request(), parent=parent)
        child = host.agents.get(started.child_id)
        assert child is not None and model.calls == 0
        (insert,) = [s for s in splices(child.session.events) if s.inserted]
        assert insert.inserted[0].id == started.message_id
        gate.set()
        end = await settle(lifecycle, started.child_id)
        assert end.stop_reason == "completed"
        assert user_texts(child.session.events)[0] == "child task"
        await finish(host, parent, child)

    run(main)


def test_descriptor_is_the_last_event_of_the_creation_seed(tmp_path: Path) -> None:
    """Ensures that a spawn child's log opens with its continuable descriptor, then
    session/end-seed, then the delegated policy, before its first inbox splice (DSH
    subagent-continuable session.1.jsonl seq 0-3); no seedLength in its header."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path, approval=True)
        model.add(Reply.text("CHILD_OK"))
        child_id = await start(host, parent, label="Reply with CHILD_OK")
        await settle(lifecycle, child_id)
        child = host.sessions.load(child_id)
        events = list(child.events)
        assert types(events[:5]) == ["subagent/descriptor", "session/end-seed",
                                     "approval/policy", "agent/inbox/spliced", "turn/start"]
        assert isinstance(events[0], SubagentDescriptorEvent)
        assert events[0].data == SubagentDescriptorData(
            version=2, mode="continuable", provider="spawn", label="Reply with CHILD_OK",
            agent_provider="parent", agent_model="test-model")
        header = child.header
        assert (header.parent_session, header.origin, header.delegation_depth,
                header.seed_length) == (parent.id, "subagent", 1, UNSET)
        host.sessions.release(child_id)
        await finish(host, parent)

    run(main)


def test_fork_child_seed_is_the_parent_prefix_then_its_descriptor(tmp_path: Path) -> None:
    """Ensures that a fork child's log is the parent's completed turns verbatim, then its
    descriptor at seq seedLength, then session/end-seed, and that its first turn continues the
    parent's numbering (DSH "continues turn numbering after an inherited fork prefix")."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        model.add(Reply.text("Noted."))
        parent.followup("Remember BLUE.")
        await parent.when_idle()
        cut = len(parent.session.events)
        model.add(Reply.text("BLUE"))
        child_id = await start(host, parent, "Which colour?", provider="fork")
        child = host.agents.get(child_id)
        assert child is not None
        events = child.session.events
        assert child.session.header.seed_length == cut
        assert all(events[i] is parent.session.events[i] for i in range(cut))
        assert types(events[cut:cut + 2]) == ["subagent/descriptor", "session/end-seed"]
        await settle(lifecycle, child_id)
        first_turn = next(e for e in child.session.events[cut:] if isinstance(e, TurnStartEvent))
        assert first_turn.data.turn == 2
        assert model.requests[-1].messages[0] == parent.session.history()[0]
        await finish(host, parent, child)

    run(main)


def test_declared_composition_is_recorded_in_the_descriptor(tmp_path: Path) -> None:
    """Ensures that a persona, a tool filter and a requested model route are recorded in the
    descriptor (DSH "records a declared tool filter", "records the declared persona")."""

    async def main() -> None:
        host, parent, _, lifecycle = continuable_host(tmp_path)
        host.tools.register(echo_tool())
        host.models.register("other", ScriptedModel([Reply.text("ok")]))
        child_id = await start(host, parent, persona="You are scoped.",
                               tool_filter=ToolRestriction(deny=("echo",)),
                               agent_options=AgentOptions(provider="other", model="m2"))
        await settle(lifecycle, child_id)
        child = host.sessions.load(child_id)
        descriptor = child.events[0]
        assert isinstance(descriptor, SubagentDescriptorEvent)
        assert (descriptor.data.persona, descriptor.data.agent_provider,
                descriptor.data.agent_model, descriptor.data.tool_filter) == (
            "You are scoped.", "other", "m2", ToolRestriction(deny=("echo",)))
        host.sessions.release(child_id)
        await finish(host, parent)

    run(main)


def test_refusals_leave_nothing_behind(tmp_path: Path) -> None:
    """Ensures DSH's refusals, in its words: no persistence, a provider without
    prepare_continuable, a child deeper than the cap (plain), a duplicate reserved id (live,
    then persisted); none creates an agent or a session."""

    class OneShotOnly:
        provider_name = "plain"
        capabilities = SpawnProvider().capabilities
        inherits_parent_context = False

        async def start(self, *args: object, **kwargs: object) -> object:
            raise AssertionError("never called")

    async def main() -> None:
        memory = make_host()
        SubagentRuntime(memory).register_provider(SpawnProvider())
        memory.models.register("parent", ScriptedModel())
        lone = memory.create_agent(provider="parent", model="m")
        with pytest.raises(SubagentError) as caught:
            await manager(memory).start_continuable("spawn", _request(), parent=lone)
        assert (caught.value.code, str(caught.value)) == (
            "PERSISTENCE_UNAVAILABLE", "continuable subagents require session persistence "
                                       "(load a dsh-session-persistence backend)")
        await memory.aclose()

        host, parent, model, lifecycle = continuable_host(tmp_path)
        host.subagents.register_provider(OneShotOnly())  # type: ignore[arg-type]
        with pytest.raises(SubagentError, match='subagent provider "plain" does not support '
                                                r"continuable children \(no "
                                                r"prepareContinuable capability\)"):
            await manager(host).start_continuable("plain", _request(), parent=parent)
        with pytest.raises(SubagentError) as caught:
            await manager(host).start_continuable("spawn", _request(max_depth=0), parent=parent)
        assert str(caught.value) == "subagent depth 1 exceeds maxDepth 0"
        assert caught.value.error.error_info() is None  # a plain error in DSH
        assert host.sessions.list() == (parent.id,) and len(host.agents) == 1
        reserved = "00000000-0000-4000-8000-000000000123"
        model.add(Reply.text("ok"))
        started = await manager(host).start_continuable("spawn", _request(), parent=parent,
                                                        child_id=reserved)
        assert started.child_id == reserved
        for _ in range(2):  # live, then only persisted
            with pytest.raises(SubagentError) as caught:
                await manager(host).start_continuable("spawn", _request(), parent=parent,
                                                      child_id=reserved)
            assert (caught.value.code, str(caught.value)) == (
                "DUPLICATE_CHILD", f'subagent "{reserved}" already exists')
            await settle(lifecycle, reserved)
        assert len(host.agents) == 1
        await finish(host, parent)

    run(main)


@pytest.mark.parametrize("how", ["already aborted", "aborted in the creation window",
                                 "caller cancelled"])
def test_an_abort_before_acceptance_rolls_the_child_back(tmp_path: Path, how: str) -> None:
    """Ensures that an abort (before the start, or inside the child's unpublished creation
    window) or the caller's cancellation leaves no agent, no session, no file and no
    lifecycle event (DSH "rolls the child back completely when the caller signal aborts before
    acceptance")."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        controller = AbortController()
        if how == "already aborted":
            controller.abort("before")
        task = asyncio.ensure_future(manager(host).start_continuable(
            "spawn", _request(), parent=parent, signal=controller.signal))
        await asyncio.sleep(0)
        if how == "aborted in the creation window":
            assert not task.done() and len(host.sessions.list()) == 2
            controller.abort("during")
        elif how == "caller cancelled":
            task.cancel()
        with pytest.raises((SubagentAbortedError, asyncio.CancelledError)):
            await task
        assert host.sessions.list() == (parent.id,) and host.agents.list() == (parent,)
        assert lifecycle.events == [] and model.calls == 0
        assert [p.parent.name for p in tmp_path.rglob("session.jsonl")] in ([], [parent.id])
        await finish(host, parent)

    run(main)
