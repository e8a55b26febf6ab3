"""The verification kit: check another runtime's trimming, compaction or fork of a wire history.

* :func:`assert_balanced` — a history a provider would accept, or an ``AssertionError`` naming
  the rule, the item (its index and a glimpse of it) and the call id;
* :func:`assert_completed_turn_prefix` — a runtime's fork seed is the completed-turn prefix of
  the history it was cut from;
* the history strategies of :mod:`turnfork.core.formats.strategies` (``histories``,
  ``closed_histories``, ``in_flight_histories``, ``broken_histories``, ``Sample``,
  ``BrokenSample``);
* the pytest plugin (:mod:`turnfork.pytest_plugin`) adds the ``wire_format`` fixture.

Needs ``hypothesis`` (``pip install 'turnfork[hypothesis]'``). docs/formats/kit.md shows it at work
on real peers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

try:
    import hypothesis  # noqa: F401  (the strategies below need it; say so plainly)
except ImportError:  # pragma: no cover - exercised in a subprocess by the tests
    raise ImportError("turnfork.testing needs hypothesis: pip install 'turnfork[hypothesis]'"
                      ) from None

from returns.result import Failure

from .core.formats import (
    FormatName,
    FormatViolation,
    History,
    anthropic,
    decode_history,
    history_items,
)
from .core.formats.strategies import (
    BrokenSample,
    Sample,
    broken_histories,
    closed_histories,
    histories,
    in_flight_histories,
)

__all__ = [
    "assert_balanced",
    "assert_completed_turn_prefix",
    "BrokenSample",
    "Sample",
    "broken_histories",
    "closed_histories",
    "histories",
    "in_flight_histories",
]

_GLIMPSE = 120


def _glimpse(item: Any) -> str:
    """An item in at most a line: its JSON (an SDK object's dump), cut short."""
    if hasattr(item, "model_dump"):
        item = item.model_dump(mode="json", exclude_none=True)
    try:
        text = json.dumps(item, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(item)
    return text if len(text) <= _GLIMPSE else text[:_GLIMPSE - 1] + "…"


def _decoded(history: Any, format: FormatName | None, strict: bool,
             thinking: bool | None) -> History[Any]:
    if isinstance(history, History):
        if format is not None and history.format != format:
            raise AssertionError(f"a {history.format} history checked as {format}")
        format, history = history.format, history.source
    if format == "anthropic" and thinking is not None:
        items = history_items(history)[0] if isinstance(history, dict) else history
        return anthropic.decode_history(items, thinking=thinking, strict=strict)
    decoded = decode_history(history, format, strict=strict)
    if isinstance(decoded, Failure):
        raise AssertionError(f"not a history that can be checked: {decoded.failure()}")
    return decoded.unwrap()


def _sentence(history: History[Any], violation: FormatViolation, where: str) -> str:
    call = f", call id {violation.call_id}" if violation.call_id else ""
    item = (_glimpse(history.source[violation.index])
            if violation.index < len(history.source) else "(past the end)")
    return (f"{history.format} history {where}: rule {violation.rule}, item "
            f"{violation.index}{call}: {violation.problem}\n  item {violation.index}: {item}")


def assert_balanced(history: History[Any] | Sequence[Any] | dict[str, Any],
                    format: FormatName | None = None, *, strict: bool = False,
                    thinking: bool | None = None) -> History[Any]:
    """The history decoded, when a provider would accept it; else ``AssertionError``.

    ``history``: the items (dicts or SDK objects), a request body, or a decoded ``History``;
    ``format``: its format (``None``: detected, which plain text cannot be); ``strict``: the
    strict rules too; ``thinking``: an Anthropic request's setting. The message names the rule,
    the item's index and a glimpse of it, and the call id::

        openai-chat history is not balanced: rule orphan-result, item 0, call id c1: tool
        message for c1 is not a response to a preceding message with 'tool_calls' …
          item 0: {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    """
    decoded = _decoded(history, format, strict, thinking)
    problem = decoded.violation or decoded.end_violation
    if problem is not None:
        where = "is not balanced" if decoded.violation is not None else \
            "ends inside a turn a provider cannot be sent"
        raise AssertionError(_sentence(decoded, problem, where))
    return decoded


def assert_completed_turn_prefix(seed: Sequence[Any], history: Sequence[Any],
                                 format: FormatName | None = None) -> None:
    """``seed`` (a runtime's fork seed of ``history``) is its completed-turn prefix: the same
    items, in order, through the last completed turn; else ``AssertionError`` saying where they
    part and what the prefix holds there."""
    decoded = _decoded(history, format, False, None)
    cut = decoded.completed_prefix_length
    expected = list(decoded.source[:cut])
    got = list(seed)
    if got == expected:
        return
    differ = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                  min(len(got), len(expected)))
    seen = _glimpse(got[differ]) if differ < len(got) else "(the seed ends)"
    wanted = _glimpse(expected[differ]) if differ < len(expected) else "(the prefix ends)"
    raise AssertionError(
        f"{decoded.format} seed is not the completed-turn prefix: {len(got)} items where the "
        f"prefix has {cut} of the history's {len(decoded.source)}; they part at item {differ}\n"
        f"  seed:   {seen}\n  prefix: {wanted}")
