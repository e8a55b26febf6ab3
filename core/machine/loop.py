"""The agent's turn machine: DSH's agent loop as a pure function (wire-format §2.4-2.9, §6.4).

Rules of this module:

* One function, :func:`feed`. It reads the trace of the agent's log (never the events), the
  machine's own :class:`LoopState` and one input, and returns a :class:`LoopStep`: the next
  state, the events to append — numbered from ``trace.length``, stamped with the caller's
  ``time`` — and at most one command. The shell appends the events, carries out the command and
  feeds what came of it. Others may append to the log between two feeds (a tool's own events,
  policy events): the machine re-reads the trace every time and keeps no copy of it.
* The machine owns no clock and no randomness: the caller passes ``time``, and the inputs
  that create a message carry its id.
* Inputs, and the command each one answers:

  ====================  ==================================================================
  input                 when
  ====================  ==================================================================
  ``Followup``/``Steer``  any time: queued input (next turn / next step boundary)
  ``Begin``             the shell's task runs (after ``Wake``)
  ``StepPrepared``      after ``PrepareStep``: the hooks let the step in; its header
  ``StepBlocked``       after ``PrepareStep``: a hook refused the step
  ``Chunk``             after ``CallModel``: one streamed chunk
  ``StreamEnded``       after ``CallModel`` or ``EndStream``: the stream is over
  ``BackoffDone``       after ``Backoff``: the wait before a retried model call is over
  ``ToolDone``          after ``RunTools``: one outcome per call, in the calls' order
  ``Failed``            instead of any answer: the loop itself failed
  ``CancelRequested``   any time; then ``Cancelled`` once the shell's task has stopped
  ====================  ==================================================================

* Turn order, DSH's: ``turn/start``; at each step boundary the claim (the turn's first step
  claims queued steering input and one follow-up; later steps claim steering input only), a
  child's preamble before its first step, then ``PrepareStep``; ``step/start``, the claimed
  ``user/message``s, ``request/header`` (always on the instance's first request, ``initial``
  or ``resume``; later only when it differs from the log's last, ``change``), the chunks, the
  assembled ``assistant/message``, each tool group's ``tool/call``s and then their
  ``tool/result``s, ``step/end``. Another step follows while the model called tools and none
  concluded the turn, or while steering input waits; then ``turn/end``, and the next turn if
  input is queued.
* Retries (DSH's llm-retry): a model call that failed (an ``error`` or ``aborted`` finish, or
  a stream cut before any finish) is retried when the route's policy (``StepPrepared.retry``)
  says so (:func:`.retry.schedule_retry`): ``llm/retry`` is written, ``Backoff`` asks the
  shell to wait, and after ``BackoffDone`` come ``llm/retry-started`` and a ``CallModel`` with
  the same header over the same history, in the same turn and step. The failed call's chunks
  stay in the log and become no message. Otherwise the failure ends the turn ``error``.
  Cancellation during the wait writes no ``llm/retry-started``.
* Endings: ``completed``; ``max-tokens`` (sticky: a later completed step keeps it, and the
  truncated step's tool calls never run); ``blocked`` (a hook refused a step, or the step would
  exceed ``max_steps``); ``error`` (an error finish, or ``Failed``); ``aborted`` (cancellation).
  Whatever the ending, the turn is closed by the grammar's walk to idle
  (:func:`.closers.close_open_turn`). A closing whose write failed leaves the turn open with
  the reason it was ending with: the next ``Failed`` or ``Begin`` closes it so.
* Cancellation: after ``CancelRequested`` the machine writes nothing and answers every input
  but ``Followup``/``Steer`` with ``Stop``, until ``Cancelled``: then the delivered part of an
  interrupted stream (``interrupted: true``), the closers, and the input queued at the request
  dropped with a ``canceled`` splice. Input queued after the request survives and wakes the
  machine again. An interrupt (``keep_queued``) drops nothing: the queued input stays parked
  until the next input wakes the machine; a cancellation of the idle machine drops what is
  parked. A ``Steer`` with ``wake=False`` (an injection) never wakes an idle machine.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec
from msgspec import UNSET

from .._checking import checked, plain_forms, unchecked
from ..delegation import PromptSection, ToolOutcome
from ..log import (
    EMPTY_TRACE,
    AssistantChunkData,
    AssistantChunkEvent,
    AssistantMessage,
    AssistantMessageData,
    AssistantMessageEvent,
    CancelCause,
    EpochHeader,
    Event,
    FinishAborted,
    FinishError,
    FinishMaxTokens,
    InboxSplicedData,
    InboxSplicedEvent,
    LlmFailure,
    LlmRetryData,
    LlmRetryEvent,
    LlmRetryStartedData,
    LlmRetryStartedEvent,
    MessageSource,
    Phase,
    RequestHeaderData,
    RequestHeaderEvent,
    RetryPolicy,
    StepData,
    StepEndEvent,
    StepStartEvent,
    StreamChunk,
    SubagentDescriptorData,
    SubagentDescriptorEvent,
    ToolCallBlock,
    ToolCallData,
    ToolCallEvent,
    ToolResultBlock,
    ToolResultData,
    ToolResultEvent,
    ToolResultMessage,
    Trace,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnEndReason,
    TurnError,
    TurnMaxTokens,
    TurnStartData,
    TurnStartEvent,
    UserMessage,
    UserMessageEvent,
    closing_events,
    request_context_event,
    schedule_retry,
    title_event,
    trace_log,
)
from .assembly import (
    EMPTY_ASSEMBLY,
    StreamAssembly,
    assemble_chunk,
    assembled_blocks,
    interrupted_blocks,
)
from .prompt import context_message

# What feed (checked) calls per chunk and per step gets values it built: the plain forms.
(_assemble_chunk, _assembled_blocks, _interrupted_blocks, _context_message, _closing_events,
 _request_context_event, _title_event, _trace_log, _schedule_retry) = plain_forms(
    assemble_chunk, assembled_blocks, interrupted_blocks, context_message, closing_events,
    request_context_event, title_event, trace_log, schedule_retry)

__all__ = [
    # inputs
    "Followup",
    "Steer",
    "Begin",
    "StepPrepared",
    "StepBlocked",
    "Chunk",
    "StreamEnded",
    "BackoffDone",
    "ToolDone",
    "Failed",
    "CancelRequested",
    "Cancelled",
    "LoopInput",
    # commands
    "Wake",
    "PrepareStep",
    "CallModel",
    "EndStream",
    "Backoff",
    "RunTools",
    "Stop",
    "Command",
    # state
    "ToolOutcome",
    "TurnProgress",
    "LoopState",
    "LoopStep",
    "LoopProtocolError",
    "DEFAULT_MAX_STEPS",
    "initial_loop_state",
    "feed",
]

# --------------------------------------------------------------------------- values


#: Steps one turn may take unless the agent says otherwise: far beyond any real turn (DSH has no
#: bound), low enough that a model calling tools forever ends its turn ``blocked``.
DEFAULT_MAX_STEPS = 1_000

_UNFINISHED = LlmFailure(message="the model stream ended without a finish chunk", code="NETWORK")


class _Value(msgspec.Struct, frozen=True, kw_only=True):
    pass


# --------------------------------------------------------------------------- inputs


class Followup(_Value, frozen=True, kw_only=True):
    """Input for a turn of its own (DSH's ``next-turn`` inbox)."""

    message: UserMessage


class Steer(_Value, frozen=True, kw_only=True):
    """Input for the next step boundary of the running turn, or a new turn (``next-step``)."""

    message: UserMessage
    #: Whether an idle machine wakes for it; ``False`` is DSH's ``inject``: the input waits
    #: for whatever wakes the machine next.
    wake: bool = True


class Begin(_Value, frozen=True, kw_only=True):
    """The shell's task is running."""


class StepPrepared(_Value, frozen=True, kw_only=True):
    """The pre-step hooks let the step in; the request header it will be called with."""

    header: EpochHeader
    #: Names of the tools that may run at the same time as the step's other safe calls.
    parallel_tools: frozenset[str] = frozenset()
    #: The runtime-context contributions in scope, in order (``kind="context"``).
    context: tuple[PromptSection, ...] = ()
    #: The id of the runtime-context snapshot, if the step writes one.
    context_id: str = ""
    #: How the serving route retries a failed model call (``None``: it does not).
    retry: RetryPolicy | None = None


class StepBlocked(_Value, frozen=True, kw_only=True):
    """A pre-step hook refused the step: the turn ends ``blocked``."""


class Chunk(_Value, frozen=True, kw_only=True):
    chunk: StreamChunk


class StreamEnded(_Value, frozen=True, kw_only=True):
    """The model's stream is over (exhausted, or closed after ``EndStream``)."""

    #: The id of the assistant message it assembles into; when the call failed and a retry
    #: chain starts, the chain's ``retryId``.
    message_id: str
    #: A uniform draw in [0, 1] for the jitter of a retry's backoff (the shell's randomness;
    #: 0.5 is the backoff without jitter).
    draw: float = 0.5


class BackoffDone(_Value, frozen=True, kw_only=True):
    """The wait ``Backoff`` asked for is over: the retried call starts."""


class ToolDone(_Value, frozen=True, kw_only=True):
    call_id: str
    outcome: ToolOutcome
    #: The id of the tool-result message.
    message_id: str


class Failed(_Value, frozen=True, kw_only=True):
    """The loop failed (a hook, the model call, a bug): the turn ends ``error``."""

    failure: LlmFailure


class CancelRequested(_Value, frozen=True, kw_only=True):
    cause: CancelCause
    #: Keep the queued input parked (DSH's interrupt): nothing is dropped, and it waits for
    #: the next input to wake the machine. Otherwise the input queued now is dropped.
    keep_queued: bool = False


class Cancelled(_Value, frozen=True, kw_only=True):
    """The shell's task stopped after ``CancelRequested``: close what it left open."""

    #: The id of the interrupted assistant message, if the stream delivered any text.
    message_id: str
    #: The calls of the running tool group the shell dispatched, when it knows: the group's
    #: others never started and are answered ``tool call aborted before dispatch``, as DSH
    #: answers a call its cancellation skipped. ``None``: every logged call counts as started.
    dispatched: frozenset[str] | None = None


LoopInput: TypeAlias = (Followup | Steer | Begin | StepPrepared | StepBlocked | Chunk
                        | StreamEnded | BackoffDone | ToolDone | Failed | CancelRequested
                        | Cancelled)

# --------------------------------------------------------------------------- commands


class Wake(_Value, frozen=True, kw_only=True):
    """Start the task that drives the machine, then feed ``Begin``."""


class PrepareStep(_Value, frozen=True, kw_only=True):
    """Run the pre-step hooks, compose the request header, feed ``StepPrepared``."""

    turn: int
    step: int


class CallModel(_Value, frozen=True, kw_only=True):
    """Stream the model with this header over the log's history; feed each ``Chunk``."""

    header: EpochHeader


class EndStream(_Value, frozen=True, kw_only=True):
    """A finish chunk arrived: nothing may follow it. Close the stream, feed ``StreamEnded``."""


class Backoff(_Value, frozen=True, kw_only=True):
    """A failed model call will be retried: wait ``delay_ms`` (cancellably), feed
    ``BackoffDone``. ``retry`` is the ``llm/retry`` payload just written."""

    delay_ms: float
    retry: LlmRetryData


class RunTools(_Value, frozen=True, kw_only=True):
    """Run these calls (together when several), feed one ``ToolDone`` each, in this order."""

    turn: int
    step: int
    calls: tuple[ToolCallBlock, ...]


class Stop(_Value, frozen=True, kw_only=True):
    """Nothing left to do: the task may end."""


Command: TypeAlias = Wake | PrepareStep | CallModel | EndStream | Backoff | RunTools | Stop

# --------------------------------------------------------------------------- state

Awaiting: TypeAlias = Literal["idle", "wake", "prepare", "stream", "backoff", "tools",
                              "cancel"]


class TurnProgress(msgspec.Struct, frozen=True, kw_only=True):
    """What the machine remembers of the open turn beyond the trace."""

    turn: int
    #: Messages claimed at the current step boundary, written after its ``step/start``.
    claimed: tuple[UserMessage, ...] = ()
    #: How the turn will end once no further step is due (``None``: not decided).
    ending: TurnEndReason | None = None
    stream: StreamAssembly | None = None
    #: The running group's calls still without a result, in order (which ``tool/call`` each
    #: result answers is the trace's pairing: ``Trace.pending_calls``).
    running: tuple[ToolCallBlock, ...] = ()
    #: Names of the step's tools that may run together (from ``StepPrepared``).
    parallel_tools: frozenset[str] = frozenset()
    #: Groups after the running one.
    later: tuple[tuple[ToolCallBlock, ...], ...] = ()
    concluded: bool = False
    #: The open step's retry policy (from ``StepPrepared``) and the retries it scheduled.
    retry_policy: RetryPolicy | None = None
    retries: tuple[LlmRetryData, ...] = ()


class LoopState(msgspec.Struct, frozen=True, kw_only=True):
    """The machine between two inputs."""

    awaiting: Awaiting = "idle"
    #: Follow-ups, each waiting for a turn of its own.
    inbox: tuple[UserMessage, ...] = ()
    #: Steering input waiting for the next step boundary.
    steering: tuple[UserMessage, ...] = ()
    turn: TurnProgress | None = None
    #: Whether this instance has written its first ``request/header``.
    header_logged: bool = False
    #: Payloads written at the first step boundary of the next turn (a child's descriptor).
    preamble: tuple[SubagentDescriptorData, ...] = ()
    #: Steps a turn may take; the step after them is refused (``blocked``). ``None``: no limit.
    max_steps: int | None = DEFAULT_MAX_STEPS
    #: Whether the log gets a fallback ``session/title`` (DSH's session-title plugin).
    titles: bool = True
    #: Why the running task is being cancelled, and how much queued input the request drops.
    cancel: CancelCause | None = None
    drop_inbox: int = 0
    drop_steering: int = 0
    #: Whether the cancelled task's queued input stays parked until the next input.
    park: bool = False
    #: How the machine last closed a turn, if the log may still show it open (a failed write).
    closing: TurnEndReason | None = None
    #: The log's length when this instance was built over it: the runtime-context snapshot it
    #: retains is restored from there (:meth:`.trace.Trace.retained_context`).
    restored_at: int = 0


class LoopStep(msgspec.Struct, frozen=True, kw_only=True):
    state: LoopState
    events: tuple[Event, ...] = ()
    command: Command | None = None


class LoopProtocolError(ValueError):
    """An input the machine cannot take now: a bug in the shell that drives it."""


@checked
def initial_loop_state(*, preamble: tuple[SubagentDescriptorData, ...] = (),
                       max_steps: int | None = DEFAULT_MAX_STEPS,
                       titles: bool = True, trace: Trace = EMPTY_TRACE) -> LoopState:
    """The state of a new agent instance over any closed log.

    ``trace``: the log's trace when the instance is built (a resumed session's, a fork
    child's over its seed); the instance retains the newest runtime-context snapshot then on
    the surface, as DSH's ``RuntimeContextProjection`` restores it.

    >>> initial_loop_state().awaiting
    'idle'
    """
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, not {max_steps}")
    return LoopState(preamble=preamble, max_steps=max_steps, titles=titles,
                     restored_at=trace.length)


# --------------------------------------------------------------------------- the fold


@unchecked
class _Writer:
    """Numbers and stamps the events of one feed; never escapes it."""

    __slots__ = ("events", "seq", "time")

    def __init__(self, trace: Trace, time: int) -> None:
        self.seq = trace.length
        self.time = time
        self.events: list[Event] = []

    def add(self, event: Event) -> None:
        self.events.append(event)
        self.seq += 1

    def splice(self, data: InboxSplicedData) -> None:
        self.add(InboxSplicedEvent(seq=self.seq, time=self.time, data=data))

    def extend(self, events: tuple[Event, ...]) -> None:
        self.events.extend(events)
        self.seq += len(events)


def _step_of(state: LoopState, events: _Writer, command: Command | None) -> LoopStep:
    return LoopStep(state=state, events=tuple(events.events), command=command)


def _replace(state: LoopState, **changes: object) -> LoopState:
    return msgspec.structs.replace(state, **changes)


@checked
def feed(state: LoopState, trace: Trace, given: LoopInput, *, time: int) -> LoopStep:
    """Fold one input into the machine.

    Args:
        state: the machine's state after the previous input.
        trace: the trace of the agent's log now (e.g. its session's).
        given: what happened.
        time: epoch milliseconds to stamp the new events with.

    Returns:
        The next state, the events to append in order, and the shell's next command.

    Raises:
        LoopProtocolError: ``given`` does not answer the command the machine is waiting on.

    >>> from turnfork.core.trace import EMPTY_TRACE
    >>> from turnfork.core.events import MessageSource, TextBlock, UserMessage
    >>> hello = UserMessage(content=(TextBlock(text="hi"),), source=MessageSource(kind="user"),
    ...                     id="m1")
    >>> step = feed(initial_loop_state(), EMPTY_TRACE, Followup(message=hello), time=0)
    >>> [event.data.target for event in step.events], step.command
    (['next-turn'], Wake())
    """
    out = _Writer(trace, time)
    if isinstance(given, Followup | Steer):
        return _queue(state, given, out)
    if isinstance(given, CancelRequested):
        if state.awaiting == "idle" and not given.keep_queued:
            return _drop_parked(state, out)
        if state.awaiting in ("idle", "cancel"):
            return _step_of(state, out, None)
        keep = given.keep_queued
        return _step_of(_replace(state, awaiting="cancel", cancel=given.cause,
                                 drop_inbox=0 if keep else len(state.inbox),
                                 drop_steering=0 if keep else len(state.steering),
                                 park=keep), out, None)
    if state.awaiting == "cancel":
        if isinstance(given, Cancelled):
            return _cancelled(state, trace, out, given.message_id, given.dispatched)
        return _step_of(state, out, Stop())
    if isinstance(given, Cancelled):
        raise LoopProtocolError("Cancelled without CancelRequested")
    if isinstance(given, Failed):
        if state.turn is None and trace.phase is Phase.IDLE:
            return _step_of(_replace(state, awaiting="idle"), out, Stop())
        if state.turn is None and state.closing is not None:
            # The write of a closing failed: the turn keeps the reason it was ending with.
            return _close(state, trace, out, state.closing)
        return _close(state, trace, out, TurnError(error=given.failure))
    if isinstance(given, Begin):
        _expect(state, "wake", given)
        return _begin(state, trace, out)
    if isinstance(given, StepPrepared | StepBlocked):
        _expect(state, "prepare", given)
        if isinstance(given, StepBlocked):
            return _close(state, trace, out, TurnBlocked())
        return _open_step(state, trace, out, given)
    if isinstance(given, Chunk):
        _expect(state, "stream", given)
        return _chunk(state, trace, out, given.chunk)
    if isinstance(given, StreamEnded):
        _expect(state, "stream", given)
        return _stream_ended(state, trace, out, given)
    if isinstance(given, BackoffDone):
        _expect(state, "backoff", given)
        return _retry_started(state, trace, out)
    _expect(state, "tools", given)
    return _tool_done(state, trace, out, given)


def _expect(state: LoopState, awaiting: Awaiting, given: LoopInput) -> None:
    if state.awaiting != awaiting:
        raise LoopProtocolError(f"{type(given).__name__} while the loop waits for "
                                f"{state.awaiting!r}")


def _queue(state: LoopState, given: Followup | Steer, out: _Writer) -> LoopStep:
    if isinstance(given, Followup):
        out.splice(InboxSplicedData(target="next-turn", start=len(state.inbox),
                                    inserted=(given.message,)))
        state = _replace(state, inbox=(*state.inbox, given.message))
    else:
        out.splice(InboxSplicedData(target="next-step", start=len(state.steering),
                                    inserted=(given.message,)))
        state = _replace(state, steering=(*state.steering, given.message))
    if state.awaiting == "idle" and (isinstance(given, Followup) or given.wake):
        return _step_of(_replace(state, awaiting="wake"), out, Wake())
    return _step_of(state, out, None)


def _drop_parked(state: LoopState, out: _Writer) -> LoopStep:
    """A cancellation of an idle machine drops the input parked in it (an interrupt's, or an
    injection nothing woke for), as the cancellation of a running one would."""
    if state.steering:
        out.splice(InboxSplicedData(target="next-step", start=0,
                                    removed_count=len(state.steering), inserted=(),
                                    outcome="canceled"))
    if state.inbox:
        out.splice(InboxSplicedData(target="next-turn", start=0, removed_count=len(state.inbox),
                                    inserted=(), outcome="canceled"))
    return _step_of(_replace(state, inbox=(), steering=()), out, None)


def _begin(state: LoopState, trace: Trace, out: _Writer) -> LoopStep:
    next_turn = trace.next_turn
    if trace.phase is not Phase.IDLE:
        # A turn a failed write left open is closed before anything else starts.
        reason = state.closing or TurnError(error=LlmFailure(
            message="the previous turn was left open", code="UNKNOWN"))
        out.extend(_closing_events(trace, reason, time=out.time))
        if trace.open_turn is not None:
            next_turn = trace.open_turn + 1
    state = _replace(state, closing=None)
    if not state.inbox and not state.steering:
        return _step_of(_replace(state, awaiting="idle"), out, Stop())
    return _start_turn(state, next_turn, out)


def _start_turn(state: LoopState, turn: int, out: _Writer) -> LoopStep:
    out.add(TurnStartEvent(seq=out.seq, time=out.time, data=TurnStartData(turn=turn)))
    return _boundary(_replace(state, turn=TurnProgress(turn=turn)), turn, 1, out)


def _boundary(state: LoopState, turn: int, step: int, out: _Writer) -> LoopStep:
    """A step boundary: claim input, write the preamble, then ask for the step."""
    claimed: list[UserMessage] = []
    if state.steering:
        claimed.extend(state.steering)
        out.splice(InboxSplicedData(target="next-step", start=0,
                                    removed_count=len(state.steering), inserted=()))
        state = _replace(state, steering=())
    if step == 1 and state.inbox:
        claimed.append(state.inbox[0])
        out.splice(InboxSplicedData(target="next-turn", start=0, removed_count=1, inserted=()))
        state = _replace(state, inbox=state.inbox[1:])
    if step == 1:
        for payload in state.preamble:
            out.add(SubagentDescriptorEvent(seq=out.seq, time=out.time, data=payload))
        state = _replace(state, preamble=())
    progress = state.turn
    assert progress is not None
    state = _replace(state, turn=msgspec.structs.replace(progress, claimed=tuple(claimed)))
    if step == 1 and not claimed:
        # An emptied claim still owns its turn boundary, but spends no model call.
        return _end_turn(state, turn, TurnCompleted(), out)
    if state.max_steps is not None and step > state.max_steps:
        return _end_turn(state, turn, TurnBlocked(), out)
    return _step_of(_replace(state, awaiting="prepare"), out, PrepareStep(turn=turn, step=step))


def _open_step(state: LoopState, trace: Trace, out: _Writer, given: StepPrepared) -> LoopStep:
    progress = state.turn
    assert progress is not None
    turn, step = progress.turn, trace.next_step
    out.add(StepStartEvent(seq=out.seq, time=out.time, data=StepData(turn=turn, step=step)))
    for message in progress.claimed:
        out.add(UserMessageEvent(seq=out.seq, time=out.time, data=message,
                                 surface_op="append"))
    retained = trace.retained_context(state.restored_at)
    snapshot = _context_message(given.context, seen=trace.context_seen,
                               retained=None if retained is None else retained.text,
                               message_id=given.context_id)
    if snapshot is not None:
        out.add(UserMessageEvent(seq=out.seq, time=out.time, data=snapshot,
                                 surface_op="append"))
    if state.titles and not trace.titled and any(
            message.source.kind == "user" for message in progress.claimed):
        titled = _trace_log(out.events, trace).unwrap().first_title
        if titled is not None:
            out.add(_title_event(seq=out.seq, time=out.time, title=titled[1],
                                message_seq=titled[0]))
    header = given.header
    logged = trace.request_header
    reason: Literal["initial", "resume", "change"] | None = None
    if not state.header_logged:
        reason = "initial" if logged is None else "resume"
    elif logged is None or logged != header:
        reason = "change"
    if reason is not None:
        out.add(RequestHeaderEvent(seq=out.seq, time=out.time,
                                   data=RequestHeaderData(header=header, reason=reason)))
    route = (header.config.provider, header.config.model)
    if trace.request_context != route:
        out.add(_request_context_event(seq=out.seq, time=out.time, provider=route[0],
                                      model=route[1]))
    progress = msgspec.structs.replace(progress, claimed=(), stream=EMPTY_ASSEMBLY,
                                       parallel_tools=given.parallel_tools,
                                       retry_policy=given.retry, retries=())
    state = _replace(state, awaiting="stream", header_logged=True, turn=progress)
    return _step_of(state, out, CallModel(header=header))


def _chunk(state: LoopState, trace: Trace, out: _Writer, chunk: StreamChunk) -> LoopStep:
    progress = state.turn
    assert progress is not None and progress.stream is not None
    turn, step = progress.turn, trace.open_step or 0
    out.add(AssistantChunkEvent(seq=out.seq, time=out.time,
                                data=AssistantChunkData(turn=turn, step=step, chunk=chunk)))
    stream = _assemble_chunk(progress.stream, out.seq - 1, chunk)
    state = _replace(state, turn=msgspec.structs.replace(progress, stream=stream))
    # Nothing may follow a finish chunk.
    return _step_of(state, out, EndStream() if stream.finish is not None else None)


def _model_source(header: EpochHeader, replay: object = UNSET) -> MessageSource:
    config = header.config
    if isinstance(replay, msgspec.Raw):
        return MessageSource(kind="model", provider=config.provider, model=config.model,
                             replay_state=replay)
    return MessageSource(kind="model", provider=config.provider, model=config.model)


def _stream_ended(state: LoopState, trace: Trace, out: _Writer,
                  given: StreamEnded) -> LoopStep:
    progress = state.turn
    assert progress is not None and progress.stream is not None
    stream = progress.stream
    turn, step = progress.turn, trace.open_step or 0
    new_id = given.message_id
    finish = stream.finish
    if finish is None or isinstance(finish, FinishError | FinishAborted):
        # A stream cut before its finish is not an answer (DSH's assembler would call it a
        # stop; its adapters never end without one).
        failure = _UNFINISHED if finish is None else finish.failure
        return _retry_or_fail(state, trace, out, failure, given)
    blocks, replay = _assembled_blocks(stream)
    header = trace.request_header
    assert header is not None  # the step wrote or inherited one before calling the model
    message = AssistantMessage(content=blocks, id=new_id, source=_model_source(header, replay))
    out.add(AssistantMessageEvent(
        seq=out.seq, time=out.time,
        data=AssistantMessageData(turn=turn, step=step, message=message,
                                  usage=UNSET if stream.usage is None else stream.usage),
        source_event_seqs=stream.chunk_seqs, surface_op="append"))
    progress = msgspec.structs.replace(progress, stream=None)
    if isinstance(finish, FinishMaxTokens):
        return _end_step(_replace(state, turn=progress), out, turn, step, TurnMaxTokens())
    calls = tuple(block for block in blocks if isinstance(block, ToolCallBlock))
    if not calls:
        return _end_step(_replace(state, turn=progress), out, turn, step, TurnCompleted())
    groups = _start_groups(calls, progress.parallel_tools)
    progress = msgspec.structs.replace(progress, later=groups[1:])
    return _run_group(_replace(state, turn=progress), out, turn, step, groups[0])


def _retry_or_fail(state: LoopState, trace: Trace, out: _Writer, failure: LlmFailure,
                   given: StreamEnded) -> LoopStep:
    """Schedule a retry of the failed call if the route's policy says so, else end the turn."""
    progress = state.turn
    header = trace.request_header
    assert progress is not None and header is not None and trace.open_step is not None
    if not 0 <= given.draw <= 1:
        raise LoopProtocolError(f"StreamEnded.draw must be in [0, 1], not {given.draw!r}")
    retry = _schedule_retry(progress.retry_policy, failure, turn=progress.turn,
                           step=trace.open_step, provider=header.config.provider,
                           earlier=progress.retries, draw=given.draw,
                           retry_id=given.message_id)
    if retry is None:
        return _close(state, trace, out, TurnError(error=failure))
    out.add(LlmRetryEvent(seq=out.seq, time=out.time, data=retry))
    progress = msgspec.structs.replace(progress, stream=None,
                                       retries=(*progress.retries, retry))
    state = _replace(state, awaiting="backoff", turn=progress)
    return _step_of(state, out, Backoff(delay_ms=retry.delay_ms, retry=retry))


def _retry_started(state: LoopState, trace: Trace, out: _Writer) -> LoopStep:
    """The wait is over: the failed call again, with the same header over the same history."""
    progress = state.turn
    header = trace.request_header
    assert progress is not None and progress.retries and header is not None
    retry = progress.retries[-1]
    out.add(LlmRetryStartedEvent(seq=out.seq, time=out.time, data=LlmRetryStartedData(
        retry_id=retry.retry_id, turn=retry.turn, step=retry.step, retry=retry.retry)))
    progress = msgspec.structs.replace(progress, stream=EMPTY_ASSEMBLY)
    return _step_of(_replace(state, awaiting="stream", turn=progress), out,
                    CallModel(header=header))


def _start_groups(calls: tuple[ToolCallBlock, ...], parallel: frozenset[str],
                  ) -> tuple[tuple[ToolCallBlock, ...], ...]:
    """Calls in model order, in batches that start together: consecutive parallel-safe calls
    share a batch; any other call runs alone."""
    groups: list[list[ToolCallBlock]] = []
    for call in calls:
        if call.name in parallel and groups and groups[-1][0].name in parallel:
            groups[-1].append(call)
        else:
            groups.append([call])
    return tuple(tuple(group) for group in groups)


def _run_group(state: LoopState, out: _Writer, turn: int, step: int,
               group: tuple[ToolCallBlock, ...]) -> LoopStep:
    for call in group:
        out.add(ToolCallEvent(seq=out.seq, time=out.time, data=ToolCallData(
            turn=turn, step=step, call_id=call.id, name=call.name, arguments=call.arguments)))
    progress = state.turn
    assert progress is not None
    state = _replace(state, awaiting="tools",
                     turn=msgspec.structs.replace(progress, running=group))
    return _step_of(state, out, RunTools(turn=turn, step=step, calls=group))


def _tool_done(state: LoopState, trace: Trace, out: _Writer, given: ToolDone) -> LoopStep:
    progress = state.turn
    assert progress is not None
    if not progress.running or progress.running[0].id != given.call_id:
        expected = progress.running[0].id if progress.running else "none"
        raise LoopProtocolError(f"ToolDone for {given.call_id}, expected {expected}")
    call, rest = progress.running[0], progress.running[1:]
    call_seq = next((pending.call_seq for pending in trace.pending_calls
                     if pending.call_id == call.id), None)
    if call_seq is None:
        raise LoopProtocolError(f"ToolDone for {call.id}, whose tool/call the trace does not hold")
    turn, step = progress.turn, trace.open_step or 0
    outcome = given.outcome
    message = ToolResultMessage(
        source=MessageSource(kind="tool", call_id=call.id), id=given.message_id,
        content=(ToolResultBlock(tool_call_id=call.id, content=outcome.blocks,
                                 is_error=outcome.is_error),))
    out.add(ToolResultEvent(
        seq=out.seq, time=out.time,
        data=ToolResultData(turn=turn, step=step, message=message,
                            error=UNSET if outcome.error is None else outcome.error),
        source_event_seqs=(call_seq,), surface_op="append"))
    progress = msgspec.structs.replace(progress, running=rest,
                                       concluded=progress.concluded or outcome.conclude_turn)
    state = _replace(state, turn=progress)
    if rest:
        return _step_of(state, out, None)
    if progress.later:
        state = _replace(state, turn=msgspec.structs.replace(progress, later=progress.later[1:]))
        return _run_group(state, out, turn, step, progress.later[0])
    ending = TurnCompleted() if progress.concluded else None
    return _end_step(state, out, turn, step, ending)


def _end_step(state: LoopState, out: _Writer, turn: int, step: int,
              ending: TurnEndReason | None) -> LoopStep:
    out.add(StepEndEvent(seq=out.seq, time=out.time, data=StepData(turn=turn, step=step)))
    progress = state.turn
    assert progress is not None
    # max-tokens is sticky: a later step that completes does not downgrade the turn's ending.
    if not isinstance(progress.ending, TurnMaxTokens):
        progress = msgspec.structs.replace(progress, ending=ending)
    state = _replace(state, turn=msgspec.structs.replace(progress, concluded=False))
    if progress.ending is not None and not state.steering:
        return _end_turn(state, turn, progress.ending, out)
    return _boundary(state, turn, step + 1, out)


def _end_turn(state: LoopState, turn: int, reason: TurnEndReason, out: _Writer) -> LoopStep:
    out.add(TurnEndEvent(seq=out.seq, time=out.time, data=TurnEndData(turn=turn, reason=reason)))
    state = _replace(state, turn=None)
    if state.inbox or state.steering:
        return _start_turn(state, turn + 1, out)
    return _step_of(_replace(state, awaiting="idle"), out, Stop())


def _close(state: LoopState, trace: Trace, out: _Writer, reason: TurnEndReason) -> LoopStep:
    """End the open turn with ``reason`` through the closers, then go on as after any turn."""
    turn = trace.open_turn
    closers = _closing_events(trace, reason, time=out.time)
    out.extend(closers)
    state = _replace(state, turn=None, closing=reason if closers else None)
    if state.inbox or state.steering:
        return _start_turn(state, trace.next_turn if turn is None else turn + 1, out)
    return _step_of(_replace(state, awaiting="idle"), out, Stop())


def _cancelled(state: LoopState, trace: Trace, out: _Writer, new_id: str,
               dispatched: frozenset[str] | None) -> LoopStep:
    cause = state.cancel
    assert cause is not None
    progress = state.turn
    undispatched = frozenset() if progress is None or dispatched is None else frozenset(
        call.id for call in progress.running if call.id not in dispatched)
    stream = None if progress is None else progress.stream
    if stream is not None and trace.open_step is not None:
        content = _interrupted_blocks(stream)
        header = trace.request_header
        if content and header is not None:
            message = AssistantMessage(content=content, id=new_id, source=_model_source(header))
            out.add(AssistantMessageEvent(
                seq=out.seq, time=out.time,
                data=AssistantMessageData(turn=progress.turn if progress else 0,
                                          step=trace.open_step, message=message,
                                          usage=UNSET if stream.usage is None else stream.usage,
                                          interrupted=True),
                source_event_seqs=stream.chunk_seqs, surface_op="append"))
    reason = TurnAborted(reason=cause)
    closing: tuple[Event, ...] = ()
    if trace.phase is not Phase.IDLE:
        # The interrupted message (if any) is part of the log the closers follow.
        after = _trace_log(out.events, trace).unwrap()
        closing = _closing_events(after, reason, time=out.time, undispatched=undispatched)
    out.extend(closing)
    if state.drop_steering:
        out.splice(InboxSplicedData(target="next-step", start=0,
                                    removed_count=state.drop_steering, inserted=(),
                                    outcome="canceled"))
    if state.drop_inbox:
        out.splice(InboxSplicedData(target="next-turn", start=0, removed_count=state.drop_inbox,
                                    inserted=(), outcome="canceled"))
    parked = state.park
    state = _replace(state, turn=None, cancel=None, closing=reason if closing else None,
                     inbox=state.inbox[state.drop_inbox:],
                     steering=state.steering[state.drop_steering:], drop_inbox=0,
                     drop_steering=0, park=False)
    if (state.inbox or state.steering) and not parked:
        return _step_of(_replace(state, awaiting="wake"), out, Wake())
    return _step_of(_replace(state, awaiting="idle"), out, Stop())
