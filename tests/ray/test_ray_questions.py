"""A child that asks the human is refused as delegated wherever it runs: on a Ray worker as in
process, ``DELEGATED_CALLER`` in DSH's words, no answerer asked, and the child carries the
question back to its parent (DSH's ACP snapshot subagent-child-question-rejection; in-process
tests: test_ask_user_question_tool.py, test_dsh_child_question_rejection.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

import _ray_rules
from _ray_host import (
    WHERE,
    assert_balanced,
    close,
    contract_host,
    one_turn,
    provider,
    request,
    run,
    text,
)

from turnfork.core import Event, ToolErrorInfo, ToolResultEvent, encode_log, final_assistant_output
from turnfork.shell import SubagentTool
from turnfork.shell.questions import Answers, QuestionRequest, UserQuestions

ASK = ('tool ask_user_question {"questions":[{"id":"cuda-fallback","header":"Deployment",'
       '"question":"Should deployment use the CUDA fallback?"}]}')
REFUSAL = ("Error: human interaction is unavailable while the calling agent is owned by another "
           "live agent; include the unresolved question or decision in the child agent's final "
           "result")
#: What differs between any two runs: random ids, and the rules model's call ids (numbered by
#: its calls in that process).
_VARYING = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                      r"|call_[0-9]+_[0-9]+")


@pytest.fixture(scope="module")
def asking_pool(ray_cluster: str) -> Iterator[Any]:
    """One worker whose host has the question service, with the tripwire as its answerer."""
    from turnfork.shell.ray import RayWorkerPool

    workers = RayWorkerPool(_ray_rules.asking_setup, size=1, stop_timeout=5.0)
    yield workers
    workers.close()


def _asking_host(pool: Any, asked: list[QuestionRequest]) -> tuple[Any, Any, Any]:
    """The contract host with the question service, its answerer recording every request."""

    async def answerer(request: QuestionRequest) -> Answers:
        asked.append(request)
        return await _ray_rules.tripwire(request)

    host, parent, recorder = contract_host(pool)
    UserQuestions(answerer).install(host)
    return host, parent, recorder


@pytest.mark.parametrize("kind", ["spawn", "fork"])
@pytest.mark.parametrize("where", WHERE)
def test_a_childs_question_is_refused_as_delegated(asking_pool: Any, where: str,
                                                   kind: str) -> None:
    """Through the subagent tool, the child's ask_user_question gets DSH's DELEGATED_CALLER
    refusal (text and error key), no answerer is asked on either host, and the parent's turn
    completes with the child's report of it."""
    asked: list[QuestionRequest] = []

    async def main() -> None:
        host, parent, recorder = _asking_host(asking_pool, asked)
        SubagentTool(provider=provider(where, kind)).install(host)
        await one_turn(parent, f"delegate 1 {ASK}")
        (start,) = recorder.starts()
        (refused,) = [event for event in start.run.own_events()
                      if isinstance(event, ToolResultEvent)]
        assert text(refused.data.message.content[0].content) == REFUSAL
        assert refused.data.error == ToolErrorInfo(name="UserQuestionError",
                                                   code="DELEGATED_CALLER")
        assert_balanced(start.run.child.session.events, "child")
        assert asked == []
        assert text(final_assistant_output(parent.session.events) or ()) == \
            f"parent saw: tool said: {REFUSAL}"
        assert_balanced(parent.session.events, "parent")
        await close(host)

    run(main)


def _comparable(events: Sequence[Event]) -> list[Any]:
    """The events as JSON, without what differs between any two runs: times, ids (_VARYING),
    and the provider's name in the descriptor."""
    found = []
    for line in encode_log(events).decode().splitlines():
        event = json.loads(_VARYING.sub("<id>", line))
        del event["time"]
        if event["type"] == "subagent/descriptor":
            event["data"]["provider"] = "<provider>"
        found.append(event)
    return found


@pytest.mark.parametrize("kind", ["spawn", "fork"])
def test_the_refused_childs_log_is_the_same_in_process_and_on_ray(asking_pool: Any,
                                                                  kind: str) -> None:
    """The refused child's own events on Ray equal the in-process child's, event for event,
    once times, ids and the provider's name are set aside."""
    asked: list[QuestionRequest] = []

    async def main() -> None:
        host, parent, _ = _asking_host(asking_pool, asked)
        await one_turn(parent, "say ready")
        logs = []
        for where in WHERE:
            run_ = await host.subagents.start(provider(where, kind), request(ASK),
                                              parent=parent)
            result = await run_.result
            assert text(result.output) == f"tool said: {REFUSAL}"
            logs.append(_comparable(run_.own_events()))
            await run_.dispose()
        in_process, on_ray = logs
        assert [event["type"] for event in on_ray].count("tool/result") == 1
        assert on_ray == in_process
        assert asked == []
        await close(host)

    run(main)
