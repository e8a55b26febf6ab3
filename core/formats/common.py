"""What the three wire-history formats share: the violation, the history one pass produces, the
prefix view, and the reading of items into typed views.

A wire history is a list of JSON-shaped items: dicts as the SDKs take them, or the SDKs' own
pydantic objects (their attributes are read). :func:`read_items` turns them into immutable
msgspec Structs that keep only what the rules need (plus the content, by reference), ignoring
every key it does not know, so a provider adding fields breaks nothing.

One pass over the typed items (each format's fold) finds the completed-turn cut, the first rule
the items break, and the rule the history breaks only because of where it ends. After that pass
:func:`completed_turn_prefix` is O(1): a :class:`HistoryPrefix` view of the caller's own items.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, Literal, TypeAlias, TypeVar, overload

import msgspec
from returns.result import Failure, Result, Success

from .._checking import unchecked

__all__ = [
    "FormatName",
    "FORMAT_NAMES",
    "FormatViolation",
    "History",
    "HistoryPrefix",
    "Rule",
    "IMAGE_PLACEHOLDER",
    "completed_turn_cut",
    "completed_turn_prefix",
    "balance_of",
    "read_items",
]

FormatName: TypeAlias = Literal["openai-chat", "openai-responses", "anthropic"]
FORMAT_NAMES: tuple[FormatName, ...] = ("openai-chat", "openai-responses", "anthropic")

#: Rule codes a violation carries. One vocabulary for the three formats, so a test (or a CLI) can
#: match on the rule whatever the format.
Rule: TypeAlias = Literal[
    "shape",  # an item cannot be read (not an object, a missing or mistyped field)
    "unanswered-call",  # a client tool call lacks its result where the provider wants it
    "orphan-result",  # a result answers no call it may answer
    "duplicate-result",  # a second result for one call
    "duplicate-call",  # one call id used twice in one assistant step
    "duplicate-item",  # Responses: two items with one `id`
    "results-first",  # Anthropic: tool_result blocks do not open the next user message
    "server-call-unanswered",  # Anthropic: a server tool use without its result in its turn
    "reasoning-alone",  # Responses: a reasoning item without the item it belongs to
    "thinking-first",  # Anthropic: an open tool loop whose assistant turn lost its thinking
]

#: What an image becomes when a DSH log is converted (the log holds no image bytes); the same
#: text the shell's OpenAI-compatible model sends.
IMAGE_PLACEHOLDER = "[image omitted]"

T = TypeVar("T")
ItemT = TypeVar("ItemT")


class FormatViolation(msgspec.Struct, frozen=True, kw_only=True):
    """A broken rule: the index of the item that breaks it, the rule code, and a sentence."""

    index: int
    rule: Rule
    problem: str

    @property
    def message(self) -> str:
        return f"item {self.index}: {self.problem}"

    def __str__(self) -> str:
        return self.message


class History(msgspec.Struct, Generic[ItemT], frozen=True, kw_only=True):
    """A wire history after one pass: the caller's items, their typed views and the findings.

    ``items`` holds typed views of ``source[:len(items)]``: all of them, unless an item could not
    be read (then ``violation`` is its ``shape`` problem and the pass stopped there).
    """

    format: FormatName
    #: The caller's items, in order, as given (a shallow copy of the sequence).
    source: tuple[Any, ...]
    items: tuple[ItemT, ...]
    #: Length of the longest prefix that is balanced and ends where a turn completed.
    completed_prefix_length: int
    #: The first rule the items break, which no continuation can repair.
    violation: FormatViolation | None
    #: A rule the history breaks only because of where it ends (calls still waiting for their
    #: results, say): a continuation may repair it, but the history cannot be sent as it is.
    end_violation: FormatViolation | None

    @property
    def is_balanced(self) -> bool:
        """A provider would accept this history as the conversation of a request."""
        return self.violation is None and self.end_violation is None

    @property
    def ends_at_completed_turn(self) -> bool:
        return self.completed_prefix_length == len(self.source)

    def __repr__(self) -> str:
        return (f"History(format={self.format!r}, items={len(self.source)}, "
                f"completed_prefix_length={self.completed_prefix_length}, "
                f"violation={self.violation!r}, end_violation={self.end_violation!r})")


class HistoryPrefix(Sequence[T]):
    """The first ``length`` items of ``items``, without copying them."""

    __slots__ = ("_items", "_length")
    _items: tuple[T, ...]
    _length: int

    def __init__(self, items: tuple[T, ...], length: int) -> None:
        if not 0 <= length <= len(items):
            raise ValueError(f"prefix length {length} outside 0..{len(items)}")
        self._items = items
        self._length = length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            if step == 1 and start == 0:
                return HistoryPrefix(self._items, max(stop, 0))
            return tuple(self._items[i] for i in range(start, stop, step))
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("prefix index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        items = self._items
        return (items[i] for i in range(self._length))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._length and all(a == b for a, b in zip(self, other,
                                                                          strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HistoryPrefix(<{self._length} of {len(self._items)} items>)"


def completed_turn_cut(history: History[Any]) -> int:
    """Index just past the last completed turn of a balanced prefix (0 when none). O(1)."""
    return history.completed_prefix_length


def completed_turn_prefix(history: History[Any]) -> Sequence[Any]:
    """The caller's items up to the completed-turn cut, as a view; O(1).

    The whole ``source`` when the history already ends at a completed turn.
    """
    cut = history.completed_prefix_length
    if cut == len(history.source):
        return history.source
    return HistoryPrefix(history.source, cut)


def balance_of(history: History[ItemT]) -> Result[History[ItemT], FormatViolation]:
    """``Success(history)`` when a provider would accept it, else the violation it reports."""
    problem = history.violation or history.end_violation
    return Success(history) if problem is None else Failure(problem)


_PATH = re.compile(r"`\$")


@unchecked
def read_items(data: Sequence[Any], item_type: type[ItemT], label: str,
               check: Callable[[int, ItemT], FormatViolation | None],
               ) -> tuple[tuple[ItemT, ...], FormatViolation | None]:
    """Typed views of ``data`` (dicts or objects with attributes), in O(n).

    Stops at the first item that cannot be read, or that ``check`` refuses, and returns the views
    before it with that item's ``shape`` violation. ``label`` names an item in sentences
    (``messages[3]``).
    """
    try:
        items: tuple[ItemT, ...] = msgspec.convert(data, tuple[item_type, ...],  # type: ignore[valid-type]
                                                   from_attributes=True)
    except msgspec.ValidationError:
        items = ()
    if len(items) != len(data):
        # Slow path, only for a history that does not read: find the first bad item.
        good: list[ItemT] = []
        for index, raw in enumerate(data):
            try:
                good.append(msgspec.convert(raw, item_type, from_attributes=True))
            except msgspec.ValidationError as err:
                where = f"`{label}[{index}]"
                text = _PATH.sub(where, str(err))
                if " - at `" not in text:
                    text = f"{text} - at {where}`"
                return tuple(good), FormatViolation(index=index, rule="shape", problem=text)
        items = tuple(good)
    for index, item in enumerate(items):
        problem = check(index, item)
        if problem is not None:
            return items[:index], problem
    return items, None
