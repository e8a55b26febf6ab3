"""The runtime context and the session title as a log holds them (DSH's system-prompt and
session-title plugins, wire-format §3.3): what the trace reads off a log's messages and events.

Rules of this module:

* A ``user/message`` whose source is the ``@deepseek-ai/dsh-system-prompt`` plugin is a
  runtime-context snapshot (:func:`is_context_snapshot`); the trace keeps the ones still on the
  surface (:meth:`.trace.Trace.retained_context`). What a step writes as one is the turn
  machine's (:mod:`turnfork.core.machine.prompt`).
* Session title: the fallback title of the log's first human message (source ``user``, with
  text left after cleaning), written once per log as a ``session/title`` event
  (:func:`title_event`); a ``session/title`` already in the log means none. Cleaning removes
  escape sequences, control and directional characters, collapses whitespace; the fallback
  keeps the first 5 words, at most 40 UTF-8 bytes.
* Request context: a ``request/context`` event holds a model call's ``{provider, model}``
  (:func:`request_context_event`).
"""

from __future__ import annotations

import re

import msgspec

from .._checking import checked
from .events import MessageSource, OpaqueEvent

__all__ = [
    "RUNTIME_CONTEXT_PLUGIN",
    "is_context_snapshot",
    "clean_title_text",
    "fallback_title",
    "title_event",
    "request_context_event",
]

#: The plugin that owns runtime-context snapshots.
RUNTIME_CONTEXT_PLUGIN = "@deepseek-ai/dsh-system-prompt"
#: DSH's fallback title limits (its base bundle's configuration).
TITLE_MAX_WORDS = 5
TITLE_MAX_BYTES = 40

_ENCODE = msgspec.json.Encoder()


@checked
def is_context_snapshot(source: MessageSource) -> bool:
    """Whether a message comes from the runtime-context plugin."""
    return source.kind == "plugin" and source.plugin == RUNTIME_CONTEXT_PLUGIN


_OSC = re.compile("(?:\x1b\\]|\x9d)(?:(?!\x07|\x1b\\\\)[\\s\\S])*(?:\x07|\x1b\\\\|$)")
_CSI = re.compile("(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]")
_ESC = re.compile("\x1b[@-_]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_DIRECTIONAL = re.compile("[\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")
_SPACE = re.compile(r"\s+")


@checked
def clean_title_text(text: str) -> str:
    """One trimmed, whitespace-normalised line with escape sequences and control,
    directional and invisible characters removed (DSH's title cleaning).

    >>> clean_title_text("  Fix\\x1b[31m the\\n\\tbug\\u202e ")
    'Fix the bug'
    """
    for pattern in (_OSC, _CSI, _ESC, _CONTROL, _DIRECTIONAL):
        text = pattern.sub("", text)
    return _SPACE.sub(" ", text).strip()


def _truncated(text: str, max_bytes: int) -> str:
    if len(text.encode("utf-8", "surrogatepass")) <= max_bytes:
        return text
    used, kept = 0, []
    for character in text:
        size = len(character.encode("utf-8", "surrogatepass"))
        if used + size > max_bytes:
            break
        kept.append(character)
        used += size
    return "".join(kept)


@checked
def fallback_title(text: str) -> str:
    """The first words of a human message as a session title (possibly empty).

    >>> fallback_title("Perform one side-effecting remote mutation and report back")
    'Perform one side-effecting remote mutati'
    """
    words = [word for word in clean_title_text(text).split(" ") if word][:TITLE_MAX_WORDS]
    return _truncated(" ".join(words), TITLE_MAX_BYTES).rstrip()


@checked
def title_event(*, seq: int, time: int, title: str, message_seq: int) -> OpaqueEvent:
    """A fallback ``session/title`` event for the message at ``message_seq``."""
    data = {"title": title, "messageSeqs": [message_seq], "source": {"kind": "fallback"}}
    return OpaqueEvent(type="session/title", seq=seq, time=time,
                       data=msgspec.Raw(_ENCODE.encode(data)))


@checked
def request_context_event(*, seq: int, time: int, provider: str, model: str) -> OpaqueEvent:
    """A ``request/context`` event for a model call's route."""
    return OpaqueEvent(type="request/context", seq=seq, time=time,
                       data=msgspec.Raw(_ENCODE.encode({"provider": provider, "model": model})))
