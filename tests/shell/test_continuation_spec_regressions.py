"""DSH ``packages/subagent/subagent/tests/continuation.spec.ts``, "continuable review
regressions" (lines 1209–1652), case by case: each test names the line of the case it ports."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _continuation_spec import (
    Spec,
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

from turnfork.core import CancelUser, InboxSplicedEvent, TextBlock, ToolCallBlock
from turnfork.shell import AbortController, Agent, Reply, Tool, ToolContext
from turnfork.shell.subagents import SubagentAbortedError, SubagentError


def _reject_children(spec: Spec) -> None:
    """DSH's ``agent/pre-step`` reject for every agent but the parent (a policy plugin): a
    hook installed on each child in its creation window."""

    def refuse(child: Agent) -> Any:
        def hook(*_: object) -> bool:
            return False
        child.pre_step_hooks.append(hook)
        return lambda: child.pre_step_hooks.remove(hook)

    spec.manager.register_setup(refuse)


def _failing_dispose(agent: Agent, message: str) -> None:
    dispose = agent.dispose

    async def failing() -> None:
        await dispose()
        raise RuntimeError(message)

    agent.dispose = failing  # type: ignore[method-assign]


def _queued_text(text: str) -> Any:
    def inserted(events: Any) -> bool:
        return any(isinstance(e, InboxSplicedEvent) and e.data.inserted
                   and any(isinstance(b, TextBlock) and b.text == text
                           for b in e.data.inserted[0].content) for e in events)
    return inserted


def test_a_parent_replaced_during_a_cold_resume_is_refused(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1210 — the parent disposed and replaced by a new agent of the
    same id while the child is being resumed: the delivery is refused ``UNAUTHORIZED`` (the
    exact live parent is checked again) and its message never reaches the child's log."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first")], parent_id="replaceable-parent")
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        in_window = asyncio.Event()

        def seen(child: Agent) -> Any:
            in_window.set()
            return lambda: None

        spec.manager.register_setup(seen)
        delivery = asyncio.ensure_future(spec.manager.followup(
            spec.parent, started.child_id, "must not cross parent replacement"))
        await in_window.wait()
        await spec.parent.dispose()
        replacement = spec.host.create_agent("replaceable-parent", provider="mock", model="mock")
        with pytest.raises(SubagentError) as caught:
            await delivery
        assert caught.value.code == "UNAUTHORIZED"
        await no_activation(spec.host, started.child_id)
        assert not has_user_text(persisted(spec.host, started.child_id),
                                 "must not cross parent replacement")
        await replacement.dispose()
        await spec.host.aclose()

    run(main)


def test_a_follow_up_the_child_refuses_to_queue_leaves_it_free_to_settle(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1256 — when the child's own queueing raises, the follow-up fails
    with that error and nothing stays accepted for it: a drain then releases the child."""

    async def main() -> None:
        entry, release = gate(Reply.text("working"))
        spec = spec_host(tmp_path, [entry])
        park(spec.parent)
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None

        def refuse(prompt: object) -> Any:
            raise RuntimeError("synthetic inbox failure")

        child.followup = refuse  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="synthetic inbox failure"):
            await spec.manager.followup(spec.parent, started.child_id, "throws")
        assert child.pending == ()
        del child.followup
        drained = spec.manager.drain()
        release.set()
        await drained
        assert spec.host.agents.get(started.child_id) is None
        await spec.host.aclose()

    run(main)


def test_the_end_reports_the_childs_own_terminal_reason(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1284 — a child that hit its token ceiling ends ``max-tokens``
    though its teardown succeeded."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.max_tokens("partial")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(spec.lifecycle.ends()) == 1)
        assert spec.lifecycle.ends()[0].stop_reason == "max-tokens"
        await spec.host.aclose()

    run(main)


def test_a_live_delivery_aborted_before_admission_is_refused(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1303 — a follow-up whose signal already aborted is refused and
    nothing is queued, so no later turn carries it."""

    async def main() -> None:
        entry, release = gate(Reply.text("working"))
        spec = spec_host(tmp_path, [entry])
        park(spec.parent)
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        controller = AbortController()
        controller.abort("caller gave up")
        with pytest.raises(SubagentAbortedError):
            await spec.manager.followup(spec.parent, started.child_id, "cancelled",
                                        signal=controller.signal)
        release.set()
        await no_activation(spec.host, started.child_id)
        assert not has_user_text(persisted(spec.host, started.child_id), "cancelled")
        await spec.host.aclose()

    run(main)


def test_each_epoch_reports_its_own_output(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1325 — the first epoch's end carries its answer (captured while
    the child was live); a resumed epoch's carries its own, not the one its log replays."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first answer"), Reply.text("second answer")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(spec.lifecycle.ends()) == 1)
        assert spec.lifecycle.ends()[0].last_assistant_message == (
            TextBlock(text="first answer"),)
        await spec.manager.followup(spec.parent, started.child_id, "again")
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(spec.lifecycle.ends()) == 2)
        assert spec.lifecycle.ends()[1].last_assistant_message == (
            TextBlock(text="second answer"),)
        await spec.host.aclose()

    run(main)


def test_the_epochs_earlier_text_survives_a_final_usage_only_message(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1346 — a tool-only step cut by max-tokens leaves an empty,
    usage-only message; the end keeps the epoch's previous content (its text and its tool call,
    not the tool result between them) and says ``max-tokens``."""

    async def main() -> None:
        spec = spec_host(tmp_path, [
            Reply.tool_call("noop", {}, call_id="t1", text="partial one"),
            Reply.max_tokens(tool_calls=[("noop", {}, "t2")], usage=(20, 5))])
        park(spec.parent)

        async def noop(args: dict[str, Any], ctx: ToolContext) -> str:
            return "noop"

        spec.host.tools.register(Tool("noop", "does nothing", {"type": "object"}, noop))
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(spec.lifecycle.ends()) == 1)
        (end,) = spec.lifecycle.ends()
        assert end.stop_reason == "max-tokens"
        assert end.last_assistant_message == (
            TextBlock(text="partial one"), ToolCallBlock(id="t1", name="noop", arguments="{}"))
        await spec.host.aclose()

    run(main)


def test_a_resumed_epoch_that_opened_no_turn_reports_no_previous_answer(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1384 — a resumed epoch whose prompt a pre-step rejection
    discarded ends ``refusal`` with no closing message (the previous epoch's answer is not
    read again)."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first answer")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(spec.lifecycle.ends()) == 1)
        _reject_children(spec)
        await spec.manager.followup(spec.parent, started.child_id, "again")
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(spec.lifecycle.ends()) == 2)
        end = spec.lifecycle.ends()[1]
        assert (end.stop_reason, end.last_assistant_message) == ("refusal", None)
        await spec.host.aclose()

    run(main)


def test_a_failed_disposal_ends_the_epoch_error(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1406 — a child whose disposal fails during a drain ends
    ``error`` (the end is known only after the disposal), and the drain fails."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("answer")])
        park(spec.parent)
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        _failing_dispose(child, "scoped cleanup failed")
        with pytest.raises(SubagentError):
            await spec.manager.drain()
        await eventually(lambda: len(spec.lifecycle.ends()) == 1)
        assert spec.lifecycle.ends()[0].stop_reason == "error"
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("failing", [("before",), ("before", "dispose")])
def test_teardown_failures_before_and_at_disposal_are_reported(
        tmp_path: Path, failing: tuple[str, ...]) -> None:
    """DSH continuation.spec.ts:1432 (a step of the teardown before the disposal fails: the
    drain fails ``ACTIVATION_TEARDOWN_FAILED``, the epoch ends ``error``) and :1455 (that and a
    failed disposal too: both reasons in the one failure; the child is released)."""

    async def main() -> None:
        entry, release = gate(Reply.text("answer"))
        spec = spec_host(tmp_path, [entry])
        park(spec.parent)
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        quiet = child.when_quiet

        async def capture_failed() -> None:
            await quiet()
            raise RuntimeError("capture failed")

        child.when_quiet = capture_failed  # type: ignore[method-assign]
        if "dispose" in failing:
            _failing_dispose(child, "scoped cleanup failed")
        drained = spec.manager.drain()
        release.set()
        with pytest.raises(SubagentError) as caught:
            await drained
        assert caught.value.code == "ACTIVATION_TEARDOWN_FAILED"
        assert "capture failed" in str(caught.value)
        assert ("scoped cleanup failed" in str(caught.value)) == ("dispose" in failing)
        assert spec.host.agents.get(started.child_id) is None
        await eventually(lambda: len(spec.lifecycle.ends()) == 1)
        assert spec.lifecycle.ends()[0].stop_reason == "error"
        await spec.host.aclose()

    run(main)


def test_a_running_turn_is_cancelled_before_the_final_flush(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1486 — a drain cancels the running turn before it flushes the
    child's log for the last time (a flush before would miss what the cancellation writes)."""

    async def main() -> None:
        entry, release = gate(Reply.text("slow"))
        spec = spec_host(tmp_path, [entry])
        park(spec.parent)
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        order: list[str] = []
        wait_durable = child.session.wait_durable

        async def flush(*args: Any) -> None:
            order.append("flush")
            await wait_durable(*args)

        child.session.wait_durable = flush  # type: ignore[method-assign]
        observe_cancel(child, lambda cause, keep: order.append("cancel"))
        drained = spec.manager.drain()
        release.set()
        await drained
        assert "cancel" in order
        assert order.index("cancel") < len(order) - 1 - order[::-1].index("flush")
        await spec.host.aclose()

    run(main)


def test_an_accepted_message_discarded_unrun_does_not_pin_the_child(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1512 — a queued follow-up that a drain's cancellation drops
    instead of running: the child still settles, and the message is not in its log."""

    async def main() -> None:
        entry, release = gate(Reply.text("working"))
        spec = spec_host(tmp_path, [entry])
        park(spec.parent)
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        await spec.manager.followup(spec.parent, started.child_id, "discarded")
        drained = spec.manager.drain()
        release.set()
        await drained
        await no_activation(spec.host, started.child_id)
        assert not has_user_text(persisted(spec.host, started.child_id), "discarded")
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("queued_before", [False, True])
def test_ids_dropped_by_a_cancel_from_the_enqueue_observer_are_released_at_once(
        tmp_path: Path, queued_before: bool) -> None:
    """DSH continuation.spec.ts:1531 (a follow-up cancelled by the child's enqueue observer,
    inside its own admission, does not pin the child: it settles without a drain, the message
    unlogged) and :1557 (an earlier queued follow-up dropped by that cancel is released at once:
    nothing is pending when the later follow-up returns)."""

    async def main() -> None:
        entry, release = gate(Reply.text("working"))
        spec = spec_host(tmp_path, [entry, Reply.text("unused")])
        park(spec.parent)
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        if queued_before:
            await spec.manager.followup(spec.parent, started.child_id, "queued")
            assert len(child.pending) == 1
        doomed = _queued_text("doomed")

        def cancel_on_doomed(events: Any) -> None:
            if doomed(events):
                child.cancel(CancelUser())

        child.session.listeners.append(cancel_on_doomed)
        await spec.manager.followup(spec.parent, started.child_id, "doomed")
        child.session.listeners.remove(cancel_on_doomed)
        assert child.pending == ()
        release.set()
        await no_activation(spec.host, started.child_id)
        events = persisted(spec.host, started.child_id)
        assert not has_user_text(events, "doomed") and not has_user_text(events, "queued")
        await spec.host.aclose()

    run(main)


def test_a_prompt_a_pre_step_rejection_discarded_ends_refusal(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1586 — a child whose first prompt a pre-step rejection
    discarded (no step ran) ends ``refusal``, so its parent never takes the delivery for
    done."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        park(spec.parent)
        _reject_children(spec)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(spec.lifecycle.ends()) == 1)
        assert spec.lifecycle.ends()[0].stop_reason == "refusal"
        await spec.host.aclose()

    run(main)


def test_the_activation_stays_while_an_accepted_message_waits(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:1607 — at every insertion into a child's inbox (the instant a
    waking send is queued but the turn not yet begun) the child is still the registered agent;
    the queued follow-up runs as a second turn of the same agent."""

    async def main() -> None:
        entry, release = gate(Reply.text("first"))
        spec = spec_host(tmp_path, [entry, Reply.text("second")])
        park(spec.parent)
        registered: list[bool] = []

        def watch(child: Agent) -> Any:
            def listener(events: Any) -> None:
                if any(isinstance(e, InboxSplicedEvent) and e.data.inserted for e in events):
                    registered.append(spec.host.agents.get(child.id) is child)
            child.session.listeners.append(listener)
            return lambda: child.session.listeners.remove(listener)

        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        watch(child)
        await eventually(lambda: spec.model.calls == 1)
        await spec.manager.followup(spec.parent, started.child_id, "queued")
        assert registered and all(registered)
        assert spec.host.agents.get(started.child_id) is child
        release.set()
        await no_activation(spec.host, started.child_id)
        assert spec.model.calls == 2
        assert has_user_text(persisted(spec.host, started.child_id), "queued")
        await spec.host.aclose()

    run(main)
