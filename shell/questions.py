"""Asking the human: the ``ask_user_question`` tool and the host-level service behind it (DSH's
``dsh-user-questions`` service and ``dsh-tool-ask-user`` tool; texts, schema and question types
are the core's).

* :class:`UserQuestions` is one host's service: at most one *answerer* (a second is refused,
  ``DUPLICATE_PROVIDER``) and :meth:`UserQuestions.ask`, which refuses in DSH's order, each a
  :class:`UserQuestionError` with DSH's text and code: ``ASK_ABORTED``, ``EMPTY_QUESTIONS``,
  ``CALLER_NOT_LIVE`` (not the host's exact live agent), ``DELEGATED_CALLER`` (owned by another
  live agent: no human would answer it, so it is told to carry the question in its result),
  ``BAD_INTENT``, ``NO_PROVIDER``. Only then is the answerer asked.
* Ownership is runtime ownership, not lineage: an agent is owned while it is the child of a live
  subagent run of the host, or of a run held on another host (a :class:`DelegateHost`, a Ray
  worker's). A session with lineage resumed as a top-level agent asks normally.
* The tool answers with compact JSON (``{"answers":[…]}``); a refusal is ``Error: <text>`` with
  ``error {name: "UserQuestionError", code}``.
"""

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
    "ASK_USER_QUESTION",
    "ASK_USER_QUESTION_DESCRIPTION",
    "ASK_USER_QUESTION_PARAMETERS",
    "Answerer",
    "AnswerItem",
    "Answers",
    "DelegateHost",
    "Question",
    "QuestionIntent",
    "QuestionOption",
    "QuestionRequest",
    "UserQuestionError",
    "UserQuestions",
    "owner_id",
    "owning_agent",
]

#: The tool's parameter schema: DSH's compiled JSON Schema, in its key order.
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
    """A host that runs agents for subagent runs held on another host (a Ray worker's host,
    ``turnfork.shell.ray.WorkerHost``): it knows which of its agents are such children."""

    def remote_owner(self, agent: CallingAgent) -> str | None:
        """The id of the agent, on another host, whose live subagent run has ``agent`` as its
        child, or ``None``."""
        ...


def owning_agent(host: SubagentHost, agent: CallingAgent) -> Agent | None:
    """The live agent of ``host`` that owns ``agent`` at run time (the parent of the live
    subagent run of ``host`` whose child it is), or ``None``."""
    if not isinstance(agent.session.header.parent_session, str):
        return None  # every subagent child's header names its parent; this is no child
    for run in host.subagents.runs():
        if run.local_agent is agent:
            return run.parent
    return None


def owner_id(host: SubagentHost, agent: CallingAgent) -> str | None:
    """The id of the live agent that owns ``agent`` at run time, on ``host``
    (:func:`owning_agent`) or, for a :class:`DelegateHost`, on the host that holds the run;
    ``None`` for a top-level agent."""
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
    """A host's question service and its ``ask_user_question`` tool.

    Args:
        answerer: the host-level answerer (or register one later).
    """

    def __init__(self, answerer: Answerer | None = None) -> None:
        self._answerer = answerer
        self._host: SubagentHost | None = None
        self.tool = Tool(ASK_USER_QUESTION, ASK_USER_QUESTION_DESCRIPTION,
                         ASK_USER_QUESTION_PARAMETERS, self._call)

    @property
    def answerer(self) -> Answerer | None:
        return self._answerer

    def register_answerer(self, answerer: Answerer) -> Callable[[], None]:
        """Make ``answerer`` the one that answers; returns its idempotent unregistration.

        Raises:
            UserQuestionError: ``DUPLICATE_PROVIDER``, one is registered already.
        """
        if self._answerer is not None:
            raise UserQuestionError("a user-questions provider is already registered",
                                    "DUPLICATE_PROVIDER")
        self._answerer = answerer

        def unregister() -> None:
            if self._answerer is answerer:
                self._answerer = None

        return unregister

    def install(self, host: SubagentHost) -> None:
        """Register ``ask_user_question`` in ``host``'s global tools and serve ``host``'s
        agents.

        Raises:
            ValueError: installed already, or the host has a tool of that name.
        """
        if self._host is not None:
            raise ValueError("the user-questions tool is already installed")
        host.tools.register(self.tool)
        self._host = host

    def uninstall(self) -> None:
        """Remove the tool from the host it was installed in."""
        host, self._host = self._host, None
        if host is not None and host.tools.get(ASK_USER_QUESTION) is self.tool:
            host.tools.unregister(ASK_USER_QUESTION)

    async def ask(self, questions: Sequence[Question], *, agent: CallingAgent | None = None,
                  signal: AbortSignal | None = None) -> Answers:
        """Ask the human through the answerer (see the module rules for the checks).

        Raises:
            UserQuestionError: a refusal, with DSH's text and code; ``TypeError`` when the
                answerer returns something other than :class:`Answers`.
        """
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
