"""Optional OpenTelemetry spans for turns, steps, model calls and child runs, with the GenAI
semantic-convention attribute names, read back from the SDK's in-memory exporter; nothing is
imported, and nothing is paid, without the ``otel`` extra."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _shell_helpers import echo_tool, make_host, run, scripted
from _subagent_helpers import finish, subagent_host
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from turnfork.core import AgentOptions, TokenUsage
from turnfork.shell import Host, Reply, ScriptedModel, SubagentTool
from turnfork.shell.telemetry import Telemetry

PROMPT = "PROMPT-TEXT-7f3a"
ANSWER = "MODEL-TEXT-91c2"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def _traced(host: Host, exporter: InMemorySpanExporter) -> Host:
    """``host`` with its spans going to ``exporter`` (for the agents it makes from now on)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    host.telemetry = Telemetry(provider)
    return host


def _parent_of(span: ReadableSpan, spans: list[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    (parent,) = [other for other in spans if other.context.span_id == span.parent.span_id]
    return parent


def _assert_no_conversation_text(spans: list[ReadableSpan]) -> None:
    for span in spans:
        for value in (span.attributes or {}).values():
            assert PROMPT not in str(value) and ANSWER not in str(value), span.name
        assert PROMPT not in span.name and ANSWER not in span.name


def test_a_turn_has_a_span_with_its_steps_and_model_calls(
        exporter: InMemorySpanExporter) -> None:
    async def main() -> None:
        host = _traced(make_host(), exporter)
        host.tools.register(echo_tool())
        usage = TokenUsage(input_tokens=10, output_tokens=2, cache_read_tokens=30)
        agent, _ = scripted(host, [Reply.tool_call("echo", {"text": PROMPT}, usage=usage),
                                   Reply.text(ANSWER, usage=(15, 3))], max_tokens=256)
        await agent.run(PROMPT)
        await agent.dispose()

    run(main)
    spans = list(exporter.get_finished_spans())
    assert sorted(span.name for span in spans) == [
        "chat test-model", "chat test-model", "invoke_agent", "step", "step"]
    (turn,) = [span for span in spans if span.name == "invoke_agent"]
    assert turn.parent is None
    assert dict(turn.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": "id-1",
        "gen_ai.conversation.id": "id-1", "turnfork.turn": 1,
        "turnfork.stop_reason": "completed",
        "gen_ai.usage.input_tokens": 55, "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 30}
    steps = [span for span in spans if span.name == "step"]
    assert [(s.attributes or {})["turnfork.step"] for s in steps] == [1, 2]
    assert all(_parent_of(step, spans) is turn for step in steps)
    calls = [span for span in spans if span.name.startswith("chat ")]
    assert [_parent_of(call, spans) for call in calls] == steps
    first = calls[0]
    assert first.kind is SpanKind.CLIENT
    assert dict(first.attributes or {}) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "test-model", "gen_ai.request.max_tokens": 256,
        "gen_ai.conversation.id": "id-1",
        "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 2,
        "gen_ai.usage.cache_read.input_tokens": 30,
        "gen_ai.response.finish_reasons": ("tool-calls",)}
    assert (calls[1].attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    _assert_no_conversation_text(spans)


def test_a_failed_model_call_marks_its_span_and_its_turn(exporter: InMemorySpanExporter) -> None:
    async def main() -> None:
        agent, _ = scripted(_traced(make_host(), exporter),
                            [Reply.error("AUTH", "the key was refused")])
        await agent.run(PROMPT)
        await agent.dispose()

    run(main)
    spans = {span.name: span for span in exporter.get_finished_spans()}
    for name in ("chat test-model", "invoke_agent"):
        span = spans[name]
        assert (span.attributes or {})["error.type"] == "AUTH"
        assert span.status.status_code is StatusCode.ERROR
    assert (spans["invoke_agent"].attributes or {})["turnfork.stop_reason"] == "error"
    assert (spans["chat test-model"].attributes or {})["gen_ai.response.finish_reasons"] == (
        "error",)


def test_a_model_that_raises_records_the_exception(exporter: InMemorySpanExporter) -> None:
    async def main() -> None:
        host = _traced(make_host(), exporter)

        def broken(request: object) -> Reply:
            raise ConnectionError("socket closed")

        agent, _ = scripted(host, [broken])
        assert (await agent.run(PROMPT)).stop_reason == "error"
        await agent.dispose()

    run(main)
    (call,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert (call.attributes or {})["error.type"] == "ConnectionError"
    assert [event.name for event in call.events] == ["exception"]


def test_a_child_run_nests_under_the_tool_call_that_started_it(
        exporter: InMemorySpanExporter) -> None:
    """Parent turn → step → ``subagent fork`` → the child's turn → its step → its model call."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([
            Reply.text("first"),
            Reply.tool_call("subagent", {"description": "d", "prompt": PROMPT}),
            Reply.text("done")])
        _traced(host, exporter)
        host.models.register("child", ScriptedModel([Reply.error("UNAVAILABLE", "overloaded")]))
        SubagentTool(provider="fork", agent_options=AgentOptions(provider="child")).install(host)
        # agents made before the provider was set keep their tracer: make the parent anew
        await parent.dispose()
        parent = host.create_agent(provider="scripted", model="test-model")
        await parent.run("remember")
        await parent.run("delegate")
        await finish(parent, recorder)

    run(main)
    spans = list(exporter.get_finished_spans())
    (run_span,) = [span for span in spans if span.name == "subagent fork"]
    attributes = dict(run_span.attributes or {})
    child_id = attributes["gen_ai.agent.id"]
    assert attributes["turnfork.subagent.provider"] == "fork"
    assert attributes["turnfork.stop_reason"] == "error"
    assert attributes["error.type"] == "UNAVAILABLE"
    parent_step = _parent_of(run_span, spans)
    assert parent_step is not None and parent_step.name == "step"
    parent_turn = _parent_of(parent_step, spans)
    assert parent_turn is not None and (parent_turn.attributes or {})["turnfork.turn"] == 2
    (child_turn,) = [span for span in spans if span.name == "invoke_agent"
                     and (span.attributes or {})["gen_ai.agent.id"] == child_id]
    assert _parent_of(child_turn, spans) is run_span
    (child_call,) = [span for span in spans if span.name == "chat test-model"
                     and (span.attributes or {})["gen_ai.provider.name"] == "child"]
    child_step = _parent_of(child_call, spans)
    assert child_step is not None and _parent_of(child_step, spans) is child_turn
    _assert_no_conversation_text(spans)


def test_without_the_extra_nothing_is_imported_and_runs_still_work() -> None:
    """``opentelemetry`` made unimportable: agents run, no span hook is set up; and with it
    installed, importing turnfork does not import it."""
    without = """
import asyncio, sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
from turnfork.shell import Host, Reply, ScriptedModel

async def main():
    async with Host() as host:
        host.models.register("m", ScriptedModel([Reply.text("fine")]))
        agent = host.create_agent(provider="m", model="m")
        assert agent._spans is None and host.telemetry.tracer is None
        print((await agent.run("hi")).output)

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", without], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "fine\n", "")
    lazy = ("import sys, turnfork, turnfork.core, turnfork.shell\n"
            "from turnfork.shell import Host, Agent, RunResult\n"
            "Host()\n"
            "print('opentelemetry' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", lazy], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "False")
