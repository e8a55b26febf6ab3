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
* Roles are ``user`` and ``assistant`` (the system prompt is the request's ``system``
  parameter); ``tool_use`` belongs in assistant messages, ``tool_result`` in user ones.

A *step* is a run of assistant messages (Anthropic joins consecutive ones into one turn); a
turn completes where a step ends with no client tool call and no server call still running.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from returns.result import Result

from .._checking import unchecked
from ..events import (
    AssistantMessage,
    ContentBlock,
    Event,
    ImageBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
)
from ..history import Message
from ..trace import Violation
from .common import (
    IMAGE_PLACEHOLDER,
    FormatViolation,
    History,
    balance_of,
    from_dsh_log,
    read_history,
)
from .common import completed_turn_prefix as _prefix

__all__ = [
    "SERVER_CALL_TYPES",
    "AnthropicBlock",
    "AnthropicMessage",
    "decode_history",
    "check_balance",
    "completed_turn_cut",
    "completed_turn_prefix",
    "from_model_history",
    "from_dsh",
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
def _check(index: int, message: AnthropicMessage) -> FormatViolation | None:
    role = message.role
    if role not in ("user", "assistant"):
        hint = (" (the system prompt is the request's top-level `system` parameter)"
                if role == "system" else "")
        return FormatViolation(index=index, rule="shape",
                               problem=f"unexpected role {role!r}: messages alternate 'user' and "
                                       f"'assistant'{hint}")
    content = message.content
    for position, block in enumerate(() if isinstance(content, str) else content):
        where = f"messages.{index}.content.{position}"
        kind = block.type
        if kind == "tool_use" or kind in SERVER_CALL_TYPES:
            if role != "assistant":
                return FormatViolation(index=index, rule="shape",
                                       problem=f"{where}: a `{kind}` block belongs in an "
                                               "assistant message")
            if not block.id:
                return FormatViolation(index=index, rule="shape",
                                       problem=f"{where}.id: Field required")
        elif kind == "tool_result":
            if role != "user":
                return FormatViolation(index=index, rule="shape",
                                       problem=f"{where}: a `tool_result` block belongs in a "
                                               "user message")
            if not block.tool_use_id:
                return FormatViolation(index=index, rule="shape",
                                       problem=f"{where}.tool_use_id: Field required")
        elif kind == "thinking" and block.signature is None:
            return FormatViolation(index=index, rule="shape",
                                   problem=f"{where}.thinking.signature: Field required")
        elif kind == "redacted_thinking" and block.data is None:
            return FormatViolation(index=index, rule="shape",
                                   problem=f"{where}.redacted_thinking.data: Field required")
    return None


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
        content = message.content
        for block in () if isinstance(content, str) else content:
            kind = block.type
            if kind == "tool_use":
                assert block.id is not None
                if block.id in calls:
                    return FormatViolation(index=index, rule="duplicate-call",
                                           problem=f"`tool_use` id {block.id} is used twice")
                calls[block.id] = None
            elif kind in SERVER_CALL_TYPES:
                assert block.id is not None
                self.server_open[block.id] = block.name or kind
                self.server_at[block.id] = index
            elif _is_server_result(block):
                if block.tool_use_id not in self.server_open:
                    return FormatViolation(
                        index=index, rule="orphan-result",
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
                    index=self.server_at[call_id], rule="server-call-unanswered",
                    problem=f"`{name}` tool use with id `{call_id}` was found without a "
                            "corresponding result block in its assistant turn")
            if not self.step_calls:
                self.cut = index
        blocks = () if isinstance(message.content, str) else message.content
        results = [b.tool_use_id or "" for b in blocks if b.type == "tool_result"]
        calls = self.calls
        if not calls:
            if results:
                return FormatViolation(
                    index=index, rule="orphan-result",
                    problem=f"unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{results[0]}: the previous message made no tool call")
            self.turn_start, self.loop_open = None, False
            return None
        seen: set[str] = set()
        for call_id in results:
            if call_id not in calls:
                return FormatViolation(
                    index=index, rule="orphan-result",
                    problem=f"unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{call_id}. Each `tool_result` block must have a corresponding "
                            "`tool_use` block in the previous message")
            if call_id in seen:
                return FormatViolation(index=index, rule="duplicate-result",
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

    def end(self, items: tuple[AnthropicMessage, ...]) -> FormatViolation | None:
        if self.in_step:
            if self.calls:
                return _unanswered(self.calls_at, self.calls)
            if not self.step_calls and not self.server_open:
                self.cut = len(items)
            return None
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
    return FormatViolation(index=index, rule="unanswered-call",
                           problem="`tool_use` ids were found without `tool_result` blocks "
                                   f"immediately after: {', '.join(calls)}. Each `tool_use` "
                                   "block must have a corresponding `tool_result` block in the "
                                   "next message")


@unchecked
def _fold(items: tuple[AnthropicMessage, ...], thinking: bool | None,
          ) -> tuple[int, FormatViolation | None, FormatViolation | None]:
    fold = _Fold(thinking)
    for index, message in enumerate(items):
        step = fold.assistant if message.role == "assistant" else fold.user
        problem = step(index, message)
        if problem is not None:
            return fold.cut, problem, None
    end = fold.end(items)
    return fold.cut, None, end


def decode_history(data: Sequence[Any], *, thinking: bool | None = None,
                   ) -> History[AnthropicMessage]:
    """Read a Messages ``messages`` list (dicts, or the SDK's objects) and check it in one pass.

    ``thinking`` is the request's setting, when known (``None``: inferred from the blocks).

    >>> history = decode_history([
    ...     {"role": "user", "content": "Weather in Paris?"},
    ...     {"role": "assistant", "content": [
    ...         {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}]},
    ...     {"role": "user", "content": [{"type": "text", "text": "hurry"}]}])
    >>> print(history.violation)
    item 1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. \
Each `tool_use` block must have a corresponding `tool_result` block in the next message
    """
    return read_history("anthropic", data, AnthropicMessage, "messages", check=_check,
                        fold=lambda items: _fold(items, thinking))


def _history(history: History[AnthropicMessage] | Sequence[Any]) -> History[AnthropicMessage]:
    return history if isinstance(history, History) else decode_history(history)


def check_balance(history: History[AnthropicMessage] | Sequence[Any], *,
                  thinking: bool | None = None,
                  ) -> Result[History[AnthropicMessage], FormatViolation]:
    """``Success(history)`` when Anthropic would accept it as ``messages``, else the violation.

    ``thinking``: the request's setting, when known; given with a decoded history, the history
    is read again with it (O(n)).
    """
    if thinking is not None:
        source = history.source if isinstance(history, History) else history
        return balance_of(decode_history(source, thinking=thinking))
    return balance_of(_history(history))


def completed_turn_cut(history: History[AnthropicMessage] | Sequence[Any]) -> int:
    """The length of the completed-turn prefix (O(1) on a decoded history)."""
    return _history(history).completed_prefix_length


def completed_turn_prefix(history: History[AnthropicMessage] | Sequence[Any]) -> Sequence[Any]:
    """The caller's messages through the last completed turn, as a view (O(1) once decoded)."""
    return _prefix(_history(history))


# --------------------------------------------------------------------------- from DSH

_JSON = msgspec.json.Decoder()


@unchecked
def _text_blocks(blocks: tuple[ContentBlock, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock) and block.text:
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            out.append({"type": "text", "text": IMAGE_PLACEHOLDER})
    return out


@unchecked
def _input_of(arguments: str) -> dict[str, Any]:
    """A tool_use ``input`` must be an object; text that is not one is kept under one key."""
    try:
        value = _JSON.decode(arguments)
    except msgspec.DecodeError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": arguments}


def from_model_history(messages: Sequence[Message]) -> tuple[dict[str, Any], ...]:
    """Anthropic messages for what a model saw (``core.model_history``).

    Consecutive user-side messages (prompts and tool results) become one user message with the
    results first, as Anthropic requires. Reasoning is dropped: a DSH log holds no signature to
    send it back with, and thinking of completed turns may be left out. Empty text blocks and
    messages left empty are dropped (Anthropic refuses them); an image becomes the text
    ``[image omitted]``; tool arguments that are not a JSON object are kept as
    ``{"arguments": text}``.
    """
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []

    def flush() -> None:
        if results or others:
            out.append({"role": "user", "content": [*results, *others]})
            results.clear()
            others.clear()

    for message in messages:
        if isinstance(message, AssistantMessage):
            content = _text_blocks(message.content)
            content.extend({"type": "tool_use", "id": b.id, "name": b.name,
                            "input": _input_of(b.arguments)}
                           for b in message.content if isinstance(b, ToolCallBlock))
            if content:
                flush()
                out.append({"role": "assistant", "content": content})
        elif isinstance(message, ToolResultMessage):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    result: dict[str, Any] = {"type": "tool_result",
                                              "tool_use_id": block.tool_call_id,
                                              "content": _text_blocks(block.content)}
                    if block.is_error is True:
                        result["is_error"] = True
                    results.append(result)
        else:
            others.extend(_text_blocks(message.content))
    flush()
    return tuple(out)


def from_dsh(events: Sequence[Event]) -> Result[tuple[dict[str, Any], ...], Violation]:
    """The Anthropic messages of a DSH log's model history (a fork seed, typically)."""
    return from_dsh_log(events, from_model_history)
