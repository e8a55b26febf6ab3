"""DSH ``packages/subagent/subagent/tests/continuation-inheritance.spec.ts`` (continuable
delegation policy, lines 76–231), case by case: each test names the line of the case it ports.

The composition is DSH's: the deployment's sandbox mode ``workspace-write`` and an approval
service (the parent is created with ``approval=True``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from _continuation_spec import (
    Spec,
    no_activation,
    park,
    persisted,
    spec_host,
    start,
)
from _shell_helpers import of_type, run

from turnfork.core import (
    ApprovalPolicyEvent,
    Event,
    SandboxModeData,
    SandboxModeEvent,
    UserMessageEvent,
)
from turnfork.shell import Agent, JsonlSessionStore, Reply, Session

Mode = Literal["read-only", "workspace-write", "danger-full-access"]


def _inheriting(tmp_path: Path, script: Sequence[Reply]) -> Spec:
    spec = spec_host(tmp_path, script, sandbox_mode="workspace-write")
    parent = spec.host.create_agent("approving-parent", provider="mock", model="mock",
                                    approval=True)
    park(spec.parent)
    return Spec(host=spec.host, parent=parent, model=spec.model, lifecycle=spec.lifecycle)


def _switch(session: Session, mode: Mode) -> None:
    """DSH's ``setSandboxMode``: a ``sandbox/mode`` event in the session's log."""
    session.append(SandboxModeEvent, SandboxModeData(mode=mode))


def _policy(events: Sequence[Event]) -> list[tuple[str, str, str | None]]:
    found: list[tuple[str, str, str | None]] = []
    for event in events:
        if isinstance(event, SandboxModeEvent):
            found.append(("sandbox/mode", event.data.mode, _source(event.data.source)))
        elif isinstance(event, ApprovalPolicyEvent):
            found.append(("approval/policy", event.data.policy, _source(event.data.source)))
    return found


def _source(source: object) -> str | None:
    return source if isinstance(source, str) else None


def _effective_mode(events: Sequence[Event]) -> str | None:
    modes = of_type(events, SandboxModeEvent)
    return modes[-1].data.mode if modes else None


def _effective_approval(events: Sequence[Event]) -> str | None:
    policies = of_type(events, ApprovalPolicyEvent)
    return policies[-1].data.policy if policies else None


def test_the_parents_sandbox_override_is_seeded_and_approval_pinned_never(
        tmp_path: Path) -> None:
    """DSH continuation-inheritance.spec.ts:77 — a parent switched to ``danger-full-access``
    (with no approval override of its own): at acceptance the child's log already holds that
    mode and ``approval/policy: never``, both ``source: delegation``; durable; the parent's own
    approval untouched; the child's runtime context says it is a delegated subagent."""

    async def main() -> None:
        spec = _inheriting(tmp_path, [Reply.text("child done"), Reply.text("parent ack")])
        _switch(spec.parent.session, "danger-full-access")
        assert _effective_approval(spec.parent.session.events) is None
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        assert _effective_mode(child.session.events) == "danger-full-access"
        assert child.approval_policy == "never"
        await no_activation(spec.host, started.child_id)
        events = persisted(spec.host, started.child_id)
        assert _policy(events) == [("sandbox/mode", "danger-full-access", "delegation"),
                                   ("approval/policy", "never", "delegation")]
        assert _effective_approval(spec.parent.session.events) is None
        snapshot = next(e for e in of_type(events, UserMessageEvent)
                        if e.data.source.kind == "plugin")
        assert "You are a delegated subagent" in snapshot.data.content[0].text  # type: ignore[union-attr]
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_the_policy_is_captured_at_delegation(tmp_path: Path) -> None:
    """DSH continuation-inheritance.spec.ts:115 — a parent switch made after the start captured
    the parent (inside the child's creation window) is the parent's future, not the child's:
    the child keeps ``read-only``."""

    async def main() -> None:
        spec = _inheriting(tmp_path, [Reply.text("child done"), Reply.text("parent ack")])
        _switch(spec.parent.session, "read-only")

        def widen(child: Agent) -> Any:
            _switch(spec.parent.session, "danger-full-access")
            return lambda: None

        spec.manager.register_setup(widen)
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        assert _effective_mode(spec.parent.session.events) == "danger-full-access"
        assert _effective_mode(persisted(spec.host, started.child_id)) == "read-only"
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_an_unswitched_sandbox_stays_the_deployments_and_approval_is_still_pinned(
        tmp_path: Path) -> None:
    """DSH continuation-inheritance.spec.ts:131 — with no parent override, the child's log
    holds only the approval pin; its sandbox is the deployment's (no ``sandbox/mode``)."""

    async def main() -> None:
        spec = _inheriting(tmp_path, [Reply.text("child done"), Reply.text("parent ack")])
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        events = persisted(spec.host, started.child_id)
        assert _policy(events) == [("approval/policy", "never", "delegation")]
        assert _effective_mode(events) is None
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_an_unswitched_fork_child_is_pinned_after_its_prefix(tmp_path: Path) -> None:
    """DSH continuation-inheritance.spec.ts:144 — a fork child of an unswitched parent (one
    completed turn): a positive ``seedLength`` and only the approval pin."""

    async def main() -> None:
        spec = _inheriting(tmp_path, [Reply.text("parent turn"), Reply.text("forked child"),
                                      Reply.text("parent ack")])
        spec.parent.followup("parent work")
        await spec.parent.when_idle()
        started = await start(spec, provider="fork")
        await no_activation(spec.host, started.child_id)
        store = spec.host.sessions
        assert isinstance(store, JsonlSessionStore)
        log = store.inspect(started.child_id)
        assert log.header is not None and isinstance(log.header.seed_length, int)
        assert log.header.seed_length > 0
        assert _policy(log.events) == [("approval/policy", "never", "delegation")]
        assert _effective_mode(log.events) is None
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_a_later_switch_in_the_child_wins(tmp_path: Path) -> None:
    """DSH continuation-inheritance.spec.ts:163 — the child's own switch after the delegation
    snapshot is the last event, so it governs, and it is durable."""

    async def main() -> None:
        spec = _inheriting(tmp_path, [Reply.text("child done"), Reply.text("parent ack")])
        _switch(spec.parent.session, "danger-full-access")
        started = await start(spec)
        child = spec.host.agents.get(started.child_id)
        assert child is not None
        assert _effective_mode(child.session.events) == "danger-full-access"
        _switch(child.session, "read-only")
        assert _effective_mode(child.session.events) == "read-only"
        await no_activation(spec.host, started.child_id)
        assert _effective_mode(persisted(spec.host, started.child_id)) == "read-only"
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_a_cold_resume_keeps_the_persisted_snapshot(tmp_path: Path) -> None:
    """DSH continuation-inheritance.spec.ts:183 — the parent widened after the child was
    created; the resumed child keeps its delegation-time ``read-only`` (one ``sandbox/mode``)
    and its approval pin is not appended again."""

    async def main() -> None:
        spec = _inheriting(tmp_path, [Reply.text("first"), Reply.text("parent ack"),
                                      Reply.text("after resume"), Reply.text("parent ack")])
        _switch(spec.parent.session, "read-only")
        started = await start(spec)
        await no_activation(spec.host, started.child_id)
        await spec.parent.when_idle()
        _switch(spec.parent.session, "danger-full-access")
        await spec.manager.followup(spec.parent, started.child_id, "continue please")
        await no_activation(spec.host, started.child_id)
        events = persisted(spec.host, started.child_id)
        assert _policy(events) == [("sandbox/mode", "read-only", "delegation"),
                                   ("approval/policy", "never", "delegation")]
        assert _effective_mode(events) == "read-only"
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)


def test_inherited_policy_follows_the_fork_prefix_so_it_wins_stale_seed_state(
        tmp_path: Path) -> None:
    """DSH continuation-inheritance.spec.ts:209 — a mode inside the parent's completed turns
    (``workspace-write``) is replayed by the fork seed; the delegation's ``read-only`` copy comes
    after it, so it governs."""

    async def main() -> None:
        spec = _inheriting(tmp_path, [Reply.text("parent turn"), Reply.text("forked child"),
                                      Reply.text("parent ack")])
        _switch(spec.parent.session, "workspace-write")
        spec.parent.followup("parent work")
        await spec.parent.when_idle()
        _switch(spec.parent.session, "read-only")
        started = await start(spec, provider="fork")
        await no_activation(spec.host, started.child_id)
        events = persisted(spec.host, started.child_id)
        assert [m for kind, m, _ in _policy(events) if kind == "sandbox/mode"] == [
            "workspace-write", "read-only"]
        assert _policy(events)[1] == ("sandbox/mode", "read-only", "delegation")
        assert _effective_mode(events) == "read-only"
        await spec.parent.when_idle()
        await spec.host.aclose()

    run(main)
