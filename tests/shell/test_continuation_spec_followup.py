"""DSH ``packages/subagent/subagent/tests/continuation.spec.ts``, "SubagentRuntime.followup
residency routing" (lines 486–693) and "continuable child ownership" (695–731), case by case:
each test names the line of the case it ports."""

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
    park,
    persisted,
    spec_host,
    start,
    user_texts,
)
from _shell_helpers import of_type, run

from turnfork.core import StartRequest, SubagentDescriptorEvent, TextBlock
from turnfork.shell import Agent, Reply, SpawnProvider
from turnfork.shell.subagents import ContinuableSeed, SubagentAbortedError, SubagentError


def _followup(spec: Spec, child_id: str, text: str, parent: Agent | None = None,
              **options: Any) -> Any:
    return spec.manager.followup(parent or spec.parent, child_id, text, **options)


def test_follow_ups_of_a_running_child_queue_in_one_fifo(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:487 — two follow-ups sent while the first turn runs get two
    ids, reach the same agent (no second one is made), and run as its next turns in order."""

    async def main() -> None:
        entry, release = gate(Reply.text("first"))
        spec = spec_host(tmp_path, [entry, Reply.text("second"), Reply.text("third")])
        park(spec.parent)
        started = await start(spec)
        await eventually(lambda: spec.model.calls == 1)
        child = spec.host.agents.get(started.child_id)
        assert child is not None and child.running
        first = await _followup(spec, started.child_id, "first follow-up")
        second = await _followup(spec, started.child_id, "second follow-up")
        assert first != second and spec.host.agents.get(started.child_id) is child
        release.set()
        await no_activation(spec.host, started.child_id)
        assert user_texts(persisted(spec.host, started.child_id)) == [
            "child task", "first follow-up", "second follow-up"]
        await spec.host.aclose()

    run(main)


def test_a_settled_child_is_cold_resumed_into_a_new_activation(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:513 — a follow-up to a settled child returns an id, the child
    resumes from its log and runs it; the log still holds one descriptor."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first"), Reply.text("after resume")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        message_id = await _followup(spec, started.child_id, "continue please")
        assert isinstance(message_id, str)
        await no_activation(spec.host, started.child_id)
        events = persisted(spec.host, started.child_id)
        assert user_texts(events) == ["child task", "continue please"]
        assert len(of_type(events, SubagentDescriptorEvent)) == 1
        await spec.host.aclose()

    run(main)


def test_a_child_is_resumed_after_its_provider_unregistered(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:528 — a child of a provider that has since been unregistered
    resumes all the same; both epochs are observed under that provider, each end pairing its
    start's run id."""

    class Retired(SpawnProvider):
        async def start(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("one-shot start is not used")

        def prepare_continuable(self, request: Any) -> ContinuableSeed:
            return ContinuableSeed()

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first"), Reply.text("after resume")])
        park(spec.parent)
        registration = spec.host.subagents.register_provider(Retired("retired"))
        started = await start(spec, provider="retired")
        await no_activation(spec.host, started.child_id)
        registration.unregister()
        assert spec.host.subagents.get_provider("retired") is None
        assert isinstance(await _followup(spec, started.child_id, "continue without provider"),
                          str)
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(spec.lifecycle.ends()) == 2)
        starts, ends = spec.lifecycle.starts(), spec.lifecycle.ends()
        assert [s.provider for s in starts] == ["retired", "retired"]
        assert [e.run_id for e in ends] == [s.run_id for s in starts]
        assert user_texts(persisted(spec.host, started.child_id)) == [
            "child task", "continue without provider"]
        await spec.host.aclose()

    run(main)


def test_a_waiting_child_is_woken_not_resumed(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:560 — a child idle while its own continuable child runs stays
    resident (waiting); a follow-up wakes that same agent; once the grandchild settles, the
    child's log holds the follow-up and then the grandchild's settlement notice."""

    async def main() -> None:
        held, release = gate(Reply.text("grandchild"))
        spec = spec_host(tmp_path, [Reply.text("child done"), held, Reply.text("woken"),
                                    Reply.text("noted")])
        park(spec.parent)
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        grandchild = await start(spec, child)
        await eventually(lambda: spec.model.calls >= 2)
        await eventually(lambda: not child.running)
        await asyncio.sleep(0.01)
        assert spec.host.agents.get(started.child_id) is child
        await _followup(spec, started.child_id, "while waiting")
        assert spec.host.agents.get(started.child_id) is child
        release.set()
        await no_activation(spec.host, grandchild.child_id)
        await no_activation(spec.host, started.child_id)
        texts = user_texts(persisted(spec.host, started.child_id))
        assert texts[:2] == ["child task", "while waiting"]
        assert "finished and will do no further work" in "\n".join(texts[2:])
        await spec.host.aclose()

    run(main)


def test_a_parent_that_is_not_the_durable_direct_parent_is_refused(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:599 — another agent cannot continue the child: ``… belongs to
    another parent session``."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        stranger = spec.host.create_agent("stranger", provider="mock", model="mock")
        with pytest.raises(SubagentError, match="belongs to another parent session"):
            await _followup(spec, started.child_id, "mine now", stranger)
        await spec.host.aclose()

    run(main)


def test_a_one_shot_child_has_no_supported_continuation_state(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:609 — a one-shot child has a durable identity but cannot be
    continued: ``no supported continuation state``."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("one shot")])
        run_ = await spec.host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="one-shot work"),),
                                  label="one-shot work"), parent=spec.parent)
        await run_.result
        await run_.dispose()
        with pytest.raises(SubagentError, match="no supported continuation state"):
            await _followup(spec, run_.id, "continue")
        await spec.host.aclose()

    run(main)


def test_an_unknown_child_id_is_unavailable(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:627 — an id no store knows: ``NOT_RESUMABLE``."""

    async def main() -> None:
        spec = spec_host(tmp_path)
        with pytest.raises(SubagentError) as caught:
            await _followup(spec, "missing", "hello")
        assert caught.value.code == "NOT_RESUMABLE"
        await spec.host.aclose()

    run(main)


def test_a_cancellation_reaches_the_inspection_of_a_cold_child(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:633 — a follow-up whose signal aborts while the store is still
    reading the cold child cancels that read and fails (ours: ``SubagentAbortedError``, as
    every abort before acceptance); nothing is delivered."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        store = spec.host.sessions
        entered = asyncio.Event()
        cancelled: list[bool] = []

        async def slow_inspect(session_id: str) -> Any:
            entered.set()
            try:
                await asyncio.get_running_loop().create_future()
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        store.inspect = slow_inspect  # type: ignore[attr-defined]
        from turnfork.shell import AbortController
        controller = AbortController()
        delivery = asyncio.ensure_future(_followup(spec, started.child_id, "cancel me",
                                                   signal=controller.signal))
        await entered.wait()
        controller.abort("cold inspection cancelled")
        with pytest.raises(SubagentAbortedError):
            await delivery
        assert cancelled == [True]
        del store.inspect  # type: ignore[attr-defined]
        assert not has_user_text(persisted(spec.host, started.child_id), "cancel me")
        await spec.host.aclose()

    run(main)


def test_a_subagent_error_raised_while_materializing_is_kept(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:663 — a ``SubagentError`` the resume's materialization raises
    reaches the caller as it is (not rewrapped)."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        from turnfork.core import StartError
        failure = SubagentError(StartError(code="UNAUTHORIZED", message="materialization denied"))

        def denied(*args: object, **kwargs: object) -> Agent:
            raise failure

        spec.host.build_agent = denied  # type: ignore[method-assign]
        with pytest.raises(SubagentError) as caught:
            await _followup(spec, started.child_id, "continue")
        assert caught.value is failure
        del spec.host.build_agent  # type: ignore[attr-defined]
        assert spec.host.sessions.get(started.child_id) is None  # released again
        await spec.host.aclose()

    run(main)


def test_a_delivery_that_lost_the_race_with_disposal_resumes_the_child(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:674 — a follow-up sent in the very pass the settlement watcher
    begins the disposal waits for it and cold-resumes the child, which runs it."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("first"), Reply.text("after the race")])
        park(spec.parent)
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None

        async def raced() -> str:
            await child.when_idle()
            return str(await _followup(spec, started.child_id, "raced"))

        assert isinstance(await raced(), str)
        await no_activation(spec.host, started.child_id)
        assert has_user_text(persisted(spec.host, started.child_id), "raced")
        await spec.host.aclose()

    run(main)


def test_a_parent_activation_waits_until_its_child_is_disposed(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:696 — a child idle while its continuable grandchild runs keeps
    its agent (waiting); the grandchild is released first, then the child."""

    async def main() -> None:
        held, release = gate(Reply.text("grandchild"))
        spec = spec_host(tmp_path, [Reply.text("child done"), held, Reply.text("noted")])
        park(spec.parent)
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        grandchild = await start(spec, child)
        await eventually(lambda: not child.running and spec.model.calls >= 2)
        await asyncio.sleep(0.01)
        assert spec.host.agents.get(started.child_id) is child
        assert spec.host.agents.get(grandchild.child_id) is not None
        order: list[str] = []
        spec.host.subagents.subscribe(lambda event: order.append(event.id)
                                      if type(event).__name__ == "SubagentEnd" else None)
        release.set()
        await no_activation(spec.host, grandchild.child_id)
        await no_activation(spec.host, started.child_id)
        await eventually(lambda: len(order) == 2)
        assert order == [grandchild.child_id, started.child_id]
        await spec.host.aclose()

    run(main)


def test_a_top_level_parent_is_not_part_of_the_waiting_graph(tmp_path: Path) -> None:
    """DSH continuation.spec.ts:724 — a root parent stays registered after its child settles
    (it is not an Activation the child's settlement could release)."""

    async def main() -> None:
        spec = spec_host(tmp_path, [Reply.text("done")])
        park(spec.parent)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        assert spec.host.agents.get(spec.parent.id) is spec.parent
        assert spec.manager.activations() == ()
        await spec.host.aclose()

    run(main)
