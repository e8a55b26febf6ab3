"""Agents over seeded and resumed sessions: numbering continues, headers say resume."""

from __future__ import annotations

from pathlib import Path

import pytest
from _shell_helpers import (
    assert_balanced,
    echo_tool,
    make_host,
    of_type,
    run,
    scripted,
    types,
    wait_for,
)

from turnfork.core import (
    AssistantChunkEvent,
    RequestHeaderEvent,
    SessionEndSeedEvent,
    TurnStartEvent,
)
from turnfork.shell import JsonlSessionStore, Reply, ScriptedModel


def test_fork_child_continues_the_parents_turns() -> None:
    """A child seeded with the parent's completed prefix (parent mid-turn) runs turn N+1,
    says resume, sees the parent's history, and leaves the parent untouched."""

    async def main() -> None:
        host = make_host()
        host.tools.register(echo_tool())
        parent, _ = scripted(host, [Reply.tool_call("echo", {"text": "p"}), Reply.text("ok"),
                                    Reply.text("two"), Reply.hang("thinking")])
        for prompt in ("one", "two"):
            parent.followup(prompt)
            await parent.when_idle()
        parent.followup("three")  # the parent's in-flight turn 3 hangs
        # block-start, "thin", "king": all the hanging reply streams
        await wait_for(lambda: sum(isinstance(e, AssistantChunkEvent) and e.data.turn == 3
                                   for e in parent.session.events) == 3)
        assert parent.session.trace.open_turn == 3
        parent_before = list(parent.session.events)
        prefix, trace = parent.session.completed_prefix()
        child_model = ScriptedModel([Reply.text("child answer")])
        host.models.register("child", child_model)
        child = host.create_agent(
            provider="child", model="m", seed=prefix, seed_trace=trace,
            header_meta={"parent_session": parent.id, "seed_length": len(prefix),
                         "origin": "subagent", "delegation_depth": 1})
        child.followup("child task")
        await child.when_idle()
        events = list(child.session.events)
        assert events[len(prefix) - 1] is parent.session.events[len(prefix) - 1]
        assert isinstance(events[len(prefix)], SessionEndSeedEvent)
        assert of_type(events[len(prefix):], TurnStartEvent)[0].data.turn == 3
        headers = of_type(events[len(prefix):], RequestHeaderEvent)
        assert [h.data.reason for h in headers] == ["resume"]
        seen = child_model.requests[0].messages
        assert len(seen) == 7 and seen[-1].content[0].text == "child task"  # type: ignore[union-attr]
        assert child.session.header.seed_length == len(prefix)
        assert list(parent.session.events) == parent_before
        assert_balanced(events)
        await parent.dispose()
        await child.dispose()

    run(main)


def test_unbalanced_seed_is_refused() -> None:
    """A seed with an open turn is refused and leaves no session behind."""

    async def main() -> None:
        host = make_host()
        parent, _ = scripted(host, [Reply.hang("x")])
        parent.followup("go")
        await wait_for(lambda: parent.session.trace.open_step == 1)
        child_id = "child-1"
        with pytest.raises(ValueError, match="seed must be balanced"):
            host.create_agent(child_id, provider="scripted", model="m",
                              seed=parent.session.events)
        assert host.sessions.get(child_id) is None and child_id not in host.agents
        await parent.dispose()

    run(main)


def test_resuming_a_persisted_session(tmp_path: Path) -> None:
    """create_agent with a persisted id resumes it: turn 2 follows, header reason resume."""

    async def main() -> None:
        store = JsonlSessionStore(tmp_path)
        host = make_host(store)
        first, _ = scripted(host, [Reply.text("a")], provider="p1")
        first.followup("go")
        await first.when_idle()
        await first.dispose()
        host.models.register("p2", ScriptedModel([Reply.text("b")]))
        again = host.create_agent(first.id, provider="p2", model="test-model")
        again.followup("more")
        await again.when_idle()
        names = types(again.session.events)
        assert names.count("session/end-seed") == 1
        starts = of_type(again.session.events, TurnStartEvent)
        assert [s.data.turn for s in starts] == [1, 2]
        headers = of_type(again.session.events, RequestHeaderEvent)
        assert [h.data.reason for h in headers] == ["initial", "resume"]
        await again.dispose()
        reloaded = store.load(first.id)
        assert list(reloaded.events)[:len(again.session.events)] == list(again.session.events)

    run(main)
