"""The agent loop writes DSH's event order: multi-turn tool use, headers, provenance."""

from __future__ import annotations

import asyncio

from _shell_helpers import assert_balanced, echo_tool, make_host, of_type, run, scripted, types
from msgspec import UNSET

from turnfork.core import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    InboxSplicedEvent,
    MessageSource,
    RequestHeaderEvent,
    TextBlock,
    ToolCallEvent,
    ToolResultEvent,
    TurnCompleted,
    TurnEndEvent,
    UserMessage,
    UserMessageEvent,
)
from turnfork.shell import Reply

TURN_WITH_TOOL = [
    "agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start", "user/message",
    "session/title", "request/header", "request/context",
    "assistant/chunk", "assistant/chunk", "assistant/chunk", "assistant/chunk",
    "assistant/message", "tool/call", "tool/result", "step/end", "step/start",
    "assistant/chunk", "assistant/chunk", "assistant/chunk", "assistant/chunk",
    "assistant/message", "step/end", "turn/end",
]


def test_multi_turn_tool_use_writes_dshs_order() -> None:
    """Two turns with a tool call each: DSH's order (the title, the header and the request
    context only in the first), results cited."""

    async def main() -> None:
        host = make_host()
        host.tools.register(echo_tool())
        agent, model = scripted(host, [
            Reply.tool_call("echo", {"text": "one"}), Reply.text("ok"),
            Reply.tool_call("echo", {"text": "two"}), Reply.text("ok")])
        agent.followup("first")
        await agent.when_idle()
        agent.followup("second")
        await agent.when_idle()
        events = list(agent.session.events)
        first_turn = types(events)[:len(TURN_WITH_TOOL)]
        assert first_turn == TURN_WITH_TOOL
        second = types(events)[len(TURN_WITH_TOOL):]
        assert second == [t for t in TURN_WITH_TOOL
                          if t not in ("session/title", "request/header", "request/context")]
        assert [e.data.turn for e in of_type(events, TurnEndEvent)] == [1, 2]
        assert all(e.data.reason == TurnCompleted() for e in of_type(events, TurnEndEvent))
        for result in of_type(events, ToolResultEvent):
            call = events[result.source_event_seqs[0]]  # type: ignore[index]
            assert isinstance(call, ToolCallEvent)
            assert call.data.call_id == result.data.message.source.call_id
            assert result.data.message.content[0].is_error is False  # type: ignore[union-attr]
        for message in of_type(events, AssistantMessageEvent):
            cited = [events[seq] for seq in message.source_event_seqs]  # type: ignore[union-attr]
            assert cited and all(isinstance(e, AssistantChunkEvent) for e in cited)
            assert all(e.data.step == message.data.step for e in cited)  # type: ignore[union-attr]
        # The model saw the whole history: turn 2's first call has turn 1's four messages.
        assert len(model.requests[2].messages) == 5
        assert_balanced(events)

    run(main)


def test_request_header_initial_then_change_only_when_different() -> None:
    """initial first, nothing while unchanged, change when the system prompt changes."""

    async def main() -> None:
        host = make_host()
        agent, model = scripted(host, [Reply.text("a"), Reply.text("b"), Reply.text("c")],
                                system="Persona one.", max_tokens=64)
        agent.followup("1")
        await agent.when_idle()
        agent.followup("2")
        await agent.when_idle()
        agent.prompt_sections.set("deployment:persona", "Persona two.", order=0)
        agent.followup("3")
        await agent.when_idle()
        headers = of_type(agent.session.events, RequestHeaderEvent)
        assert [h.data.reason for h in headers] == ["initial", "change"]
        assert headers[0].data.header.system == "Persona one."
        assert headers[0].data.header.config.max_tokens == 64
        assert headers[1].data.header.system == "Persona two."
        assert model.requests[2].system == "Persona two."
        assert model.requests[0].config.model == "test-model"

    run(main)


def test_followup_accepts_text_blocks_and_user_messages() -> None:
    """Text, content blocks and a UserMessage are queued as messages (a given id is kept), and
    each follow-up gets a turn of its own (DSH's inbox claims one ``next-turn`` item per turn,
    packages/core/agent/src/inbox.ts ``claim``)."""

    async def main() -> None:
        host = make_host()
        agent, model = scripted(host, [Reply.text("a"), Reply.text("b"), Reply.text("c")])
        own = UserMessage(content=(TextBlock(text="c"),), id="mine",
                          source=MessageSource(kind="coordinator"))
        agent.followup("a")
        agent.followup((TextBlock(text="b1"), TextBlock(text="b2")))
        agent.followup(own)
        await agent.when_idle()
        events = list(agent.session.events)
        inserts = of_type(events, InboxSplicedEvent)[:3]
        assert [s.data.start for s in inserts] == [0, 1, 2]
        claims = of_type(events, InboxSplicedEvent)[3:]
        assert [(c.data.removed_count, c.data.inserted) for c in claims] == [(1, ())] * 3
        assert len(of_type(events, TurnEndEvent)) == 3
        users = [e.data for e in of_type(events, UserMessageEvent)]
        assert users[2] is own and users[1].content[1] == TextBlock(text="b2")
        assert [request.messages[-1].id for request in model.requests] == [u.id for u in users]

    run(main)


def test_followup_during_a_turn_runs_as_the_next_turn() -> None:
    """Input queued while a turn runs is logged at once and claimed by the next turn."""

    async def main() -> None:
        host = make_host()
        release = asyncio.Event()

        async def slow(request: object) -> Reply:
            await release.wait()
            return Reply.text("first")

        agent, _ = scripted(host, [slow, Reply.text("second")])
        agent.followup("one")
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        agent.followup("two")
        release.set()
        await agent.when_idle()
        assert types(agent.session.events).count("turn/start") == 2
        splices = of_type(agent.session.events, InboxSplicedEvent)
        assert [(s.data.start, s.data.removed_count) for s in splices] == [
            (0, UNSET), (0, 1), (0, UNSET), (0, 1)]
        assert_balanced(agent.session.events)

    run(main)


def test_model_sees_scope_tools_and_persona() -> None:
    """The request carries the scope's tool schemas and the composed system prompt."""

    async def main() -> None:
        host = make_host()
        host.tools.register(echo_tool())
        host.prompt_sections.set("house", "House rules.", order=50)
        agent, model = scripted(host, [Reply.text("a")], system="Be terse.")
        agent.followup("go")
        await agent.when_idle()
        request = model.requests[0]
        assert request.system == "Be terse.\n\nHouse rules."
        assert [t.name for t in request.tools] == ["echo"]

    run(main)
