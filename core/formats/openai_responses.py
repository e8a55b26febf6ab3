"""OpenAI Responses histories: the ``input`` item list of ``responses.create``.

Items are typed by ``type`` (a message may leave it out and give only ``role``). The model's
side of a turn is a run of output items (``reasoning``, assistant ``message``,
``function_call`` and the other tool calls); the caller's side is input messages (user, system,
developer) and the outputs of client tool calls. The rules (with OpenAI's error texts):

* Every client tool call (an item whose type ends in ``_call`` and that carries a ``call_id``:
  ``function_call``, ``custom_tool_call``, ``computer_call``, ``local_shell_call``,
  ``shell_call``, ``apply_patch_call``; also ``tool_search_call``) needs its output later in the
  input, paired by ``call_id``: "No tool output found for function call call_…."
  (``unanswered-call``, at the call). The Responses API pairs calls and outputs by id across
  the input, so an output need not follow its call at once.
* An output needs its call before it: "No tool call found for function call output with
  call_id call_…." (``orphan-result``); one output per call (``duplicate-result``), one call per
  ``call_id`` (``duplicate-call``). The output type must match its call (``function_call`` →
  ``function_call_output``, ``X_call`` → ``X_call_output``, ``tool_search_call`` →
  ``tool_search_output``).
* Hosted tool calls (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
  ``image_generation_call``, ``mcp_call``, …: no ``call_id``) carry their own results and need
  no output.
* A reasoning item stays with the item it preceded in its response: "Item 'rs_…' of type
  'reasoning' was provided without its required following item." (``reasoning-alone``: a run of
  output items ends with reasoning).
* Items are unique: "Duplicate item found with id …. Remove duplicate items from your input and
  try again." (``duplicate-item``).

Not checkable from the list alone: "Item 'fc_…' of type 'function_call' was provided without its
required 'reasoning' item" needs the server's record of which reasoning produced the call; the
cut never separates the two (it only cuts between turns). ``item_reference`` items point at
stored items and are taken as caller-side items that pair nothing.

A *step* is a run of consecutive output items; a turn completes where a step with no client call
ends while no call waits for its output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
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
    "OUTPUT_OF_CALL",
    "ResponsesItem",
    "decode_history",
    "check_balance",
    "completed_turn_cut",
    "completed_turn_prefix",
    "from_model_history",
    "from_dsh",
]

#: Client call types by name, with their output types (another ``X_call`` that carries a
#: ``call_id`` is answered by ``X_call_output``).
OUTPUT_OF_CALL: Mapping[str, str] = MappingProxyType({
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "tool_search_call": "tool_search_output",
})
_CALL_OF_OUTPUT = {output: call for call, output in OUTPUT_OF_CALL.items()}
#: Output-side items that are neither calls nor messages.
_MODEL_SIDE = frozenset({"reasoning", "mcp_list_tools", "mcp_approval_request"})
_INPUT_ROLES = frozenset({"user", "system", "developer"})


class ResponsesItem(msgspec.Struct, frozen=True, kw_only=True):
    """The parts of an input item the rules read; ``content`` is kept as given."""

    type: str | None = None
    role: str | None = None
    id: str | None = None
    call_id: str | None = None
    content: Any = None

    @property
    def kind(self) -> str:
        return self.type if self.type is not None else "message"


# Item classes: what an item is to the rules.
_INPUT, _OUTPUT_ITEM, _REASONING, _CLIENT_CALL, _CALL_OUTPUT = range(5)


@unchecked
def _class_of(item: ResponsesItem) -> int:
    kind = item.type if item.type is not None else "message"
    if kind == "message":
        return _OUTPUT_ITEM if item.role == "assistant" else _INPUT
    if kind == "reasoning":
        return _REASONING
    if kind in OUTPUT_OF_CALL or (kind.endswith("_call") and item.call_id is not None):
        return _CLIENT_CALL
    if kind in _CALL_OF_OUTPUT or (kind.endswith("_call_output") and item.call_id is not None):
        return _CALL_OUTPUT
    if kind.endswith("_call") or kind in _MODEL_SIDE:
        return _OUTPUT_ITEM
    return _INPUT


@unchecked
def _output_type(kind: str) -> str:
    return OUTPUT_OF_CALL.get(kind, kind + "_output")


@unchecked
def _check(index: int, item: ResponsesItem) -> FormatViolation | None:
    if item.type is None and item.role is None:
        return FormatViolation(index=index, rule="shape",
                               problem=f"input[{index}] has neither a `type` nor a `role`")
    kind = item.type if item.type is not None else "message"
    if kind == "message" and item.role not in _INPUT_ROLES and item.role != "assistant":
        return FormatViolation(index=index, rule="shape",
                               problem=f"input[{index}].role {item.role!r} is not one of "
                                       "assistant, developer, system, user")
    if (kind in OUTPUT_OF_CALL or kind in _CALL_OF_OUTPUT) and not item.call_id:
        return FormatViolation(index=index, rule="shape",
                               problem=f"input[{index}].call_id: a `{kind}` item needs its "
                                       "call_id")
    return None


@unchecked
def _unanswered(index: int, call_id: str) -> FormatViolation:
    return FormatViolation(index=index, rule="unanswered-call",
                           problem=f"No tool output found for function call {call_id}")


@unchecked
def _fold(items: tuple[ResponsesItem, ...],
          ) -> tuple[int, FormatViolation | None, FormatViolation | None]:
    cut = 0
    waiting: dict[str, tuple[int, str]] = {}  # call_id → (index of the call, output type)
    answered: set[str] = set()
    ids: set[str] = set()
    in_step = False
    step_calls = False
    reasoning_at: int | None = None  # a reasoning item not yet followed by its item
    for index, item in enumerate(items):
        if item.id is not None:
            if item.id in ids:
                return cut, FormatViolation(
                    index=index, rule="duplicate-item",
                    problem=f"Duplicate item found with id {item.id}. Remove duplicate items "
                            "from your input and try again"), None
            ids.add(item.id)
        klass = _class_of(item)
        if klass in (_OUTPUT_ITEM, _REASONING, _CLIENT_CALL):
            if not in_step:
                in_step, step_calls = True, False
            if klass == _REASONING:
                if reasoning_at is None:
                    reasoning_at = index
                continue
            reasoning_at = None
            if klass == _CLIENT_CALL:
                call_id = item.call_id
                assert call_id is not None
                if call_id in waiting or call_id in answered:
                    return cut, FormatViolation(
                        index=index, rule="duplicate-call",
                        problem=f"call_id {call_id} is used by a second call"), None
                waiting[call_id] = (index, _output_type(item.type or "message"))
                step_calls = True
            continue
        if in_step:
            in_step = False
            if reasoning_at is not None:
                return cut, _alone(items, reasoning_at), None
            if not step_calls and not waiting:
                cut = index
        if klass == _CALL_OUTPUT:
            call_id = item.call_id
            assert call_id is not None
            call = waiting.pop(call_id, None)
            kind = item.type or "message"
            if call is not None and call[1] == kind:
                answered.add(call_id)
                continue
            if call is not None:
                return cut, FormatViolation(
                    index=index, rule="orphan-result",
                    problem=f"a `{kind}` answers call {call_id}, which is a "
                            f"`{items[call[0]].kind}` (its output is a `{call[1]}`)"), None
            if call_id in answered:
                return cut, FormatViolation(
                    index=index, rule="duplicate-result",
                    problem=f"a second output for call {call_id}"), None
            return cut, FormatViolation(
                index=index, rule="orphan-result",
                problem=f"No tool call found for function call output with call_id "
                        f"{call_id}"), None
    if in_step:
        if reasoning_at is not None:
            return cut, None, _alone(items, reasoning_at)
        if not step_calls and not waiting:
            cut = len(items)
    if waiting:
        call_id, (at, _) = next(iter(waiting.items()))
        return cut, None, _unanswered(at, call_id)
    return cut, None, None


@unchecked
def _alone(items: tuple[ResponsesItem, ...], index: int) -> FormatViolation:
    name = items[index].id or f"input[{index}]"
    return FormatViolation(index=index, rule="reasoning-alone",
                           problem=f"Item '{name}' of type 'reasoning' was provided without its "
                                   "required following item")


def decode_history(data: Sequence[Any]) -> History[ResponsesItem]:
    """Read a Responses ``input`` list (dicts, or the SDK's objects) and check it in one pass.

    >>> history = decode_history([
    ...     {"role": "user", "content": "Weather in Paris?"},
    ...     {"type": "reasoning", "id": "rs_1", "summary": []},
    ...     {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
    ...     {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    ...     {"type": "message", "role": "assistant", "content": "Sunny."}])
    >>> history.completed_prefix_length, history.is_balanced
    (5, True)
    """
    return read_history("openai-responses", data, ResponsesItem, "input", check=_check,
                        fold=_fold)


def _history(history: History[ResponsesItem] | Sequence[Any]) -> History[ResponsesItem]:
    return history if isinstance(history, History) else decode_history(history)


def check_balance(history: History[ResponsesItem] | Sequence[Any],
                  ) -> Result[History[ResponsesItem], FormatViolation]:
    """``Success(history)`` when OpenAI would accept it as ``input``, else the violation."""
    return balance_of(_history(history))


def completed_turn_cut(history: History[ResponsesItem] | Sequence[Any]) -> int:
    """The length of the completed-turn prefix (O(1) on a decoded history)."""
    return _history(history).completed_prefix_length


def completed_turn_prefix(history: History[ResponsesItem] | Sequence[Any]) -> Sequence[Any]:
    """The caller's items through the last completed turn, as a view (O(1) once decoded)."""
    return _prefix(_history(history))


# --------------------------------------------------------------------------- from DSH


def from_model_history(messages: Sequence[Message]) -> tuple[dict[str, Any], ...]:
    """Responses input items for what a model saw (``core.model_history``).

    A user message becomes a ``message`` with ``input_text`` parts (an image becomes the text
    ``[image omitted]``); an assistant message its text as an assistant ``message`` and its calls
    as ``function_call`` items; a tool result a ``function_call_output``. Reasoning is dropped
    (a reasoning item needs the provider's id or encrypted content, which a DSH log does not
    hold); an assistant message left with nothing to send is dropped.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            text = "\n\n".join(b.text for b in message.content if isinstance(b, TextBlock))
            if text:
                out.append({"type": "message", "role": "assistant", "content": text})
            out.extend({"type": "function_call", "call_id": b.id, "name": b.name,
                        "arguments": b.arguments}
                       for b in message.content if isinstance(b, ToolCallBlock))
        elif isinstance(message, ToolResultMessage):
            out.extend({"type": "function_call_output", "call_id": b.tool_call_id,
                        "output": plain_text(b.content)}
                       for b in message.content if isinstance(b, ToolResultBlock))
        else:
            out.append({"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": plain_text(message.content)}]})
    return tuple(out)


def from_dsh(events: Sequence[Event]) -> Result[tuple[dict[str, Any], ...], Violation]:
    """The Responses input items of a DSH log's model history (a fork seed, typically)."""
    return from_dsh_log(events, from_model_history)
