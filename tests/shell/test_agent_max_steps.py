"""Bounded loops (issue 14 point 12): a model that calls tools forever ends its turn ``blocked``
after the agent's ``max_steps`` (by default ``core.loop.DEFAULT_MAX_STEPS``); the log stays
balanced and the next turn runs with a fresh budget."""

from __future__ import annotations

from typing import Any

from _shell_helpers import assert_balanced, echo_tool, make_host, of_type, run, scripted

from turnfork.core import StepStartEvent, TurnBlocked, TurnCompleted, TurnEndEvent
from turnfork.core.loop import DEFAULT_MAX_STEPS
from turnfork.shell import Agent, Reply


def _calls(count: int) -> list[Any]:
    return [Reply.tool_call("echo", {"text": str(n)}) for n in range(count)]


def _steps_of_turn(agent: Agent, turn: int) -> int:
    return sum(1 for e in of_type(agent.session.events, StepStartEvent) if e.data.turn == turn)


def _reasons(agent: Agent) -> list[Any]:
    return [e.data.reason for e in of_type(agent.session.events, TurnEndEvent)]


def test_a_turn_ends_blocked_after_max_steps_and_the_next_turn_starts_afresh() -> None:
    """max_steps=3: three steps run, the fourth is refused before its model call (blocked); the
    next turn gets three again."""

    async def main() -> None:
        host = make_host()
        host.tools.register(echo_tool())
        agent, model = scripted(host, [*_calls(3), *_calls(2), Reply.text("done")],
                                max_steps=3)
        agent.followup("go")
        await agent.when_idle()
        assert _reasons(agent) == [TurnBlocked()]
        assert _steps_of_turn(agent, 1) == 3
        assert len(model.requests) == 3, "the refused fourth step called the model"
        agent.followup("again")
        await agent.when_idle()
        assert _reasons(agent) == [TurnBlocked(), TurnCompleted()]
        assert _steps_of_turn(agent, 2) == 3
        assert_balanced(agent.session.events)
        await agent.dispose()

    run(main)


def test_the_default_bound_stops_a_model_that_never_stops_calling_tools() -> None:
    """Without max_steps the agent stops after DEFAULT_MAX_STEPS steps, not never."""

    async def main() -> None:
        host = make_host()
        host.tools.register(echo_tool())
        agent, _ = scripted(host, _calls(DEFAULT_MAX_STEPS + 5))
        agent.followup("go")
        await agent.when_idle()
        assert _reasons(agent) == [TurnBlocked()]
        assert _steps_of_turn(agent, 1) == DEFAULT_MAX_STEPS
        assert_balanced(agent.session.events)
        await agent.dispose()

    run(main)


def test_no_limit_when_asked_for() -> None:
    """max_steps=None: a turn may take more steps than the default bound."""

    async def main() -> None:
        host = make_host()
        host.tools.register(echo_tool())
        agent, _ = scripted(host, [*_calls(DEFAULT_MAX_STEPS + 1), Reply.text("done")],
                            max_steps=None)
        agent.followup("go")
        await agent.when_idle()
        assert _reasons(agent) == [TurnCompleted()]
        assert _steps_of_turn(agent, 1) == DEFAULT_MAX_STEPS + 2
        await agent.dispose()

    run(main)
