"""An agent built over an existing log retains the newest runtime-context snapshot still on its
surface, even when a newer one was shadowed: it writes none while the context equals that one's
text, a new one when the context changes or a later replacement cites it; the agent that wrote
the log writes the shadowed snapshot again (the live rule).

Ports DSH's ``packages/core/agent-loop/tests/runtime-context.spec.ts`` ("restores the latest
visible owned snapshot and ignores other sessions": a visible snapshot, a newer one a summary
replaced, a projection built over that log) to agents over resumed logs, and the live side of
``packages/core/agent-loop/tests/loop.spec.ts`` ("re-emits unchanged runtime context when a
surface replacement removed the retained snapshot").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
from _shell_helpers import make_host, run

from turnfork.core import (
    Event,
    MessageSource,
    SessionHeader,
    TextBlock,
    UserMessage,
    UserMessageEvent,
    encode_event,
)
from turnfork.core.events import SurfaceReplace
from turnfork.shell import Agent, Host, JsonlSessionStore, Reply, ScriptedModel, Session

PLUGIN = "@deepseek-ai/dsh-system-prompt"
HEADER = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."
READ_ONLY = f"{HEADER}\n\nMode: read-only."


def _host(replies: int, store: JsonlSessionStore | None = None) -> tuple[Host, ScriptedModel]:
    host = make_host(store)
    model = ScriptedModel([Reply.text(f"reply {n}") for n in range(1, replies + 1)])
    host.models.register("scripted", model)
    return host, model


def _policy(host: Host, mode: str) -> None:
    host.prompt_sections.set("policy", f"Mode: {mode}.", order=0, kind="context")


def _snapshots(events: Sequence[Event]) -> list[UserMessageEvent]:
    return [event for event in events if isinstance(event, UserMessageEvent)
            and event.data.source.kind == "plugin" and event.data.source.plugin == PLUGIN]


def _text(event: UserMessageEvent) -> str:
    (block,) = event.data.content
    assert isinstance(block, TextBlock)
    return block.text


def _wire(event: Event) -> Any:
    return msgspec.json.decode(encode_event(event))


def _message(text: str, plugin: str, message_id: str) -> UserMessage:
    return UserMessage(content=(TextBlock(text=text),),
                       source=MessageSource(kind="plugin", plugin=plugin), id=message_id)


def _replace(session: Session, seq: int, message_id: str) -> None:
    """A compaction: a summary that shadows the event at ``seq`` on the surface."""
    session.append(UserMessageEvent, _message("summary", "test-compaction", message_id),
                   surface_op=SurfaceReplace(start=seq, end=seq), source_event_seqs=(seq,))


def _sent_snapshots(model: ScriptedModel, call: int) -> list[str]:
    """The runtime-context texts the model was sent in call ``call``."""
    return ["".join(b.text for b in message.content if isinstance(b, TextBlock))
            for message in model.requests[call].messages
            if isinstance(message, UserMessage) and message.source.kind == "plugin"
            and message.source.plugin == PLUGIN]


async def _turn(agent: Agent, prompt: str) -> None:
    agent.followup(prompt)
    await agent.when_idle()


def _spec_log(host: Host, session_id: str) -> Session:
    """DSH's spec log in our texts: the current snapshot, a newer different one, a summary
    replacing the newer one."""
    session = host.sessions.create(SessionHeader(id=session_id, created_at=1))
    session.append(UserMessageEvent, _message(READ_ONLY, PLUGIN, "retained"),
                   surface_op="append")
    shadowed = session.append(UserMessageEvent, _message("shadowed", PLUGIN, "shadowed"),
                              surface_op="append")
    _replace(session, shadowed.seq, "summary")
    return session


def test_a_resumed_agent_retains_the_older_visible_snapshot() -> None:
    """Over DSH's spec log the agent writes no snapshot while the context equals the visible
    one (the model sees that one); another session's snapshot changes nothing; a changed
    context writes a full snapshot with its sections."""

    async def main() -> None:
        host, model = _host(2)
        _policy(host, "read-only")
        session = _spec_log(host, "kept")
        agent = host.create_agent("kept", provider="scripted", model="m")
        other = host.sessions.create(SessionHeader(id="other", created_at=1))
        other.append(UserMessageEvent, _message("other", PLUGIN, "other-1"), surface_op="append")
        await _turn(agent, "resumed")
        assert len(_snapshots(session.events)) == 2
        assert _sent_snapshots(model, 0) == [READ_ONLY]
        _policy(host, "danger-full-access")
        await _turn(agent, "changed")
        written = _snapshots(session.events)
        assert len(written) == 3
        assert _wire(written[2])["data"]["source"] == {
            "kind": "plugin", "plugin": PLUGIN, "form": "snapshot",
            "sections": [{"name": "policy", "text": "Mode: danger-full-access."}]}
        await agent.dispose()

    run(main)


def test_a_replacement_after_resuming_releases_the_restored_snapshot() -> None:
    """After the resume, a replacement that does not cite the retained snapshot writes
    nothing; one that shadows it makes the next step write the same text again."""

    async def main() -> None:
        host, model = _host(3)
        _policy(host, "read-only")
        session = _spec_log(host, "kept")
        agent = host.create_agent("kept", provider="scripted", model="m")
        await _turn(agent, "resumed")
        prompt = next(event for event in session.events if isinstance(event, UserMessageEvent)
                      and event.data.source.kind == "user")
        _replace(session, prompt.seq, "summary-2")
        await _turn(agent, "after an unrelated compaction")
        assert len(_snapshots(session.events)) == 2
        retained = _snapshots(session.events)[0]
        _replace(session, retained.seq, "summary-3")
        await _turn(agent, "after its compaction")
        written = _snapshots(session.events)
        assert len(written) == 3 and _text(written[2]) == READ_ONLY
        assert _sent_snapshots(model, 2) == [READ_ONLY]
        await agent.dispose()

    run(main)


async def _shadow_the_newest(agent: Agent, host: Host) -> None:
    """Snapshot read-only, then danger-full-access; a compaction shadows the newer one and the
    context is read-only again: the older snapshot on the surface has the current text."""
    await _turn(agent, "first")
    _policy(host, "danger-full-access")
    await _turn(agent, "second")
    newer = _snapshots(agent.session.events)[-1]
    _replace(agent.session, newer.seq, "summary")
    _policy(host, "read-only")


def test_the_writer_writes_the_snapshot_again_and_a_resumed_agent_does_not(
        tmp_path: Path) -> None:
    """The same log, the newer snapshot shadowed: the agent that wrote it writes the current
    text again at its next step; an agent resumed from the persisted log writes none."""

    async def main() -> None:
        host, model = _host(6, JsonlSessionStore(tmp_path))
        _policy(host, "read-only")
        writer = host.create_agent("writer", provider="scripted", model="m")
        await _shadow_the_newest(writer, host)
        await _turn(writer, "third")
        written = _snapshots(writer.session.events)
        assert [_text(event) for event in written] == [
            READ_ONLY, f"{HEADER}\n\nMode: danger-full-access.", READ_ONLY]
        await writer.dispose()

        _policy(host, "read-only")
        first = host.create_agent("resumed", provider="scripted", model="m")
        await _shadow_the_newest(first, host)
        await first.dispose()
        resumed = host.create_agent("resumed", provider="scripted", model="m")
        await _turn(resumed, "third")
        assert len(_snapshots(resumed.session.events)) == 2
        assert _sent_snapshots(model, 5) == [READ_ONLY]
        await resumed.dispose()

    run(main)
