"""pydantic-ai message histories: the completed-turn seed and the balance check of a
``list[ModelMessage]``, in pydantic-ai's own terms.

Forking inside a tool takes one line::

    result = await child.run(prompt, message_history=completed_turn_seed(ctx.messages))

Rules of the reading:

* Each message maps to one Anthropic Messages message (a ``ModelRequest`` to a user message, a
  ``ModelResponse`` to an assistant one), so the cut and any violation map back one to one; the
  seed is a list of the caller's own ``ModelMessage`` objects.
* A ``ToolCallPart`` (its subclasses too) is a call; a ``ToolReturnPart``, or a
  ``RetryPromptPart`` bound to a tool, in the next request answers it by ``tool_call_id``, as
  pydantic-ai pairs them. Native (provider-run) tool parts carry their own results and, as in
  pydantic-ai's own history pipeline, are left out; so are text, thinking and files, which no
  pairing rule reads. Where a request's parts stand is its model class's to render: results are
  read as coming first.
* A turn completes where a response makes no tool call and no call waits, or where a new run
  begins (a request of another ``run_id``, or with a user prompt) after a request that answered
  every call: a run that ended on an output tool's return is complete. At the history's end
  such a request cannot be told from one the model has yet to answer, so it is read as
  mid-turn until the next run begins.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from returns.result import Failure, Result, Success

from ..core.formats import FormatViolation, History, anthropic

__all__ = ["check_balance", "completed_turn_cut", "completed_turn_seed"]


def _answers(part: Any) -> bool:
    return isinstance(part, ToolReturnPart) or (isinstance(part, RetryPromptPart)
                                                and part.tool_name is not None)


def _calls(message: ModelMessage) -> list[str]:
    if not isinstance(message, ModelResponse):
        return []
    return [p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)]


def _results(message: ModelMessage) -> list[str]:
    if not isinstance(message, ModelRequest):
        return []
    return [p.tool_call_id for p in message.parts if _answers(p)]


def _projected(message: ModelMessage) -> dict[str, Any]:
    if isinstance(message, ModelResponse):
        return {"role": "assistant", "content": [{"type": "tool_use", "id": call}
                                                 for call in _calls(message)]}
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call}
                                        for call in _results(message)]}


def _starts_a_run(message: ModelMessage, before: ModelMessage) -> bool:
    if not isinstance(message, ModelRequest):
        return False
    if message.run_id is not None and before.run_id is not None:
        return bool(message.run_id != before.run_id)
    return any(isinstance(part, UserPromptPart) for part in message.parts)


def _decoded(messages: Sequence[ModelMessage]) -> tuple[History[Any], int]:
    """The pass over the projection, and the cut with run boundaries counted."""
    history = anthropic.decode_history([_projected(m) for m in messages], thinking=False)
    cut = history.completed_prefix_length
    limit = len(messages) if history.violation is None else history.violation.index
    for index in range(limit, cut, -1):
        if 0 < index < len(messages) and isinstance(messages[index - 1], ModelRequest) \
                and _starts_a_run(messages[index], messages[index - 1]):
            return history, index
    return history, cut


def _in_words(violation: FormatViolation, messages: Sequence[ModelMessage]) -> FormatViolation:
    at = violation.index
    following = messages[at + 1] if at + 1 < len(messages) else None
    if violation.rule == "unanswered-call":
        answered = set(_results(following)) if following is not None else set()
        waiting = ", ".join(c for c in _calls(messages[at]) if c not in answered)
        where = ("the next ModelRequest" if following is not None
                 else "a ModelRequest after it (the history ends here)")
        problem = (f"ModelResponse {at}: tool calls without their ToolReturnPart in {where}: "
                   f"{waiting}")
    elif violation.rule in ("orphan-result", "duplicate-result"):
        made = set(_calls(messages[at - 1])) if at > 0 else set()
        results = _results(messages[at])
        if violation.rule == "orphan-result":
            stray = next((r for r in results if r not in made), "")
            problem = (f"ModelRequest {at}: a tool result for {stray} answers no tool call of "
                       "the ModelResponse before it")
        else:
            twice = next((r for n, r in enumerate(results) if r in results[:n]), "")
            problem = f"ModelRequest {at}: a second tool result for {twice}"
    elif violation.rule == "duplicate-call":
        calls = _calls(messages[at])
        twice = next((c for n, c in enumerate(calls) if c in calls[:n]), "")
        problem = f"ModelResponse {at}: tool_call_id {twice} is used by two tool calls"
    else:
        problem = f"message {at}: {violation.problem}"
    return FormatViolation(index=at, rule=violation.rule, problem=problem)


def check_balance(messages: Sequence[ModelMessage],
                  ) -> Result[list[ModelMessage], FormatViolation]:
    """``Success(messages as a list)`` when every tool call is answered where providers want
    it, else the first violation: its ``index`` is the message's, its sentence pydantic-ai's
    terms and the call ids."""
    history, _ = _decoded(messages)
    problem = history.violation or history.end_violation
    if problem is None:
        return Success(list(messages))
    return Failure(_in_words(problem, messages))


def completed_turn_cut(messages: Sequence[ModelMessage]) -> int:
    """The number of messages through the last completed turn."""
    return _decoded(messages)[1]


def completed_turn_seed(messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    """The caller's own messages through the last completed turn: a fork child's
    ``message_history``. O(n)."""
    return list(messages[:completed_turn_cut(messages)])
