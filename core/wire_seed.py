"""A DSH log's model history in a wire format: the fork seed for a model of another API.

The DSH side of :mod:`core.formats` (which knows nothing of DSH events): a log is traced, what
its model saw (:func:`core.history.model_history`) is projected into OpenAI Chat, OpenAI
Responses or Anthropic Messages items, and the formats' checkers can judge the result like any
other history.

Rules of the projection, per format:

* ``openai-chat`` — what the shell's OpenAI model sends (:func:`chat_request`): user text blocks
  joined by blank lines, assistant text with its calls as ``tool_calls``, a tool result as a
  ``tool`` message.
* ``openai-responses`` — a user message as a ``message`` with ``input_text`` parts, assistant text
  as an assistant ``message`` and its calls as ``function_call`` items, a result as a
  ``function_call_output``; reasoning is dropped (a reasoning item needs the provider's id or
  encrypted content, which a DSH log does not hold) and an assistant message left with nothing
  to send is dropped.
* ``anthropic`` — consecutive user-side messages (prompts and tool results) become one user
  message with the results first; reasoning is dropped (no signature to send it back with);
  empty text blocks and messages left empty are dropped; tool arguments that are not a JSON
  object are kept as ``{"arguments": text}``.

In every format an image becomes the text :data:`IMAGE_PLACEHOLDER` (the log holds no image
bytes).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET
from returns.result import Failure, Result, Success

from ._checking import checked, plain, unchecked
from .formats import FormatName
from .log import (
    AssistantMessage,
    ContentBlock,
    Event,
    ImageBlock,
    LlmCallConfig,
    Message,
    SequencePrefix,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultMessage,
    ToolSchema,
    Violation,
    model_history,
    trace_log,
)

__all__ = ["IMAGE_PLACEHOLDER", "plain_text", "from_model_history", "from_dsh", "EARLIER_NAMES",
           "sendable_text", "chat_request"]

#: What an image becomes (the log holds no image bytes); the same text the shell's
#: OpenAI-compatible model sends.
IMAGE_PLACEHOLDER = "[image omitted]"

_JSON = msgspec.json.Decoder()
_Items = TypeVar("_Items")


@checked
def plain_text(blocks: tuple[ContentBlock, ...]) -> str:
    """The text of content blocks, joined by blank lines; an image becomes
    :data:`IMAGE_PLACEHOLDER`, anything else is left out."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ImageBlock):
            parts.append(IMAGE_PLACEHOLDER)
    return "\n\n".join(parts)


@unchecked
def _calls(message: AssistantMessage) -> list[ToolCallBlock]:
    return [b for b in message.content if isinstance(b, ToolCallBlock)]


@unchecked
def _results(message: ToolResultMessage) -> list[ToolResultBlock]:
    return [b for b in message.content if isinstance(b, ToolResultBlock)]


@unchecked
def _text(message: AssistantMessage) -> str:
    return "\n\n".join(b.text for b in message.content if isinstance(b, TextBlock))


@unchecked
def _as_is(text: str) -> str:
    return text


@unchecked
def _chat(messages: Sequence[Message], send: Callable[[str], str] = _as_is,
          ) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            calls = [{"id": b.id, "type": "function",
                      "function": {"name": send(b.name), "arguments": send(b.arguments)}}
                     for b in _calls(message)]
            text = send(_text(message))
            out.append({"role": "assistant", "content": text or None, "tool_calls": calls}
                       if calls else {"role": "assistant", "content": text})
        elif isinstance(message, ToolResultMessage):
            out.extend({"role": "tool", "tool_call_id": b.tool_call_id,
                        "content": send(plain_text(b.content))} for b in _results(message))
        else:
            out.append({"role": "user", "content": send(plain_text(message.content))})
    return out


@checked
def sendable_text(text: str) -> str:
    """``text`` as UTF-8 can carry it: a lone surrogate (one a provider streamed earlier)
    becomes U+FFFD, a pair split across deltas is joined."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


@checked
def chat_request(config: LlmCallConfig, system: str | None, tools: tuple[ToolSchema, ...],
                 messages: Sequence[Message], default_model: str) -> dict[str, Any]:
    """The streaming chat-completions body of one model call: ``model`` (the config's, else
    ``default_model``), ``messages`` (the system prompt, then the ``openai-chat`` projection
    with every text made sendable), ``stream``, ``stream_options``, then ``max_tokens``,
    ``temperature`` and ``stop`` when set, and ``tools`` when any."""
    send = plain(sendable_text)
    head: list[dict[str, Any]] = [{"role": "system", "content": send(system)}] if system else []
    body: dict[str, Any] = {"model": config.model or default_model,
                            "messages": head + _chat(messages, send), "stream": True,
                            "stream_options": {"include_usage": True}}
    if config.max_tokens is not UNSET:
        body["max_tokens"] = config.max_tokens
    if config.temperature is not UNSET:
        body["temperature"] = config.temperature
    if config.stop is not UNSET:
        body["stop"] = [send(s) for s in config.stop]
    if tools:
        body["tools"] = [{"type": "function", "function": {
            "name": s.name, "description": s.description,
            "parameters": msgspec.json.decode(s.parameters)}} for s in tools]
    return body


@unchecked
def _responses(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            text = _text(message)
            if text:
                out.append({"type": "message", "role": "assistant", "content": text})
            out.extend({"type": "function_call", "call_id": b.id, "name": b.name,
                        "arguments": b.arguments} for b in _calls(message))
        elif isinstance(message, ToolResultMessage):
            out.extend({"type": "function_call_output", "call_id": b.tool_call_id,
                        "output": plain_text(b.content)} for b in _results(message))
        else:
            out.append({"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": plain_text(message.content)}]})
    return out


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


@unchecked
def _anthropic(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            content = _text_blocks(message.content)
            content.extend({"type": "tool_use", "id": b.id, "name": b.name,
                            "input": _input_of(b.arguments)} for b in _calls(message))
            if content:
                if results or others:
                    out.append({"role": "user", "content": [*results, *others]})
                    results, others = [], []
                out.append({"role": "assistant", "content": content})
        elif isinstance(message, ToolResultMessage):
            results.extend({"type": "tool_result", "tool_use_id": b.tool_call_id,
                            "content": _text_blocks(b.content),
                            **({"is_error": True} if b.is_error is True else {})}
                           for b in _results(message))
        else:
            others.extend(_text_blocks(message.content))
    if results or others:
        out.append({"role": "user", "content": [*results, *others]})
    return out


_PROJECTIONS: Mapping[FormatName, Callable[[Sequence[Message]], list[dict[str, Any]]]] = {
    "openai-chat": _chat, "openai-responses": _responses, "anthropic": _anthropic,
}


@checked
def from_model_history(messages: Sequence[Message], format_name: FormatName,
                       ) -> list[dict[str, Any]]:
    """What a model saw (``core.model_history``) as a ``format_name`` history (rules above)."""
    return _PROJECTIONS[format_name](messages)


@checked
def from_dsh(events: Sequence[Event], format_name: FormatName,
             ) -> Result[list[dict[str, Any]], Violation]:
    """The ``format_name`` history of a DSH log's model history (a fork seed, typically).

    The log is traced first; a log that breaks a rule gives that rule's ``Violation``.
    """
    return _from_dsh_log(events, _PROJECTIONS[format_name])


@checked
def _from_dsh_log(events: Sequence[Event], project: Callable[[Sequence[Message]], _Items],
                  ) -> Result[_Items, Violation]:
    """A DSH log traced, its model history projected by ``project``; a log that breaks a rule
    gives that rule's ``Violation``."""
    traced = trace_log(events)
    if isinstance(traced, Failure):
        return Failure(traced.failure())
    return Success(project(model_history(traced.unwrap())))


def _earlier_names() -> Mapping[str, Mapping[str, object]]:
    shared = {"IMAGE_PLACEHOLDER": IMAGE_PLACEHOLDER, "HistoryPrefix": SequencePrefix}
    modules: tuple[tuple[str, FormatName], ...] = (
        ("openai_chat", "openai-chat"), ("openai_responses", "openai-responses"),
        ("anthropic", "anthropic"))
    bound = {module: MappingProxyType({
        "from_dsh": functools.partial(from_dsh, format_name=format_name),
        "from_model_history": functools.partial(from_model_history, format_name=format_name)})
        for module, format_name in modules}
    return MappingProxyType({
        "formats": MappingProxyType(shared),
        "common": MappingProxyType({**shared, "plain_text": plain_text,
                                    "from_dsh_log": _from_dsh_log}),
        **bound})


#: The names the formats' modules offered before this projection moved here, by module
#: (``formats`` for the front door), as this module's objects: a format's ``from_dsh(events)``
#: and ``from_model_history(messages)`` are :func:`from_dsh` and :func:`from_model_history`
#: bound to its format; ``HistoryPrefix`` is the log's ``SequencePrefix``; ``from_dsh_log(events,
#: project)`` traces a log and projects its model history with ``project``. The formats'
#: modules resolve those names from here on first use.
EARLIER_NAMES: Mapping[str, Mapping[str, object]] = _earlier_names()
