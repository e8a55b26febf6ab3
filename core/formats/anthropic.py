"""Anthropic Messages histories: the ``messages`` list of ``messages.create``.

Messages alternate user and assistant turns; a message's ``content`` is a string or a list of
blocks. The rules (with Anthropic's error texts):

* An assistant message's ``tool_use`` blocks must each get a ``tool_result`` block in the very
  next message, a user message: "messages.N: `tool_use` ids were found without `tool_result`
  blocks immediately after: …. Each `tool_use` block must have a corresponding `tool_result`
  block in the next message." (``unanswered-call``, at the assistant message N).
* A ``tool_result`` must answer a ``tool_use`` of the previous message: "messages.N.content.K:
  unexpected `tool_use_id` found in `tool_result` blocks: …. Each `tool_result` block must have
  a corresponding `tool_use` block in the previous message." (``orphan-result``, at N); one
  result per call (``duplicate-result``), one id per call (``duplicate-call``).
* Those results open the user message: "messages.N: Did not find K `tool_result` block(s) at
  the beginning of this message. Messages following `tool_use` blocks must begin with a matching
  number of `tool_result` blocks." (``results-first``, at N).
* Server tools run inside the assistant turn: a ``server_tool_use`` (or ``mcp_tool_use``) needs
  its result block (``web_search_tool_result``, …) in the same assistant turn: "messages.N:
  `web_search` tool use with id … was found without a corresponding `web_search_tool_result`
  block" (``server-call-unanswered``); a result block needs its use before it: "unexpected
  `tool_use_id` found in `…_tool_result` blocks: …. Each `…_tool_result` block must have a
  corresponding `server_tool_use` block before it." (``orphan-result``). A turn paused there
  (``pause_turn``) may end the history: it is sent back as it is, to be continued.
* Thinking stays with its turn: with thinking on, while a tool loop is open (the history ends
  with tool results) the assistant message that began the turn must start with its
  ``thinking`` or ``redacted_thinking`` block: "messages.N.content.0.type: Expected `thinking`
  or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant`
  message must start with a thinking block (preceeding the lastmost set of `tool_use` and
  `tool_result` blocks)." (``thinking-first``). Whether thinking is on is a request setting:
  say it with ``thinking=True`` (or ``False``); left unsaid, the rule is checked when the
  history holds any thinking block.
  A thinking block carries its ``signature`` and a redacted one its ``data`` (``shape``).
* Roles are ``user`` and ``assistant``, and ``system``: anthropic 2.15's ``MessageParam``
  accepts a system message (text only) in the list, which the rules take as the caller's, like a
  user message without results (so one between a ``tool_use`` and its result breaks the pairing).
  ``tool_use`` belongs in assistant messages, ``tool_result`` in user ones.

The strict level (``strict=True``) adds the requests Anthropic refuses for one message's content:
"messages.N: all messages must have non-empty content except for the optional final assistant
message" (``empty-content``: an empty string or list, but in the final assistant message);
"messages: text content blocks must be non-empty" and "… must contain non-whitespace text"
(``empty-text``); "messages.N.content.K.tool_use.input: Input should be a valid dictionary"
(``input-type``).

A *step* is a run of assistant messages (Anthropic joins consecutive ones into one turn); a
turn completes where a step ends with no client tool call and no server call still running.

>>> history = decode_history([
...     {"role": "user", "content": "Weather in Paris?"},
...     {"role": "assistant", "content": [
...         {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}]},
...     {"role": "user", "content": [{"type": "text", "text": "hurry"}]}])
>>> print(history.violation)
item 1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. \
Each `tool_use` block must have a corresponding `tool_result` block in the next message
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import msgspec
from returns.result import Result

from .._checking import checked, unchecked
from .common import FormatViolation, History, WireFormat, as_history, balance_of, moved_name

if not TYPE_CHECKING:  # the type checker sees only this module's own names
    def __getattr__(name: str) -> Any:
        return moved_name(__name__, __package__, name)

__all__ = [
    "SERVER_CALL_TYPES",
    "AnthropicBlock",
    "AnthropicMessage",
    "FORMAT",
    "decode_history",
    "check_balance",
    "completed_turn_cut",
    "completed_turn_prefix",
]

#: Blocks that start a tool run by Anthropic's servers inside the assistant turn; their result
#: is a block whose type ends in ``_tool_result`` (``web_search_tool_result``, ``mcp_tool_result``,
#: ``code_execution_tool_result``, …) in the same turn.
SERVER_CALL_TYPES = frozenset({"server_tool_use", "mcp_tool_use"})
_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


class AnthropicBlock(msgspec.Struct, frozen=True, kw_only=True):
    """The parts of a content block the rules read."""

    type: str
    id: str | None = None
    tool_use_id: str | None = None
    name: str | None = None
    signature: str | None = None
    data: str | None = None
    text: Any = None
    input: Any = None


class AnthropicMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: str
    content: str | tuple[AnthropicBlock, ...]

    @property
    def blocks(self) -> tuple[AnthropicBlock, ...]:
        return () if isinstance(self.content, str) else self.content


@unchecked
def _is_server_result(block: AnthropicBlock) -> bool:
    return block.type != "tool_result" and block.type.endswith("_tool_result")


@unchecked
def _strict(index: int, message: AnthropicMessage, final: bool) -> FormatViolation | None:
    content = message.content
    if not content and not (final and message.role == "assistant"):
        return FormatViolation(index=index, rule="empty-content",
                               problem=f"messages.{index}: all messages must have non-empty "
                                       "content except for the optional final assistant message")
    for position, block in enumerate(message.blocks):
        if block.type == "text" and isinstance(block.text, str) and not block.text.strip():
            what = "be non-empty" if not block.text else "contain non-whitespace text"
            return FormatViolation(index=index, rule="empty-text",
                                   problem=f"messages: text content blocks must {what} "
                                           f"(messages.{index}.content.{position})")
        if block.type == "tool_use" and not isinstance(block.input, dict):
            return FormatViolation(index=index, rule="input-type",
                                   problem=f"messages.{index}.content.{position}.tool_use.input: "
                                           "Input should be a valid dictionary")
    return None


#: The role of the message a block type belongs in, and how a sentence names that message.
_BELONGS_IN: Mapping[str, tuple[str, str]] = MappingProxyType({
    "tool_use": ("assistant", "an assistant"), "tool_result": ("user", "a user"),
    **dict.fromkeys(SERVER_CALL_TYPES, ("assistant", "an assistant"))})
#: The field a block type cannot lack, the path the provider names it by, and whether an empty
#: value lacks it too (an id does; a signature or redacted data may be empty).
_REQUIRED: Mapping[str, tuple[str, str, bool]] = MappingProxyType({
    "tool_use": ("id", ".id", True), "tool_result": ("tool_use_id", ".tool_use_id", True),
    "thinking": ("signature", ".thinking.signature", False),
    "redacted_thinking": ("data", ".redacted_thinking.data", False),
    **dict.fromkeys(SERVER_CALL_TYPES, ("id", ".id", True))})


@unchecked
def _check(index: int, message: AnthropicMessage, strict: bool, final: bool,
           ) -> FormatViolation | None:
    role = message.role
    if role not in ("user", "assistant", "system"):
        return FormatViolation(index=index, rule="shape",
                               problem=f"unexpected role {role!r}: messages are 'user', "
                                       "'assistant' or 'system'")
    for position, block in enumerate(message.blocks):
        kind = block.type
        belongs, required = _BELONGS_IN.get(kind), _REQUIRED.get(kind)
        if belongs is None and required is None:
            continue
        where = f"messages.{index}.content.{position}"
        if belongs is not None and role != belongs[0]:
            return FormatViolation(index=index, rule="shape",
                                   problem=f"{where}: a `{kind}` block belongs in {belongs[1]} "
                                           "message")
        if required is not None:
            field, path, empty_too = required
            value = getattr(block, field)
            if value is None or (empty_too and not value):
                return FormatViolation(index=index, rule="shape",
                                       problem=f"{where}{path}: Field required")
    return _strict(index, message, final) if strict else None


@unchecked
class _Fold:
    """The rules folded over the messages; one instance per pass, never escapes.

    Its per-message methods run behind the checked entry point, so they opt out of beartype."""

    __slots__ = ("calls", "calls_at", "cut", "in_step", "loop_open", "server_at", "server_open",
                 "step_calls", "thinking", "thinking_seen", "turn_start")

    def __init__(self, thinking: bool | None) -> None:
        self.thinking = thinking
        self.cut = 0
        self.calls: dict[str, None] = {}  # tool_use ids of the previous message (assistant)
        self.calls_at = -1
        self.in_step = False
        self.step_calls = False
        self.server_open: dict[str, str] = {}  # server call id → its type, this step
        self.server_at: dict[str, int] = {}
        self.thinking_seen = False
        self.turn_start: int | None = None  # first assistant message since the last prompt
        self.loop_open = False  # the last message holds tool results

    def assistant(self, index: int, message: AnthropicMessage) -> FormatViolation | None:
        if self.calls:
            return _unanswered(self.calls_at, self.calls)
        if not self.in_step:
            self.in_step, self.step_calls = True, False
            self.server_open, self.server_at = {}, {}
        if self.turn_start is None:
            self.turn_start = index
        calls: dict[str, None] = {}
        for block in message.blocks:
            kind = block.type
            call_id = block.id or ""  # _check refused a call block without one
            if kind == "tool_use":
                if call_id in calls:
                    return FormatViolation(index=index, rule="duplicate-call", call_id=call_id,
                                           problem=f"`tool_use` id {call_id} is used twice")
                calls[call_id] = None
            elif kind in SERVER_CALL_TYPES:
                self.server_open[call_id] = block.name or kind
                self.server_at[call_id] = index
            elif _is_server_result(block):
                if block.tool_use_id not in self.server_open:
                    return FormatViolation(
                        index=index, rule="orphan-result", call_id=block.tool_use_id,
                        problem=f"unexpected `tool_use_id` found in `{kind}` blocks: "
                                f"{block.tool_use_id}. Each `{kind}` block must have a "
                                "corresponding `server_tool_use` block before it")
                del self.server_open[block.tool_use_id]
            elif kind in _THINKING_TYPES:
                self.thinking_seen = True
        if calls:
            self.calls, self.calls_at, self.step_calls = calls, index, True
        self.loop_open = False
        return None

    def user(self, index: int, message: AnthropicMessage) -> FormatViolation | None:
        if self.in_step:
            self.in_step = False
            if self.server_open:
                call_id, name = next(iter(self.server_open.items()))
                return FormatViolation(
                    index=self.server_at[call_id], rule="server-call-unanswered", call_id=call_id,
                    problem=f"`{name}` tool use with id `{call_id}` was found without a "
                            "corresponding result block in its assistant turn")
            if not self.step_calls:
                self.cut = index
        blocks = message.blocks
        results = [b.tool_use_id or "" for b in blocks if b.type == "tool_result"]
        calls = self.calls
        if not calls:
            if results:
                return FormatViolation(
                    index=index, rule="orphan-result", call_id=results[0],
                    problem=f"unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{results[0]}: the previous message made no tool call")
            self.turn_start, self.loop_open = None, False
            return None
        seen: set[str] = set()
        for call_id in results:
            if call_id not in calls:
                return FormatViolation(
                    index=index, rule="orphan-result", call_id=call_id,
                    problem=f"unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{call_id}. Each `tool_result` block must have a corresponding "
                            "`tool_use` block in the previous message")
            if call_id in seen:
                return FormatViolation(index=index, rule="duplicate-result", call_id=call_id,
                                       problem=f"a second `tool_result` for {call_id}")
            seen.add(call_id)
        missing = {c: None for c in calls if c not in seen}
        if missing:
            return _unanswered(self.calls_at, missing)
        leading = 0
        while leading < len(blocks) and blocks[leading].type == "tool_result":
            leading += 1
        if leading < len(calls):
            return FormatViolation(
                index=index, rule="results-first",
                problem=f"Did not find {len(calls)} `tool_result` block(s) at the beginning of "
                        "this message. Messages following `tool_use` blocks must begin with a "
                        "matching number of `tool_result` blocks")
        self.calls = {}
        self.loop_open = True
        return None

    def stop(self, length: int) -> None:
        """The history ends (or stops being read) after ``length`` messages: a step still open
        completes its turn there if it made no call and left no server call running."""
        if self.in_step and not self.step_calls and not self.server_open:
            self.cut = length

    def end(self, items: tuple[AnthropicMessage, ...]) -> FormatViolation | None:
        self.stop(len(items))
        if self.in_step:
            return _unanswered(self.calls_at, self.calls) if self.calls else None
        start = self.turn_start
        thinking = self.thinking_seen if self.thinking is None else self.thinking
        if self.loop_open and thinking and start is not None:
            opening = items[start].blocks
            if not opening or opening[0].type not in _THINKING_TYPES:
                found = opening[0].type if opening else "text"
                return FormatViolation(
                    index=start, rule="thinking-first",
                    problem=f"Expected `thinking` or `redacted_thinking`, but found `{found}`: "
                            "with thinking enabled, the assistant message that opens the last "
                            "tool loop must start with its thinking block")
        return None


@unchecked
def _unanswered(index: int, calls: dict[str, None]) -> FormatViolation:
    return FormatViolation(index=index, rule="unanswered-call", call_id=next(iter(calls)),
                           problem="`tool_use` ids were found without `tool_result` blocks "
                                   f"immediately after: {', '.join(calls)}. Each `tool_use` "
                                   "block must have a corresponding `tool_result` block in the "
                                   "next message")


@unchecked
def _fold(items: tuple[AnthropicMessage, ...], *, strict: bool, total: int,
          thinking: bool | None = None,
          ) -> tuple[int, FormatViolation | None, FormatViolation | None]:
    fold = _Fold(thinking)
    for index, message in enumerate(items):
        shape = _check(index, message, strict, index == total - 1)
        if shape is not None:
            fold.stop(index)
            return fold.cut, shape, None
        step = fold.assistant if message.role == "assistant" else fold.user
        problem = step(index, message)
        if problem is not None:
            return fold.cut, problem, None
    end = fold.end(items)
    return fold.cut, None, end


class _Messages(WireFormat[AnthropicMessage], frozen=True, kw_only=True):
    """Anthropic's record: reading and checking take the request's ``thinking`` setting too."""

    @checked
    def decode_history(self, data: Sequence[Any], *, thinking: bool | None = None,
                       strict: bool = False) -> History[AnthropicMessage]:
        """Read a Messages ``messages`` list (dicts, or the SDK's objects) and check it in one
        pass.

        ``thinking`` is the request's setting, when known (``None``: inferred from the blocks);
        ``strict``: check each message's content too (the strict rules).
        """
        return self.read(data, strict=strict, thinking=thinking)

    @checked
    def check_balance(self, history: History[AnthropicMessage] | Sequence[Any], *,
                      thinking: bool | None = None, strict: bool = False,
                      ) -> Result[History[AnthropicMessage], FormatViolation]:
        """``Success(history)`` when Anthropic would accept it as ``messages``, else the
        violation.

        ``thinking``: the request's setting, when known; ``strict``: the strict rules too.
        Given with a decoded history read otherwise, the history is read again with them (O(n)).
        """
        def decode(items: Sequence[Any], *, strict: bool) -> History[AnthropicMessage]:
            return self.decode_history(items, thinking=thinking, strict=strict)

        return balance_of(as_history(history, decode, strict=strict, again=thinking is not None))


#: Anthropic Messages as a record; the module's functions are its methods.
FORMAT = _Messages(name="anthropic", item_type=AnthropicMessage, label="messages", fold=_fold)
decode_history, check_balance = FORMAT.decode_history, FORMAT.check_balance
completed_turn_cut, completed_turn_prefix = FORMAT.completed_turn_cut, FORMAT.completed_turn_prefix
