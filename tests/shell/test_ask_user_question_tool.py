"""The ``ask_user_question`` tool (DSH packages/interaction/tool-ask-user/tests/
tool-ask-user.spec.ts): DSH's schema, the answer as compact JSON, DSH's refusals with their
``error`` key, and the delegated child told to carry its question in its final result."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _shell_helpers import assert_balanced, make_host, of_type, run, scripted

from turnfork.core import StartRequest, TextBlock, ToolErrorInfo, ToolResultEvent
from turnfork.shell import Agent, Reply, SpawnProvider, SubagentRuntime
from turnfork.shell.questions import (
    ASK_USER_QUESTION,
    AnswerItem,
    Answers,
    QuestionOption,
    QuestionRequest,
    UserQuestions,
)

SCHEMAS = (Path(__file__).resolve().parents[1] / "fixtures" / "dsh" / "scenarios" /
           "examples__acp-agent__tests__snapshots__subagent-child-question-rejection__"
           "tool-schemas.expected.json")


class Recorder:
    def __init__(self, answers: Answers) -> None:
        self.answers = answers
        self.seen: list[QuestionRequest] = []

    async def __call__(self, request: QuestionRequest) -> Answers:
        self.seen.append(request)
        return self.answers


def only(*items: AnswerItem) -> Answers:
    return Answers(answers=items)


async def call(agent: Agent) -> ToolResultEvent:
    """Give ``agent`` a turn (its script calls the tool); the tool's result."""
    agent.followup("ask")
    await agent.when_idle()
    (result,) = of_type(agent.session.events, ToolResultEvent)[-1:]
    assert_balanced(agent.session.events)
    return result


def asking(arguments: dict[str, Any]) -> list[Reply]:
    return [Reply.tool_call(ASK_USER_QUESTION, arguments, call_id="ask-1"), Reply.text("done")]


def text_of(result: ToolResultEvent) -> str:
    (block,) = result.data.message.content
    (text,) = block.content  # type: ignore[union-attr]
    return text.text  # type: ignore[union-attr,no-any-return]


def test_the_schema_is_dsh_s_byte_for_byte() -> None:
    """Name, description and parameters equal the entry of DSH's pinned tool schemas for the
    child-question scenario, key order included."""
    (dsh,) = [tool for tool in json.loads(SCHEMAS.read_bytes())["initial"]
              if tool["name"] == ASK_USER_QUESTION]
    schema = UserQuestions().tool.schema
    ours = json.loads(msgspec.json.encode(schema))
    assert ours == dsh
    assert json.dumps(ours["parameters"]) == json.dumps(dsh["parameters"])
    assert "value" not in dsh["parameters"]["properties"]["questions"]["items"]["properties"]


def test_asks_the_answerer_and_answers_with_compact_json() -> None:
    """The tool hands the answerer the questions as asked and returns its answer as JSON."""
    async def main() -> None:
        host = make_host()
        answerer = Recorder(only(AnswerItem(id="pkg", selected=("pnpm",))))
        UserQuestions(answerer).install(host)
        agent, _ = scripted(host, asking({"questions": [{
            "id": "pkg", "question": "Which package manager should I use?",
            "options": [{"label": "pnpm", "description": "Use pnpm workspaces."}]}]}))
        result = await call(agent)
        assert text_of(result) == '{"answers":[{"id":"pkg","selected":["pnpm"]}]}'
        assert result.data.message.content[0].is_error is False  # type: ignore[union-attr]
        (request,) = answerer.seen
        assert request.agent is agent
        assert request.questions[0].options == (
            QuestionOption(label="pnpm", description="Use pnpm workspaces."),)
        await host.aclose()
    run(main)


def test_recommended_labels_and_headers_pass_through() -> None:
    """Option labels (a "(Recommended)" suffix included) and a header reach the answerer
    unchanged, absent fields stay absent."""
    async def main() -> None:
        host = make_host()
        answerer = Recorder(only(AnswerItem(id="pkg", selected=("pnpm (Recommended)",))))
        UserQuestions(answerer).install(host)
        agent, _ = scripted(host, asking({"questions": [{
            "id": "pkg", "header": "Confirm", "question": "Which package manager?",
            "options": [{"label": "pnpm (Recommended)"}, {"label": "npm"}]}]}))
        await call(agent)
        (question,) = answerer.seen[0].questions
        assert question.header == "Confirm"
        assert question.options == (QuestionOption(label="pnpm (Recommended)"),
                                    QuestionOption(label="npm"))
        assert msgspec.json.encode(question.options[1]) == b'{"label":"npm"}'
        await host.aclose()
    run(main)


def test_custom_answers_and_multi_select_are_projected() -> None:
    """Multi-select choices and free text come back exactly as DSH writes them."""
    async def main() -> None:
        host = make_host()
        answerer = Recorder(only(
            AnswerItem(id="targets", selected=("tests", "docs"), custom="release notes"),
            AnswerItem(id="labels-only", selected=("tests",)),
            AnswerItem(id="notes", selected=(), custom="ship today")))
        UserQuestions(answerer).install(host)
        agent, _ = scripted(host, asking({"questions": [
            {"id": "targets", "question": "What should I update?",
             "options": [{"label": "tests"}, {"label": "docs"}], "multi_select": True},
            {"id": "labels-only", "question": "Which labels should I keep?",
             "options": [{"label": "tests"}, {"label": "docs"}], "multi_select": True},
            {"id": "notes", "question": "Any note?"}]}))
        result = await call(agent)
        assert text_of(result) == (
            '{"answers":[{"id":"targets","selected":["tests","docs"],"custom":"release notes"},'
            '{"id":"labels-only","selected":["tests"]},'
            '{"id":"notes","selected":[],"custom":"ship today"}]}')
        assert [q.multi_select for q in answerer.seen[0].questions] == [True, True, None]
        await host.aclose()
    run(main)


def test_refusals_carry_the_user_question_error_key() -> None:
    """Without an answerer, and for an empty batch, the result is an error with
    {UserQuestionError, code}."""
    async def main() -> None:
        for arguments, code, text in (
                ({"questions": [{"id": "continue", "question": "Continue?"}]}, "NO_PROVIDER",
                 "Error: no user-questions provider is registered"),
                ({"questions": []}, "EMPTY_QUESTIONS",
                 "Error: ask_user_question requires at least one question")):
            host = make_host()
            UserQuestions().install(host)
            agent, _ = scripted(host, asking(arguments))
            result = await call(agent)
            assert result.data.error == ToolErrorInfo(name="UserQuestionError", code=code)
            assert text_of(result) == text
            await host.aclose()
    run(main)


def test_a_delegated_child_is_told_to_carry_its_question() -> None:
    """A one-shot child's call is refused with DSH's text and {UserQuestionError,
    DELEGATED_CALLER}, the answerer is never asked, and the child goes on to its answer."""
    async def main() -> None:
        host = make_host()
        SubagentRuntime(host).register_provider(SpawnProvider())
        answerer = Recorder(only())
        UserQuestions(answerer).install(host)
        parent, model = scripted(host)
        model.add(*asking({"questions": [{
            "id": "cuda-fallback", "header": "Deployment",
            "question": "Should deployment use the CUDA fallback?"}]}))
        child_run = await host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="ask"),)), parent=parent)
        result = await child_run.result
        child = child_run.local_agent
        assert child is not None
        (refused,) = of_type(child.session.events, ToolResultEvent)
        assert text_of(refused) == (
            "Error: human interaction is unavailable while the calling agent is owned by "
            "another live agent; include the unresolved question or decision in the child "
            "agent's final result")
        assert refused.data.error == ToolErrorInfo(name="UserQuestionError",
                                                   code="DELEGATED_CALLER")
        assert answerer.seen == []
        assert result.output[0].text == "done"  # type: ignore[union-attr]
        await child_run.dispose()
        await host.aclose()
    run(main)


def test_cancelling_the_asker_cancels_the_wait_and_closes_the_log() -> None:
    """An agent cancelled while the human has not answered stops waiting; its log is
    balanced."""
    async def main() -> None:
        host = make_host()
        waiting, cancelled = asyncio.Event(), asyncio.Event()

        async def slow(request: QuestionRequest) -> Answers:
            waiting.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            raise AssertionError("unreachable")

        UserQuestions(slow).install(host)
        agent, _ = scripted(host, asking({"questions": [{"id": "c", "question": "Continue?"}]}))
        agent.followup("ask")
        await waiting.wait()
        agent.cancel()
        await agent.when_idle()
        assert cancelled.is_set()
        assert_balanced(agent.session.events)
        await host.aclose()
    run(main)


def test_uninstalling_removes_the_tool() -> None:
    """The tool leaves the host's registry when uninstalled; installing twice is refused."""
    host = make_host()
    questions = UserQuestions()
    questions.install(host)
    assert host.tools.get(ASK_USER_QUESTION) is questions.tool
    with pytest.raises(ValueError, match="already installed"):
        questions.install(host)
    questions.uninstall()
    assert host.tools.get(ASK_USER_QUESTION) is None
