"""Cancellation and ownership: aborts before and after publication, dispose, independence."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from _shell_helpers import of_type, run, types, wait_for
from _subagent_helpers import (
    Recorder,
    assert_all_balanced,
    finish,
    request,
    subagent_host,
    texts,
    turn_ends,
)

from turnfork.core import (
    CancelDisposed,
    CancelParent,
    Event,
    SessionHeader,
    TurnAborted,
    TurnCompleted,
    TurnStartEvent,
)
from turnfork.shell import (
    AbortController,
    Agent,
    AgentLoopError,
    Host,
    JsonlSessionStore,
    Reply,
    SubagentRun,
)
from turnfork.shell.subagents import SubagentAbortedError, SubagentEnd


def _nothing_left(host: Host, parent: Agent, root: Path | None = None) -> None:
    assert host.agents.list() == (parent,)
    assert host.sessions.list() == (parent.id,)
    assert host.subagents.runs() == ()
    if root is not None:
        files = sorted(p.parent.name for p in root.rglob("session.jsonl"))
        assert files == [parent.id]


async def _until_streaming(run_: SubagentRun, chunks: int = 1) -> None:
    await wait_for(lambda: types(run_.own_events()).count("assistant/chunk") >= chunks)


def test_a_signal_aborted_before_start_creates_nothing() -> None:
    """start() with an aborted signal fails at once; no session, agent or model call."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([Reply.text("never")])
        controller = AbortController()
        controller.abort("user left")
        with pytest.raises(SubagentAbortedError) as aborted:
            await host.subagents.start("spawn", request("x"), parent=parent,
                                       signal=controller.signal)
        assert aborted.value.error.code == "ABORTED"
        _nothing_left(host, parent)
        assert model.calls == 0 and recorder.events == []
        await finish(parent, recorder)

    run(main)


def _persisting_parent(tmp_path: Path) -> tuple[Host, Agent, Recorder]:
    """A JSONL-backed host whose parent has a completed turn and an approval service, so an
    unpublished fork child has already written its seed and policy to disk."""
    host, parent, _, recorder = subagent_host(
        [Reply.text("one"), Reply.text("never")], store=JsonlSessionStore(tmp_path),
        approval=True, cwd="/work/project")
    return host, parent, recorder


def _child_file_exists(host: Host, parent: Agent) -> bool:
    store = host.sessions
    assert isinstance(store, JsonlSessionStore)
    children = [sid for sid in store.list() if sid != parent.id]
    if not children:
        return False
    session = store.get(children[0])
    assert session is not None
    return store.path_for(session.header).exists()


def test_abort_during_setup_leaves_nothing_registered_or_persisted(tmp_path: Path) -> None:
    """Aborted inside the unpublished window: start() fails, the child's file is deleted."""

    async def main() -> None:
        host, parent, recorder = _persisting_parent(tmp_path)
        parent.followup("one")
        await parent.when_idle()
        controller = AbortController()
        task = asyncio.create_task(host.subagents.start(
            "fork", request("x"), parent=parent, signal=controller.signal))
        await wait_for(lambda: _child_file_exists(host, parent))
        assert not task.done() and len(host.agents) == 1
        controller.abort("stop")
        with pytest.raises(SubagentAbortedError):
            await task
        _nothing_left(host, parent, tmp_path)
        assert recorder.events == []
        await parent.dispose()

    run(main)


def test_cancelling_the_task_awaiting_start_acts_like_an_abort(tmp_path: Path) -> None:
    """Cancelled inside the unpublished window: CancelledError, and nothing is left."""

    async def main() -> None:
        host, parent, recorder = _persisting_parent(tmp_path)
        parent.followup("one")
        await parent.when_idle()
        task = asyncio.create_task(host.subagents.start("fork", request("x"), parent=parent))
        await wait_for(lambda: _child_file_exists(host, parent))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        _nothing_left(host, parent, tmp_path)
        assert recorder.events == []
        await parent.dispose()

    run(main)


def test_abort_after_publication_ends_the_childs_turn_with_cause_parent() -> None:
    """The running child turn ends aborted {parent}; the result and subagent/end say aborted."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.hang("partial")])
        controller = AbortController()
        spawned = await host.subagents.start("spawn", request("x"), parent=parent,
                                             signal=controller.signal)
        await _until_streaming(spawned, 3)  # block-start, "part", "ial"
        controller.abort("parent cancelled")
        result = await spawned.result
        assert turn_ends(spawned.own_events()) == [TurnAborted(reason=CancelParent())]
        assert result.stop_reason == "aborted" and texts(result.output) == "partial"
        end = recorder.events[-1]
        assert isinstance(end, SubagentEnd) and end.stop_reason == "aborted"
        assert spawned.cancelled
        await spawned.dispose()
        _nothing_left(host, parent)
        assert_all_balanced(spawned.local_agent)

    run(main)


def test_abort_after_the_turn_completed_keeps_it_completed() -> None:
    """An abort that arrives once the child's turn is done changes nothing."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("done")])
        controller = AbortController()
        spawned = await host.subagents.start("spawn", request("x"), parent=parent,
                                             signal=controller.signal)
        await wait_for(lambda: turn_ends(spawned.own_events()) == [TurnCompleted()])
        controller.abort("late")
        result = await spawned.result
        assert (result.stop_reason, texts(result.output)) == ("completed", "done")
        assert turn_ends(spawned.own_events()) == [TurnCompleted()]
        await spawned.dispose()
        await finish(parent, recorder)

    run(main)


def test_dispose_cancels_waits_and_is_idempotent() -> None:
    """dispose() mid-run: turn aborted {disposed}, result aborted, child gone from
    host.agents; disposing twice, concurrently and again afterwards is harmless."""

    async def main() -> None:
        host, parent, _, _ = subagent_host([Reply.hang("x")])
        spawned = await host.subagents.start("spawn", request("x"), parent=parent)
        await _until_streaming(spawned)
        assert spawned.id in host.agents
        await asyncio.gather(spawned.dispose(), spawned.dispose())
        assert spawned.done and spawned.id not in host.agents
        await spawned.dispose()
        result = await spawned.result
        assert result.stop_reason == "aborted"
        assert turn_ends(spawned.own_events()) == [TurnAborted(reason=CancelDisposed())]
        _nothing_left(host, parent)
        assert_all_balanced(spawned.local_agent)

    run(main)


def test_dispose_before_the_child_ran_reports_aborted() -> None:
    """Disposed right after start: the queued prompt is dropped, the result is aborted."""

    async def main() -> None:
        host, parent, model, _ = subagent_host([Reply.text("never")])
        spawned = await host.subagents.start("spawn", request("x"), parent=parent)
        await spawned.dispose()
        result = await spawned.result
        assert result.stop_reason == "aborted" and model.calls == 0
        assert of_type(spawned.own_events(), TurnStartEvent) == []
        assert_all_balanced(spawned.local_agent)

    run(main)


def test_siblings_are_independent() -> None:
    """Disposing or aborting one run never settles its sibling."""

    async def main() -> None:
        gate = asyncio.Event()

        async def slow(request_: object) -> Reply:
            await gate.wait()
            return Reply.text("sibling done")

        host, parent, _, recorder = subagent_host([Reply.hang("a"), slow])
        first_abort, second_abort = AbortController(), AbortController()
        first = await host.subagents.start("spawn", request("a"), parent=parent,
                                           signal=first_abort.signal)
        second = await host.subagents.start("spawn", request("b"), parent=parent,
                                            signal=second_abort.signal)
        await _until_streaming(first)
        first_abort.abort("only the first")
        await first.dispose()
        assert not second.done and not second.cancelled
        gate.set()
        result = await second.result
        assert (result.stop_reason, texts(result.output)) == ("completed", "sibling done")
        assert (await first.result).stop_reason == "aborted"
        await second.dispose()
        _nothing_left(host, parent)
        await finish(parent, recorder)

    run(main)


class _FlakySink:
    """A sink that takes ``after`` writes, then refuses ``failures`` (a disk that recovers);
    every event it took counts as durable at once (the whole Session sink protocol, so a sink
    that never fails lets the test fail on its assertions)."""

    def __init__(self, failures: int, after: int = 0) -> None:
        self.failures = failures
        self.after = after
        self.taken = 0

    def write(self, header: SessionHeader, events: Sequence[Event]) -> None:
        if self.after:
            self.after -= 1
        elif self.failures:
            self.failures -= 1
            raise OSError("disk full")
        self.taken += len(events)

    @property
    def durable_length(self) -> int:
        return self.taken

    def commit(self) -> None:
        pass

    async def wait_durable(self, length: int) -> None:
        pass


def test_a_prompt_that_cannot_be_delivered_fails_the_result() -> None:
    """A published child whose prompt delivery fails: the run is returned, its result rejects
    with that error, the end event says ``error`` and dispose still cleans up (DSH
    subagent-in-process-driver.spec.ts "keeps published run and handle disposal failures on
    separate channels")."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("ok")])
        spawned = await host.subagents.start("spawn", request("x"), parent=parent)
        spawned.local_agent.session._sink = _FlakySink(1)
        with pytest.raises(OSError, match="disk full"):
            await spawned.result
        end = recorder.events[-1]
        assert isinstance(end, SubagentEnd) and end.stop_reason == "error"
        assert isinstance(end.failure, OSError) and end.last_assistant_message is None
        await spawned.dispose()
        _nothing_left(host, parent)

    run(main)


def test_a_failing_loop_fails_the_result() -> None:
    """An infrastructure fault (the child's loop failed) fails result; dispose still works."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("ok")])
        spawned = await host.subagents.start("spawn", request("x"), parent=parent)
        spawned.local_agent.session._sink = _FlakySink(2, after=1)
        with pytest.raises(AgentLoopError, match="disk full"):
            await spawned.result
        end = recorder.events[-1]
        assert isinstance(end, SubagentEnd) and end.stop_reason == "error"
        assert isinstance(end.failure, AgentLoopError)
        await spawned.dispose()
        _nothing_left(host, parent)
        assert_all_balanced(spawned.local_agent)

    run(main)
