"""OpenAI Chat Completions histories: the ``messages`` list of ``chat.completions.create``.

The rule (as the provider enforces it, with its error texts):

* An assistant message with ``tool_calls`` must be followed, at once, by one ``tool`` message per
  call (any order): "An assistant message with 'tool_calls' must be followed by tool messages
  responding to each 'tool_call_id'. The following tool_call_ids did not have response
  messages: …" (rule ``unanswered-call``, at the assistant message). A system, developer, user
  or assistant message before the last result breaks it just as the end of the history does.
* A ``tool`` message must answer a call of the assistant message its run of tool messages
  follows: "Invalid parameter: messages with role 'tool' must be a response to a preceeding
  message with 'tool_calls'." (``orphan-result``, at the tool message).
* One result per call: "Invalid parameter: Duplicate value for 'tool_call_id' of …"
  (``duplicate-result``, at the second one); one id per call of a message (``duplicate-call``).
* A ``tool`` message needs its ``tool_call_id`` (``shape``).

A *step* is a run of consecutive assistant messages; a turn completes where a step without tool
calls ends. The completed-turn cut is the end of the last such step before anything breaks.
The legacy ``function_call`` / ``function`` pair carries no ids: it is read, not checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from returns.result import Result

from .._checking import unchecked
from ..events import (
    AssistantMessage,
    Event,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
)
from ..history import Message
from ..trace import Violation
from .common import (
    FormatViolation,
    History,
    balance_of,
    from_dsh_log,
    plain_text,
    read_history,
)
from .common import completed_turn_prefix as _prefix

__all__ = [
    "ROLES",
    "ChatFunction",
    "ChatToolCall",
    "ChatMessage",
    "decode_history",
    "check_balance",
    "completed_turn_cut",
    "completed_turn_prefix",
    "from_model_history",
    "from_dsh",
]

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


class ChatFunction(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None = None
    arguments: Any = None


class ChatToolCall(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    type: str | None = None
    function: ChatFunction | None = None


class ChatMessage(msgspec.Struct, frozen=True, kw_only=True):
    """The parts of a chat message the rules read; ``content`` is kept as given."""

    role: str
    content: Any = None
    tool_calls: tuple[ChatToolCall, ...] | None = None
    tool_call_id: str | None = None
    name: str | None = None


@unchecked
def _check(index: int, message: ChatMessage) -> FormatViolation | None:
    if message.role not in ROLES:
        return FormatViolation(index=index, rule="shape",
                               problem=f"role {message.role!r} is not one of "
                                       f"{', '.join(sorted(ROLES))}")
    if message.role == "tool" and not message.tool_call_id:
        return FormatViolation(index=index, rule="shape",
                               problem="a tool message needs its tool_call_id (\"Missing "
                                       f"required parameter: 'messages[{index}].tool_call_id'\")")
    return None


@unchecked
def _unanswered(index: int, waiting: dict[str, None]) -> FormatViolation:
    return FormatViolation(index=index, rule="unanswered-call",
                           problem="an assistant message with 'tool_calls' must be followed by "
                                   "tool messages responding to each 'tool_call_id'; these did "
                                   f"not get one: {', '.join(waiting)}")


@unchecked
def _fold(items: tuple[ChatMessage, ...],
          ) -> tuple[int, FormatViolation | None, FormatViolation | None]:
    cut = 0
    waiting: dict[str, None] = {}  # calls of the last assistant message still without a result
    answered: set[str] = set()  # calls answered in the current run of tool messages
    calls_at = -1  # index of the assistant message those calls came from
    in_step = False
    step_calls = False
    for index, message in enumerate(items):
        role = message.role
        if role == "assistant":
            if waiting:
                return cut, _unanswered(calls_at, waiting), None
            if not in_step:
                in_step, step_calls = True, False
            if message.tool_calls:
                ids = [call.id for call in message.tool_calls]
                if len(set(ids)) != len(ids):
                    twice = next(i for n, i in enumerate(ids) if i in ids[:n])
                    return cut, FormatViolation(
                        index=index, rule="duplicate-call",
                        problem=f"tool call id {twice} is used twice in one message"), None
                waiting = dict.fromkeys(ids)
                answered = set()
                calls_at, step_calls = index, True
            continue
        if in_step:
            in_step = False
            if not step_calls:
                cut = index
        if role == "tool":
            call_id = message.tool_call_id
            assert call_id is not None  # _check refused a tool message without one
            if call_id in waiting:
                del waiting[call_id]
                answered.add(call_id)
                continue
            if call_id in answered:
                return cut, FormatViolation(
                    index=index, rule="duplicate-result",
                    problem=f"a second tool message for tool_call_id {call_id} (\"Duplicate "
                            f"value for 'tool_call_id' of '{call_id}'\")"), None
            return cut, FormatViolation(
                index=index, rule="orphan-result",
                problem=f"tool message for {call_id} is not a response to a preceding "
                        "message with 'tool_calls' that made that call"), None
        if waiting:
            return cut, _unanswered(calls_at, waiting), None
        answered = set()
    if in_step and not step_calls:
        cut = len(items)
    return cut, None, (_unanswered(calls_at, waiting) if waiting else None)


def decode_history(data: Sequence[Any]) -> History[ChatMessage]:
    """Read a chat ``messages`` list (dicts, or the SDK's objects) and check it, in one O(n) pass.

    >>> history = decode_history([
    ...     {"role": "user", "content": "Weather in Paris?"},
    ...     {"role": "assistant", "content": None, "tool_calls": [
    ...         {"id": "c1", "type": "function",
    ...          "function": {"name": "weather", "arguments": "{}"}}]}])
    >>> history.completed_prefix_length, history.end_violation.rule
    (0, 'unanswered-call')
    """
    return read_history("openai-chat", data, ChatMessage, "messages", check=_check,
                        fold=_fold)


def _history(history: History[ChatMessage] | Sequence[Any]) -> History[ChatMessage]:
    return history if isinstance(history, History) else decode_history(history)


def check_balance(history: History[ChatMessage] | Sequence[Any],
                  ) -> Result[History[ChatMessage], FormatViolation]:
    """``Success(history)`` when OpenAI would accept it as ``messages``, else the violation."""
    return balance_of(_history(history))


def completed_turn_cut(history: History[ChatMessage] | Sequence[Any]) -> int:
    """The length of the completed-turn prefix (O(1) on a decoded history)."""
    return _history(history).completed_prefix_length


def completed_turn_prefix(history: History[ChatMessage] | Sequence[Any]) -> Sequence[Any]:
    """The caller's messages through the last completed turn, as a view (O(1) once decoded)."""
    return _prefix(_history(history))


# --------------------------------------------------------------------------- from DSH


def from_model_history(messages: Sequence[Message]) -> tuple[dict[str, Any], ...]:
    """Chat messages for what a model saw (``core.model_history``); the shell's projection.

    User text blocks are joined by blank lines (an image becomes ``[image omitted]``: the log
    holds no image data); reasoning is not sent back; a tool result's text is its content.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            text = "\n\n".join(b.text for b in message.content if isinstance(b, TextBlock))
            calls = [{"id": b.id, "type": "function",
                      "function": {"name": b.name, "arguments": b.arguments}}
                     for b in message.content if isinstance(b, ToolCallBlock)]
            if calls:
                out.append({"role": "assistant", "content": text or None, "tool_calls": calls})
            else:
                out.append({"role": "assistant", "content": text})
        elif isinstance(message, ToolResultMessage):
            out.extend({"role": "tool", "tool_call_id": b.tool_call_id,
                        "content": plain_text(b.content)}
                       for b in message.content if isinstance(b, ToolResultBlock))
        else:
            out.append({"role": "user", "content": plain_text(message.content)})
    return tuple(out)


def from_dsh(events: Sequence[Event]) -> Result[tuple[dict[str, Any], ...], Violation]:
    """The chat messages of a DSH log's model history (a fork seed, typically).

    The log is traced first; a log that breaks a rule gives that rule's ``Violation``.
    """
    return from_dsh_log(events, from_model_history)
