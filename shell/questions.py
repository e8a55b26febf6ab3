"""Asking the human: DSH's ``dsh-user-questions`` service and ``dsh-tool-ask-user`` tool (texts,
schema and question types are the core's; the rules: docs/api-shell-runtime.md). Ownership is
runtime ownership, not lineage: a session with lineage resumed as a top-level agent asks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

import msgspec

from ..core import (
    ASK_USER_QUESTION,
    ASK_USER_QUESTION_DESCRIPTION,
    AnswerItem,
    Answers,
    Question,
    QuestionIntent,
    QuestionOption,
    ask_user_question_schema,
    intent_refusal,
    questions_from_arguments,
)
from .abort import AbortSignal
from .tools import CallingAgent, Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from .agent import Agent
    from .subagents.registry import SubagentHost

__all__ = [
    "ASK_USER_QUESTION", "ASK_USER_QUESTION_DESCRIPTION", "ASK_USER_QUESTION_PARAMETERS",
    "Answerer", "AnswerItem", "Answers", "DelegateHost", "Question", "QuestionIntent",
    "QuestionOption", "QuestionRequest", "UserQuestionError", "UserQuestions", "owner_id",
    "owning_agent",
]

#: DSH's compiled JSON Schema, in its key order.
ASK_USER_QUESTION_PARAMETERS: Mapping[str, Any] = msgspec.json.decode(
    ask_user_question_schema().parameters)

_DELEGATED = ("human interaction is unavailable while the calling agent is owned by another "
              "live agent; include the unresolved question or decision in the child agent's "
              "final result")


class UserQuestionError(ToolError):
    """A question refused before (or instead of) reaching the human; ``code`` is DSH's."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message, name="UserQuestionError", code=code)
        self.code = code


@dataclass(frozen=True)
class QuestionRequest:
    """What an answerer is asked: the questions and, for a tool call, the asking agent."""

    questions: tuple[Question, ...]
    agent: CallingAgent | None = None


#: The UI side: collects the human's answer to a request.
Answerer: TypeAlias = Callable[[QuestionRequest], Awaitable[Answers]]


@runtime_checkable
class DelegateHost(Protocol):
    """A host that runs agents for subagent runs held on another host (a Ray worker's)."""

    def remote_owner(self, agent: CallingAgent) -> str | None:
        """The id of the agent, on another host, whose live run has ``agent`` as its child."""


def owning_agent(host: SubagentHost, agent: CallingAgent) -> Agent | None:
    """The parent of the live subagent run of ``host`` whose child ``agent`` is, or ``None``."""
    if not isinstance(agent.session.header.parent_session, str):
        return None  # every subagent child's header names its parent; this is no child
    for run in host.subagents.runs():
        if run.local_agent is agent:
            return run.parent
    return None


def owner_id(host: SubagentHost, agent: CallingAgent) -> str | None:
    """The id of the live agent owning ``agent``, on ``host`` or, for a :class:`DelegateHost`,
    on the host holding the run; ``None`` for a top-level agent."""
    local = owning_agent(host, agent)
    if local is not None:
        return local.id
    if isinstance(host, DelegateHost):
        return host.remote_owner(agent)
    return None


def _aborted() -> UserQuestionError:
    return UserQuestionError("ask_user_question was aborted before the user answered",
                             "ASK_ABORTED")


class UserQuestions:
    """A host's question service and its ``ask_user_question`` tool."""

    def __init__(self, answerer: Answerer | None = None) -> None:
        self._answerer = answerer
        self._host: SubagentHost | None = None
        self.tool = Tool(ASK_USER_QUESTION, ASK_USER_QUESTION_DESCRIPTION,
                         ASK_USER_QUESTION_PARAMETERS, self._call)

    @property
    def answerer(self) -> Answerer | None:
        return self._answerer

    def register_answerer(self, answerer: Answerer) -> Callable[[], None]:
        """Make ``answerer`` the one that answers; returns its idempotent unregistration."""
        if self._answerer is not None:
            raise UserQuestionError("a user-questions provider is already registered",
                                    "DUPLICATE_PROVIDER")
        self._answerer = answerer

        def unregister() -> None:
            if self._answerer is answerer:
                self._answerer = None

        return unregister

    def install(self, host: SubagentHost) -> None:
        """Register ``ask_user_question`` in ``host``'s tools and serve its agents."""
        if self._host is not None:
            raise ValueError("the user-questions tool is already installed")
        host.tools.register(self.tool)
        self._host = host

    def uninstall(self) -> None:
        host, self._host = self._host, None
        if host is not None:
            host.tools.withdraw((self.tool,))

    async def ask(self, questions: Sequence[Question], *, agent: CallingAgent | None = None,
                  signal: AbortSignal | None = None) -> Answers:
        """Ask the human through the answerer, after DSH's checks (each a
        :class:`UserQuestionError`)."""
        if signal is not None and signal.aborted:
            raise _aborted()
        if not questions:
            raise UserQuestionError("ask_user_question requires at least one question",
                                    "EMPTY_QUESTIONS")
        if agent is not None:
            host = self._host
            live = None if host is None else host.agents.get(agent.id)
            if host is None or live is None or live is not agent:
                raise UserQuestionError(
                    "human interaction requires the exact live calling agent when an agent "
                    "is supplied", "CALLER_NOT_LIVE")
            if owner_id(host, live) is not None:
                raise UserQuestionError(_DELEGATED, "DELEGATED_CALLER")
        refused = intent_refusal(questions)
        if refused is not None:
            raise UserQuestionError(refused, "BAD_INTENT")
        answerer = self._answerer
        if answerer is None:
            raise UserQuestionError("no user-questions provider is registered", "NO_PROVIDER")
        answers = await answerer(QuestionRequest(questions=tuple(questions), agent=agent))
        if not isinstance(answers, Answers):
            raise TypeError(f"the answerer returned {type(answers).__name__}, not Answers")
        return answers

    async def _call(self, args: dict[str, Any], ctx: ToolContext) -> str:
        if ctx.cancel_cause is not None:
            raise _aborted()
        questions = questions_from_arguments(args["questions"])
        answers = await ctx.run(self.ask(questions, agent=ctx.agent))
        return msgspec.json.encode(answers).decode()
