"""The host-level question service (DSH packages/interaction/user-questions/tests/
user-questions.spec.ts): one answerer, DSH's refusals in its order, and runtime ownership —
an agent owned by another live agent is never handed to the answerer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _continuation_helpers import continuable_host, start
from _shell_helpers import make_host, run, scripted

from turnfork.core import StartRequest, TextBlock
from turnfork.shell import AbortController, Host, Reply, SpawnProvider, SubagentRuntime
from turnfork.shell.questions import (
    AnswerItem,
    Answers,
    Question,
    QuestionIntent,
    QuestionOption,
    QuestionRequest,
    UserQuestionError,
    UserQuestions,
)

PROCEED = (Question(id="confirm", question="Proceed?"),)
DELEGATED = ("human interaction is unavailable while the calling agent is owned by another live "
             "agent; include the unresolved question or decision in the child agent's final "
             "result")


class Recorder:
    """An answerer that records each request and selects ``answer`` for its first question."""

    def __init__(self, answer: str = "approved") -> None:
        self.seen: list[QuestionRequest] = []
        self.answer = answer

    async def __call__(self, request: QuestionRequest) -> Answers:
        self.seen.append(request)
        return Answers(answers=(AnswerItem(id=request.questions[0].id, selected=(self.answer,)),))


def refusal(awaitable: object) -> UserQuestionError:
    async def main() -> UserQuestionError:
        with pytest.raises(UserQuestionError) as caught:
            await awaitable  # type: ignore[misc]
        return caught.value
    return run(main)


def test_delegates_to_the_answerer() -> None:
    """A request without an agent reaches the answerer as asked, and its answer comes back."""
    answerer = Recorder("yes")
    answers = run(lambda: UserQuestions(answerer).ask(PROCEED))
    assert answers == Answers(answers=(AnswerItem(id="confirm", selected=("yes",)),))
    assert answerer.seen == [QuestionRequest(questions=PROCEED)]


def test_no_answerer_is_refused() -> None:
    """Without an answerer the ask fails with NO_PROVIDER."""
    error = refusal(UserQuestions().ask(PROCEED))
    assert (error.code, str(error)) == ("NO_PROVIDER", "no user-questions provider is registered")
    assert error.info.name == "UserQuestionError"


def test_unregistering_is_idempotent_and_leaves_no_answerer() -> None:
    """An answerer's unregistration may run twice; afterwards asking finds none."""
    questions = UserQuestions()
    unregister = questions.register_answerer(Recorder())
    unregister()
    unregister()
    assert refusal(questions.ask(PROCEED)).code == "NO_PROVIDER"


def test_a_second_answerer_is_refused() -> None:
    """A second answerer does not replace the active one."""
    first = Recorder("first")
    questions = UserQuestions(first)
    with pytest.raises(UserQuestionError) as caught:
        questions.register_answerer(Recorder("second"))
    assert (caught.value.code, str(caught.value)) == (
        "DUPLICATE_PROVIDER", "a user-questions provider is already registered")
    assert questions.answerer is first


def test_an_aborted_signal_fails_before_the_answerer() -> None:
    """An already-aborted ask never reaches the answerer."""
    answerer = Recorder()
    controller = AbortController()
    controller.abort()
    error = refusal(UserQuestions(answerer).ask(PROCEED, signal=controller.signal))
    assert (error.code, str(error)) == (
        "ASK_ABORTED", "ask_user_question was aborted before the user answered")
    assert answerer.seen == []


def test_no_question_is_refused_before_the_answerer() -> None:
    """An empty batch is refused with EMPTY_QUESTIONS."""
    answerer = Recorder()
    error = refusal(UserQuestions(answerer).ask(()))
    assert (error.code, str(error)) == (
        "EMPTY_QUESTIONS", "ask_user_question requires at least one question")
    assert answerer.seen == []


def _spawn_host() -> Host:
    host = make_host()
    SubagentRuntime(host).register_provider(SpawnProvider())
    return host


def test_a_one_shot_child_is_refused_as_delegated() -> None:
    """The child of a live one-shot run is owned by its parent: DELEGATED_CALLER in DSH's
    words, and the answerer is never asked; once the run is disposed it no longer is a child
    of anything live (it is gone from the host)."""
    async def main() -> None:
        host = _spawn_host()
        answerer = Recorder()
        questions = UserQuestions(answerer)
        questions.install(host)
        parent, _ = scripted(host, [Reply.text("CHILD_OK")])
        run_ = await host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="work"),)), parent=parent)
        await run_.result
        child = run_.local_agent
        assert child is not None
        with pytest.raises(UserQuestionError) as caught:
            await questions.ask(PROCEED, agent=child)
        assert (caught.value.code, str(caught.value)) == ("DELEGATED_CALLER", DELEGATED)
        assert answerer.seen == []
        await run_.dispose()
        with pytest.raises(UserQuestionError) as gone:
            await questions.ask(PROCEED, agent=child)
        assert gone.value.code == "CALLER_NOT_LIVE"
        await host.aclose()
    run(main)


def test_a_continuable_child_is_refused_as_delegated(tmp_path: Path) -> None:
    """A resident continuable child is owned by its parent too."""
    async def main() -> None:
        host, parent, model, _ = continuable_host(tmp_path)
        model.add(Reply.text("CHILD_OK"))
        answerer = Recorder()
        questions = UserQuestions(answerer)
        questions.install(host)
        child_id = await start(host, parent)
        child = host.agents.get(child_id)
        assert child is not None
        with pytest.raises(UserQuestionError) as caught:
            await questions.ask(PROCEED, agent=child)
        assert caught.value.code == "DELEGATED_CALLER"
        assert answerer.seen == []
        await host.aclose()
    run(main)


def test_a_session_with_lineage_resumed_as_a_top_level_agent_may_ask() -> None:
    """Lineage is not ownership: a child session run as a top-level agent reaches the
    answerer, with itself as the asking agent."""
    async def main() -> None:
        host = _spawn_host()
        answerer = Recorder("yes")
        questions = UserQuestions(answerer)
        questions.install(host)
        agent, _ = scripted(host, header_meta={"parent_session": "elsewhere", "origin": "subagent",
                                                "delegation_depth": 1})
        answers = await questions.ask(PROCEED, agent=agent)
        assert answers.answers[0].selected == ("yes",)
        assert answerer.seen[0].agent is agent
        await host.aclose()
    run(main)


def test_an_agent_the_host_does_not_hold_live_is_refused() -> None:
    """An agent that is not the host's live instance under its id — the service not installed
    on its host, or a stale object reusing a live id — is refused with CALLER_NOT_LIVE."""
    async def main() -> None:
        host = make_host()
        answerer = Recorder()
        live, _ = scripted(host)
        uninstalled = UserQuestions(answerer)
        with pytest.raises(UserQuestionError) as caught:
            await uninstalled.ask(PROCEED, agent=live)
        assert (caught.value.code, str(caught.value)) == (
            "CALLER_NOT_LIVE",
            "human interaction requires the exact live calling agent when an agent is supplied")
        installed = UserQuestions(answerer)
        installed.install(host)
        stale = host.build_agent(live.session, provider="scripted", model="m")
        with pytest.raises(UserQuestionError) as stale_caught:
            await installed.ask(PROCEED, agent=stale)
        assert stale_caught.value.code == "CALLER_NOT_LIVE"
        assert answerer.seen == []
        await host.aclose()
    run(main)


@pytest.mark.parametrize("options", [(QuestionOption(label="Approve"),), None])
def test_an_intent_naming_none_of_its_options_is_refused(
        options: tuple[QuestionOption, ...] | None) -> None:
    """A plan-review whose approve label is not one of the question's options (or that offers
    none) is refused with BAD_INTENT."""
    answerer = Recorder()
    question = Question(id="plan-review", question="Approve?", detail="# Plan", options=options,
                        intent=QuestionIntent(kind="plan-review", approve="Ship it"))
    error = refusal(UserQuestions(answerer).ask((question,)))
    assert (error.code, str(error)) == (
        "BAD_INTENT", 'question plan-review declares intent plan-review whose approve label '
                      '"Ship it" names none of its options')
    assert answerer.seen == []


def test_a_plan_review_without_its_plan_is_refused() -> None:
    """A plan-review without the detail it reviews is refused with BAD_INTENT."""
    question = Question(id="plan-review", question="Approve?",
                        options=(QuestionOption(label="Approve"),
                                 QuestionOption(label="Keep planning")),
                        intent=QuestionIntent(kind="plan-review", approve="Approve"))
    error = refusal(UserQuestions(Recorder()).ask((question,)))
    assert (error.code, str(error)) == (
        "BAD_INTENT", "question plan-review declares intent plan-review without the detail it "
                      "reviews")


def test_an_intent_naming_an_offered_option_passes_through() -> None:
    """A well-formed intent reaches the answerer unchanged."""
    answerer = Recorder("Approve")
    intent = QuestionIntent(kind="plan-review", approve="Approve")
    questions = (Question(id="plain", question="Proceed?"),
                 Question(id="plan-review", question="Approve?", detail="# Plan", intent=intent,
                          options=(QuestionOption(label="Approve"),
                                   QuestionOption(label="Keep planning"))))
    answers = run(lambda: UserQuestions(answerer).ask(questions))
    assert answers.answers == (AnswerItem(id="plain", selected=("Approve",)),)
    assert answerer.seen[0].questions[1].intent == intent


def test_an_answerer_returning_something_else_is_a_type_error() -> None:
    """An answerer must return Answers; anything else is named."""
    async def loose(request: QuestionRequest) -> Answers:
        return {"answers": []}  # type: ignore[return-value]

    async def main() -> None:
        with pytest.raises(TypeError, match="returned dict, not Answers"):
            await UserQuestions(loose).ask(PROCEED)
    run(main)


def test_a_waiting_ask_is_cancelled_with_its_caller() -> None:
    """Cancelling the asker cancels the answerer's wait (nothing is left running)."""
    waiting = asyncio.Event()
    cancelled = asyncio.Event()

    async def slow(request: QuestionRequest) -> Answers:
        waiting.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        raise AssertionError("unreachable")

    async def main() -> None:
        task = asyncio.ensure_future(UserQuestions(slow).ask(PROCEED))
        await waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert cancelled.is_set()
    run(main)
