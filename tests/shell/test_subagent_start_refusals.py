"""Starts refused before a child is published: an already-aborted signal, a disposed or
disposing parent, a parent disposed inside the unpublished setup window.

Ports DSH's
``packages/subagent/subagent-in-process-driver/tests/subagent-in-process-driver.spec.ts``
("rejects an already-aborted request without publishing a child", "rejects invalid and exceeded
depth before publication" for the order of checks) and
``packages/subagent/subagent-spawn-in-process/tests/subagent-spawn-in-process.spec.ts``
("rejects without publishing when the request signal is already aborted", "spawning from a
DISPOSING parent fails loud with no orphaned child (INACTIVE_EFFECT teaching error)", "parent
disposal during the child setup transaction prevents every publication notification").
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _shell_helpers import run
from _subagent_helpers import Recorder, request, subagent_host

from turnfork.core import render_start_error
from turnfork.shell import (
    AbortController,
    Agent,
    CountingIds,
    ForkProvider,
    Host,
    JsonlSessionStore,
    ManualClock,
    Reply,
    ScriptedModel,
    Session,
    SpawnProvider,
    SubagentRuntime,
    SubagentStartError,
)
from turnfork.shell.subagents import SubagentAbortedError

ABORTED_TEXT = "subagent request was aborted before child publication"


def _session_files(root: Path) -> list[str]:
    return sorted(path.parent.name for path in root.rglob("session.jsonl"))


def _count_creations(host: Host) -> list[str]:
    """Record the id of every session the host's store creates from now on."""
    created: list[str] = []
    create = host.sessions.create

    def recording(header: Any, **options: Any) -> Session:
        created.append(header.id)
        return create(header, **options)

    host.sessions.create = recording  # type: ignore[method-assign]
    return created


@pytest.mark.parametrize("provider", ["fork", "spawn"])
def test_an_already_aborted_start_gets_dshs_text_and_creates_nothing(provider: str) -> None:
    """A signal aborted before start(): DSH's plain error text, no session, agent, model call
    or lifecycle event; the parent's tool result for it carries no error key."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([Reply.text("one"), Reply.text("never")])
        parent.followup("one")  # a completed turn, so a fork child would have a seed
        await parent.when_idle()
        created = _count_creations(host)
        controller = AbortController()
        controller.abort("too late")
        with pytest.raises(SubagentAbortedError) as aborted:
            await host.subagents.start(provider, request("child task"), parent=parent,
                                       signal=controller.signal)
        assert created == []  # refused before any child session was made, not rolled back
        assert str(aborted.value) == ABORTED_TEXT
        assert aborted.value.error.message == ABORTED_TEXT
        assert aborted.value.error.name is None  # a plain Error in DSH
        rendered = render_start_error(aborted.value.error)
        assert (rendered.text, rendered.is_error, rendered.error) == (
            f"Error: {ABORTED_TEXT}", True, None)
        assert host.sessions.list() == (parent.id,) and host.agents.list() == (parent,)
        assert host.subagents.runs() == () and recorder.events == []
        assert model.calls == 1  # the parent's own turn only
        await parent.dispose()

    run(main)


def test_the_abort_is_checked_after_the_caps_shape_and_before_the_parents_depth() -> None:
    """DSH's driver order: a malformed cap wins over the abort; the abort wins over a malformed
    parent depth."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host(subagent_depth=1.5)
        controller = AbortController()
        controller.abort("too late")
        with pytest.raises(SubagentStartError) as bad_cap:
            await host.subagents.start("spawn", request("x", max_depth=-1), parent=parent,
                                       signal=controller.signal)
        assert str(bad_cap.value) == "subagent maxDepth must be a non-negative safe integer"
        created = _count_creations(host)
        with pytest.raises(SubagentAbortedError, match=f"^{ABORTED_TEXT}$"):
            await host.subagents.start("spawn", request("x"), parent=parent,
                                       signal=controller.signal)
        assert created == []
        assert host.sessions.list() == (parent.id,) and recorder.events == []
        await parent.dispose()

    run(main)


def test_a_disposed_parent_is_refused_before_anything_exists() -> None:
    """Starting from a disposed parent: INACTIVE_PARENT with DSH's text and the parent named;
    no session, agent, provider call or lifecycle event."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([Reply.text("never")])
        await parent.dispose()
        sessions = host.sessions.list()
        for provider in ("fork", "spawn"):
            with pytest.raises(SubagentStartError) as refused:
                await host.subagents.start(provider, request("do X"), parent=parent)
            assert refused.value.error.code == "INACTIVE_PARENT"
            assert str(refused.value) == (
                f'cannot create effect on inactive context: agent "{parent.id}" is disposed')
        assert host.sessions.list() == sessions and host.agents.list() == ()
        assert host.subagents.runs() == () and recorder.events == [] and model.calls == 0

    run(main)


def test_a_parent_whose_disposal_has_begun_is_refused() -> None:
    """A parent still disposing (its turn not yet quiet) is already inactive: same refusal."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([Reply.hang("working")])
        parent.followup("work")
        while model.calls == 0:
            await asyncio.sleep(0)
        disposing = asyncio.create_task(parent.dispose())
        await asyncio.sleep(0)  # dispose() has begun: it is waiting for the turn to stop
        assert parent.disposed and not disposing.done()
        with pytest.raises(SubagentStartError) as refused:
            await host.subagents.start("spawn", request("do X"), parent=parent)
        assert refused.value.error.code == "INACTIVE_PARENT"
        assert str(refused.value) == (
            f'cannot create effect on inactive context: agent "{parent.id}" is disposed')
        await disposing
        assert host.agents.list() == () and recorder.events == [] and model.calls == 1

    run(main)


class _DisposeParentInSetup(Host):
    """A host that, while a child is being built (its session exists, unpublished), starts
    disposing that child's parent: DSH's test disposes the owner inside the same window."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.parent: Agent | None = None
        self.built: list[str] = []

    def build_agent(self, session: Session, **options: Any) -> Agent:
        agent = super().build_agent(session, **options)
        if self.parent is not None and session.id != self.parent.id:
            self.built.append(session.id)
            asyncio.get_running_loop().create_task(self.parent.dispose())
        return agent


def test_a_parent_disposed_during_setup_publishes_nothing_and_leaves_nothing(
        tmp_path: Path) -> None:
    """The parent's disposal lands in the child's unpublished setup window: start() fails
    OWNER_DISPOSED with DSH's text naming the child; no SubagentStart, no child agent, no
    model call, and the child's files (seed already written) are gone from disk."""

    async def main() -> None:
        host = _DisposeParentInSetup(store=JsonlSessionStore(tmp_path),
                                     clock=ManualClock(1_000, step=1), ids=CountingIds("id-"))
        runtime = SubagentRuntime(host)
        runtime.register_provider(ForkProvider())
        runtime.register_provider(SpawnProvider())
        model = ScriptedModel([Reply.text("one"), Reply.text("must never run")])
        host.models.register("scripted", model)
        recorder = Recorder(runtime)
        parent = host.create_agent(provider="scripted", model="m", approval=True,
                                   cwd="/work/project")
        parent.followup("one")
        await parent.when_idle()
        host.parent = parent
        added: list[str] = []
        original_add = host.agents.add

        def watch_add(agent: Agent) -> None:
            added.append(agent.id)
            original_add(agent)

        host.agents.add = watch_add  # type: ignore[method-assign]
        with pytest.raises(SubagentStartError) as refused:
            await runtime.start("fork", request("must never run"), parent=parent)
        (child_id,) = host.built
        assert refused.value.error.code == "OWNER_DISPOSED"
        assert str(refused.value) == (
            f'agent "{child_id}" setup aborted: owner disposed during setup')
        await parent.dispose()
        assert added == [] and recorder.events == [] and model.calls == 1
        assert host.agents.list() == () and runtime.runs() == ()
        assert host.sessions.list() == (parent.id,)
        assert _session_files(tmp_path) == [parent.id]

    run(main)
