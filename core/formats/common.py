"""What the three wire-history formats share: the violation, the history one pass produces, the
seed, and the reading of items into typed views.

A wire history is a list of JSON-shaped items: dicts as the SDKs take them, or the SDKs' own
pydantic objects (their attributes are read). :func:`read_items` turns them into immutable
msgspec Structs that keep only what the rules need (plus the content, by reference), ignoring
every key it does not know, so a provider adding fields breaks nothing.

One pass over the typed items (each format's fold) finds the completed-turn cut, the first rule
the items break, and the rule the history breaks only because of where it ends. The fold checks
each item's own shape when it reaches it, and stops there as if the history ended just before
it; nothing after the first problem is trusted.

The seed :func:`completed_turn_prefix` returns is a plain ``list`` of the caller's own items, so
it goes as it is to every SDK (``json`` serialises it, ``Runner.run`` copies it): a fresh list
per call, costing one pointer per item, beside the O(n) pass that read the history.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar

import msgspec
from returns.result import Failure, Result, Success

from .._checking import checked, unchecked

__all__ = [
    "FormatName",
    "FORMAT_NAMES",
    "FormatViolation",
    "History",
    "Rule",
    "STRICT_RULES",
    "completed_turn_cut",
    "completed_turn_prefix",
    "balance_of",
    "as_history",
    "read_items",
    "read_history",
    "WireFormat",
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
    "stored-item",  # Responses: an item_reference, whose item only the provider holds
    # The strict level (``strict=True``): requests the provider refuses for one item's content.
    "null-content",  # Chat: an assistant message with neither content nor calls
    "function-name",  # Chat: a `function` message without its name
    "arguments-type",  # Chat: call arguments that are not a string
    "empty-array",  # Chat: `content: []` or `tool_calls: []`
    "empty-content",  # Anthropic: an empty message that is not the final assistant one
    "empty-text",  # Anthropic: an empty (or whitespace-only) text block
    "input-type",  # Anthropic: a tool_use input that is not an object
]

#: The rules only ``strict=True`` checks.
STRICT_RULES: frozenset[Rule] = frozenset({
    "null-content", "function-name", "arguments-type", "empty-array", "empty-content",
    "empty-text", "input-type",
})

ItemT = TypeVar("ItemT")


class FormatViolation(msgspec.Struct, frozen=True, kw_only=True):
    """A broken rule: the index of the item that breaks it, the rule code, a sentence, and the
    call id the rule is about (the first one, when several are), if any."""

    index: int
    rule: Rule
    problem: str
    call_id: str | None = None

    @property
    def message(self) -> str:
        return f"item {self.index}: {self.problem}"

    def __str__(self) -> str:
        return self.message


class History(msgspec.Struct, Generic[ItemT], frozen=True, kw_only=True):
    """A wire history after one pass: the caller's items, their typed views and the findings.

    ``items`` holds typed views of ``source[:len(items)]``: all of them, unless an item could not
    be read (then ``violation`` is its ``shape`` problem, or a rule an earlier item breaks).
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
    #: The strict rules were checked too (:data:`STRICT_RULES`).
    strict: bool = False

    @property
    def is_balanced(self) -> bool:
        """A provider would accept this history as the conversation of a request (at the level
        it was checked at: balance, or with ``strict`` also each item's content)."""
        return self.violation is None and self.end_violation is None

    @property
    def ends_at_completed_turn(self) -> bool:
        return self.completed_prefix_length == len(self.source)

    def __repr__(self) -> str:
        return (f"History(format={self.format!r}, items={len(self.source)}, "
                f"completed_prefix_length={self.completed_prefix_length}, "
                f"violation={self.violation!r}, end_violation={self.end_violation!r}, "
                f"strict={self.strict!r})")


@checked
def completed_turn_cut(history: History[Any]) -> int:
    """Index just past the last completed turn of a balanced prefix (0 when none). O(1)."""
    return history.completed_prefix_length


@checked
def completed_turn_prefix(history: History[Any]) -> list[Any]:
    """The caller's own items through the completed-turn cut, as a new ``list``.

    A list, so that it goes as it is to any SDK, and a new one, so that appending the child's
    prompt leaves the parent's history alone. O(cut): one pointer per item.
    """
    return list(history.source[:history.completed_prefix_length])


@checked
def balance_of(history: History[ItemT]) -> Result[History[ItemT], FormatViolation]:
    """``Success(history)`` when a provider would accept it, else the violation it reports."""
    problem = history.violation or history.end_violation
    return Success(history) if problem is None else Failure(problem)


@checked
def as_history(history: History[ItemT] | Sequence[Any],
               decode: Callable[..., History[ItemT]], *, strict: bool | None = None,
               again: bool = False) -> History[ItemT]:
    """``history`` decoded by a format's ``decode(items, strict=…)``, at the level asked.

    ``strict=None`` keeps a decoded history's level (balance for raw items); a decoded history
    asked at the other level, or with ``again`` (a setting changed), is read again (O(n)).
    """
    if isinstance(history, History):
        if not again and (strict is None or history.strict == strict):
            return history
        level = history.strict if strict is None else strict
        return decode(history.source, strict=level)
    return decode(history, strict=bool(strict))


_PATH = re.compile(r"`\$")


@unchecked
def read_items(data: Sequence[Any], item_type: type[ItemT], label: str,
               ) -> tuple[tuple[ItemT, ...], FormatViolation | None]:
    """Typed views of ``data`` (dicts or objects with attributes), in O(n).

    All of them, or the views before the first item that cannot be read and that item's
    ``shape`` violation. ``label`` names an item in sentences (``messages[3]``).
    """
    try:
        items: tuple[ItemT, ...] = msgspec.convert(data, tuple[item_type, ...],  # type: ignore[valid-type]
                                                   from_attributes=True)
    except msgspec.ValidationError:
        items = ()
    if len(items) == len(data):
        return items, None
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
    return tuple(good), None


#: A format's fold: the completed-turn cut, the first rule broken, the rule the end breaks.
Fold: TypeAlias = Callable[[tuple[ItemT, ...]],
                           tuple[int, FormatViolation | None, FormatViolation | None]]


@unchecked
def read_history(format: FormatName, data: Sequence[Any], item_type: type[ItemT], label: str, *,
                 fold: Fold[ItemT], strict: bool = False) -> History[ItemT]:
    """A format's one O(n) pass: :func:`read_items`, then ``fold`` over the items that read.

    An item that cannot be read stops the pass: the rules of the items before it still count
    first (the fold runs over them all), and nothing is said of the end (the history has none
    that reads).
    """
    source = tuple(data)
    items, unreadable = read_items(source, item_type, label)
    cut, violation, end = fold(items)
    if unreadable is not None:
        violation, end = violation or unreadable, None
    return History(format=format, source=source, items=items, completed_prefix_length=cut,
                   violation=violation, end_violation=end, strict=strict)


class WireFormat(msgspec.Struct, Generic[ItemT], frozen=True, kw_only=True):
    """One wire format as a record: its name, the typed view of its items, the word that names
    an item in sentences (``messages``) and its one pass over the views.

    A format module's ``decode_history``, ``check_balance``, ``completed_turn_cut`` and
    ``completed_turn_prefix`` are its record's methods, bound: the three formats share one
    implementation of each, and differ only in their fold (and in Anthropic's ``thinking``).
    """

    name: FormatName
    item_type: type[ItemT]
    label: str
    #: ``fold(items, strict=…, total=…, **settings)``: the cut, the first rule broken, the rule
    #: the end breaks; ``total`` counts the items given (read or not), ``settings`` are the
    #: request's settings the format reads (Anthropic's ``thinking``).
    fold: Callable[..., tuple[int, FormatViolation | None, FormatViolation | None]]

    @unchecked
    def read(self, data: Sequence[Any], *, strict: bool, **settings: Any) -> History[ItemT]:
        """:func:`read_history` with this format's fold, at ``strict`` and with ``settings``."""
        total = len(data)
        return read_history(self.name, data, self.item_type, self.label, strict=strict,
                            fold=lambda items: self.fold(items, strict=strict, total=total,
                                                         **settings))

    @checked
    def decode_history(self, data: Sequence[Any], *, strict: bool = False) -> History[ItemT]:
        """Read a history (dicts, or the SDK's objects) and check it, in one O(n) pass.

        ``strict``: check each item's content too (the format's strict rules).
        """
        return self.read(data, strict=strict)

    @checked
    def check_balance(self, history: History[ItemT] | Sequence[Any], *, strict: bool = False,
                      ) -> Result[History[ItemT], FormatViolation]:
        """``Success(history)`` when the provider would accept it as the request's history,
        else the violation.

        ``strict``: the strict rules too; a decoded history checked at the other level is read
        again (O(n)).
        """
        return balance_of(as_history(history, self.decode_history, strict=strict))

    @checked
    def completed_turn_cut(self, history: History[ItemT] | Sequence[Any]) -> int:
        """The length of the completed-turn prefix (O(1) on a decoded history)."""
        return as_history(history, self.decode_history).completed_prefix_length

    @checked
    def completed_turn_prefix(self, history: History[ItemT] | Sequence[Any]) -> list[Any]:
        """The caller's items through the last completed turn, as a new list."""
        return completed_turn_prefix(as_history(history, self.decode_history))


#: The names each module of this folder offered before the DSH projection moved to the bridge,
#: ``wire_seed`` (which needs the log tier, so this tier cannot import it): they still resolve
#: from their earlier paths, to the bridge's own objects (``wire_seed.EARLIER_NAMES``), when the
#: bridge is there. In no ``__all__``; new code imports them from ``wire_seed``.
MOVED_TO_WIRE_SEED: Mapping[str, frozenset[str]] = MappingProxyType({
    "formats": frozenset({"IMAGE_PLACEHOLDER", "HistoryPrefix"}),
    "common": frozenset({"IMAGE_PLACEHOLDER", "HistoryPrefix", "plain_text", "from_dsh_log"}),
    "openai_chat": frozenset({"from_dsh", "from_model_history"}),
    "openai_responses": frozenset({"from_dsh", "from_model_history"}),
    "anthropic": frozenset({"from_dsh", "from_model_history"}),
})


@unchecked
def moved_name(module: str, package: str, name: str) -> Any:
    """``name`` of the formats module ``module`` (its ``__name__``, in ``package``) where it
    moved to ``wire_seed``; an ``AttributeError`` for a name that never lived here, or when
    this copy of the formats holds no bridge."""
    short = "formats" if module == package else module.rpartition(".")[2]
    if name not in MOVED_TO_WIRE_SEED.get(short, frozenset()):
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    try:
        bridge = importlib.import_module("..wire_seed", package)
    except ModuleNotFoundError:
        raise AttributeError(
            f"{module}.{name} moved to wire_seed (the bridge of the log and formats tiers), "
            f"which this copy does not hold") from None
    return bridge.EARLIER_NAMES[short][name]


if not TYPE_CHECKING:  # the type checker sees only this module's own names
    def __getattr__(name: str) -> Any:
        return moved_name(__name__, __package__, name)
