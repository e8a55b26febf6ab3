"""A subagent run's log records (started, failed, ended) observe it: a logging handler that
raises changes nothing of the start or the result the parent's model reads, and a child's
failure text, which comes from a model, reaches the records with its terminal controls escaped."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from _shell_helpers import run
from _subagent_helpers import finish, result_texts, subagent_host

from turnfork.core import AgentOptions, FinishError, LlmFailure
from turnfork.shell import Reply, ScriptedModel, SubagentTool

RUN_LOGGER = "turnfork.shell.subagents.run"


class _RaisingHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        raise RuntimeError("the log handler exploded")


@pytest.fixture
def raising_handler() -> Iterator[None]:
    logger = logging.getLogger(RUN_LOGGER)
    handler, level = _RaisingHandler(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _call() -> Reply:
    return Reply.tool_call("subagent", {"description": "look it up", "prompt": "find it"})


@pytest.mark.usefixtures("raising_handler")
def test_a_raising_handler_leaves_the_childs_start_and_result_as_they_were() -> None:
    async def main() -> list[str]:
        host, parent, _, recorder = subagent_host([_call(), Reply.text("noted")])
        host.models.register("child", ScriptedModel([Reply.text("found it")]))
        SubagentTool(provider="spawn", agent_options=AgentOptions(provider="child")).install(host)
        answer = await parent.run("delegate")
        assert answer.output == "noted"
        texts = result_texts(parent.session.events)
        await finish(parent, recorder)
        return texts

    with pytest.warns(RuntimeWarning, match="the log handler exploded"):
        texts = run(main)
    assert texts == ["found it"]


def test_a_childs_failure_text_reaches_the_log_records_inert(
        caplog: pytest.LogCaptureFixture) -> None:
    hostile = "overloaded\x1b]0;owned\x07\x1b[2J"
    failure = LlmFailure(message=hostile, code="UNAVAILABLE")

    async def main() -> None:
        host, parent, _, recorder = subagent_host([_call(), Reply.text("noted")])
        host.models.register("child", ScriptedModel([Reply(finish=FinishError(failure=failure))]))
        SubagentTool(provider="spawn", agent_options=AgentOptions(provider="child")).install(host)
        await parent.run("delegate")
        await finish(parent, recorder)

    with caplog.at_level(logging.INFO, logger=RUN_LOGGER):
        run(main)
    ended = [record.getMessage() for record in caplog.records
             if record.name == RUN_LOGGER and "ended" in record.getMessage()]
    assert len(ended) == 1
    assert "overloaded" in ended[0]
    assert "\x1b" not in ended[0] and "\x07" not in ended[0]
