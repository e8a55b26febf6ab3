"""Balance: the relational rules of a session log, folded one event at a time.

Rules checked (wire-format §1.1, §3.1, §6.1, §6.3, plus our stricter pairing rule):

* ``seq == index`` from 0.
* Turns: ``turn/start`` only between turns, numbered ``next_turn`` (from 1, +1 per ``turn/end``);
  ``turn/end`` names the open turn and no step is open.
* Steps: ``step/start`` inside the open turn, numbered from 1; ``step/end`` names the open step.
* ``assistant/chunk``, ``assistant/message``, ``tool/call`` and appended ``tool/result`` name
  the open step; ``request/header``, ``request/context`` and ``todo/write`` sit inside a turn.
* Pairing: within a step every ``tool/call`` and every ``tool-call`` block of an
  ``assistant/message`` gets exactly one ``tool/result`` before ``step/end``; a result needs a
  ``tool/call`` in the same step, except DSH's ``TOOL_NOT_STARTED`` repair result.
* Surface: ``sourceEventSeqs`` are distinct earlier seqs (non-empty except on
  ``assistant/message``); a ``replace`` names a valid surface range and cites every seq it
  shadows; a ``tool/result`` replacement rewrites only the content of one ``tool/result``.
* Message shapes: assistant messages come from a model with provider and model; a tool-result
  message holds exactly one ``tool-result`` block for its own call.

Besides the rules, the fold keeps what later steps read of the log: among them the
runtime-context snapshots still on the surface and when one was last released, from which
:meth:`Trace.retained_context` answers, for an agent instance built over any prefix of the log,
which snapshot it retains (DSH's ``RuntimeContextProjection``: restored once when the instance
is built, then following the log).

A :class:`Trace` is immutable and shares structure with its predecessor, so ``advance`` is O(1)
and a trace can be kept as a snapshot (a fork child starts from its parent's snapshot at the
cut without replaying the seed).

One fold serves both entry points (``advance`` is it over one event): per event it looks up
the event's class in :data:`_RULES`, the grammar table (``phase_after``) read once per class at
import, checks the placement for the current phase and calls the class's own rules. Chunks,
most of any log, are checked inline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, TypeAlias

import msgspec
from msgspec import UNSET
from msgspec.structs import force_setattr, replace
from returns.result import Failure, Result, Success

from .._checking import checked, plain, unchecked
from .context import fallback_title, is_context_snapshot
from .events import (
    TYPED_EVENT_CLASSES,
    AssistantChunkEvent,
    AssistantMessageEvent,
    EpochHeader,
    Event,
    OpaqueEvent,
    RequestHeaderEvent,
    SandboxModeData,
    SandboxModeEvent,
    StepData,
    StepEndEvent,
    StepStartEvent,
    SurfaceReplace,
    TextBlock,
    ToolCallBlock,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResultBlock,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    UserMessageEvent,
    event_type,
)
from .grammar import (
    PHASE_CHANGES,
    STEP_END,
    STEP_START,
    TURN_END,
    TURN_START,
    Phase,
    closings_before,
    opened_from,
    phase_after,
    phase_of,
)

# Called per event by the fold, behind its checked entry points: their plain forms.
_phase_after = plain(phase_after)
_phase_of = plain(phase_of)
#: The phase each phase-changing event leaves the log in, as the grammar table says.
_LEAVES: Final[dict[str, Phase]] = {kind: leaves for kind, (_, leaves) in PHASE_CHANGES.items()}
# Read only to word a violation.
_closings_before = plain(closings_before)
_opened_from = plain(opened_from)
_is_context_snapshot = plain(is_context_snapshot)
#: How a fold writes a field of the Trace it is filling in (:class:`_Tracer`).
_set = force_setattr
_fallback_title = plain(fallback_title)

__all__ = [
    "ContextSnapshot",
    "PendingCall",
    "CallPairing",
    "SurfaceNode",
    "Trace",
    "Violation",
    "EMPTY_TRACE",
    "advance",
    "trace_log",
    "check_balance",
    "TOOL_NOT_STARTED",
]

TOOL_NOT_STARTED = "TOOL_NOT_STARTED"


class Violation(msgspec.Struct, frozen=True, kw_only=True):
    """A broken rule: the seq (position) where it broke, a rule code, and a sentence."""

    seq: int
    rule: str
    problem: str

    @property
    def message(self) -> str:
        return f"seq {self.seq}: {self.problem}"

    def __str__(self) -> str:
        return self.message


class PendingCall(msgspec.Struct, frozen=True, kw_only=True):
    """A call of the open step still waiting for its ``tool/result``."""

    call_id: str
    name: str
    arguments: str
    step: int
    #: Seq of its ``tool/call``; ``None`` while only the assistant message announced it.
    call_seq: int | None = None


@unchecked
class CallPairing:
    """The one pairing of tool calls with their results: the calls of the open step waiting for
    a ``tool/result`` (announced by a ``tool-call`` block of its ``assistant/message``, started
    by a ``tool/call``) and those answered.

    Each event's method names the pairing rule it breaks (``None``: none) and applies the event
    all the same: the trace refuses on the first problem, crash repair's lenient scan
    (:func:`.closers.repair_closers`) reads on. Mutable, and never escapes a fold.
    """

    __slots__ = ("answered", "pending")

    def __init__(self, pending: Iterable[PendingCall] = (), answered: Iterable[str] = ()) -> None:
        self.pending = {call.call_id: call for call in pending}
        self.answered = list(answered)

    def announce(self, call_id: str, name: str, arguments: str, step: int) -> str | None:
        """A ``tool-call`` block of the step's ``assistant/message``; ``"repeated"`` when the
        step already knows the call."""
        problem = "repeated" if call_id in self.pending or call_id in self.answered else None
        self.pending[call_id] = PendingCall(call_id=call_id, name=name, arguments=arguments,
                                            step=step)
        return problem

    def start(self, call_id: str, name: str, arguments: str, step: int, call_seq: int,
              ) -> str | None:
        """A ``tool/call`` at ``call_seq``; ``"started twice"`` when the call was started or
        answered already in the step."""
        known = self.pending.get(call_id)
        problem = ("started twice" if (known is not None and known.call_seq is not None)
                   or call_id in self.answered else None)
        self.pending[call_id] = PendingCall(call_id=call_id, name=name, arguments=arguments,
                                            step=step, call_seq=call_seq)
        return problem

    def answer(self, call_id: str, *, not_started: bool = False) -> str | None:
        """A ``tool/result`` for ``call_id``; ``"answered twice"``, or ``"not started"`` when no
        ``tool/call`` started it (unless it is DSH's ``TOOL_NOT_STARTED`` repair result,
        ``not_started``)."""
        pending = self.pending.pop(call_id, None)
        problem = None
        if call_id in self.answered:
            problem = "answered twice"
        elif (pending is None or pending.call_seq is None) and not not_started:
            problem = "not started"
        self.answered.append(call_id)
        return problem

    def clear(self) -> None:
        """A step or turn boundary: no call is waiting or answered any more."""
        self.pending = {}
        self.answered = []


class SurfaceNode(msgspec.Struct, frozen=True, eq=False):
    """One node of the model-visible surface, as a persistent linked list (tail first)."""

    seq: int
    event: Event
    previous: SurfaceNode | None

    def __repr__(self) -> str:
        return f"SurfaceNode(seq={self.seq})"


class ContextSnapshot(msgspec.Struct, frozen=True):
    """A runtime-context snapshot on the surface, linked to the older ones (newest first, by
    seq). An older one a replacement shadowed stays linked until it would become the newest:
    then it is dropped, so the head of the list is always on the surface."""

    seq: int
    #: Its text; ``None`` when its content is not exactly one text block (it equals no text).
    text: str | None
    older: ContextSnapshot | None = None

    def __repr__(self) -> str:
        return f"ContextSnapshot(seq={self.seq})"


class Trace(msgspec.Struct, frozen=True, kw_only=True):
    """Where a log stands after the events folded so far."""

    #: Events folded so far; the next event's seq.
    length: int = 0
    open_turn: int | None = None
    open_step: int | None = None
    next_turn: int = 1
    next_step: int = 1
    pending_calls: tuple[PendingCall, ...] = ()
    #: Call ids already answered in the open step.
    answered_calls: tuple[str, ...] = ()
    #: Index just past the last ``turn/end``: the length of the completed-turn prefix.
    completed_prefix_length: int = 0
    #: Seq of the open turn's ``turn/start``.
    open_turn_seq: int | None = None
    #: ``time`` of the last event folded (closers stamp their events with it by default).
    last_time: int = 0
    surface: SurfaceNode | None = None
    #: The payload of the last ``sandbox/mode`` event: the log's explicit sandbox override.
    sandbox_mode: SandboxModeData | None = None
    #: The header of the log's last ``request/header`` (a loop compares its next request with it).
    request_header: EpochHeader | None = None
    #: The route of the log's last ``request/context``: (provider, model).
    request_context: tuple[str, str] | None = None
    #: Whether the log ever held a runtime-context snapshot.
    context_seen: bool = False
    #: The newest runtime-context snapshot still on the surface.
    context_visible: ContextSnapshot | None = None
    #: Seq of the last surface replacement that cited ``context_visible`` since the last
    #: snapshot was written (``None``: none did).
    context_released_at: int | None = None
    #: Whether the log holds a ``session/title``.
    titled: bool = False
    #: The log's first human message with a title in it: (seq, fallback title).
    first_title: tuple[int, str] | None = None

    def __repr__(self) -> str:
        return (f"Trace(length={self.length}, open_turn={self.open_turn}, "
                f"open_step={self.open_step}, next_turn={self.next_turn}, "
                f"next_step={self.next_step}, pending_calls={self.pending_calls!r}, "
                f"completed_prefix_length={self.completed_prefix_length})")

    @property
    def phase(self) -> Phase:
        """Where the log stands in the turn grammar (:func:`.grammar.phase_of`)."""
        return _phase_of(self.open_turn, self.open_step)

    @property
    def is_closed(self) -> bool:
        """No open turn, no open step, no pending call."""
        return self.open_turn is None and self.open_step is None and not self.pending_calls

    def retained_context(self, restored_at: int = 0) -> ContextSnapshot | None:
        """The runtime-context snapshot that an agent instance built over the log's first
        ``restored_at`` events retains now (``None``: none).

        Built, the instance retains the newest snapshot then on the surface; after that it
        follows the log: a snapshot written retains that one, and a surface replacement
        citing the retained one retains none. So a replacement before the instance was built
        releases nothing for it (DSH restores per instance), and with ``restored_at=0`` this
        is the log's own fold from the start.
        """
        released = self.context_released_at
        if released is not None and released >= restored_at:
            return None
        return self.context_visible


EMPTY_TRACE = Trace()


@unchecked
class _Tracer:
    """A fold's working state: a private copy of the Trace it starts from, whose fields the
    rules set in place, and what changes at nearly every event (the surface, the pairing),
    which the snapshot writes into the trace it builds from that copy. Never escapes.

    So :class:`Trace` is the one place its fields are spelled, and a rule sets a field at the
    cost of an attribute (``force_setattr`` on a copy no one else sees: a Trace rebuilt per
    boundary would cost the fold a tenth of its time). Every Trace anyone holds stays
    immutable.
    """

    __slots__ = ("calls", "live", "phase", "surface", "trace")

    def __init__(self, start: Trace) -> None:
        self.trace = replace(start)
        #: Where the log stands: :func:`.grammar.phase_of` of the trace it starts from, then
        #: the phase each turn or step boundary leaves (the grammar's ``PHASE_CHANGES``).
        self.phase = _phase_of(start.open_turn, start.open_step)
        self.calls = CallPairing(start.pending_calls, start.answered_calls)
        #: The surface, grown at nearly every event, and indexed for replaces once the fold
        #: meets one (then ``live`` holds it).
        self.surface = start.surface
        self.live: _LiveSurface | None = None

    def snapshot(self, length: int, last_time: int) -> Trace:
        # Built anew, not handed out: a struct's garbage-collector tracking is settled when
        # it is built (``force_setattr`` leaves it as it was).
        return replace(self.trace, length=length, last_time=last_time,
                       pending_calls=tuple(self.calls.pending.values()),
                       answered_calls=tuple(self.calls.answered),
                       surface=self.surface if self.live is None else self.live.persistent())

    # -- helpers -----------------------------------------------------------------------

    def _where(self) -> str:
        """Where the log stands, in words: the open turn and step, and the level that can
        open from there (none inside a step)."""
        trace, phase = self.trace, self.phase
        at = (Phase.IDLE.value if phase is Phase.IDLE else f"turn {trace.open_turn}"
              if phase is Phase.TURN else f"turn {trace.open_turn} step {trace.open_step}")
        opens = _opened_from(phase)
        return at if opens is None else f"{at} (no {opens} open)"

    def _in_step(self, seq: int, kind: str, turn: int, step: int) -> Violation | None:
        trace = self.trace
        if turn == trace.open_turn and step == trace.open_step:
            return None
        return self._outside_step(seq, kind, turn, step)

    def _outside_step(self, seq: int, kind: str, turn: int, step: int) -> Violation:
        return Violation(seq=seq, rule="enclosure",
                         problem=f"{kind} for turn {turn} step {step} is outside the open step; "
                                 f"the log is {self._where()}")

    # -- the fold ----------------------------------------------------------------------

    def fold(self, events: Iterable[Event]) -> Trace | Violation:
        """Fold events in order into the trace after them; the first violation stops the
        fold (the tracer is then discarded, so what it holds past the last good event does
        not matter)."""
        rules = _RULES
        trace = self.trace
        seq = trace.length
        last: Event | None = None
        for event in events:
            if event.seq != seq:
                return _bad_seq(event, seq)
            if type(event) is AssistantChunkEvent:
                # Chunks are most of any real log: their one rule is checked inline.
                data = event.data
                if data.turn != trace.open_turn or data.step != trace.open_step:
                    return self._outside_step(seq, "assistant/chunk", data.turn, data.step)
            else:
                rule = rules.get(type(event))
                if rule is None:
                    problem = self._fold_opaque(event, seq)
                else:
                    # The grammar's placement: the class's row of the table, by phase.
                    if self.phase not in rule.placed:
                        return self._misplaced(event, rule.kind, seq)
                    handler = rule.handler
                    problem = None if handler is None else handler(self, event, seq)
                if problem is not None:
                    return problem
            seq += 1
            last = event
        return self.snapshot(seq, trace.last_time if last is None else last.time)

    def _fold_opaque(self, event: Event, seq: int) -> Violation | None:
        """An event outside the typed model: placed by its type (``TypeError`` for anything
        that is not an event at all)."""
        kind = event_type(event)
        if _phase_after(self.phase, kind) is None:
            return self._misplaced(event, kind, seq)
        assert isinstance(event, OpaqueEvent)
        self._opaque(event)
        return None

    def _user_message_event(self, event: UserMessageEvent, seq: int) -> Violation | None:
        problem = self._surface(event, seq)
        if problem is None:
            self._user_message(event, seq)
        return problem

    def _sandbox_mode(self, event: SandboxModeEvent, seq: int) -> None:
        _set(self.trace, "sandbox_mode", event.data)

    def _request_header(self, event: RequestHeaderEvent, seq: int) -> None:
        _set(self.trace, "request_header", event.data.header)

    def _user_message(self, event: UserMessageEvent, seq: int) -> None:
        message = event.data
        if _is_context_snapshot(message.source):
            blocks = message.content
            text = blocks[0].text if len(blocks) == 1 and isinstance(blocks[0], TextBlock) \
                else None
            trace = self.trace
            _set(trace, "context_seen", True)
            _set(trace, "context_visible", ContextSnapshot(seq, text, trace.context_visible))
            _set(trace, "context_released_at", None)
        elif message.source.kind == "user" and self.trace.first_title is None:
            title = _fallback_title("\n".join(block.text for block in message.content
                                             if isinstance(block, TextBlock)))
            if title:
                _set(self.trace, "first_title", (seq, title))

    def _opaque(self, event: OpaqueEvent) -> None:
        if event.type == "session/title":
            _set(self.trace, "titled", True)
        elif event.type == "request/context":
            try:
                route = msgspec.json.decode(event.data)
            except msgspec.DecodeError:
                return
            if isinstance(route, dict) and isinstance(route.get("provider"), str) \
                    and isinstance(route.get("model"), str):
                _set(self.trace, "request_context", (route["provider"], route["model"]))

    def _misplaced(self, event: Event, kind: str, seq: int) -> Violation:
        """The sentence for an event the grammar does not allow in the current phase: a
        boundary met while a level it needs closed is open names that level, a boundary whose
        level is not open says so in its own words, and any other type names what must
        enclose it."""
        change = PHASE_CHANGES.get(kind)
        if change is not None:
            assert isinstance(event, TurnStartEvent | TurnEndEvent | StepStartEvent | StepEndEvent)
            data = event.data
            subject = (f"turn {data.turn} step {data.step}" if isinstance(data, StepData)
                       else f"turn {data.turn}")
            needs = change[0]
            if _closings_before(self.phase, kind):
                level = _opened_from(needs)
                assert level is not None  # something is open deeper than ``needs``
                number = self.trace.open_turn if level == "turn" else self.trace.open_step
                return Violation(seq=seq, rule=level,
                                 problem=f"{kind} for {subject} while {level} {number} is "
                                         "still open")
            if kind == TURN_END:
                return Violation(seq=seq, rule="turn",
                                 problem=f"{kind} for {subject} but no "
                                         f"{_opened_from(self.phase)} is open")
            assert isinstance(data, StepData)
            if kind == STEP_START:
                return self._turn_not_open(seq, data.turn, data.step)
            return self._step_end_elsewhere(seq, data.turn, data.step)
        if isinstance(event, AssistantChunkEvent | AssistantMessageEvent | ToolCallEvent):
            return self._outside_step(seq, kind, event.data.turn, event.data.step)
        # A confined type: it needs the level that opens from here (the grammar's
        # confinements only ever ask for more nesting).
        level = _opened_from(self.phase)
        if self.phase is not Phase.IDLE:
            return Violation(seq=seq, rule="enclosure",
                             problem=f"{kind} must be inside a {level}; the log is "
                                     f"{self._where()}")
        return Violation(seq=seq, rule="enclosure",
                         problem=f"{kind} must be inside a {level}, but no {level} is open")

    def _turn_not_open(self, seq: int, turn: int, step: int) -> Violation:
        return Violation(seq=seq, rule="enclosure",
                         problem=f"step/start for turn {turn} step {step}, but turn {turn} "
                                 f"is not open; the log is {self._where()}")

    def _step_end_elsewhere(self, seq: int, turn: int, step: int) -> Violation:
        return Violation(seq=seq, rule="step",
                         problem=f"step/end for turn {turn} step {step} but the log is "
                                 f"{self._where()}")

    def _turn_start(self, event: TurnStartEvent, seq: int) -> Violation | None:
        turn = event.data.turn
        expected = self.trace.next_turn
        if turn != expected:
            return Violation(seq=seq, rule="turn",
                             problem=f"turn/start for turn {turn}, expected turn {expected}")
        trace = self.trace
        _set(trace, "open_turn", turn)
        _set(trace, "open_turn_seq", seq)
        _set(trace, "next_step", 1)
        self.phase = _LEAVES[TURN_START]
        self.calls.clear()
        return None

    def _turn_end(self, event: TurnEndEvent, seq: int) -> Violation | None:
        turn, open_turn = event.data.turn, self.trace.open_turn
        if turn != open_turn:
            return Violation(seq=seq, rule="turn",
                             problem=f"turn/end for turn {turn} but turn {open_turn} is open")
        trace = self.trace
        _set(trace, "open_turn", None)
        _set(trace, "open_turn_seq", None)
        _set(trace, "next_turn", turn + 1)
        _set(trace, "completed_prefix_length", seq + 1)
        self.phase = _LEAVES[TURN_END]
        return None

    def _step_start(self, event: StepStartEvent, seq: int) -> Violation | None:
        turn, step, trace = event.data.turn, event.data.step, self.trace
        if turn != trace.open_turn:
            return self._turn_not_open(seq, turn, step)
        if step != trace.next_step:
            return Violation(seq=seq, rule="step",
                             problem=f"step/start for turn {turn} step {step}, expected step "
                                     f"{trace.next_step}")
        _set(trace, "open_step", step)
        self.phase = _LEAVES[STEP_START]
        return None

    def _step_end(self, event: StepEndEvent, seq: int) -> Violation | None:
        turn, step, trace = event.data.turn, event.data.step, self.trace
        if turn != trace.open_turn or step != trace.open_step:
            return self._step_end_elsewhere(seq, turn, step)
        if self.calls.pending:
            waiting = ", ".join(self.calls.pending)
            return Violation(seq=seq, rule="pairing",
                             problem=f"step/end for turn {turn} step {step} while {waiting} "
                                     "still has no tool/result")
        _set(trace, "open_step", None)
        _set(trace, "next_step", step + 1)
        self.phase = _LEAVES[STEP_END]
        self.calls.clear()
        return None

    def _assistant_message(self, event: AssistantMessageEvent, seq: int) -> Violation | None:
        data = event.data
        problem = self._in_step(seq, "assistant/message", data.turn, data.step)
        if problem is not None:
            return problem
        source = data.message.source
        provider, model = source.get("provider"), source.get("model")
        if (source.kind != "model" or type(provider) is not str or not provider
                or type(model) is not str or not model):
            return Violation(seq=seq, rule="shape",
                             problem="assistant/message source must be "
                                     '{"kind":"model"} with a provider and a model')
        problem = self._surface(event, seq)
        if problem is not None:
            return problem
        for block in data.message.content:
            if isinstance(block, ToolCallBlock) and self.calls.announce(
                    block.id, block.name, block.arguments, data.step) is not None:
                return Violation(seq=seq, rule="pairing",
                                 problem=f"assistant/message repeats tool call {block.id} "
                                         f"in turn {data.turn} step {data.step}")
        return None

    def _tool_call(self, event: ToolCallEvent, seq: int) -> Violation | None:
        data = event.data
        problem = self._in_step(seq, "tool/call", data.turn, data.step)
        if problem is not None:
            return problem
        if self.calls.start(data.call_id, data.name, data.arguments, data.step, seq) is not None:
            return Violation(seq=seq, rule="pairing",
                             problem=f"tool/call {data.call_id} was already started in turn "
                                     f"{data.turn} step {data.step}")
        return None

    def _tool_result(self, event: ToolResultEvent, seq: int) -> Violation | None:
        data = event.data
        message = data.message
        call_id = message.source.call_id
        blocks = message.content
        if (message.source.kind != "tool" or not isinstance(call_id, str) or not call_id
                or len(blocks) != 1 or not isinstance(blocks[0], ToolResultBlock)
                or blocks[0].tool_call_id != call_id):
            return Violation(seq=seq, rule="shape",
                             problem="tool/result message must come from "
                                     '{"kind":"tool","callId":…} and hold exactly one '
                                     "tool-result block for that call")
        if isinstance(event.surface_op, SurfaceReplace):
            # A pruning rewrites an earlier result: it may stand anywhere inside a turn.
            if self.trace.open_turn is None:
                return Violation(seq=seq, rule="enclosure",
                                 problem="tool/result replacement outside a turn")
            return self._surface(event, seq)
        problem = self._in_step(seq, f"tool/result for {call_id}", data.turn, data.step)
        if problem is not None:
            return problem
        repair = (blocks[0].is_error is True and isinstance(data.error, ToolErrorInfo)
                  and data.error.code == TOOL_NOT_STARTED)
        unpaired = self.calls.answer(call_id, not_started=repair)
        if unpaired == "answered twice":
            return Violation(seq=seq, rule="pairing",
                             problem=f"second tool/result for {call_id} in turn {data.turn} "
                                     f"step {data.step}")
        if unpaired is not None:
            return Violation(seq=seq, rule="pairing",
                             problem=f"tool/result for {call_id} has no tool/call in turn "
                                     f"{data.turn} step {data.step}")
        problem = self._surface(event, seq)
        if problem is not None:
            return problem
        return None

    def _surface(self, event: UserMessageEvent | AssistantMessageEvent | ToolResultEvent,
                 seq: int) -> Violation | None:
        cited = event.source_event_seqs
        if cited is not UNSET:
            if cited:
                if len(cited) > 1 and len(frozenset(cited)) != len(cited):
                    return Violation(seq=seq, rule="surface",
                                     problem="sourceEventSeqs lists a seq twice")
                latest = max(cited)
                if latest >= seq:
                    return Violation(seq=seq, rule="surface",
                                     problem=f"sourceEventSeqs cites seq {latest}, which is not "
                                             "earlier than this event")
            elif type(event) is not AssistantMessageEvent:
                return Violation(seq=seq, rule="surface",
                                 problem="sourceEventSeqs is empty (only an assistant/message "
                                         "may cite nothing)")
        op = event.surface_op
        if type(op) is not SurfaceReplace:
            if self.live is None:
                self.surface = SurfaceNode(seq, event, self.surface)
            else:
                self.live.append(seq, event)
            return None
        cited_set = frozenset(() if cited is UNSET else cited)
        problem = self._replace(event, op, cited_set, seq)
        if problem is None and self.trace.context_visible is not None:
            self._context_replaced(cited_set, seq)
        return problem

    def _context_replaced(self, cited: frozenset[int], seq: int) -> None:
        """A replacement: citing the newest visible snapshot releases it (an instance that
        retained it writes the snapshot again), and the snapshots it shadowed leave the
        visible list (those shadowed below its head leave once they reach it)."""
        trace = self.trace
        visible = trace.context_visible
        assert visible is not None and self.live is not None
        if visible.seq in cited:
            _set(trace, "context_released_at", seq)
        on_surface = self.live.by_seq
        while visible is not None and visible.seq not in on_surface:
            visible = visible.older
        _set(trace, "context_visible", visible)

    def _replace(self, event: UserMessageEvent | AssistantMessageEvent | ToolResultEvent,
                 op: SurfaceReplace, cited: frozenset[int], seq: int) -> Violation | None:
        if self.live is None:
            # The first replace of this fold indexes the surface once; later ones are then
            # O(what they shadow), so a log of replaces traces in linear time.
            self.live = _LiveSurface(self.surface)
        problem = self.live.replace(event, op, cited, seq)
        return None if problem is None else Violation(seq=seq, rule="surface", problem=problem)


def _bad_seq(event: Event, seq: int) -> Violation:
    return Violation(seq=seq, rule="seq",
                     problem=f"event at position {seq} has seq {event.seq}; "
                             "seq must equal the event's position, counting from 0")


_Handler: TypeAlias = Callable[[_Tracer, Any, int], "Violation | None"]


@unchecked
class _Rule:
    """How the fold treats one event class: its type, whether the grammar lets it stand in
    each phase, and the code for what it must say (``None``: nothing beyond its place)."""

    __slots__ = ("handler", "kind", "placed")

    def __init__(self, kind: str, handler: _Handler | None, *, placed_by_handler: bool) -> None:
        self.kind = kind
        self.handler = handler
        # tool/result checks its shape first and may replace between steps: its own placement.
        self.placed = frozenset(phase for phase in Phase
                                if placed_by_handler or _phase_after(phase, kind) is not None)


_HANDLERS: dict[type, _Handler] = {
    TurnStartEvent: _Tracer._turn_start,
    TurnEndEvent: _Tracer._turn_end,
    StepStartEvent: _Tracer._step_start,
    StepEndEvent: _Tracer._step_end,
    UserMessageEvent: _Tracer._user_message_event,
    AssistantMessageEvent: _Tracer._assistant_message,
    ToolCallEvent: _Tracer._tool_call,
    ToolResultEvent: _Tracer._tool_result,
    RequestHeaderEvent: _Tracer._request_header,
    SandboxModeEvent: _Tracer._sandbox_mode,
}

#: The grammar table (:mod:`.grammar`) per typed event class, read by the fold.
#: A plain dict, never changed after import: the fold reads it once per event (a
#: ``MappingProxyType``'s ``get`` costs a method call more).
_RULES: Final[dict[type, _Rule]] = {
    cls: _Rule(str(cls.__struct_config__.tag), _HANDLERS.get(cls),
               placed_by_handler=cls is ToolResultEvent)
    for cls in TYPED_EVENT_CLASSES}


@unchecked
class _Link:
    """One surface node in a fold's indexed surface."""

    __slots__ = ("event", "key", "newer", "older", "seq")

    def __init__(self, seq: int, event: Event, key: int, older: _Link | None) -> None:
        self.seq = seq
        self.event = event
        self.key = key  # increasing along the surface: compares positions in O(1)
        self.older = older
        self.newer: _Link | None = None


@unchecked
class _LiveSurface:
    """The surface as a doubly linked list indexed by seq, for a fold that replaces: mutable,
    never escapes the fold, and turned back into the persistent list when it ends."""

    __slots__ = ("by_seq", "keys", "newest", "oldest")

    def __init__(self, head: SurfaceNode | None) -> None:
        self.by_seq: dict[int, _Link] = {}
        self.newest: _Link | None = None
        self.oldest: _Link | None = None
        self.keys = 0
        chain: list[SurfaceNode] = []
        node = head
        while node is not None:
            chain.append(node)
            node = node.previous
        for kept in reversed(chain):
            self.append(kept.seq, kept.event)

    def append(self, seq: int, event: Event) -> None:
        link = _Link(seq, event, self.keys, self.newest)
        self.keys += 1
        if self.newest is None:
            self.oldest = link
        else:
            self.newest.newer = link
        self.newest = link
        self.by_seq[seq] = link

    def replace(self, event: UserMessageEvent | AssistantMessageEvent | ToolResultEvent,
                op: SurfaceReplace, cited: frozenset[int], seq: int) -> str | None:
        first, last = self.by_seq.get(op.start), self.by_seq.get(op.end)
        if last is None:
            return f"surface replace names seq {op.end}, which is not on the surface"
        if first is None:
            return f"surface replace names seq {op.start}, which is not on the surface"
        if first.key > last.key:
            return f"surface replace {op.start}..{op.end}: start comes after end on the surface"
        shadowed: list[_Link] = []
        link: _Link | None = first
        while link is not None:
            shadowed.append(link)
            if link is last:
                break
            link = link.newer
        missing = sorted(n.seq for n in shadowed if n.seq not in cited)
        if missing:
            return f"surface replace shadows seq {missing[0]} without citing it in sourceEventSeqs"
        if isinstance(event, ToolResultEvent):
            problem = _tool_result_rewrite_problem(event, [n.event for n in shadowed])
            if problem is not None:
                return problem
        # The replacement takes the range's place (and its first position's key).
        kept = _Link(seq, event, first.key, first.older)
        kept.newer = last.newer
        if first.older is None:
            self.oldest = kept
        else:
            first.older.newer = kept
        if last.newer is None:
            self.newest = kept
        else:
            last.newer.older = kept
        for gone in shadowed:
            del self.by_seq[gone.seq]
        self.by_seq[seq] = kept
        return None

    def persistent(self) -> SurfaceNode | None:
        head: SurfaceNode | None = None
        link = self.oldest
        while link is not None:
            head = SurfaceNode(link.seq, link.event, head)
            link = link.newer
        return head


def _tool_result_rewrite_problem(event: ToolResultEvent, shadowed: list[Event]) -> str | None:
    if len(shadowed) != 1 or not isinstance(shadowed[0], ToolResultEvent):
        return "a tool/result replacement must shadow exactly one tool/result"
    old = shadowed[0]
    if _without_result_content(old) != _without_result_content(event):
        return "a tool/result replacement may rewrite only the result content"
    return None


def _without_result_content(event: ToolResultEvent) -> tuple[object, ...]:
    data = event.data
    block = data.message.content[0]
    assert isinstance(block, ToolResultBlock)
    return (data.turn, data.step, data.message.id, data.message.source, block.tool_call_id,
            block.is_error, data.error, _raw_bytes(data.meta))


def _raw_bytes(value: object) -> object:
    return bytes(value) if isinstance(value, msgspec.Raw) else value


def _folded(start: Trace, events: Iterable[Event]) -> Result[Trace, Violation]:
    folded = _Tracer(start).fold(events)
    return Failure(folded) if isinstance(folded, Violation) else Success(folded)


@checked
def advance(trace: Trace, event: Event) -> Result[Trace, Violation]:
    """Fold one more event into a trace, in O(1).

    >>> from turnfork.core.events import TurnStartData
    >>> advance(EMPTY_TRACE, TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=1))
    ...         ).unwrap().open_turn
    1
    >>> print(advance(EMPTY_TRACE, TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=2))
    ...               ).failure())
    seq 0: turn/start for turn 2, expected turn 1
    """
    return _folded(trace, (event,))


@checked
def trace_log(events: Iterable[Event], start: Trace = EMPTY_TRACE) -> Result[Trace, Violation]:
    """Fold the rules over a log that may still be in flight.

    Args:
        events: the log (or, with ``start``, the events that follow the traced part).
        start: the trace of the events before these ones; empty by default.

    Returns:
        ``Success(trace)`` or the first ``Violation``.
    """
    return _folded(start, events)


@checked
def check_balance(events: Iterable[Event], start: Trace = EMPTY_TRACE,
                  ) -> Result[Trace, Violation]:
    """``trace_log`` plus: the log is closed (no open turn, no open step, no pending call)."""
    return trace_log(events, start).bind(_closed)


def _closed(trace: Trace) -> Result[Trace, Violation]:
    at = trace.length
    if trace.pending_calls:
        call = trace.pending_calls[0]
        return Failure(Violation(seq=at, rule="open",
                                 problem=f"the log ends while {call.call_id} in turn "
                                         f"{trace.open_turn} step {call.step} has no "
                                         "tool/result"))
    if trace.open_step is not None:
        return Failure(Violation(seq=at, rule="open",
                                 problem=f"the log ends inside turn {trace.open_turn} step "
                                         f"{trace.open_step}"))
    if trace.open_turn is not None:
        return Failure(Violation(seq=at, rule="open",
                                 problem=f"the log ends inside turn {trace.open_turn}"))
    return Success(trace)
