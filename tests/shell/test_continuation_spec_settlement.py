"""DSH ``packages/subagent/subagent/tests/continuation.spec.ts``, "continuable report delivery"
(1654–1688), "continuable settlement delivery" (1690–2195) and "continuable lifecycle
observation" (2197–2223), case by case: each test names the line of the case it ports."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
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
    notices,
    park,
    persisted,
    spec_host,
    start,
)
from _shell_helpers import of_type, run, types

from turnfork.core import (
    InboxSplicedEvent,
    TurnStartEvent,
    UserMessageEvent,
)
from turnfork.shell import Agent, JsonlSessionStore, Reply
from turnfork.shell.subagents import AncestorAuthority, SubagentError, SubagentStart

FINISHED = "finished and will do no further work unless you send it more."


def _child_hook(spec: Spec, hook: Callable[[Agent, int, int], Any]) -> None:
    """A pre-step hook on every child (installed in its creation window); the parent has
    none (DSH's hooks that skip ``parentSession === undefined``)."""

    def install(child: Agent) -> Any:
        child.pre_step_hooks.append(hook)
        return lambda: child.pre_step_hooks.remove(hook)

    spec.manager.register_setup(install)


def _held_at_step(spec: Spec, *, from_turn: int = 1) -> tuple[asyncio.Event, asyncio.Event]:
    """Children wait at their step boundary (turn >= ``from_turn``) until released."""
    reached, release = asyncio.Event(), asyncio.Event()

    async def hold(agent: Agent, turn: int, step: int) -> bool:
        if turn >= from_turn:
            reached.set()
            await release.wait()
        return True

    _child_hook(spec, hold)
    return reached, release


async def _notice_text(parent: Agent, count: int = 1) -> str:
    await eventually(lambda: len(notices(parent)) == count)
    return notices(parent)[-1].text


def test_a_next_step_report_wakes_an_idle_parent(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1655 — a ``next-step`` report from a running child wakes its idle
    parent for a turn whose log holds the report (its id the one returned); the child's later
    settlement gives the parent a second turn."""

    async def main() -> None:
        entry, release = gate(Reply.text("child answer"))
        spec = spec_host(tmp_path, [entry, Reply.text("parent report ack"),
                                    Reply.text("parent settlement ack")])
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        message_id = spec.manager.report_from(child, "an explicit report", delivery="next-step")
        await eventually(lambda: spec.model.calls == 2)
        await spec.parent.when_idle()
        (report,) = [e.data for e in of_type(spec.parent.session.events, UserMessageEvent)
                     if e.data.source.kind == "subagent-report"]
        assert report.id == message_id
        release.set()
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: spec.model.calls == 3)
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_the_parent_is_told_what_the_child_finished_with(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1691 — unasked, the parent gets one notice from the child: the
    summary line, ``Its closing message:`` and the answer; the collapsed summary has the line
    only."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("the answer"), Reply.text("parent ack")])
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        summary = f"Background subagent {started.child_id} {FINISHED}"
        assert await _notice_text(spec.parent) == f"{summary}\nIts closing message:\nthe answer"
        (notice,) = notices(spec.parent)
        assert (notice.sender, notice.summary) == (started.child_id, summary)
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_the_notice_comes_even_after_the_child_reported_itself(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1709 — a child that already reported (quietly) still settles
    with a notice: the promise does not depend on what the child chose to report."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("the answer"), Reply.text("parent ack")])
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        spec.manager.report_from(child, "an explicit report", delivery="quiet")
        await no_activation(spec.host, started.child_id)
        await _notice_text(spec.parent)
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize(("line", "reply", "text"), [
    (1729, Reply.max_tokens("half an ans"),
     "ran out of room before it finished.\nIts closing message:\nhalf an ans"),
    (1741, None, "declined the task.\nIt left no closing message.")])
def test_the_notice_names_the_terminal_reason(tmp_path: Path, line: int, reply: Reply | None,
                                              text: str) -> None:
    """DSH continuation.spec.ts:1729 (a child cut off by its token limit: ``ran out of room``,
    its partial answer) and :1741 (a child whose prompt a pre-step rejection discarded:
    ``declined the task``, no closing message)."""

    async def main() -> None:
        spec = spec_host(tmp_path, [*([] if reply is None else [reply]),
                                    Reply.text("parent ack")])
        if reply is None:
            _child_hook(spec, lambda *_: False)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        assert await _notice_text(spec.parent) == (
            f"Background subagent {started.child_id} {text}")
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_a_turn_that_failed_before_its_first_step_is_reported_failed(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1760 — a follow-up claimed by a turn that fails before its first
    step (a durability checkpoint refusing the write) was swallowed by the failure: the parent
    is told ``failed before it finished``, with the earlier answer."""

    async def main() -> None:
        entry, release = gate(Reply.text("the answer"))
        spec = spec_host(tmp_path, [entry, Reply.text("parent ack")])

        def checkpoint(agent: Agent, turn: int, step: int) -> bool:
            if turn >= 2:
                raise OSError("ENOSPC: no space left on device")
            return True

        _child_hook(spec, checkpoint)
        started = await start(spec)
        await spec.manager.followup(spec.parent, started.child_id, "second task")
        release.set()
        await no_activation(spec.host, started.child_id)
        text = await _notice_text(spec.parent)
        assert not has_user_text(persisted(spec.host, started.child_id), "second task")
        assert text == (f"Background subagent {started.child_id} failed before it finished."
                        "\nIts closing message:\nthe answer")
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_accepted_work_cut_short_before_its_first_step_is_reported_stopped(
        tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1791 — a drain that catches the child's second turn at its step
    boundary (claimed, not yet run): ``was stopped before it finished``, with turn 1's
    answer."""

    async def main() -> None:
        entry, release_first = gate(Reply.text("the answer"))
        spec = spec_host(tmp_path, [entry])
        reached, release = _held_at_step(spec, from_turn=2)
        started = await start(spec)
        await spec.manager.followup(spec.parent, started.child_id, "second task")
        release_first.set()
        await reached.wait()
        drained = spec.manager.drain()
        release.set()
        await drained
        assert await _notice_text(spec.parent) == (
            f"Background subagent {started.child_id} was stopped before it finished."
            "\nIts closing message:\nthe answer")
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("stopped_by", ["drain", "interrupt"])
def test_a_child_stopped_before_it_reached_the_model_is_reported_stopped(
        tmp_path: Path, stopped_by: str) -> None:
    """DSH continuation.spec.ts:1827 (a drain catches the child at its first step boundary) and
    :1854 (an ancestor interrupts it there): ``was stopped before it finished``, no closing
    message."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("parent ack")])
        reached, release = _held_at_step(spec)
        started = await start(spec)
        await reached.wait()
        if stopped_by == "drain":
            drained = spec.manager.drain()
            release.set()
            await drained
        else:
            spec.manager.interrupt(started.child_id, AncestorAuthority(spec.parent))
            release.set()
            await no_activation(spec.host, started.child_id)
        assert await _notice_text(spec.parent) == (
            f"Background subagent {started.child_id} was stopped before it finished."
            "\nIt left no closing message.")
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_work_accepted_during_maintenance_then_drained_is_reported_stopped(
        tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1881 (a defect of ours until now: the message vanished without a
    record) — a follow-up accepted while the child runs maintenance (idle, its wake deferred),
    then a drain: the queued message is dropped durably (a ``canceled`` splice, never logged as
    a user message) and the parent is told ``was stopped before it finished``, with turn 1's
    answer. The maintenance job itself is cancelled by the drain (DSH aborts its signal)."""

    async def main() -> None:
        child_entry, release_child = gate(Reply.text("the answer"))
        grand_entry, release_grand = gate(Reply.text("grandchild"))
        spec = spec_host(tmp_path, [child_entry, grand_entry])
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        grandchild = await start(spec, child)
        await eventually(lambda: spec.host.agents.get(grandchild.child_id) is not None)
        release_child.set()
        await eventually(lambda: not child.running and spec.model.calls == 2)
        hold = asyncio.Event()
        maintaining = asyncio.ensure_future(child.run_maintenance(hold.wait))
        await asyncio.sleep(0)
        await spec.manager.followup(spec.parent, started.child_id, "never runs")
        drained = spec.manager.drain()
        hold.set()
        release_grand.set()
        with pytest.raises(asyncio.CancelledError):
            await maintaining
        await drained
        events = child.session.events
        assert not has_user_text(events, "never runs")
        dropped = [e.data for e in of_type(events, InboxSplicedEvent)
                   if e.data.outcome == "canceled"]
        # the follow-up first; then the grandchild's notice, injected while the child closed
        assert (dropped[0].target, dropped[0].removed_count) == ("next-turn", 1)
        assert await _notice_text(spec.parent) == (
            f"Background subagent {started.child_id} was stopped before it finished."
            "\nIts closing message:\nthe answer")
        await spec.host.aclose()

    run(main)


def test_an_outcome_not_durably_released_is_reported_failed(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1923 — a child whose disposal fails when it settles: the parent
    is told ``failed before it finished`` with no closing message (its answer is withheld)."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("the answer"), Reply.text("parent ack")])
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        dispose = child.dispose

        async def failing() -> None:
            await dispose()
            raise RuntimeError("scope unwind failed")

        child.dispose = failing  # type: ignore[method-assign]
        with Warnings():
            await no_activation(spec.host, started.child_id)
            assert await _notice_text(spec.parent) == (
                f"Background subagent {started.child_id} failed before it finished."
                "\nIt left no closing message.")
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_an_idle_parent_gets_one_ordinary_turn_on_the_notice(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1947 — the notice wakes the idle parent for exactly one turn
    (turn 1), one model call."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("the answer"), Reply.text("parent ack")])
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: spec.model.calls == 2)
        await spec.parent.when_idle()
        turns = [e.data.turn for e in of_type(spec.parent.session.events, TurnStartEvent)]
        assert turns == [1]
        await spec.host.aclose()

    run(main)


def test_notices_arriving_together_join_one_step_of_a_busy_parent(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1962 — two children settling while the parent's turn runs: both
    notices wait for its next step (none for a next turn), and no new turn starts for them."""

    async def main() -> None:
        parent_entry, release_parent = gate(Reply.text("parent works"))
        children = asyncio.Event()
        spec = spec_host(tmp_path, [parent_entry])
        spec.parent.followup("start working")
        await eventually(lambda: spec.model.calls == 1)

        async def child_reply(request: object) -> Reply:
            await children.wait()
            return Reply.text("child")

        spec.model.add(child_reply, child_reply, Reply.text("parent reacts"))
        first = await start(spec)
        second = await start(spec)
        children.set()
        await no_activation(spec.host, first.child_id)
        await no_activation(spec.host, second.child_id)
        assert len(spec.parent.pending) == 2
        assert all(message.source.kind == "subagent-settled" for message in spec.parent.pending)
        assert [t.data.target for t in of_type(spec.parent.session.events, InboxSplicedEvent)
                if t.data.inserted][-2:] == ["next-step", "next-step"]
        before = len(of_type(spec.parent.session.events, TurnStartEvent))
        release_parent.set()
        await eventually(lambda: len(notices(spec.parent)) == 2
                         and not spec.parent.pending)
        await spec.parent.when_idle()
        assert len(of_type(spec.parent.session.events, TurnStartEvent)) == before
        assert {n.sender for n in notices(spec.parent)} == {first.child_id, second.child_id}
        await spec.host.aclose()

    run(main)


def test_a_maintaining_parent_stays_resident_until_it_reads_the_notices(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1997 — a continuable parent in maintenance (idle, its wake
    deferred) whose two children settle one after the other stays resident; after the
    maintenance it reads both notices, in order, then settles itself."""

    async def main() -> None:
        first_entry, release_first = gate(Reply.text("first inner"))
        second_entry, release_second = gate(Reply.text("second inner"))
        spec = spec_host(tmp_path, [Reply.text("outer"), first_entry, second_entry,
                                    Reply.text("outer reacts"), Reply.text("root reacts")])
        outer = await start(spec)
        middle = spec.host.agents.get(outer.child_id)
        assert middle is not None
        first = await start(spec, middle)
        second = await start(spec, middle)
        await eventually(lambda: not middle.running and spec.model.calls == 3)
        hold = asyncio.Event()
        maintenance = asyncio.ensure_future(middle.run_maintenance(hold.wait))
        await asyncio.sleep(0)
        release_first.set()
        await no_activation(spec.host, first.child_id)
        release_second.set()
        await no_activation(spec.host, second.child_id)
        assert spec.host.agents.get(outer.child_id) is middle
        hold.set()
        await maintenance
        await eventually(lambda: len(notices(middle)) == 2)
        assert [n.sender for n in notices(middle)] == [first.child_id, second.child_id]
        await no_activation(spec.host, outer.child_id)
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_the_notice_is_delivered_before_the_ownership_is_released(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2039 — when the notice reaches a continuable parent, that
    parent still owns the settling child, so it cannot settle in the window the notice
    crosses."""

    async def main() -> None:
        entry, release = gate(Reply.text("inner"))
        spec = spec_host(tmp_path, [Reply.text("outer"), entry, Reply.text("outer reacts"),
                                    Reply.text("root reacts")])
        outer = await start(spec)
        middle = spec.host.agents.get(outer.child_id)
        assert middle is not None
        inner = await start(spec, middle)
        await eventually(lambda: not middle.running and spec.model.calls == 2)
        (activation,) = [a for a in spec.manager.activations() if a.child_id == outer.child_id]
        owned: list[set[str]] = []

        def at_delivery(events: Any) -> None:
            for event in events:
                if isinstance(event, InboxSplicedEvent) and event.data.inserted \
                        and event.data.inserted[0].source.kind == "subagent-settled":
                    owned.append(set(activation.owned))

        middle.session.listeners.append(at_delivery)
        release.set()
        await no_activation(spec.host, inner.child_id)
        assert owned == [{inner.child_id}]
        await no_activation(spec.host, outer.child_id)
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("drain", ["manager", "descendants"])
def test_a_parent_under_teardown_gets_the_notice_without_a_turn(tmp_path: Path,
                                                                drain: str) -> None:
    """DSH continuation.spec.ts:2073 (the manager draining) and :2097 (the parent's own
    descendants drained): the notice (``was stopped before it finished``) is delivered and
    logged as a splice, but the parent starts no turn for it and stays idle."""

    async def main() -> None:
        entry, release = gate(Reply.text("interrupted"))
        spec = spec_host(tmp_path, [entry])
        started = await start(spec)
        await eventually(lambda: spec.host.agents.get(started.child_id) is not None)
        drained = (spec.manager.drain() if drain == "manager"
                   else spec.manager.drain_descendants([spec.parent]))
        release.set()
        await drained
        (notice,) = notices(spec.parent)
        assert notice.text == (f"Background subagent {started.child_id} was stopped before it "
                               "finished.\nIt left no closing message.")
        assert "agent/inbox/spliced" in types(spec.parent.session.events)
        assert "turn/start" not in types(spec.parent.session.events)
        assert not spec.parent.running
        await spec.host.aclose()

    run(main)


def test_a_teardown_notice_is_recorded_then_cancelled_with_its_parent(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2112 — a notice delivered during a scoped teardown is dropped
    unread when that parent is disposed (a resumed parent has none pending); its log says so:
    inserted once, then removed by a ``canceled`` splice."""

    async def main() -> None:
        entry, release = gate(Reply.text("interrupted"))
        spec = spec_host(tmp_path, [entry], parent_id="closing-parent")
        started = await start(spec)
        await eventually(lambda: spec.host.agents.get(started.child_id) is not None)
        drained = spec.manager.drain_descendants([spec.parent])
        release.set()
        await drained
        assert len(notices(spec.parent)) == 1
        await spec.parent.dispose()
        resumed = spec.host.create_agent("closing-parent", provider="mock", model="mock")
        assert notices(resumed) == []
        await resumed.dispose()
        store = spec.host.sessions
        assert isinstance(store, JsonlSessionStore)
        splices = [(len(e.data.inserted), e.data.removed_count or 0)
                   for e in of_type(store.inspect("closing-parent").events, InboxSplicedEvent)]
        assert splices == [(1, 0), (0, 1)]
        await spec.host.aclose()

    run(main)


def test_a_notice_to_a_parent_that_is_gone_is_dropped_quietly(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2147 — the parent disposed while its child finishes: the child
    is released and observed to end once, and nothing is logged as a warning."""

    async def main() -> None:
        entry, release = gate(Reply.text("answer"))
        spec = spec_host(tmp_path, [entry], parent_id="disposable-parent")
        started = await start(spec)
        with Warnings() as warnings:
            release.set()
            await spec.parent.dispose()
            await no_activation(spec.host, started.child_id)
            await eventually(lambda: len(spec.lifecycle.ends()) == 1)
        assert warnings.messages == []
        await spec.host.aclose()

    run(main)


def test_a_refused_notice_is_logged_and_the_child_still_settles(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2168 — the parent refusing the notice (its queueing raises)
    does not fail the child's teardown: the end says ``completed``, and a warning says the
    notice was not delivered."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("the answer")])

        def closed(prompt: object) -> Any:
            raise RuntimeError("parent closed during delivery")

        spec.parent.followup = closed  # type: ignore[method-assign]
        with Warnings() as warnings:
            started = await start(spec)
            await no_activation(spec.host, started.child_id)
            await eventually(lambda: len(spec.lifecycle.ends()) == 1)
        assert spec.lifecycle.ends()[0].stop_reason == "completed"
        assert any("settlement notice was not delivered" in text for text in warnings.messages)
        await spec.host.aclose()

    run(main)


def test_no_notice_for_a_child_the_caller_was_told_does_not_exist(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2185 — a start refused ``DRAINING`` by a drain its own
    ``SubagentStart`` observer began leaves the parent without any notice."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        drains: list[Awaitable[None]] = []
        spec.host.subagents.subscribe(lambda event: drains.append(spec.manager.drain())
                                      if isinstance(event, SubagentStart) else None)
        with pytest.raises(SubagentError) as caught:
            await start(spec)
        assert caught.value.code == "DRAINING"
        await asyncio.gather(*drains)
        await asyncio.sleep(0.01)
        assert notices(spec.parent) == [] and spec.parent.pending == ()
        await spec.host.aclose()

    run(main)


def test_each_residency_epoch_is_one_start_end_pair(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2198 — a child and its cold resume: two starts with the child's
    id and provider, each end pairing its start's run id, both ``completed``."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first"), Reply.text("second")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(spec.lifecycle.ends()) == 1)
        await spec.manager.followup(spec.parent, started.child_id, "again")
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(spec.lifecycle.ends()) == 2)
        starts, ends = spec.lifecycle.starts(), spec.lifecycle.ends()
        assert [(s.id, s.provider) for s in starts] == [(started.child_id, "spawn")] * 2
        assert [e.run_id for e in ends] == [s.run_id for s in starts]
        assert [e.stop_reason for e in ends] == ["completed", "completed"]
        await spec.host.aclose()

    run(main)
