"""OpenAI Responses histories: the ``input`` item list of ``responses.create``.

Items are typed by ``type`` (a message may leave it out and give only ``role``). The model's
side of a turn is a run of output items (``reasoning``, assistant ``message``,
``function_call`` and the other tool calls); the caller's side is input messages (user, system,
developer) and the outputs of client tool calls. The rules (with OpenAI's error texts):

* Every client tool call (an item whose type ends in ``_call`` and that carries a ``call_id``:
  ``function_call``, ``custom_tool_call``, ``computer_call``, ``local_shell_call``,
  ``shell_call``, ``apply_patch_call``, a client-executed ``tool_search_call``; also a
  ``program``) needs its output later in the input, paired by ``call_id``: "No tool output found
  for function call call_…." (``unanswered-call``, at the call). The Responses API pairs calls
  and outputs by id across the input, so an output need not follow its call at once.
* An output needs its call before it: "No tool call found for function call output with
  call_id call_…." (``orphan-result``); one output per call (``duplicate-result``), one call per
  ``call_id`` (``duplicate-call``). The output type must match its call (``function_call`` →
  ``function_call_output``, ``X_call`` → ``X_call_output``, ``tool_search_call`` →
  ``tool_search_output``, ``program`` → ``program_output``).
* Hosted tool calls (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
  ``image_generation_call``, ``mcp_call``, …: no ``call_id``) carry their own results and need
  no output; so does a server-executed ``tool_search_call`` (``execution: "server"``, or no
  ``call_id``), with its ``tool_search_output``.
* An ``mcp_approval_request`` waits for the caller's ``mcp_approval_response`` (paired by
  ``approval_request_id``): the step that asks completes no turn, and a history that ends while
  one waits is in flight (``unanswered-call`` at its end). A request left behind by a later
  input message is not refused.
* A reasoning item stays with the item it preceded in its response: "Item 'rs_…' of type
  'reasoning' was provided without its required following item." (``reasoning-alone``: a run of
  output items ends with reasoning).
* Items are unique: "Duplicate item found with id …. Remove duplicate items from your input and
  try again." (``duplicate-item``).
* An ``item_reference`` names an item only the provider holds: what it is, and so what it pairs
  with, cannot be known here (``stored-item``, at the reference); the cut stops before it.

Where the SDK's types (openai 3.57) differ from the API reference, the types are followed: a
``local_shell_call_output`` names its call by ``id`` (it has no ``call_id``); a
``tool_search_call`` may have no ``call_id``.

Not checkable from the list alone: "Item 'fc_…' of type 'function_call' was provided without its
required 'reasoning' item" needs the server's record of which reasoning produced the call; the
cut never separates the two (it only cuts between turns).

A *step* is a run of consecutive output items; a turn completes where a step with no client call
and no approval request ends while no call waits for its output.

>>> history = decode_history([
...     {"role": "user", "content": "Weather in Paris?"},
...     {"type": "reasoning", "id": "rs_1", "summary": []},
...     {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
...     {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
...     {"type": "message", "role": "assistant", "content": "Sunny."}])
>>> history.completed_prefix_length, history.is_balanced
(5, True)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import msgspec

from .._checking import unchecked
from .common import FormatViolation, WireFormat, moved_name

if not TYPE_CHECKING:  # the type checker sees only this module's own names
    def __getattr__(name: str) -> Any:
        return moved_name(__name__, __package__, name)

__all__ = [
    "OUTPUT_OF_CALL",
    "ResponsesItem",
    "FORMAT",
    "decode_history",
    "check_balance",
    "completed_turn_cut",
    "completed_turn_prefix",
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
    "program": "program_output",
})
_CALL_OF_OUTPUT = {output: call for call, output in OUTPUT_OF_CALL.items()}
#: Output-side items that are neither calls nor messages.
_MODEL_SIDE = frozenset({"reasoning", "mcp_list_tools", "mcp_approval_request"})
_INPUT_ROLES = frozenset({"user", "system", "developer"})
_TOOL_SEARCH = frozenset({"tool_search_call", "tool_search_output"})


class ResponsesItem(msgspec.Struct, frozen=True, kw_only=True):
    """The parts of an input item the rules read; ``content`` is kept as given."""

    type: str | None = None
    role: str | None = None
    id: str | None = None
    call_id: str | None = None
    execution: str | None = None
    approval_request_id: str | None = None
    content: Any = None

    @property
    def kind(self) -> str:
        return self.type if self.type is not None else "message"

    @property
    def pairing_id(self) -> str | None:
        """The call id it pairs by: a ``local_shell_call_output`` gives it as its ``id``."""
        if self.call_id is None and self.type == "local_shell_call_output":
            return self.id
        return self.call_id


# Item classes: what an item is to the rules.
_INPUT, _OUTPUT_ITEM, _REASONING, _CLIENT_CALL, _CALL_OUTPUT, _STORED = range(6)


@unchecked
def _class_of(item: ResponsesItem) -> int:
    kind = item.kind
    if kind == "message":
        return _OUTPUT_ITEM if item.role == "assistant" else _INPUT
    if kind == "reasoning":
        return _REASONING
    if kind == "item_reference":
        return _STORED
    if kind in _TOOL_SEARCH and (item.execution == "server" or item.call_id is None):
        return _OUTPUT_ITEM  # run by the server, its output with it
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
def _check(index: int, item: ResponsesItem, klass: int) -> FormatViolation | None:
    if item.type is None and item.role is None:
        return FormatViolation(index=index, rule="shape",
                               problem=f"input[{index}] has neither a `type` nor a `role`")
    kind = item.kind
    if kind == "message" and item.role not in _INPUT_ROLES and item.role != "assistant":
        return FormatViolation(index=index, rule="shape",
                               problem=f"input[{index}].role {item.role!r} is not one of "
                                       "assistant, developer, system, user")
    if klass in (_CLIENT_CALL, _CALL_OUTPUT) and not item.pairing_id:
        key = "id" if kind == "local_shell_call_output" else "call_id"
        return FormatViolation(index=index, rule="shape",
                               problem=f"input[{index}].{key}: a `{kind}` item needs its {key}")
    if klass == _STORED:
        return FormatViolation(
            index=index, rule="stored-item",
            problem=f"input[{index}] is an item_reference to {item.id or '(no id)'}: the item is "
                    "stored by the provider, so what it is and what it pairs with cannot be "
                    "checked here; the cut stops before it")
    return None


@unchecked
def _unanswered(index: int, call_id: str) -> FormatViolation:
    return FormatViolation(index=index, rule="unanswered-call", call_id=call_id,
                           problem=f"No tool output found for function call {call_id}")


@unchecked
def _fold(items: tuple[ResponsesItem, ...], *, strict: bool, total: int,
          ) -> tuple[int, FormatViolation | None, FormatViolation | None]:
    del strict, total  # no strict rules, and no rule that depends on where the history ends
    cut = 0
    waiting: dict[str, tuple[int, str]] = {}  # call_id → (index of the call, output type)
    answered: set[str] = set()
    ids: set[str] = set()
    approvals: dict[str, int] = {}  # approval requests of the last step → their index
    in_step = False
    step_calls = False
    reasoning_at: int | None = None  # a reasoning item not yet followed by its item
    stop: FormatViolation | None = None
    for index, item in enumerate(items):
        klass = _class_of(item)
        stop = _check(index, item, klass)
        if stop is not None:
            break
        # A local_shell_call_output's `id` is its call's id, not an item id of its own.
        item_id = None if item.call_id is None and item.kind == "local_shell_call_output" \
            else item.id
        if item_id is not None:
            if item_id in ids:
                return cut, FormatViolation(
                    index=index, rule="duplicate-item",
                    problem=f"Duplicate item found with id {item_id}. Remove duplicate items "
                            "from your input and try again"), None
            ids.add(item_id)
        if klass in (_OUTPUT_ITEM, _REASONING, _CLIENT_CALL):
            if not in_step:
                in_step, step_calls = True, False
            if klass == _REASONING:
                if reasoning_at is None:
                    reasoning_at = index
                continue
            reasoning_at = None
            if item.kind == "mcp_approval_request":
                approvals[item.id or ""] = index
                step_calls = True
            if klass == _CLIENT_CALL:
                call_id = item.pairing_id or ""
                if call_id in waiting or call_id in answered:
                    return cut, FormatViolation(
                        index=index, rule="duplicate-call", call_id=call_id,
                        problem=f"call_id {call_id} is used by a second call"), None
                waiting[call_id] = (index, _output_type(item.kind))
                step_calls = True
            continue
        if in_step:
            in_step = False
            if reasoning_at is not None:
                return cut, _alone(items, reasoning_at), None
            if not step_calls and not waiting and not approvals:
                cut = index
        if item.kind == "mcp_approval_response":
            approvals.pop(item.approval_request_id or "", None)
        elif klass == _INPUT:
            approvals = {}  # a later input message leaves the requests behind
        if klass == _CALL_OUTPUT:
            call_id = item.pairing_id or ""
            call = waiting.pop(call_id, None)
            kind = item.kind
            if call is not None and call[1] == kind:
                answered.add(call_id)
                continue
            if call is not None:
                return cut, FormatViolation(
                    index=index, rule="orphan-result", call_id=call_id,
                    problem=f"a `{kind}` answers call {call_id}, which is a "
                            f"`{items[call[0]].kind}` (its output is a `{call[1]}`)"), None
            if call_id in answered:
                return cut, FormatViolation(
                    index=index, rule="duplicate-result", call_id=call_id,
                    problem=f"a second output for call {call_id}"), None
            return cut, FormatViolation(
                index=index, rule="orphan-result", call_id=call_id,
                problem=f"No tool call found for function call output with call_id "
                        f"{call_id}"), None
    if in_step and reasoning_at is None and not step_calls and not waiting and not approvals:
        cut = len(items) if stop is None else stop.index
    if stop is not None:
        return cut, stop, None
    if in_step and reasoning_at is not None:
        return cut, None, _alone(items, reasoning_at)
    if waiting:
        call_id, (at, _) = next(iter(waiting.items()))
        return cut, None, _unanswered(at, call_id)
    if approvals:
        request, at = next(iter(approvals.items()))
        return cut, None, FormatViolation(
            index=at, rule="unanswered-call", call_id=request,
            problem=f"mcp_approval_request {request} waits for its mcp_approval_response")
    return cut, None, None


@unchecked
def _alone(items: tuple[ResponsesItem, ...], index: int) -> FormatViolation:
    name = items[index].id or f"input[{index}]"
    return FormatViolation(index=index, rule="reasoning-alone",
                           problem=f"Item '{name}' of type 'reasoning' was provided without its "
                                   "required following item")


#: Responses as a record; the module's functions are its methods (it has no strict rules
#: beyond balance: ``strict`` is taken for symmetry with the other formats).
FORMAT: WireFormat[ResponsesItem] = WireFormat(name="openai-responses", item_type=ResponsesItem,
                                               label="input", fold=_fold)
decode_history, check_balance = FORMAT.decode_history, FORMAT.check_balance
completed_turn_cut, completed_turn_prefix = FORMAT.completed_turn_cut, FORMAT.completed_turn_prefix
