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
from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, TypeAlias, TypeVar

import msgspec
from returns.result import Failure, Result, Success

from .._checking import unchecked
from ..events import ContentBlock, Event, ImageBlock, TextBlock
from ..history import Message, model_history
from ..seed import SequencePrefix
from ..trace import Violation, trace_log

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
    "read_history",
    "plain_text",
    "from_dsh_log",
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


#: The view :func:`completed_turn_prefix` returns: the core's prefix of a sequence, here of
#: the caller's own items.
HistoryPrefix = SequencePrefix


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
    return SequencePrefix(history.source, cut)


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


#: A format's fold: the completed-turn cut, the first rule broken, the rule the end breaks.
Fold: TypeAlias = Callable[[tuple[ItemT, ...]],
                           tuple[int, FormatViolation | None, FormatViolation | None]]


@unchecked
def read_history(format: FormatName, data: Sequence[Any], item_type: type[ItemT], label: str, *,
                 check: Callable[[int, ItemT], FormatViolation | None],
                 fold: Fold[ItemT]) -> History[ItemT]:
    """A format's one O(n) pass: :func:`read_items`, then ``fold`` over the items that read.

    An item that cannot be read stops the pass: the rules of the items before it still count
    first, and nothing is said of the end (the history has none that reads).
    """
    source = tuple(data)
    items, problem = read_items(source, item_type, label, check)
    cut, violation, end = fold(items)
    if problem is not None:
        violation, end = violation or problem, None
    return History(format=format, source=source, items=items, completed_prefix_length=cut,
                   violation=violation, end_violation=end)


@unchecked
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


def from_dsh_log(events: Sequence[Event],
                 project: Callable[[Sequence[Message]], tuple[dict[str, Any], ...]],
                 ) -> Result[tuple[dict[str, Any], ...], Violation]:
    """A DSH log's model history projected into a format by ``project`` (the format's
    ``from_model_history``). The log is traced first; a log that breaks a rule gives that
    rule's ``Violation``."""
    traced = trace_log(events)
    if isinstance(traced, Failure):
        return Failure(traced.failure())
    return Success(project(model_history(traced.unwrap())))
