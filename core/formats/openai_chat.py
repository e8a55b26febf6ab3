"""OpenAI Chat Completions histories: the ``messages`` list of ``chat.completions.create``.

The balance rules (as the provider enforces them, with its error texts):

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
* The legacy ``function_call`` carries no id: the ``function`` message after it answers it. The
  provider does not pair them, so a call left behind by a later message is accepted; but a
  history that ends while one waits is in flight (``unanswered-call`` at its end), and the
  step that made it completes no turn.

The strict level (``strict=True``) adds the requests the provider refuses for one message's
content: an assistant message with neither ``content`` nor ``tool_calls``/``function_call``
("Invalid value for 'content': expected a string, got null.", ``null-content``); a ``function``
message without ``name`` ("Missing parameter 'name': messages with role 'function' must have a
'name'.", ``function-name``); call ``arguments`` that are not a string ("Invalid type for
'messages[N].tool_calls[K].function.arguments': expected a string, but got an object instead.",
``arguments-type``); ``content: []`` or ``tool_calls: []`` ("Invalid 'messages[N].tool_calls':
empty array. Expected an array with minimum length 1, but got an empty array instead.",
``empty-array``).

A *step* is a run of consecutive assistant messages; a turn completes where a step without tool
calls ends. The completed-turn cut is the end of the last such step before anything breaks.

>>> history = decode_history([
...     {"role": "user", "content": "Weather in Paris?"},
...     {"role": "assistant", "content": None, "tool_calls": [
...         {"id": "c1", "type": "function",
...          "function": {"name": "weather", "arguments": "{}"}}]}])
>>> history.completed_prefix_length, history.end_violation.rule
(0, 'unanswered-call')
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from .._checking import unchecked
from .common import FormatViolation, WireFormat, moved_name

if not TYPE_CHECKING:  # the type checker sees only this module's own names
    def __getattr__(name: str) -> Any:
        return moved_name(__name__, __package__, name)

__all__ = [
    "ROLES",
    "ChatFunction",
    "ChatToolCall",
    "ChatMessage",
    "FORMAT",
    "decode_history",
    "check_balance",
    "completed_turn_cut",
    "completed_turn_prefix",
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
    function_call: ChatFunction | None = None


_JSON_TYPES = ((str, "a string"), (bool, "a boolean"), (int, "an integer"),
               (float, "a number"), (dict, "an object"))


@unchecked
def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "an array")


@unchecked
def _strict(index: int, message: ChatMessage) -> FormatViolation | None:
    where = f"messages[{index}]"
    for key, value in (("content", message.content), ("tool_calls", message.tool_calls)):
        if isinstance(value, list | tuple) and not value:
            return FormatViolation(
                index=index, rule="empty-array",
                problem=f"Invalid '{where}.{key}': empty array. Expected an array with minimum "
                        "length 1, but got an empty array instead.")
    role = message.role
    if (role == "assistant" and message.content is None and not message.tool_calls
            and message.function_call is None):
        return FormatViolation(
            index=index, rule="null-content",
            problem=f"Invalid value for 'content': expected a string, got null. ({where}: an "
                    "assistant message needs content unless it has tool_calls or "
                    "function_call)")
    if role == "function" and not message.name:
        return FormatViolation(index=index, rule="function-name",
                               problem="Missing parameter 'name': messages with role 'function' "
                                       "must have a 'name'.")
    functions = [(f"{where}.tool_calls[{k}].function", call.function)
                 for k, call in enumerate(message.tool_calls or ())]
    functions.append((f"{where}.function_call", message.function_call))
    for path, function in functions:
        if function is not None and not isinstance(function.arguments, str):
            return FormatViolation(
                index=index, rule="arguments-type",
                problem=f"Invalid type for '{path}.arguments': expected a string, but got "
                        f"{_json_type(function.arguments)} instead.")
    return None


@unchecked
def _check(index: int, message: ChatMessage, strict: bool) -> FormatViolation | None:
    if message.role not in ROLES:
        return FormatViolation(index=index, rule="shape",
                               problem=f"role {message.role!r} is not one of "
                                       f"{', '.join(sorted(ROLES))}")
    if message.role == "tool" and not message.tool_call_id:
        return FormatViolation(index=index, rule="shape",
                               problem="a tool message needs its tool_call_id (\"Missing "
                                       f"required parameter: 'messages[{index}].tool_call_id'\")")
    return _strict(index, message) if strict else None


@unchecked
def _unanswered(index: int, waiting: dict[str, None]) -> FormatViolation:
    return FormatViolation(index=index, rule="unanswered-call", call_id=next(iter(waiting)),
                           problem="an assistant message with 'tool_calls' must be followed by "
                                   "tool messages responding to each 'tool_call_id'; these did "
                                   f"not get one: {', '.join(waiting)}")


@unchecked
def _legacy_unanswered(index: int, message: ChatMessage) -> FormatViolation:
    name = message.function_call.name if message.function_call is not None else None
    return FormatViolation(index=index, rule="unanswered-call",
                           problem=f"the assistant's function_call {name or '(unnamed)'} waits "
                                   "for the `function` message that answers it")


@unchecked
def _fold(items: tuple[ChatMessage, ...], *, strict: bool, total: int,
          ) -> tuple[int, FormatViolation | None, FormatViolation | None]:
    del total  # a chat message's rules do not depend on where the history ends
    cut = 0
    waiting: dict[str, None] = {}  # calls of the last assistant message still without a result
    answered: set[str] = set()  # calls answered in the current run of tool messages
    calls_at = -1  # index of the assistant message those calls came from
    legacy_at = -1  # index of an assistant function_call still waiting for its function message
    in_step = False
    step_calls = False
    stop: FormatViolation | None = None
    for index, message in enumerate(items):
        stop = _check(index, message, strict)
        if stop is not None:
            break
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
                        index=index, rule="duplicate-call", call_id=twice,
                        problem=f"tool call id {twice} is used twice in one message"), None
                waiting = dict.fromkeys(ids)
                answered = set()
                calls_at, step_calls = index, True
            if message.function_call is not None:
                legacy_at, step_calls = index, True
            continue
        if in_step:
            in_step = False
            if not step_calls:
                cut = index
        # The function message answers a legacy call; any other leaves it behind (allowed).
        legacy_at = -1
        if role == "tool":
            call_id = message.tool_call_id or ""
            if call_id in waiting:
                del waiting[call_id]
                answered.add(call_id)
                continue
            if call_id in answered:
                return cut, FormatViolation(
                    index=index, rule="duplicate-result", call_id=call_id,
                    problem=f"a second tool message for tool_call_id {call_id} (\"Duplicate "
                            f"value for 'tool_call_id' of '{call_id}'\")"), None
            return cut, FormatViolation(
                index=index, rule="orphan-result", call_id=call_id,
                problem=f"tool message for {call_id} is not a response to a preceding "
                        "message with 'tool_calls' that made that call"), None
        if waiting:
            return cut, _unanswered(calls_at, waiting), None
        answered = set()
    length = len(items) if stop is None else stop.index
    if in_step and not step_calls:
        cut = length
    if stop is not None:
        return cut, stop, None
    if waiting:
        return cut, None, _unanswered(calls_at, waiting)
    if legacy_at >= 0:
        return cut, None, _legacy_unanswered(legacy_at, items[legacy_at])
    return cut, None, None


#: Chat Completions as a record; the module's functions are its methods.
FORMAT: WireFormat[ChatMessage] = WireFormat(name="openai-chat", item_type=ChatMessage,
                                             label="messages", fold=_fold)
decode_history, check_balance = FORMAT.decode_history, FORMAT.check_balance
completed_turn_cut, completed_turn_prefix = FORMAT.completed_turn_cut, FORMAT.completed_turn_prefix
