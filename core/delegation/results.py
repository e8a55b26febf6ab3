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
  A run whose accounting turn ended ``error`` carries that turn's failure.
* A diagnostic is bounded to 4,096 UTF-8 bytes; a longer one is cut on a character boundary
  and ends in ``[diagnostic truncated]`` (DSH's out-of-process settlement).
* One turn of any agent reads the same way (:func:`read_turn`): the final output's text, the
  stop reason and failure of its ``turn/end``, and the usage of every model call it made.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, TypeAlias

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .._checking import checked, plain_forms
from ..log import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    ContentBlock,
    Event,
    InboxSplicedEvent,
    LlmFailure,
    StepStartEvent,
    TextBlock,
    TextDelta,
    TokenUsage,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEndEvent,
    TurnEndReason,
    TurnError,
    TurnMaxTokens,
    TurnStartEvent,
    UsageChunk,
)

__all__ = [
    "StopReason",
    "STOP_REASONS",
    "SubagentResult",
    "RunResult",
    "MAX_DIAGNOSTIC_BYTES",
    "DIAGNOSTIC_TRUNCATED",
    "final_assistant_output",
    "output_text",
    "accounting_turn_end",
    "stop_reason_for",
    "read_result",
    "read_turn",
    "describe_failure",
    "bound_diagnostic",
]

#: DSH's known stop reasons; other providers may report others (the set is open).
StopReason: TypeAlias = Literal["completed", "aborted", "error", "max-tokens", "refusal"]
STOP_REASONS: tuple[StopReason, ...] = ("completed", "aborted", "error", "max-tokens", "refusal")


class SubagentResult(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """How a child run ended: in memory only, never persisted (wire-format §7.2).

    ``structured`` is the captured structured-output value as its exact JSON text (present only
    when one was requested and captured); ``diagnostic`` is failure detail for the parent's
    model (a provider's own, or the child's failure described), at most
    :data:`MAX_DIAGNOSTIC_BYTES`; ``failure`` is the failure the child's accounting turn ended
    with, when its stop reason is ``error`` because of one.
    """

    output: tuple[ContentBlock, ...]
    structured: Raw | UnsetType = UNSET
    diagnostic: str | UnsetType = UNSET
    stop_reason: str
    failure: LlmFailure | UnsetType = UNSET


class RunResult(msgspec.Struct, frozen=True, kw_only=True):
    """How one turn of an agent ended (what ``Agent.run`` returns; in memory only).

    ``output`` is the text of the turn's final assistant output (:func:`final_assistant_output`
    over the turn's events: for a turn cut short, the text streamed so far; ``""`` when there is
    none) and ``content`` its blocks; ``stop_reason`` is :func:`stop_reason_for` of the turn's
    end (``aborted`` for input dropped before a turn claimed it); ``failure`` the failure a turn
    that ended ``error`` carries; ``usage`` the sum of the usage every model call of the turn
    reported (``None`` when none did); ``turn`` the turn's number (``None`` when no turn ran).
    """

    output: str
    stop_reason: StopReason
    failure: LlmFailure | None = None
    usage: TokenUsage | None = None
    turn: int | None = None
    content: tuple[ContentBlock, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the turn completed."""
        return self.stop_reason == "completed"


#: The most UTF-8 bytes a diagnostic may hold (DSH's ``MAX_SUBAGENT_DIAGNOSTIC_BYTES``).
MAX_DIAGNOSTIC_BYTES = 4_096
#: What a cut diagnostic ends with (DSH's text).
DIAGNOSTIC_TRUNCATED = "\n[diagnostic truncated]"


@checked
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


@checked
def output_text(output: Iterable[ContentBlock]) -> str:
    """The text blocks of an output, concatenated without a separator.

    >>> output_text((TextBlock(text="a"), TextBlock(text="b")))
    'ab'
    """
    return "".join(block.text for block in output if isinstance(block, TextBlock))


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


@checked
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


@checked
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


@checked
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
    SubagentResult(output=(), structured=UNSET, diagnostic=UNSET, stop_reason='error',
                   failure=UNSET)
    >>> read_result((), cancelled=True).stop_reason
    'aborted'
    """
    end = accounting_turn_end(own_events)
    stop_reason = stop_reason_for(None if end is None else end.data.reason)
    if cancelled and stop_reason != "completed":
        stop_reason = "aborted"
    output = final_assistant_output(own_events) or ()
    # The failure a turn ended with, whether or not a structured value was asked for.
    failure = (end.data.reason.error if stop_reason == "error" and end is not None
               and isinstance(end.data.reason, TurnError) else UNSET)
    if not structured_requested:
        return SubagentResult(output=output, stop_reason=stop_reason, failure=failure)
    if captured is not None:
        return SubagentResult(output=output, structured=captured, stop_reason=stop_reason,
                              failure=failure)
    if stop_reason == "completed":
        # Finishing without the structured value is a failure, not a success without it.
        stop_reason = "aborted" if cancelled else "error"
    return SubagentResult(output=output, stop_reason=stop_reason, failure=failure)


@checked
def read_turn(turn_events: Sequence[Event]) -> RunResult:
    """The result of one turn, read from its events: its ``turn/start`` through its
    ``turn/end`` (a turn without its end reads as ``error``).

    >>> from ..log import TurnEndData, TurnStartData
    >>> read_turn((TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=1)),
    ...            TurnEndEvent(seq=1, time=0, data=TurnEndData(turn=1, reason=TurnCompleted()))))
    RunResult(output='', stop_reason='completed', failure=None, usage=None, turn=1, content=())
    """
    turn: int | None = None
    reason: TurnEndReason | None = None
    streamed: TokenUsage | None = None
    answered: TokenUsage | None = None
    end = len(turn_events)
    # Dispatch on the exact type: an isinstance chain over every chunk costs several times more.
    for index, event in enumerate(turn_events):
        if type(event) is AssistantChunkEvent:
            chunk = event.data.chunk
            if type(chunk) is UsageChunk:
                streamed = _added(streamed, chunk.usage)
        elif type(event) is AssistantMessageEvent:
            if isinstance(event.data.usage, TokenUsage):
                answered = _added(answered, event.data.usage)
        elif type(event) is TurnStartEvent:
            if turn is None:
                turn = event.data.turn
        elif type(event) is TurnEndEvent:
            reason, end = event.data.reason, index + 1
            break
    content = _final_output(turn_events[:end] if end < len(turn_events) else turn_events) or ()
    # Every call streams its usage (a failed one too); a log without chunks keeps the messages'.
    return RunResult(output=_output_text(content), stop_reason=_stop_reason_for(reason),
                     failure=reason.error if isinstance(reason, TurnError) else None,
                     usage=streamed if streamed is not None else answered, turn=turn,
                     content=content)


def _added(total: TokenUsage | None, usage: TokenUsage) -> TokenUsage:
    if total is None:
        return usage

    def optional(a: int | UnsetType, b: int | UnsetType) -> int | UnsetType:
        if isinstance(a, UnsetType):
            return b
        return a if isinstance(b, UnsetType) else a + b

    return TokenUsage(
        input_tokens=total.input_tokens + usage.input_tokens,
        output_tokens=total.output_tokens + usage.output_tokens,
        cache_read_tokens=optional(total.cache_read_tokens, usage.cache_read_tokens),
        cache_write_tokens=optional(total.cache_write_tokens, usage.cache_write_tokens),
        reasoning_tokens=optional(total.reasoning_tokens, usage.reasoning_tokens))


@checked
def describe_failure(failure: LlmFailure) -> str:
    """A failure in one line: its code, its HTTP status when it has one, its message.

    >>> describe_failure(LlmFailure(message="upstream overloaded", code="SERVER", status=503))
    'SERVER (HTTP 503): upstream overloaded'
    """
    status = "" if isinstance(failure.status, UnsetType) else f" (HTTP {failure.status})"
    return f"{failure.code}{status}: {failure.message}"


@checked
def bound_diagnostic(diagnostic: str) -> str:
    """``diagnostic`` within :data:`MAX_DIAGNOSTIC_BYTES` UTF-8 bytes: as it is when it fits,
    else cut on a character boundary and ended with :data:`DIAGNOSTIC_TRUNCATED` (DSH's
    ``limitSubagentDiagnostic``; a lone surrogate counts as the three bytes JavaScript's
    encoder writes for it).

    >>> bound_diagnostic("exit 3")
    'exit 3'
    >>> cut = bound_diagnostic("é" * 4_096)
    >>> len(cut.encode()), cut.endswith("[diagnostic truncated]")
    (4095, True)
    """
    data = diagnostic.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_DIAGNOSTIC_BYTES:
        return diagnostic
    cut = MAX_DIAGNOSTIC_BYTES - len(DIAGNOSTIC_TRUNCATED.encode("utf-8"))
    while data[cut] & 0b1100_0000 == 0b1000_0000:  # never inside a character
        cut -= 1
    return data[:cut].decode("utf-8", "surrogatepass") + DIAGNOSTIC_TRUNCATED


# The plain functions, for the calls inside this module (the public names are run-time checked).
_final_output, _output_text, _stop_reason_for = plain_forms(
    final_assistant_output, output_text, stop_reason_for)
