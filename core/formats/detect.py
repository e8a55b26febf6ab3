"""Telling the three wire formats apart, and reading a history or a request body in any of them.

A request body holds its history under ``input`` (Responses) or ``messages`` (Chat,
Anthropic); a history of plain user and assistant text is valid in all three formats, so
detection reads only markers a single format has, and says so when it cannot tell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from returns.result import Failure, Result, Success

from .._checking import checked
from . import anthropic, openai_chat, openai_responses
from .common import FORMAT_NAMES, FormatName, History

__all__ = ["detect_format", "decode_history", "history_items", "server_side_history"]

_ALL: frozenset[FormatName] = frozenset(FORMAT_NAMES)
_CHAT: frozenset[FormatName] = frozenset({"openai-chat"})
_RESPONSES: frozenset[FormatName] = frozenset({"openai-responses"})
_ANTHROPIC: frozenset[FormatName] = frozenset({"anthropic"})
_NOT_ANTHROPIC: frozenset[FormatName] = frozenset({"openai-chat", "openai-responses"})
_CHAT_OR_ANTHROPIC: frozenset[FormatName] = frozenset({"openai-chat", "anthropic"})
_PART_FORMATS: Mapping[str, frozenset[FormatName]] = {
    "text": _CHAT_OR_ANTHROPIC, "image_url": _CHAT, "input_audio": _CHAT, "file": _CHAT,
    "input_text": _RESPONSES, "output_text": _RESPONSES, "input_image": _RESPONSES,
    "input_file": _RESPONSES, "summary_text": _RESPONSES, "refusal": _NOT_ANTHROPIC,
}


def _get(item: Any, key: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(key)
    return getattr(item, key, None)


def _formats_of_part(part: Any) -> frozenset[FormatName]:
    kind = _get(part, "type")
    if not isinstance(kind, str):
        return _ALL
    if kind in _PART_FORMATS:
        return _PART_FORMATS[kind]
    # Every other typed block is Anthropic's (tool_use, tool_result, thinking, image, document,
    # server_tool_use, web_search_tool_result, …).
    return _ANTHROPIC


def _formats_of(item: Any) -> frozenset[FormatName]:
    """The formats in which this one item can stand."""
    role = _get(item, "role")
    kind = _get(item, "type")
    if kind is not None or _get(item, "call_id") is not None:
        # Only Responses items carry a top-level `type` (or a `call_id`).
        return _RESPONSES
    if role in ("tool", "function") or _get(item, "tool_calls") or _get(item, "tool_call_id"):
        return _CHAT
    # A system message is valid in all three (anthropic 2.x's MessageParam takes one too).
    fits = _NOT_ANTHROPIC if role == "developer" else _ALL
    content = _get(item, "content")
    if isinstance(content, Sequence) and not isinstance(content, str | bytes):
        for part in content:
            fits = fits & _formats_of_part(part)
    return fits


@checked
def history_items(data: Any) -> tuple[Sequence[Any], frozenset[FormatName]]:
    """The item list of a history or a request body, and the formats the wrapping allows.

    A request body holds its history under ``input`` (Responses) or ``messages`` (Chat,
    Anthropic); anything else is taken as the item list itself.
    """
    if isinstance(data, Mapping):
        if isinstance(data.get("input"), Sequence) and not isinstance(data["input"], str):
            return data["input"], _RESPONSES
        if isinstance(data.get("messages"), Sequence):
            return data["messages"], _CHAT_OR_ANTHROPIC
        return (), frozenset()
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return data, _ALL
    return (), frozenset()


@checked
def detect_format(data: Any) -> Result[FormatName, str]:
    """The one format a history (or a request body) can be in, or why it cannot be told.

    Detection reads markers only a format has (a ``tool`` role, a ``type`` on items, a
    ``tool_use`` block, …); a history of plain user and assistant text is valid in all three,
    so it is ambiguous, and a history mixing markers of two formats is refused.

    >>> detect_format([{"role": "tool", "tool_call_id": "c1", "content": "ok"}])
    <Success: openai-chat>
    >>> detect_format([{"role": "user", "content": "hi"}]).failure()
    'ambiguous: plain user and assistant messages are valid in openai-chat, openai-responses, \
anthropic; name the format'
    """
    items, fits = history_items(data)
    if not fits:
        return Failure("not a history: expected a list of items, or a request body with "
                       "`messages` or `input`")
    narrowed = fits
    for index, item in enumerate(items):
        kind = _get(item, "type")
        if isinstance(kind, str) and "/" in kind and _get(item, "seq") is not None:
            return Failure(f"a DSH event log, not a wire history: item {index} is a "
                           f"{kind!r} event")
        mine = _formats_of(item)
        if not narrowed & mine:
            return Failure(f"mixed formats: item {index} fits only "
                           f"{', '.join(sorted(mine)) or 'none of them'}, the items before it "
                           f"only {', '.join(sorted(narrowed))}")
        narrowed = narrowed & mine
    if len(narrowed) == 1:
        return Success(next(iter(narrowed)))
    names = ", ".join(name for name in FORMAT_NAMES if name in narrowed)
    if not items:
        return Failure(f"ambiguous: an empty history (no items) is valid in {names}; name the "
                       "format")
    stray = next(((index, what) for index, item in enumerate(items)
                  if (what := _not_an_item(item)) is not None), None)
    if stray is not None:
        return Failure(f"ambiguous: item {stray[0]} is {stray[1]}, not an item of any format, "
                       "and nothing else tells the format; name the format")
    return Failure(f"ambiguous: plain user and assistant messages are valid in {names}; "
                   "name the format")


def _not_an_item(item: Any) -> str | None:
    """What a JSON value that cannot be an item of any format is (an item is an object: a
    dict, or an SDK's object), or ``None``."""
    if item is None:
        return "null"
    if isinstance(item, bool):
        return "a boolean"
    if isinstance(item, int | float):
        return "a number"
    if isinstance(item, str | bytes):
        return "a string"
    if isinstance(item, Sequence):
        return "a list"
    return None


@checked
def server_side_history(data: Any) -> str | None:
    """Why a request body's history is not all in the body, or ``None``.

    A Responses body with ``previous_response_id`` or ``conversation`` continues a conversation
    the provider stores: the stored part (an open call included) comes with every request, so
    the items in the body can be neither checked nor cut on their own.
    """
    if not isinstance(data, Mapping):
        return None
    for key, what in (("previous_response_id", "stored response"),
                      ("conversation", "stored conversation")):
        value = data.get(key)
        if value is not None:
            name = value.get("id") if isinstance(value, Mapping) else value
            return (f"the request continues {what} {name!s} (`{key}`): that history is kept by "
                    "the provider and comes with the request, so it can be neither checked nor "
                    "cut here; send the whole history in `input` instead")
    return None


@checked
def decode_history(data: Any, format_name: FormatName | None = None, *, strict: bool = False,
                   ) -> Result[History[Any], str]:
    """Read a history (or request body) in the named format, or the detected one.

    The failure is a sentence when the format cannot be told, or when the body's history lives
    on the provider's side (:func:`server_side_history`); a history that breaks a rule still
    reads (its ``violation`` says which). ``strict``: the strict rules too.
    """
    stored = server_side_history(data)
    if stored is not None:
        return Failure(stored)
    if format_name is None:
        detected = detect_format(data)
        if isinstance(detected, Failure):
            return Failure(detected.failure())
        format_name = detected.unwrap()
    items, fits = history_items(data)
    if format_name not in fits:
        return Failure(f"not a {format_name} history")
    if format_name == "openai-chat":
        return Success(openai_chat.decode_history(items, strict=strict))
    if format_name == "openai-responses":
        return Success(openai_responses.decode_history(items, strict=strict))
    return Success(anthropic.decode_history(items, strict=strict))
