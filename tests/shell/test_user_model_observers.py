"""Logging and tracing observe a run: a logging handler or a span processor that raises changes
nothing of what the agent does, records or returns, and never leaves a caller waiting."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from _shell_helpers import make_host, of_type, run, scripted
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from turnfork.core import FinishError, LlmFailure, TurnEndEvent
from turnfork.core.events import LlmRetryEvent
from turnfork.core.retry import RetryPolicy
from turnfork.shell import Host, Reply, ScriptedModel
from turnfork.shell.telemetry import Telemetry

BUSY = Reply(finish=FinishError(failure=LlmFailure(message="busy", code="SERVER")))


class _RaisingHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        raise RuntimeError("the log handler exploded")


class _RaisingProcessor(SpanProcessor):
    def __init__(self, *, on: str) -> None:
        self.on = on

    def on_start(self, span: Span, parent_context: object = None) -> None:
        if self.on == "start":
            raise RuntimeError("the span processor exploded on start")

    def on_end(self, span: ReadableSpan) -> None:
        if self.on == "end":
            raise RuntimeError("the span processor exploded on end")


@pytest.fixture
def raising_handler() -> Iterator[None]:
    turnfork_logger = logging.getLogger("turnfork")
    handler, level = _RaisingHandler(), turnfork_logger.level
    turnfork_logger.addHandler(handler)
    turnfork_logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        turnfork_logger.removeHandler(handler)
        turnfork_logger.setLevel(level)


@pytest.mark.usefixtures("raising_handler")
def test_a_raising_log_handler_leaves_the_retry_and_the_answer_as_they_were() -> None:
    async def main() -> tuple[list[str | None], int, str]:
        host = Host()  # the event loop's clock: the retry's 1 ms wait passes by itself
        model = ScriptedModel([BUSY, Reply.text("the answer"), Reply.error("AUTH", "refused")])
        host.models.register("scripted", model, retry=RetryPolicy(
            max_retries=1, initial_delay_ms=1, max_delay_ms=1))
        agent = host.create_agent(provider="scripted", model="m")
        first = await agent.run("hello")
        second = await agent.run("again")
        retries = len(of_type(agent.session.events, LlmRetryEvent))
        await agent.dispose()
        return [first.stop_reason, second.stop_reason], retries, first.output

    with pytest.warns(RuntimeWarning, match="the log handler exploded"):
        stops, retries, text = run(main)
    assert (stops, retries, text) == (["completed", "error"], 1, "the answer")


@pytest.mark.parametrize("on", ["start", "end"])
def test_a_raising_span_processor_leaves_the_answer_and_the_disposal_as_they_were(
        on: str) -> None:
    async def main() -> tuple[str | None, str, list[str]]:
        provider = TracerProvider()
        provider.add_span_processor(_RaisingProcessor(on=on))
        host = make_host()
        host.telemetry = Telemetry(provider)
        agent, _ = scripted(host, [Reply.text("the answer")])
        result = await agent.run("hello")
        ends = [type(end.data.reason).__name__
                for end in of_type(agent.session.events, TurnEndEvent)]
        await host.aclose()
        return result.stop_reason, result.output, ends

    with pytest.warns(RuntimeWarning, match=f"the span processor exploded on {on}"):
        outcome = run(main)
    assert outcome == ("completed", "the answer", ["TurnCompleted"])
