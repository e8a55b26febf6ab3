"""When a step writes the runtime-context snapshot: again when its sections change, never when
they do not; the cleared text once when they are all gone; again when a surface replacement
shadowed the retained one; never for an unrelated replacement; a full one over a malformed
retained snapshot; and a resumed log keeps what it retains.

Ports DSH's ``packages/core/agent-loop/tests/loop.spec.ts`` ("materializes changed runtime
context at the history tail without rewriting the system header", "re-emits unchanged runtime
context when a surface replacement removed the retained snapshot", "clears compacted runtime
context after the active set becomes empty", "does not clear runtime context after an unrelated
replacement", "replaces a malformed retained runtime-context message with the current complete
snapshot") and ``packages/core/agent-loop/tests/runtime-context.spec.ts`` ("restores the latest
visible owned snapshot and ignores other sessions", for a newest snapshot still on the surface).
"""

from __future__ import annotations

from collections.abc import Sequence
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
from turnfork.shell import Agent, Host, Reply, ScriptedModel

PLUGIN = "@deepseek-ai/dsh-system-prompt"
HEADER = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."
CLEARED = "Current runtime context: none. Earlier runtime-context snapshots no longer apply."


def _host(replies: int) -> tuple[Host, ScriptedModel]:
    host = make_host()
    model = ScriptedModel([Reply.text(f"reply {n}") for n in range(1, replies + 1)])
    host.models.register("scripted", model)
    return host, model


def _policy(host: Host, text: str) -> None:
    host.prompt_sections.set("policy", text, order=0, kind="context")


def _snapshots(events: Sequence[Event]) -> list[UserMessageEvent]:
    return [event for event in events if isinstance(event, UserMessageEvent)
            and event.data.source.kind == "plugin" and event.data.source.plugin == PLUGIN]


def _wire(event: Event) -> Any:
    return msgspec.json.decode(encode_event(event))


def _text(event: UserMessageEvent) -> str:
    (block,) = event.data.content
    assert isinstance(block, TextBlock)
    return block.text


def _plugin_message(text: str, plugin: str, message_id: str, *extra: str) -> UserMessage:
    blocks = tuple(TextBlock(text=part) for part in (text, *extra))
    return UserMessage(content=blocks, source=MessageSource(kind="plugin", plugin=plugin),
                       id=message_id)


def _replace(agent: Agent, seq: int, message_id: str) -> None:
    """A compaction: a summary that shadows the event at ``seq`` on the surface."""
    agent.session.append(UserMessageEvent,
                         _plugin_message("compacted summary", "test-compaction", message_id),
                         surface_op=SurfaceReplace(start=seq, end=seq), source_event_seqs=(seq,))


async def _turn(agent: Agent, prompt: str) -> None:
    agent.followup(prompt)
    await agent.when_idle()


def _request_has_snapshot(model: ScriptedModel, call: int) -> list[str]:
    """The texts of the runtime-context messages the model was sent in call ``call``."""
    return ["".join(b.text for b in message.content if isinstance(b, TextBlock))
            for message in model.requests[call].messages
            if isinstance(message, UserMessage) and message.source.kind == "plugin"
            and message.source.plugin == PLUGIN]


def test_a_changed_context_is_written_again_and_an_unchanged_one_is_not() -> None:
    """Five turns: a snapshot, none while unchanged, a new full one when the text changes, the
    cleared text once when the contribution is gone, then none; the system prompt and the
    request header never change."""

    async def main() -> None:
        host, model = _host(5)
        _policy(host, "Mode: read-only.")
        agent = host.create_agent(provider="scripted", model="m")
        await _turn(agent, "first")
        (first,) = _snapshots(agent.session.events)
        assert _wire(first)["data"]["content"] == [
            {"type": "text", "text": f"{HEADER}\n\nMode: read-only."}]
        assert _wire(first)["data"]["source"] == {
            "kind": "plugin", "plugin": PLUGIN, "form": "snapshot",
            "sections": [{"name": "policy", "text": "Mode: read-only."}]}
        assert first.surface_op == "append"
        await _turn(agent, "unchanged")
        assert len(_snapshots(agent.session.events)) == 1
        _policy(host, "Mode: danger-full-access.")
        await _turn(agent, "changed")
        changed = _snapshots(agent.session.events)
        assert len(changed) == 2
        assert _text(changed[1]) == f"{HEADER}\n\nMode: danger-full-access."
        host.prompt_sections.remove("policy")
        await _turn(agent, "cleared")
        cleared = _snapshots(agent.session.events)
        assert len(cleared) == 3 and _text(cleared[2]) == CLEARED
        assert _wire(cleared[2])["data"]["source"] == {"kind": "plugin", "plugin": PLUGIN}
        await _turn(agent, "still clear")
        assert len(_snapshots(agent.session.events)) == 3
        assert len({request.system for request in model.requests}) == 1
        assert len(model.requests) == 5
        headers = [e for e in agent.session.events if _wire(e)["type"] == "request/header"]
        assert len(headers) == 1
        await agent.dispose()

    run(main)


def test_a_replaced_snapshot_is_written_again_though_unchanged() -> None:
    """A surface replacement citing the retained snapshot: the next step writes the same text
    again, and the model is sent it."""

    async def main() -> None:
        host, model = _host(2)
        _policy(host, "Mode: read-only.")
        agent = host.create_agent(provider="scripted", model="m")
        await _turn(agent, "first")
        (retained,) = _snapshots(agent.session.events)
        _replace(agent, retained.seq, "summary-1")
        await _turn(agent, "after compaction")
        again = _snapshots(agent.session.events)
        assert len(again) == 2 and _text(again[1]) == _text(retained)
        assert _request_has_snapshot(model, 1) == [f"{HEADER}\n\nMode: read-only."]
        await agent.dispose()

    run(main)


def test_a_replaced_snapshot_with_no_context_left_is_cleared() -> None:
    """The retained snapshot shadowed and its contribution gone: the next request carries the
    cleared text."""

    async def main() -> None:
        host, model = _host(2)
        _policy(host, "Mode: read-only.")
        agent = host.create_agent(provider="scripted", model="m")
        await _turn(agent, "first")
        (retained,) = _snapshots(agent.session.events)
        _replace(agent, retained.seq, "summary-1")
        host.prompt_sections.remove("policy")
        await _turn(agent, "after compaction")
        assert _request_has_snapshot(model, 1) == [CLEARED]
        await agent.dispose()

    run(main)


def test_an_unrelated_replacement_writes_nothing() -> None:
    """With no contribution and no snapshot ever written, replacing some other plugin message
    writes no snapshot (not even the cleared text); with one retained, a replacement that
    does not cite it leaves it retained."""

    async def main() -> None:
        host, model = _host(3)
        agent = host.create_agent(provider="scripted", model="m")
        original = agent.session.append(
            UserMessageEvent, _plugin_message("old context", "test-context", "context-1"),
            surface_op="append")
        _replace(agent, original.seq, "summary-1")
        await _turn(agent, "after compaction")
        assert _snapshots(agent.session.events) == []
        assert _request_has_snapshot(model, 0) == []
        _policy(host, "Mode: read-only.")
        await _turn(agent, "with context")
        assert len(_snapshots(agent.session.events)) == 1
        other = agent.session.append(
            UserMessageEvent, _plugin_message("other context", "test-context", "context-2"),
            surface_op="append")
        _replace(agent, other.seq, "summary-2")
        await _turn(agent, "after an unrelated compaction")
        assert len(_snapshots(agent.session.events)) == 1
        await agent.dispose()

    run(main)


def test_a_malformed_retained_snapshot_is_replaced_by_a_complete_one() -> None:
    """A retained runtime-context message of two text blocks never equals the current text: a
    complete snapshot is written after it."""

    async def main() -> None:
        host, _ = _host(1)
        _policy(host, "Mode: read-only.")
        agent = host.create_agent(provider="scripted", model="m")
        agent.session.append(UserMessageEvent,
                             _plugin_message(f"{HEADER}\n\nMode: read-only.", PLUGIN, "broken-1",
                                             ""),
                             surface_op="append")
        await _turn(agent, "repair context")
        snapshots = _snapshots(agent.session.events)
        assert len(snapshots) == 2
        assert _wire(snapshots[1])["data"]["content"] == [
            {"type": "text", "text": f"{HEADER}\n\nMode: read-only."}]
        await agent.dispose()

    run(main)


def test_a_resumed_log_retains_its_newest_visible_snapshot() -> None:
    """An agent over a log whose newest snapshot is on the surface and equals the current
    context writes none; another session's different snapshot changes nothing."""

    async def main() -> None:
        host, _ = _host(2)
        _policy(host, "Mode: read-only.")
        current = f"{HEADER}\n\nMode: read-only."
        other = host.sessions.create(SessionHeader(id="other", created_at=1))
        other.append(UserMessageEvent, _plugin_message("other", PLUGIN, "other-1"),
                     surface_op="append")
        kept = host.sessions.create(SessionHeader(id="kept", created_at=1))
        kept.append(UserMessageEvent, _plugin_message("older", PLUGIN, "kept-1"),
                    surface_op="append")
        kept.append(UserMessageEvent, _plugin_message(current, PLUGIN, "kept-2"),
                    surface_op="append")
        agent = host.create_agent("kept", provider="scripted", model="m")
        await _turn(agent, "resumed")
        assert len(_snapshots(agent.session.events)) == 2  # nothing new
        changed = host.create_agent("other", provider="scripted", model="m")
        await _turn(changed, "resumed")
        assert _text(_snapshots(changed.session.events)[-1]) == current
        await agent.dispose()
        await changed.dispose()

    run(main)
