"""DSH ``packages/subagent/subagent/tests/continuation.spec.ts``, "continuable durability and
teardown" (lines 733–1207), case by case: each test names the line of the case it ports."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _continuation_spec import (
    Spec,
    Warnings,
    eventually,
    gate,
    has_user_text,
    no_activation,
    observe_cancel,
    park,
    persisted,
    spec_host,
    start,
)
from _shell_helpers import run

from turnfork.core import CancelParent, InboxSplicedEvent, StartRequest, TextBlock
from turnfork.shell import Agent, Reply
from turnfork.shell.subagents import SubagentError, SubagentStart


def _failing_dispose(agent: Agent, message: str) -> None:
    """Make ``agent``'s disposal fail after it did its work (DSH's patched handle dispose)."""
    dispose = agent.dispose

    async def failing() -> None:
        await dispose()
        raise RuntimeError(message)

    agent.dispose = failing  # type: ignore[method-assign]


def _cancels(agents: list[Agent]) -> list[str]:
    seen: list[str] = []
    for agent in agents:
        observe_cancel(agent, lambda cause, keep, agent=agent: seen.append(agent.id))  # type: ignore[misc]
    return seen


async def _held_child(tmp_path: Path, *, replies: int = 1) -> tuple[Spec, str, asyncio.Event]:
    """A parent (parked) and one continuable child whose model call is held."""
    entry, release = gate(Reply.text("answer"))
    spec = spec_host(tmp_path, [entry, *[Reply.text(f"more {i}") for i in range(replies)]])
    park(spec.parent)
    started = await start(spec)
    await eventually(lambda: spec.model.calls == 1)
    return spec, started.child_id, release


def test_a_final_flush_with_nothing_to_do_settles_without_a_warning(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:734 — when the final flush has nothing to wait for (DSH: no
    persistence listener is left), the child settles and nothing is logged about the flush."""

    async def main() -> None:
        spec, child_id, release = await _held_child(tmp_path)
        child = spec.host.agents.get(child_id)
        assert child is not None

        async def nothing(*args: object) -> None:
            return None

        child.session.wait_durable = nothing  # type: ignore[method-assign]
        with Warnings() as warnings:
            release.set()
            await no_activation(spec.host, child_id)
        assert not any("final session flush" in text for text in warnings.messages)
        await spec.host.aclose()

    run(main)


def test_a_failed_final_flush_is_logged_and_the_epoch_still_completes(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:753 — a final flush that fails is a warning (``best-effort final
    session flush failed``), not a failure of the Activation: it is released and its end says
    ``completed``."""

    async def main() -> None:
        spec, child_id, release = await _held_child(tmp_path)
        child = spec.host.agents.get(child_id)
        assert child is not None
        calls: list[int] = []
        wait_durable = child.session.wait_durable

        async def disk_full(*args: Any) -> None:
            calls.append(1)
            if spec.manager.activations()[0].disposal is not None:
                raise OSError("disk full")
            await wait_durable(*args)

        child.session.wait_durable = disk_full  # type: ignore[method-assign]
        with Warnings() as warnings:
            release.set()
            await no_activation(spec.host, child_id)
            await eventually(lambda: bool(spec.lifecycle.ends()))
        assert any("best-effort final session flush failed" in text
                   for text in warnings.messages)
        assert spec.lifecycle.ends()[-1].stop_reason == "completed"
        await spec.host.aclose()

    run(main)


def test_a_teardown_failure_at_natural_settlement_is_logged(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:774 — a child whose disposal fails when it settles on its own
    is released all the same and the failure is logged with its text."""

    async def main() -> None:
        spec, child_id, release = await _held_child(tmp_path)
        child = spec.host.agents.get(child_id)
        assert child is not None
        _failing_dispose(child, "normal settlement cleanup failed")
        with Warnings() as warnings:
            release.set()
            await no_activation(spec.host, child_id)
            await eventually(lambda: any("normal settlement cleanup failed" in text
                                         for text in warnings.messages))
        await spec.host.aclose()

    run(main)


def test_a_drain_disposes_the_forest_child_first(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:801 — draining the manager disposes a grandchild before its
    parent; the children's sessions stay persisted."""

    async def main() -> None:
        held, release = gate(Reply.text("grandchild"))
        spec = spec_host(tmp_path, [Reply.text("child done"), held])
        park(spec.parent)
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        grandchild = await start(spec, child)
        await eventually(lambda: spec.host.agents.get(grandchild.child_id) is not None)
        disposals: list[str] = []
        forget = spec.host.agent_disposed

        def disposed(agent: Agent) -> None:
            disposals.append(agent.id)
            forget(agent)

        spec.host.agent_disposed = disposed  # type: ignore[method-assign]
        drained = spec.manager.drain()
        release.set()
        await drained
        assert disposals.index(grandchild.child_id) < disposals.index(started.child_id)
        assert spec.host.sessions.exists(started.child_id)
        await spec.host.aclose()

    run(main)


def test_a_scoped_drain_leaves_a_sibling_forest_alone(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:833 — draining one parent's descendants cancels its child and
    grandchild at once (in that order, before anything awaits), refuses new work below that
    parent (``DRAINING``) while a sibling parent's child still takes follow-ups; the parent stays
    closed after the drain."""

    async def main() -> None:
        target_entry, release_target = gate(Reply.text("target child"))
        sibling_entry, release_sibling = gate(Reply.text("sibling child"))
        grand_entry, release_grand = gate(Reply.text("target grandchild"))
        spec = spec_host(tmp_path, [target_entry, sibling_entry, grand_entry,
                                    Reply.text("sibling follow-up")])
        park(spec.parent)
        other = spec.host.create_agent("sibling-parent", provider="mock", model="mock")
        park(other)
        target = await start(spec)
        sibling = await start(spec, other)
        await eventually(lambda: spec.model.calls == 2)
        target_child = spec.host.agents.get(target.child_id)
        sibling_child = spec.host.agents.get(sibling.child_id)
        assert target_child is not None and sibling_child is not None
        grandchild = await start(spec, target_child)
        await eventually(lambda: spec.model.calls == 3)
        grand_agent = spec.host.agents.get(grandchild.child_id)
        assert grand_agent is not None
        cancellations = _cancels([target_child, grand_agent])
        drained = spec.manager.drain_descendants([spec.parent])
        converged = spec.manager.drain_descendants([spec.parent])
        assert cancellations == [target.child_id, grandchild.child_id]
        assert spec.host.agents.get(target.child_id) is target_child
        assert spec.host.agents.get(sibling.child_id) is sibling_child
        assert isinstance(await spec.manager.followup(other, sibling.child_id, "still live"),
                          str)
        for refused in (start(spec),
                        spec.manager.followup(spec.parent, target.child_id, "too late")):
            with pytest.raises(SubagentError) as caught:
                await refused
            assert caught.value.code == "DRAINING"
        release_target.set()
        release_grand.set()
        await asyncio.gather(drained, converged)
        assert spec.host.agents.get(target.child_id) is None
        assert spec.host.agents.get(grandchild.child_id) is None
        assert spec.host.agents.get(sibling.child_id) is sibling_child
        with pytest.raises(SubagentError) as caught:
            await start(spec)
        assert caught.value.code == "DRAINING"
        release_sibling.set()
        await no_activation(spec.host, sibling.child_id)
        await spec.host.aclose()

    run(main)


def test_draining_below_a_continuable_root_keeps_the_root(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:891 — draining the descendants of a continuable child stops only
    its grandchild; the child stays resident, and no new child may start below it."""

    async def main() -> None:
        child_entry, release_child = gate(Reply.text("child"))
        grand_entry, release_grand = gate(Reply.text("grandchild"))
        spec = spec_host(tmp_path, [child_entry, grand_entry, Reply.text("noted")])
        park(spec.parent)
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        grandchild = await start(spec, child)
        await eventually(lambda: spec.model.calls == 2)
        grand_agent = spec.host.agents.get(grandchild.child_id)
        assert grand_agent is not None
        cancellations = _cancels([grand_agent])
        drained = spec.manager.drain_descendants([child])
        assert cancellations == [grandchild.child_id]
        assert spec.host.agents.get(started.child_id) is child
        release_grand.set()
        await drained
        assert spec.host.agents.get(grandchild.child_id) is None
        assert spec.host.agents.get(started.child_id) is child
        with pytest.raises(SubagentError) as caught:
            await start(spec, child)
        assert caught.value.code == "DRAINING"
        release_child.set()
        await no_activation(spec.host, started.child_id)
        await spec.host.aclose()

    run(main)


def test_draining_selected_children_releases_only_them(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:923 — ``drain_children`` (an id named twice counts once) cancels
    the target with cause ``parent`` and releases it with its own child; its sibling stays."""

    async def main() -> None:
        target_entry, release_target = gate(Reply.text("target"))
        sibling_entry, release_sibling = gate(Reply.text("sibling"))
        grand_entry, release_grand = gate(Reply.text("grandchild"))
        spec = spec_host(tmp_path, [target_entry, sibling_entry, grand_entry])
        park(spec.parent)
        target = await start(spec)
        sibling = await start(spec)
        await eventually(lambda: spec.model.calls == 2)
        target_agent = spec.host.agents.get(target.child_id)
        sibling_agent = spec.host.agents.get(sibling.child_id)
        assert target_agent is not None and sibling_agent is not None
        grandchild = await start(spec, target_agent)
        await eventually(lambda: spec.model.calls == 3)
        causes: list[object] = []
        observe_cancel(target_agent, lambda cause, keep: causes.append(cause))
        drained = spec.manager.drain_children(spec.parent, [target.child_id, target.child_id])
        assert causes == [CancelParent()]
        assert spec.host.agents.get(sibling.child_id) is sibling_agent
        release_target.set()
        release_grand.set()
        await drained
        assert spec.host.agents.get(target.child_id) is None
        assert spec.host.agents.get(grandchild.child_id) is None
        assert spec.host.agents.get(sibling.child_id) is sibling_agent
        release_sibling.set()
        await no_activation(spec.host, sibling.child_id)
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("drain", ["children", "descendants"])
def test_a_failed_selected_or_scoped_disposal_is_reported_after_release(
        tmp_path: Path, drain: str) -> None:
    """DSH continuation.spec.ts:956 (``drain_children``) and :1086 (``drain_descendants``) — a
    child whose disposal fails is released all the same, and the drain then fails with
    ``ACTIVATION_TEARDOWN_FAILED``."""

    async def main() -> None:
        spec, child_id, release = await _held_child(tmp_path)
        child = spec.host.agents.get(child_id)
        assert child is not None
        _failing_dispose(child, "selected cleanup failed")
        drained = (spec.manager.drain_children(spec.parent, [child_id]) if drain == "children"
                   else spec.manager.drain_descendants([spec.parent]))
        release.set()
        with pytest.raises(SubagentError) as caught:
            await drained
        assert caught.value.code == "ACTIVATION_TEARDOWN_FAILED"
        assert "selected cleanup failed" in str(caught.value)
        assert spec.host.agents.get(child_id) is None
        await spec.host.aclose()

    run(main)


def test_draining_selected_children_through_another_parent_is_refused(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:979 — another live agent cannot drain the child
    (``UNAUTHORIZED``), which stays resident."""

    async def main() -> None:
        spec, child_id, release = await _held_child(tmp_path)
        other = spec.host.create_agent("other-parent", provider="mock", model="mock")
        with pytest.raises(SubagentError) as caught:
            spec.manager.drain_children(other, [child_id])
        assert caught.value.code == "UNAUTHORIZED"
        assert spec.host.agents.get(child_id) is not None
        release.set()
        await no_activation(spec.host, child_id)
        await spec.host.aclose()

    run(main)


def test_draining_selected_children_through_a_stale_parent_is_refused(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:995 — a parent object that is not the registry's live entry
    (same id) cannot drain: ``UNAUTHORIZED``."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        stale = spec.host.build_agent(spec.parent.session, provider="mock", model="mock")
        with pytest.raises(SubagentError) as caught:
            spec.manager.drain_children(stale, [])
        assert caught.value.code == "UNAUTHORIZED"
        await spec.host.aclose()

    run(main)


def test_disposing_a_one_shot_intermediate_disposes_its_continuable_child(
        tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1003 (a deliberate difference, docs/conformance.md): DSH keeps a
    continuable child resident after the one-shot child that started it left the registry, and
    finds it when the root's descendants are drained. Ours disposes every child an agent
    started when that agent is disposed, so the continuable child is stopped with it and a drain
    from the root finds nothing left."""

    async def main() -> None:
        mid_entry, release_mid = gate(Reply.text("one-shot"))
        leaf_entry, _release_leaf = gate(Reply.text("continuable descendant"))
        spec = spec_host(tmp_path, [mid_entry, leaf_entry])
        park(spec.parent)
        run_ = await spec.host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="one-shot task"),),
                                  label="one-shot task"), parent=spec.parent)
        intermediate = run_.local_agent
        assert intermediate is not None
        descendant = await start(spec, intermediate)
        await eventually(lambda: spec.model.calls == 2)
        disposing = asyncio.ensure_future(run_.dispose())
        release_mid.set()
        await disposing
        assert spec.host.agents.get(intermediate.id) is None
        assert spec.host.agents.get(descendant.child_id) is None
        await eventually(lambda: bool(spec.lifecycle.ends(descendant.child_id)))
        assert spec.lifecycle.ends(descendant.child_id)[0].stop_reason == "aborted"
        await spec.manager.drain_descendants([spec.parent])
        await spec.host.aclose()

    run(main)


def test_a_drain_waits_for_a_creation_window_below_its_root(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1041 — a start whose child is still in its creation window when
    the parent's descendants are drained is refused (``DRAINING``) and rolled back before the
    drain resolves; no child is left."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        order: list[str] = []
        in_window = asyncio.Event()

        def seen(child: Agent) -> Any:
            in_window.set()
            return lambda: None

        spec.manager.register_setup(seen)
        starting = asyncio.ensure_future(start(spec))
        starting.add_done_callback(lambda _: order.append("start"))
        await in_window.wait()
        drained = spec.manager.drain_descendants([spec.parent])
        drained.add_done_callback(lambda _: order.append("drain"))
        with pytest.raises(SubagentError) as caught:
            await starting
        assert caught.value.code == "DRAINING"
        await drained
        await asyncio.sleep(0)
        assert order == ["start", "drain"]
        assert spec.host.agents.list() == (spec.parent,)
        assert spec.host.sessions.list() == (spec.parent.id,)
        await spec.host.aclose()

    run(main)


def test_a_stale_scoped_root_is_ignored(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1076 — draining below a stale parent object (same id, not the
    live entry) closes nothing: the live parent still starts a child, which runs and settles."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("done")])
        park(spec.parent)
        stale = spec.host.build_agent(spec.parent.session, provider="mock", model="mock")
        await spec.manager.drain_descendants([stale])
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: bool(spec.lifecycle.ends()))
        assert spec.lifecycle.ends()[0].stop_reason == "completed"
        await spec.host.aclose()

    run(main)


def test_a_drain_refuses_new_children_and_deliveries(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1111 — once the manager drained, a start and a follow-up are
    both refused ``DRAINING``."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("done")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        await spec.manager.drain()
        for refused in (start(spec),
                        spec.manager.followup(spec.parent, started.child_id, "too late")):
            with pytest.raises(SubagentError) as caught:
                await refused
            assert caught.value.code == "DRAINING"
        await spec.host.aclose()

    run(main)


def test_a_drain_from_the_start_observer_refuses_the_first_prompt(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1124 — a drain begun by a ``SubagentStart`` observer (the
    child is published, its prompt not yet accepted) refuses the start ``DRAINING``: the prompt
    never enters the child's inbox and only the parent is left."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        drains: list[asyncio.Task[None]] = []
        accepted: list[str] = []

        def on_start(event: object) -> None:
            if isinstance(event, SubagentStart):
                event.run.local_agent.session.listeners.append(lambda events: accepted.extend(
                    e.data.inserted[0].id for e in events
                    if isinstance(e, InboxSplicedEvent) and e.data.inserted))
                drains.append(spec.manager.drain())

        spec.host.subagents.subscribe(on_start)
        with pytest.raises(SubagentError) as caught:
            await start(spec)
        assert caught.value.code == "DRAINING"
        await asyncio.gather(*drains)
        assert accepted == [] and spec.host.agents.list() == (spec.parent,)
        await spec.host.aclose()

    run(main)


def test_a_drain_waits_for_a_rolled_back_creation_before_it_resolves(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1139 — a drain begun inside a child's creation window (DSH's
    ``agent/created``; ours a setup there) refuses that start, and resolves only after the
    child was rolled back (its session deleted)."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        order: list[str] = []
        drains: list[asyncio.Task[None]] = []

        def drain_now(child: Agent) -> Any:
            task = spec.manager.drain()
            task.add_done_callback(lambda _: order.append("drain"))
            drains.append(task)
            return lambda: None

        delete = spec.host.sessions.delete

        def deleted(session_id: str) -> None:
            order.append("deleted")
            delete(session_id)

        spec.host.sessions.delete = deleted  # type: ignore[method-assign]
        spec.manager.register_setup(drain_now)
        with pytest.raises(SubagentError) as caught:
            await start(spec)
        assert caught.value.code == "DRAINING"
        await asyncio.gather(*drains)
        await asyncio.sleep(0)
        assert order == ["deleted", "drain"]
        assert spec.host.agents.list() == (spec.parent,)
        await spec.host.aclose()

    run(main)


def test_a_follow_up_admitted_before_a_drain_is_accepted_first(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1162 — a follow-up that reached its admission before a drain
    began is accepted (its message enters the inbox) before the drain's cancel reaches the
    child."""

    async def main() -> None:
        spec, child_id, release = await _held_child(tmp_path)
        child = spec.host.agents.get(child_id)
        assert child is not None
        order: list[str] = []
        child.session.listeners.append(lambda events: order.extend(
            "enqueue" for e in events if isinstance(e, InboxSplicedEvent) and e.data.inserted
            and "before drain" in str(e.data.inserted[0].content)))
        observe_cancel(child, lambda cause, keep: order.append("cancel"))
        delivery = asyncio.ensure_future(spec.manager.followup(spec.parent, child_id,
                                                               "before drain"))
        await asyncio.sleep(0)
        drained = spec.manager.drain()
        release.set()
        assert isinstance(await delivery, str)
        await drained
        assert order == ["enqueue", "cancel"]
        await spec.host.aclose()

    run(main)


def test_an_accepted_message_the_child_never_logged_is_not_replayed(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1189 — a follow-up accepted but never claimed before a drain is
    dropped: the log holds only what reached it."""

    async def main() -> None:
        spec, child_id, release = await _held_child(tmp_path)
        await spec.manager.followup(spec.parent, child_id, "never logged")
        drained = spec.manager.drain()
        release.set()
        await drained
        await no_activation(spec.host, child_id)
        assert not has_user_text(persisted(spec.host, child_id), "never logged")
        await spec.host.aclose()

    run(main)
