"""The fork seed: the parent's completed-turn prefix, shared not copied; spawn gets none."""

from __future__ import annotations

import sys

import pytest
from _shell_helpers import echo_tool, of_type, run, types, wait_for
from _subagent_helpers import assert_all_balanced, finish, request, subagent_host, texts
from msgspec import UNSET

from turnfork.core import (
    AssistantChunkEvent,
    RequestHeaderEvent,
    SessionEndSeedEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from turnfork.shell import Agent, ForkProvider, Reply, SpawnProvider, SubagentRun
from turnfork.shell.session import Session
from turnfork.shell.subagents import ContinuableRequest


async def _complete_turns(parent: Agent, count: int) -> None:
    for index in range(count):
        parent.followup(f"turn {index + 1}")
        await parent.when_idle()


async def _hang_next_turn(parent: Agent, turn: int) -> None:
    """Start the parent's next turn and wait until its model hangs mid-stream."""
    parent.followup("in flight")
    await wait_for(lambda: any(isinstance(e, AssistantChunkEvent) and e.data.turn == turn
                               for e in parent.session.events))
    assert parent.session.trace.open_turn == turn


def _own_first_turn(run_: SubagentRun) -> int:
    return of_type(run_.own_events(), TurnStartEvent)[0].data.turn


def _own_header_reasons(run_: SubagentRun) -> list[str]:
    return [h.data.reason for h in of_type(run_.own_events(), RequestHeaderEvent)]


def test_parent_without_completed_turn_forks_an_unseeded_child() -> None:
    """No completed turn: no seed, no seedLength, no end-seed, turn 1, header reason initial."""

    async def main() -> None:
        host, parent, _, _ = subagent_host([Reply.hang("thinking"), Reply.text("fresh")])
        await _hang_next_turn(parent, 1)
        forked = await host.subagents.start("fork", request("task"), parent=parent)
        result = await forked.result
        child = forked.local_agent
        assert child.session.header.seed_length is UNSET and forked.seed_length == 0
        assert "session/end-seed" not in types(child.session.events)
        assert _own_first_turn(forked) == 1 and _own_header_reasons(forked) == ["initial"]
        assert (result.stop_reason, texts(result.output)) == ("completed", "fresh")
        await forked.dispose()
        await parent.dispose()
        assert_all_balanced(parent, child)

    run(main)


def test_completed_turns_are_seeded_through_the_last_turn_end() -> None:
    """seedLength = prefix length, the prefix ends with turn/end, the events are the parent's
    own objects, and session/end-seed sits at seq seedLength."""

    async def main() -> None:
        host, parent, _, _ = subagent_host([
            Reply.tool_call("echo", {"text": "a"}), Reply.text("one"), Reply.text("two"),
            Reply.text("three"), Reply.text("child")])
        host.tools.register(echo_tool())
        await _complete_turns(parent, 3)
        parent_events = parent.session.events
        forked = await host.subagents.start("fork", request("task"), parent=parent)
        await forked.result
        child_events = forked.local_agent.session.events
        seed_length = forked.seed_length
        assert seed_length == len(parent_events)  # the parent ended with turn/end
        assert forked.local_agent.session.header.seed_length == seed_length
        assert isinstance(child_events[seed_length - 1], TurnEndEvent)
        assert all(child_events[i] is parent_events[i] for i in range(seed_length))
        end_seed = child_events[seed_length]
        assert isinstance(end_seed, SessionEndSeedEvent) and end_seed.seq == seed_length
        assert _own_first_turn(forked) == 4 and _own_header_reasons(forked) == ["resume"]
        await forked.dispose()
        await parent.dispose()
        assert_all_balanced(parent, forked.local_agent)

    run(main)


def test_fork_while_the_parents_next_turn_is_in_flight() -> None:
    """The open turn (and the between-turn splice before it) stay out of the seed; the child
    runs turn N+1 (the parent's in-flight number) with header reason resume."""

    async def main() -> None:
        host, parent, _, _ = subagent_host([Reply.text("one"), Reply.text("two"),
                                            Reply.hang("partial"), Reply.text("child")])
        await _complete_turns(parent, 2)
        completed_length = len(parent.session.events)
        await _hang_next_turn(parent, 3)
        forked = await host.subagents.start("fork", request("task"), parent=parent)
        result = await forked.result
        assert forked.seed_length == completed_length < len(parent.session.events)
        assert isinstance(forked.local_agent.session.events[forked.seed_length - 1],
                          TurnEndEvent)
        assert _own_first_turn(forked) == 3 and _own_header_reasons(forked) == ["resume"]
        assert (result.stop_reason, texts(result.output)) == ("completed", "child")
        assert parent.session.trace.open_turn == 3  # the parent's turn was not touched
        await forked.dispose()
        await parent.dispose()
        assert_all_balanced(parent, forked.local_agent)

    run(main)


def test_fork_child_without_its_own_message_returns_empty_output() -> None:
    """A child whose only answer is an empty message returns "", never the parent's text."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("PARENT TEXT"), Reply(blocks=())])
        await _complete_turns(parent, 1)
        forked = await host.subagents.start("fork", request("say nothing"), parent=parent)
        result = await forked.result
        assert forked.seed_length > 0
        assert result.stop_reason == "completed" and result.output == ()
        await forked.dispose()
        await finish(parent, recorder)

    run(main)


def test_spawn_never_gets_a_seed() -> None:
    """Spawn after completed turns: no seed, no end-seed, turn 1, reason initial; the child's
    model sees only its prompt and its runtime-context snapshot."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([Reply.text("one"), Reply.text("fresh")])
        await _complete_turns(parent, 1)
        spawned = await host.subagents.start("spawn", request("alone"), parent=parent)
        await spawned.result
        child = spawned.local_agent
        assert spawned.seed_length == 0 and child.session.header.seed_length is UNSET
        assert "session/end-seed" not in types(child.session.events)
        assert _own_first_turn(spawned) == 1 and _own_header_reasons(spawned) == ["initial"]
        assert [m.source.kind for m in model.requests[-1].messages] == ["user", "plugin"]
        await spawned.dispose()
        await finish(parent, recorder)

    run(main)


def test_prepare_continuable_captures_the_seed_once() -> None:
    """No seed before a completed turn; afterwards a turn/end-terminated prefix with seq ==
    index that later parent turns do not change; spawn contributes nothing (DSH
    subagent-fork-in-process.spec.ts "contributes the completed-turn prefix as a continuable
    child's seed", subagent-spawn-in-process.spec.ts "continuable creation is a provider
    capability")."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("one"), Reply.text("two")])
        fork, spawn = host.subagents.get_provider("fork"), host.subagents.get_provider("spawn")
        assert isinstance(fork, ForkProvider) and isinstance(spawn, SpawnProvider)
        asked = ContinuableRequest(session_id="child", parent=parent)
        assert fork.prepare_continuable(asked).events is None
        await _complete_turns(parent, 1)
        assert spawn.prepare_continuable(asked).events is None
        seed = fork.prepare_continuable(asked)
        assert seed.events is not None and len(seed) == len(parent.session.events)
        assert isinstance(seed.events[-1], TurnEndEvent)
        assert [event.seq for event in seed.events] == list(range(len(seed)))
        assert seed.trace is not None
        assert seed.trace.length == len(seed) and seed.trace.is_closed
        captured = list(seed.events)
        await _complete_turns(parent, 1)
        assert list(seed.events) == captured and len(seed) < len(parent.session.events)
        await finish(parent, recorder)

    run(main)


def test_a_fork_reads_the_parent_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting a fork asks the parent's session for its completed-turn prefix once (as the
    view and trace together, or as ``completed()``; the session's own history cache aside),
    and the child's seed is that very view's events (the plan hands it on, nothing rebuilds
    it)."""

    async def main() -> None:
        host, parent, _, _ = subagent_host([Reply.text("one"), Reply.text("child")])
        await _complete_turns(parent, 1)
        asked: list[object] = []
        original = Session.completed_prefix
        original_completed = Session.completed

        def counted(session: Session) -> object:
            answer = original(session)
            caller = sys._getframe(1).f_globals["__name__"]
            if session is parent.session and caller != "turnfork.shell.session":
                asked.append(answer[0])
            return answer

        def counted_completed(session: Session) -> object:
            answer = original_completed(session)
            caller = sys._getframe(1).f_globals["__name__"]
            if session is parent.session and caller != "turnfork.shell.session":
                asked.append(answer.events)
            return answer

        monkeypatch.setattr(Session, "completed_prefix", counted)
        monkeypatch.setattr(Session, "completed", counted_completed)
        forked = await host.subagents.start("fork", request("task"), parent=parent)
        await forked.result
        assert len(asked) == 1, asked
        child = forked.local_agent
        assert forked.seed_length == len(asked[0]) > 0  # type: ignore[arg-type]
        assert all(child.session.events[i] is parent.session.events[i]
                   for i in range(forked.seed_length))
        await forked.dispose()
        await parent.dispose()
        assert_all_balanced(parent, child)

    run(main)
