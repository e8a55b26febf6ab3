"""Reading a child's result from its own events (wire-format §7.2-7.4).

Rules of this module:

* A child's *own* events are those past its seed: ``child_events[seed_length:]`` (0 for a
  spawn child or a fork child without a seed). They include the child's ``session/end-seed``
  and delegated policy events. Only own events are read, so a fork child that produced nothing
  returns empty output, never the parent's seeded text.
* Output: the content of the last ``assistant/message`` with non-empty content; else the joined
  ``text-delta`` chunks; else nothing. It does not depend on how the run ended.
* Stop reason: from the *accounting turn*, the last ``turn/end`` whose turn had a step, or had an
  inbox claim and did not end ``completed``. A cancelled run that did not complete is
  ``aborted``. A run asked for structured output that captured none cannot be ``completed``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, TypeAlias

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .events import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    ContentBlock,
    Event,
    InboxSplicedEvent,
    StepStartEvent,
    TextBlock,
    TextDelta,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEndEvent,
    TurnEndReason,
    TurnMaxTokens,
    TurnStartEvent,
)

__all__ = [
    "StopReason",
    "STOP_REASONS",
    "SubagentResult",
    "final_assistant_output",
    "accounting_turn_end",
    "stop_reason_for",
    "read_result",
]

#: DSH's known stop reasons; other providers may report others (the set is open).
StopReason: TypeAlias = Literal["completed", "aborted", "error", "max-tokens", "refusal"]
STOP_REASONS: tuple[StopReason, ...] = ("completed", "aborted", "error", "max-tokens", "refusal")


class SubagentResult(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """How a child run ended: in memory only, never persisted (wire-format §7.2).

    ``structured`` is the captured structured-output value as its exact JSON text (present only
    when one was requested and captured); ``diagnostic`` is provider-authored failure detail
    (in-process providers never set it).
    """

    output: tuple[ContentBlock, ...]
    structured: Raw | UnsetType = UNSET
    diagnostic: str | UnsetType = UNSET
    stop_reason: str


def final_assistant_output(events: Iterable[Event]) -> tuple[ContentBlock, ...] | None:
    """The child's final assistant output (wire-format §7.4), or ``None`` if it produced none.

    The last ``assistant/message`` with non-empty content wins, whole (reasoning and tool-call
    blocks included); without one, the ``text-delta`` pieces of every chunk, joined into one
    text block. A sequence is scanned from the end, so the common case costs O(tail).

    >>> final_assistant_output(())
    """
    if isinstance(events, Sequence):
        for index in range(len(events) - 1, -1, -1):
            event = events[index]
            if isinstance(event, AssistantMessageEvent) and event.data.message.content:
                return event.data.message.content
        return _streamed_text(events)
    candidate: tuple[ContentBlock, ...] | None = None
    pieces: list[str] = []
    for event in events:
        if isinstance(event, AssistantMessageEvent):
            if event.data.message.content:
                candidate = event.data.message.content
        elif isinstance(event, AssistantChunkEvent):
            _collect_text(event, pieces)
    if candidate is not None:
        return candidate
    return (TextBlock(text="".join(pieces)),) if pieces else None


def _collect_text(event: AssistantChunkEvent, pieces: list[str]) -> None:
    chunk = event.data.chunk
    if isinstance(chunk, TextDelta) and chunk.text:
        pieces.append(chunk.text)


def _streamed_text(events: Iterable[Event]) -> tuple[ContentBlock, ...] | None:
    pieces: list[str] = []
    for event in events:
        if isinstance(event, AssistantChunkEvent):
            _collect_text(event, pieces)
    return (TextBlock(text="".join(pieces)),) if pieces else None


def accounting_turn_end(events: Iterable[Event]) -> TurnEndEvent | None:
    """The ``turn/end`` that accounts for a run: the last one whose turn did work.

    A turn counts when it contained a ``step/start``, or when it claimed inbox input (a splice
    with ``removedCount`` and no ``outcome``) and ended other than ``completed`` (a turn that
    claimed input and was then blocked, aborted or failed before any step).

    >>> accounting_turn_end(())
    """
    found: TurnEndEvent | None = None
    stepped = claimed = False
    for event in events:
        if isinstance(event, TurnStartEvent):
            stepped = claimed = False
        elif isinstance(event, StepStartEvent):
            stepped = True
        elif isinstance(event, InboxSplicedEvent):
            data = event.data
            if not isinstance(data.removed_count, UnsetType) and isinstance(data.outcome,
                                                                            UnsetType):
                claimed = True
        elif isinstance(event, TurnEndEvent):
            if stepped or (claimed and not isinstance(event.data.reason, TurnCompleted)):
                found = event
            stepped = claimed = False
    return found


def stop_reason_for(reason: TurnEndReason | None) -> StopReason:
    """The stop reason for an accounting turn's end reason (``None``: no accounting turn).

    >>> stop_reason_for(TurnBlocked())
    'refusal'
    >>> stop_reason_for(None)
    'error'
    """
    if isinstance(reason, TurnCompleted):
        return "completed"
    if isinstance(reason, TurnMaxTokens):
        return "max-tokens"
    if isinstance(reason, TurnAborted):
        return "aborted"
    if isinstance(reason, TurnBlocked):
        return "refusal"
    # error, interrupted, a kind added later, or no accounting turn at all
    return "error"


def read_result(own_events: Sequence[Event], cancelled: bool, captured: Raw | None = None,
                structured_requested: bool = False) -> SubagentResult:
    """The result of a finished child run (wire-format §7.3).

    Args:
        own_events: ONLY the child's events past its seed (``child_events[seed_length:]``).
        cancelled: whether the run was cancelled (parent signal, or disposed before it ended).
        captured: the structured-output value the run captured, as JSON text, if any.
        structured_requested: whether the run was asked for structured output.

    Returns:
        The output, the stop reason and, when requested and captured, the structured value.

    >>> read_result((), cancelled=False)
    SubagentResult(output=(), structured=UNSET, diagnostic=UNSET, stop_reason='error')
    >>> read_result((), cancelled=True).stop_reason
    'aborted'
    """
    end = accounting_turn_end(own_events)
    stop_reason = stop_reason_for(None if end is None else end.data.reason)
    if cancelled and stop_reason != "completed":
        stop_reason = "aborted"
    output = final_assistant_output(own_events) or ()
    if not structured_requested:
        return SubagentResult(output=output, stop_reason=stop_reason)
    if captured is not None:
        return SubagentResult(output=output, structured=captured, stop_reason=stop_reason)
    if stop_reason == "completed":
        # Finishing without the structured value is a failure, not a success without it.
        stop_reason = "aborted" if cancelled else "error"
    return SubagentResult(output=output, stop_reason=stop_reason)
