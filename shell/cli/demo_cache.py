"""The prompt-cache share of the demo's fork: how much of the child's first model request a
provider's prefix cache has already seen in the parent's request at the fork.

Both requests are taken as :class:`~shell.models.openai_chat.OpenAIChatModel` would send them:
:class:`RequestLog` wraps the models the demo registers and keeps, for every call, the
chat-completions body :func:`~shell.models.openai_chat.chat_request_body` builds from the
:class:`~shell.models.base.ModelRequest` (the same function the model sends through the SDK;
nothing here talks to a network). The body is kept when the call is made, so what is compared
is what was asked, whatever the history became later.

A provider renders a prompt as the system message, the tool schemas, then the other messages,
and caches it by byte prefix; :func:`provider_prompt` renders a body that way (each item as
compact JSON, UTF-8, one per line). :func:`cache_share` compares the child's first request with
the parent's request at the fork: of the child's *inherited* part (system + tools + the seed's
messages), how many bytes are a prefix of the parent's rendered prompt, and the same in tokens,
estimated as four bytes each (``bytes // 4``; the prompt-cache benchmark's provider counts
about the same): the inherited tokens, those of the shared prefix billed as cache hits, the
rest as misses. The demo's scripted models report no usage, so no provider's count is used.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from ...core import StreamChunk
from ..models.base import Model, ModelRequest
from ..models.openai_chat import chat_request_body

__all__ = ["TOKEN_BYTES", "CacheShare", "RequestLog", "cache_share", "provider_prompt",
           "shared_prefix"]

#: Bytes per token in the estimate (the prompt-cache benchmark's provider counts the same).
TOKEN_BYTES = 4


def provider_prompt(body: Mapping[str, Any]) -> bytes:
    """A chat-completions body's prompt in the order a provider renders it: the system
    message(s), the tool schemas, then the other messages, each compact JSON (UTF-8, no
    spaces), one per line.

    >>> provider_prompt({"messages": [{"role": "user", "content": "hi"},
    ...                               {"role": "system", "content": "s"}],
    ...                  "tools": [{"type": "function"}]})
    b'{"role":"system","content":"s"}\\n{"type":"function"}\\n{"role":"user","content":"hi"}'
    """
    messages = body.get("messages") or []
    items = [*(m for m in messages if m.get("role") == "system"), *(body.get("tools") or []),
             *(m for m in messages if m.get("role") != "system")]
    return b"\n".join(json.dumps(item, ensure_ascii=False, separators=(",", ":"))
                      .encode("utf-8", "surrogatepass") for item in items)


def shared_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common byte prefix of ``a`` and ``b``.

    >>> shared_prefix(b"abcd", b"abxy"), shared_prefix(b"", b"a"), shared_prefix(b"ab", b"ab")
    (2, 0, 2)
    """
    low, high = 0, min(len(a), len(b))
    while low < high:  # a binary search over slice comparisons (each one done in C)
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class CacheShare:
    """The child's first request against the parent's request at the fork."""

    #: Bytes of the two requests' rendered prompts (:func:`provider_prompt`).
    parent_prompt_bytes: int
    child_prompt_bytes: int
    #: Bytes of the child's system + tools + seed messages, rendered.
    inherited_bytes: int
    #: Of those, the prefix the parent's rendered prompt shares byte for byte.
    shared_bytes: int
    system_equal: bool
    tools_equal: bool
    tools: int
    #: The child's messages before its own prompt (its seed, as chat messages).
    seed_messages: int
    #: How many of the child's leading non-system messages equal the parent's.
    leading_messages_equal: int

    @property
    def share(self) -> float:
        """``shared_bytes / inherited_bytes`` (1.0: the child's request extends the parent's)."""
        return self.shared_bytes / self.inherited_bytes if self.inherited_bytes else 1.0

    @property
    def inherited_tokens(self) -> int:
        return self.inherited_bytes // TOKEN_BYTES

    @property
    def hit_tokens(self) -> int:
        """Inherited tokens a prefix-caching provider bills as cache hits."""
        return self.shared_bytes // TOKEN_BYTES

    @property
    def miss_tokens(self) -> int:
        return self.inherited_tokens - self.hit_tokens

    def as_json(self) -> dict[str, Any]:
        return {"parent_prompt_bytes": self.parent_prompt_bytes,
                "child_prompt_bytes": self.child_prompt_bytes,
                "inherited_bytes": self.inherited_bytes, "shared_bytes": self.shared_bytes,
                "share": self.share, "system_equal": self.system_equal,
                "tools_equal": self.tools_equal, "tools": self.tools,
                "seed_messages": self.seed_messages,
                "leading_messages_equal": self.leading_messages_equal,
                "token_bytes": TOKEN_BYTES, "inherited_tokens": self.inherited_tokens,
                "cache_hit_tokens": self.hit_tokens, "cache_miss_tokens": self.miss_tokens}


def _split(body: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    messages = list(body.get("messages") or [])
    return ([m for m in messages if m.get("role") == "system"],
            [m for m in messages if m.get("role") != "system"])


def _own_prompt_index(body: Mapping[str, Any], prompt: str) -> int | None:
    """Where the child's own prompt is among the body's non-system messages: the last user
    message with exactly that text (the seed may hold the same words earlier)."""
    _, conversation = _split(body)
    for index in range(len(conversation) - 1, -1, -1):
        message = conversation[index]
        if message.get("role") == "user" and message.get("content") == prompt:
            return index
    return None


def cache_share(parent: Mapping[str, Any], child: Mapping[str, Any],
                seed_messages: int) -> CacheShare:
    """Compare the child's first request body with the parent's request body at the fork.

    Args:
        parent: The parent's request at the fork (the call that answered with ``subagent``).
        child: The child's first request.
        seed_messages: How many of the child's non-system messages are its seed.
    """
    parent_system, parent_conversation = _split(parent)
    child_system, child_conversation = _split(child)
    inherited = provider_prompt({"messages": [*child_system,
                                              *child_conversation[:seed_messages]],
                                 "tools": child.get("tools")})
    parent_prompt, child_prompt = provider_prompt(parent), provider_prompt(child)
    leading = 0
    for mine, theirs in zip(child_conversation, parent_conversation, strict=False):
        if mine != theirs:
            break
        leading += 1
    return CacheShare(
        parent_prompt_bytes=len(parent_prompt), child_prompt_bytes=len(child_prompt),
        inherited_bytes=len(inherited),
        shared_bytes=min(shared_prefix(child_prompt, parent_prompt), len(inherited)),
        system_equal=child_system == parent_system,
        tools_equal=child.get("tools") == parent.get("tools"),
        tools=len(child.get("tools") or ()), seed_messages=seed_messages,
        leading_messages_equal=leading)


class RequestLog:
    """The chat-completions body of every model call the demo makes, in call order."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def wrap(self, model: Model, model_name: str) -> Model:
        """``model``, with each request's body kept here before the model sees it."""
        return _Recording(model, model_name, self.bodies)

    def first_with_prompt(self, start: int, prompt: str) -> int | None:
        """The first call from ``start`` on with ``prompt`` as a user message (a child's first
        request: its seed, its prompt, its runtime context)."""
        for index in range(start, len(self.bodies)):
            if _own_prompt_index(self.bodies[index], prompt) is not None:
                return index
        return None

    def share_at(self, mark: int, prompt: str) -> CacheShare | None:
        """The share of the child whose first request carries ``prompt``, started when
        ``mark`` calls had been made (the parent's request at the fork is the last of them)."""
        if mark < 1:
            return None
        child = self.first_with_prompt(mark, prompt)
        if child is None:
            return None
        body = self.bodies[child]
        seed = _own_prompt_index(body, prompt)
        assert seed is not None  # first_with_prompt found it
        return cache_share(self.bodies[mark - 1], body, seed)


class _Recording:
    def __init__(self, model: Model, model_name: str, bodies: list[dict[str, Any]]) -> None:
        self._model = model
        self._model_name = model_name
        self._bodies = bodies

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamChunk]:
        self._bodies.append(chat_request_body(request, self._model_name))
        return self._model.stream(request)

