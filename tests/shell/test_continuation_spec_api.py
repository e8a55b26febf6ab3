"""DSH ``packages/subagent/subagent/tests/continuation.spec.ts``, "continuable public API"
(2225–2294), "continuable errors" (2296–2469) and "SubagentRuntime.interrupt" (2471–2689),
case by case: each test names the line of the case it ports."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _continuation_helpers import turn_reasons
from _continuation_spec import (
    eventually,
    gate,
    has_user_text,
    no_activation,
    observe_cancel,
    park,
    persisted,
    spec_host,
    start,
    user_texts,
)
from _shell_helpers import run

from turnfork.core import AgentOptions, CancelParent, CancelUser, StartRequest, TextBlock
from turnfork.shell import AbortController, Agent, Reply
from turnfork.shell.subagents import (
    AncestorAuthority,
    SubagentAbortedError,
    SubagentError,
    UserAuthority,
)


def _cancels(agent: Agent) -> list[tuple[object, bool]]:
    calls: list[tuple[object, bool]] = []
    observe_cancel(agent, lambda cause, keep: calls.append((cause, keep)), every=True)
    return calls


def test_the_runtime_offers_no_authority_residency_steering_or_report_operation(
        tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2226 — neither the runtime nor its continuation manager offers
    an activation-state query, cancel, kill, report, resume, steer or user-authority
    operation, and the continuation seam registers no ``report`` or ``steer_subagent`` tool."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        assert spec.manager is spec.host.subagents.continuation
        for absent in ("activation_state", "cancel", "kill", "report", "resume", "steer",
                       "steer_continuable", "user_authority"):
            assert not hasattr(spec.host.subagents, absent), absent
            assert not hasattr(spec.manager, absent), absent
        assert "report" not in spec.host.tools and "steer_subagent" not in spec.host.tools
        await spec.host.aclose()

    run(main)


def test_a_one_shot_run_has_no_steering(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2247 — a one-shot run offers no ``steer``."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("one shot")])
        run_ = await spec.host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="one-shot work"),)),
            parent=spec.parent)
        assert not hasattr(run_, "steer")
        await run_.result
        await run_.dispose()
        await spec.host.aclose()

    run(main)


def test_a_resume_aborted_before_acceptance_delivers_nothing(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2260 — a follow-up to a settled child whose signal already
    aborted fails, and the child's log never holds its message."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        controller = AbortController()
        controller.abort("caller gave up")
        with pytest.raises(SubagentAbortedError):
            await spec.manager.followup(spec.parent, started.child_id, "aborted",
                                        signal=controller.signal)
        assert not has_user_text(persisted(spec.host, started.child_id), "aborted")
        assert spec.host.agents.get(started.child_id) is None
        await spec.host.aclose()

    run(main)


def test_an_abort_after_acceptance_does_not_cancel_the_turn(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2274 — once the follow-up is accepted the caller's signal no
    longer matters: aborting it then leaves the queued turn to run."""

    async def main() -> None:
        entry, release = gate(Reply.text("first"))
        spec = spec_host(tmp_path, [entry, Reply.text("second")])
        park(spec.parent)
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        controller = AbortController()
        await spec.manager.followup(spec.parent, started.child_id, "survives",
                                    signal=controller.signal)
        controller.abort("caller gave up")
        release.set()
        await no_activation(spec.host, started.child_id)
        assert has_user_text(persisted(spec.host, started.child_id), "survives")
        await spec.host.aclose()

    run(main)


def test_a_live_id_the_manager_does_not_manage_is_not_adopted(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2297 — an agent holding the child's id that the manager no
    longer manages (its Activation dropped, the agent left running): a follow-up is refused
    with a ``SubagentError`` (``NOT_RESUMABLE``, not an ``AgentExistsError``) and the agent is
    left as it is."""

    async def main() -> None:
        entry, release = gate(Reply.text("working"))
        spec = spec_host(tmp_path, [entry])
        park(spec.parent)
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        activation = spec.manager._activations.pop(started.child_id)
        with pytest.raises(SubagentError) as caught:
            await spec.manager.followup(spec.parent, started.child_id, "hello")
        assert caught.value.code == "NOT_RESUMABLE"
        assert spec.host.agents.get(started.child_id) is child
        spec.manager._activations[started.child_id] = activation
        release.set()
        await no_activation(spec.host, started.child_id)
        await spec.host.aclose()

    run(main)


def test_a_stale_parent_object_is_refused(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2320 — a parent object with the parent's id that is not the
    registry's live entry cannot deliver: ``UNAUTHORIZED``."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first")])
        park(spec.parent)
        started = await start(spec)
        stale = spec.host.build_agent(spec.parent.session, provider="mock", model="mock")
        with pytest.raises(SubagentError) as caught:
            await spec.manager.followup(stale, started.child_id, "stale")
        assert caught.value.code == "UNAUTHORIZED"
        await no_activation(spec.host, started.child_id)
        await spec.host.aclose()

    run(main)


def test_no_child_is_established_under_a_parent_being_disposed(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2336 — once a drain began a continuable child's teardown, that
    child cannot start one of its own: ``DRAINING``."""

    async def main() -> None:
        entry, release = gate(Reply.text("child"))
        spec = spec_host(tmp_path, [entry])
        park(spec.parent)
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        drained = spec.manager.drain()
        with pytest.raises(SubagentError) as caught:
            await start(spec, child)
        assert caught.value.code == "DRAINING"
        release.set()
        await drained
        await spec.host.aclose()

    run(main)


def test_a_failing_branch_is_reported_after_every_branch_settled(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2355 — a grandchild whose disposal fails: the drain fails
    ``ACTIVATION_TEARDOWN_FAILED`` only after the rest was released; sessions stay."""

    async def main() -> None:
        held, release = gate(Reply.text("grandchild"))
        spec = spec_host(tmp_path, [Reply.text("child done"), held])
        park(spec.parent)
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        grandchild = await start(spec, child)
        grand_agent = spec.host.agents.get(grandchild.child_id)
        assert grand_agent is not None
        dispose = grand_agent.dispose

        async def failing() -> None:
            await dispose()
            raise RuntimeError("grandchild reap failed")

        grand_agent.dispose = failing  # type: ignore[method-assign]
        drained = spec.manager.drain()
        release.set()
        with pytest.raises(SubagentError) as caught:
            await drained
        assert caught.value.code == "ACTIVATION_TEARDOWN_FAILED"
        assert "grandchild reap failed" in str(caught.value)
        assert spec.host.agents.get(started.child_id) is None
        assert spec.host.sessions.exists(started.child_id)
        await spec.host.aclose()

    run(main)


def test_a_child_of_a_closing_parent_activation_is_rolled_back(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2391 — a start under a continuable child whose disposal has
    begun is refused ``ACTIVATION_CLOSING`` and leaves no new agent."""

    async def main() -> None:
        entry, release = gate(Reply.text("parent child"))
        spec = spec_host(tmp_path, [entry, Reply.text("unused")])
        park(spec.parent)
        outer = await start(spec)
        child = spec.host.agents.get(outer.child_id)
        assert child is not None
        before = {agent.id for agent in spec.host.agents.list()}
        (activation,) = spec.manager.activations()
        begun: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        activation.disposal = begun
        with pytest.raises(SubagentError) as caught:
            await start(spec, child)
        assert caught.value.code == "ACTIVATION_CLOSING"
        assert {agent.id for agent in spec.host.agents.list()} == before
        activation.disposal = None  # the pretence over (its watcher saw it and stopped)
        release.set()
        await activation.dispose()
        await no_activation(spec.host, outer.child_id)
        await spec.host.aclose()

    run(main)


def test_a_cold_resume_runs_on_the_descriptors_route(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2421 — a child started on its own model route records it in
    its descriptor and runs on it again when resumed (not on the parent's)."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first"), Reply.text("resumed")])
        park(spec.parent)
        started = await start(spec, prompt="routed work",
                              agent_options=AgentOptions(provider="mock", model="child-model"))
        await no_activation(spec.host, started.child_id)
        await spec.manager.followup(spec.parent, started.child_id, "again")
        resumed = spec.host.agents.get(started.child_id)
        assert resumed is not None and resumed.model == "child-model"
        await no_activation(spec.host, started.child_id)
        assert spec.model.requests[-1].config.model == "child-model"
        await spec.host.aclose()

    run(main)


def test_closing_the_runtime_drains_its_resident_children(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2444 — closing the subagent runtime (DSH: unloading the
    manager's plugin) drains the resident children: none outlives it."""

    async def main() -> None:
        entry, release = gate(Reply.text("child"))
        spec = spec_host(tmp_path, [entry])
        park(spec.parent)
        started = await start(spec)
        closing = asyncio.ensure_future(spec.host.subagents.aclose())
        release.set()
        await closing
        assert spec.host.agents.get(started.child_id) is None
        await spec.host.aclose()

    run(main)


def test_an_interrupt_aborts_the_turn_parks_the_queue_and_a_send_wakes_it(
        tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2472 — a human interrupt cancels the running turn once (cause
    ``user``, queue kept); the two queued follow-ups stay parked (no model call, the same agent
    idle and resident) until a waking follow-up, after which all three run in order; the turns
    end aborted, completed, completed, completed."""

    async def main() -> None:
        entry, release = gate(Reply.text("first"))
        spec = spec_host(tmp_path, [entry, Reply.text("second"), Reply.text("third"),
                                    Reply.text("fourth")])
        park(spec.parent)
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        await spec.manager.followup(spec.parent, started.child_id, "parked B")
        await spec.manager.followup(spec.parent, started.child_id, "parked C")
        calls = _cancels(child)
        spec.manager.interrupt(started.child_id, UserAuthority(spec.parent.id))
        assert calls == [(CancelUser(), True)]
        release.set()
        await child.when_idle()
        await asyncio.sleep(0.01)
        assert spec.model.calls == 1 and len(child.pending) == 2 and not child.running
        assert spec.host.agents.get(started.child_id) is child
        await spec.manager.followup(spec.parent, started.child_id, "waking D")
        await no_activation(spec.host, started.child_id)
        events = persisted(spec.host, started.child_id)
        assert user_texts(events) == ["child task", "parked B", "parked C", "waking D"]
        assert turn_reasons(events) == ["aborted", "completed", "completed", "completed"]
        await spec.host.aclose()

    run(main)


def test_an_interrupt_leaves_the_targets_resident_descendant_running(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2514 — interrupting a child stops only its turn: it stays
    resident (waiting on its own child), whose turn is never signalled and completes."""

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
        child_calls, grand_calls = _cancels(child), _cancels(grand_agent)
        spec.manager.interrupt(started.child_id, UserAuthority(spec.parent.id))
        assert len(child_calls) == 1
        release_child.set()
        await child.when_idle()
        assert grand_calls == []
        assert spec.host.agents.get(started.child_id) is child
        assert spec.host.agents.get(grandchild.child_id) is grand_agent
        release_grand.set()
        await no_activation(spec.host, grandchild.child_id)
        await no_activation(spec.host, started.child_id)
        assert turn_reasons(persisted(spec.host, grandchild.child_id)) == ["completed"]
        await spec.host.aclose()

    run(main)


def test_a_human_interrupt_must_address_the_durable_parent(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2552 — a human address naming another session is refused
    (``belongs to another parent session``) without touching the child; the durable parent's
    address cancels it (cause ``user``, queue kept)."""

    async def main() -> None:
        entry, release = gate(Reply.text("working"))
        spec = spec_host(tmp_path, [entry])
        park(spec.parent)
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        calls = _cancels(child)
        with pytest.raises(SubagentError, match="belongs to another parent session"):
            spec.manager.interrupt(started.child_id, UserAuthority("stranger"))
        assert calls == []
        spec.manager.interrupt(started.child_id, UserAuthority(spec.parent.id))
        assert calls == [(CancelUser(), True)]
        release.set()
        await no_activation(spec.host, started.child_id)
        await spec.host.aclose()

    run(main)


def test_a_deep_or_direct_live_ancestor_interrupts_with_the_parent_cause(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2573 — the root interrupts its grandchild, and its child, both
    with cause ``parent`` and the queue kept."""

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
        child_calls, grand_calls = _cancels(child), _cancels(grand_agent)
        spec.manager.interrupt(grandchild.child_id, AncestorAuthority(spec.parent))
        assert grand_calls == [(CancelParent(), True)]
        spec.manager.interrupt(started.child_id, AncestorAuthority(spec.parent))
        assert child_calls == [(CancelParent(), True)]
        release_child.set()
        release_grand.set()
        await no_activation(spec.host, grandchild.child_id)
        await no_activation(spec.host, started.child_id)
        await spec.host.aclose()

    run(main)


def test_self_sibling_stale_and_unrelated_callers_are_refused(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2603 — the target itself (``cannot interrupt itself``), a
    sibling and a stranger (``not a live descendant``), a stale object of the parent (``exact
    live ancestor``, even for an absent id): all refused, the target never cancelled."""

    async def main() -> None:
        a_entry, release_a = gate(Reply.text("a"))
        b_entry, release_b = gate(Reply.text("b"))
        spec = spec_host(tmp_path, [a_entry, b_entry])
        park(spec.parent)
        target_start = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        sibling_start = await start(spec)
        await eventually(lambda: spec.model.calls == 2)
        target = spec.host.agents.get(target_start.child_id)
        sibling = spec.host.agents.get(sibling_start.child_id)
        assert target is not None and sibling is not None
        stranger = spec.host.create_agent("stranger", provider="mock", model="mock")
        stale = spec.host.build_agent(spec.parent.session, provider="mock", model="mock")
        calls = _cancels(target)
        cases: list[tuple[str, Agent, str]] = [
            (target_start.child_id, target, "cannot interrupt itself"),
            (target_start.child_id, sibling, "not a live descendant"),
            (target_start.child_id, stranger, "not a live descendant"),
            (target_start.child_id, stale, "exact live ancestor"),
            ("missing", stale, "exact live ancestor")]
        for target_id, caller, text in cases:
            with pytest.raises(SubagentError, match=text):
                spec.manager.interrupt(target_id, AncestorAuthority(caller))
        assert calls == []
        release_a.set()
        release_b.set()
        await no_activation(spec.host, target_start.child_id)
        await no_activation(spec.host, sibling_start.child_id)
        await spec.host.aclose()

    run(main)


def test_absent_and_one_shot_ids_are_accepted_no_ops(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2640 — interrupting an unknown id, by either authority, is an
    accepted no-op; so is a one-shot child's id, whose agent is never cancelled."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("one shot")])
        spec.manager.interrupt("missing", UserAuthority(spec.parent.id))
        spec.manager.interrupt("missing", AncestorAuthority(spec.parent))
        run_ = await spec.host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="one-shot work"),)),
            parent=spec.parent)
        one_shot = run_.local_agent
        assert one_shot is not None
        calls = _cancels(one_shot)
        spec.manager.interrupt(run_.id, UserAuthority(spec.parent.id))
        spec.manager.interrupt(run_.id, AncestorAuthority(spec.parent))
        assert calls == []
        await run_.result
        await run_.dispose()
        await spec.host.aclose()

    run(main)


def test_an_interrupt_after_natural_completion_is_accepted(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2660 — a child that settled may be interrupted, by either
    authority, without an error and without being resumed."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("done")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        spec.manager.interrupt(started.child_id, UserAuthority(spec.parent.id))
        spec.manager.interrupt(started.child_id, AncestorAuthority(spec.parent))
        assert spec.host.agents.get(started.child_id) is None
        await spec.host.aclose()

    run(main)


def test_an_interrupt_that_lost_the_race_with_disposal_signals_nothing(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:2668 — a scoped drain cancels the child at once (one cancel
    before it returns); an interrupt after that cutoff is an accepted no-op: no second
    cancel."""

    async def main() -> None:
        entry, release = gate(Reply.text("working"))
        spec = spec_host(tmp_path, [entry])
        park(spec.parent)
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        calls = _cancels(child)
        drained = spec.manager.drain_descendants([spec.parent])
        assert len(calls) == 1
        spec.manager.interrupt(started.child_id, UserAuthority(spec.parent.id))
        assert len(calls) == 1
        release.set()
        await drained
        await spec.host.aclose()

    run(main)

