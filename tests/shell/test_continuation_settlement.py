"""The parent is told when a continuable child's epoch settles (DSH continuation.spec.ts,
"continuable settlement delivery" and "continuable lifecycle observation"): the notice's texts
and source by stop reason, a turn for an idle parent, the next step of a busy one, no wake for
a parent being torn down."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from _continuation_helpers import (
    continuable_host,
    eventually,
    finish,
    gated,
    manager,
    settle,
    splices,
    start,
    turn_reasons,
    user_texts,
)
from _shell_helpers import of_type, run

from turnfork.core import TextBlock, UserMessageEvent
from turnfork.shell import Agent, Reply


def _notices(parent: Agent) -> list[UserMessageEvent]:
    return [e for e in of_type(parent.session.events, UserMessageEvent)
            if e.data.source.kind == "subagent-settled"]


def test_an_idle_parent_gets_one_turn_with_the_notice(tmp_path: Path) -> None:
    """Ensures that a child that finished tells its idle parent, unasked, in one ordinary
    turn: the summary, ``Its closing message:`` and the answer, from the child, with the
    summary line as the source's summary (DSH "tells the parent what the child finished
    with", "gives an idle parent one ordinary turn on the notice")."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        model.add(Reply.text("the answer"))
        model.add(Reply.text("SUBAGENT_SETTLED_NOTED"))
        child_id = await start(host, parent)
        await settle(lifecycle, child_id)
        await eventually(lambda: len(turn_reasons(parent.session.events)) == 1)
        await parent.when_idle()
        (notice,) = _notices(parent)
        summary = (f"Background subagent {child_id} finished and will do no further work "
                   "unless you send it more.")
        assert user_texts([notice]) == [f"{summary}\nIts closing message:\nthe answer"]
        assert notice.data.source.items == (
            ("kind", "subagent-settled"), ("form", "notice"), ("summary", summary),
            ("senderSessionId", child_id))
        assert turn_reasons(parent.session.events) == ["completed"]
        await finish(host, parent)

    run(main)


def _blocking_setup(turns: set[int]) -> Callable[[Agent], Callable[[], None]]:
    """A continuable setup whose pre-step hook refuses the child's steps in ``turns``."""

    def setup(agent: Agent) -> Callable[[], None]:
        def hook(_: Agent, turn: int, step: int) -> bool:
            return turn not in turns

        agent.pre_step_hooks.append(hook)
        return lambda: agent.pre_step_hooks.remove(hook)

    return setup


@pytest.mark.parametrize(("script", "refused", "expected"), [
    ("max-tokens", set(), "ran out of room before it finished.\nIts closing message:\nhalf an ans"),
    ("refusal", {1}, "declined the task.\nIt left no closing message."),
    ("error", set(), "failed before it finished.\nIt left no closing message."),
])
def test_the_notice_says_how_the_epoch_ended(tmp_path: Path, script: str, refused: set[int],
                                            expected: str) -> None:
    """Ensures the summary by stop reason: max-tokens with its partial answer, a step a hook
    refused (refusal, no closing message), a model failure (DSH "delivers the terminal reason
    when the child never had a chance to report", "tells the parent a policy-rejected
    delivery was declined, not finished")."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        remove = manager(host).register_setup(_blocking_setup(refused))
        child_reply = {"max-tokens": Reply.max_tokens("half an ans"),
                       "refusal": Reply.text("never asked"),
                       "error": Reply.error("OVERLOADED", "model failed")}[script]
        if script != "refusal":
            model.add(child_reply)
        model.add(Reply.text("noted"))
        child_id = await start(host, parent)
        end = await settle(lifecycle, child_id)
        await eventually(lambda: bool(_notices(parent)))
        await parent.when_idle()
        assert end.stop_reason == script
        (notice,) = _notices(parent)
        assert user_texts([notice]) == [f"Background subagent {child_id} {expected}"]
        remove()
        await finish(host, parent)

    run(main)


def test_a_failed_later_turn_reports_the_epochs_last_answer(tmp_path: Path) -> None:
    """Ensures, as DSH's subagent-continuable scenario pins, that an epoch whose third turn
    failed reports ``failed`` with the last non-empty answer of the epoch (SECOND_OK) as its
    closing message."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        gate = asyncio.Event()
        model.add(gated(Reply.text("CHILD_OK"), gate))
        model.add(Reply.text("SECOND_OK"))
        model.add(Reply.error("UNKNOWN", "snapshot disk full"))
        model.add(Reply.text("SUBAGENT_SETTLED_NOTED"))
        child_id = await start(host, parent)
        await manager(host).followup(parent, child_id, "Now reply with exactly SECOND_OK.")
        await manager(host).followup(parent, child_id, "Now reply with exactly THIRD_OK.")
        gate.set()
        end = await settle(lifecycle, child_id)
        await eventually(lambda: bool(_notices(parent)))
        await parent.when_idle()
        assert end.stop_reason == "error"
        assert end.last_assistant_message == (TextBlock(text="SECOND_OK"),)
        assert user_texts(_notices(parent)) == [
            f"Background subagent {child_id} failed before it finished.\nIts closing message:"
            "\nSECOND_OK"]
        await finish(host, parent)

    run(main)


def test_a_busy_parent_reads_the_notice_at_its_next_step(tmp_path: Path) -> None:
    """Ensures that a notice reaching a parent in the middle of a turn is steered into that
    turn's next step (``next-step``), not a turn of its own (DSH "batches simultaneous notices
    into one step of a busy parent")."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        gate = asyncio.Event()
        model.add(Reply.text("child answer"))
        model.add(Reply.text("noted"))  # the idle parent's turn on the first notice
        child_id = await start(host, parent)
        await settle(lifecycle, child_id)
        await eventually(lambda: model.calls == 2)
        await parent.when_idle()
        model.add(gated(Reply.text("busy"), gate))
        parent.followup("a long parent task")
        await eventually(lambda: parent.running and model.calls == 3)
        model.add(Reply.text("second child"))
        second = await start(host, parent, "second task")
        await settle(lifecycle, second)
        model.add(Reply.text("read both"))
        gate.set()
        await parent.when_idle()
        targets = [(s.target, bool(s.inserted)) for s in splices(parent.session.events)
                   if s.inserted and s.inserted[0].source.kind == "subagent-settled"]
        assert targets == [("next-turn", True), ("next-step", True)]
        assert turn_reasons(parent.session.events) == ["completed", "completed"]
        await finish(host, parent)

    run(main)


def test_a_drained_child_is_stopped_without_waking_its_parent(tmp_path: Path) -> None:
    """Ensures that a child disposed by the host's drain reports ``stopped`` to its parent
    without opening a parent turn, and that the drain refuses every later start (DSH "does not
    wake a parent whose own teardown already began", "rejects new materialization and delivery
    once draining begins")."""

    async def main() -> None:
        host, parent, model, lifecycle = continuable_host(tmp_path)
        model.add(Reply.hang("working"))
        child_id = await start(host, parent)
        await eventually(lambda: model.calls == 1)
        await asyncio.sleep(0.01)  # the whole text streamed before the hang
        await manager(host).drain()
        end = lifecycle.ends(child_id)[0]
        assert end.stop_reason == "aborted"
        (injected,) = [s for s in splices(parent.session.events) if s.inserted]
        assert injected.target == "next-step"  # injected: recorded, never woken for
        assert ["\n".join(b.text for b in injected.inserted[0].content  # type: ignore[union-attr]
                          )] == [f"Background subagent {child_id} was stopped before it "
                                 "finished.\nIts closing message:\nworking"]
        assert turn_reasons(parent.session.events) == [] and not parent.running
        with pytest.raises(Exception, match="continuable subagents are draining; the operation "
                                            "was not admitted"):
            await start(host, parent)
        await finish(host, parent)

    run(main)
