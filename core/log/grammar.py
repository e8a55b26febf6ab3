"""The turn grammar: where each event may stand in a session log, as data.

Rules of this module (wire-format §1.1, §6.1, §6.4):

* Everything that decides *where* an event may stand lives here, as tables; the validator
  (:mod:`.trace`), the closers (:mod:`.closers`), the generator (:mod:`.strategies`) and the
  agent's turn machine (:mod:`.loop`) all read these tables and restate none of them. What an
  event must *say* (turn and step numbers, call pairing, surface citations) is checked by the
  trace, the one place that keeps the state those rules need.
* A log is always in one of three phases: :attr:`Phase.IDLE` (between turns), :attr:`Phase.TURN`
  (a turn is open, no step is) and :attr:`Phase.STEP` (a step of the open turn is open).
* Four event types move a log from one phase to the next (:data:`PHASE_CHANGES`). The types in
  :data:`CONFINED` may stand only in the phases they list and leave the phase as it is. Every
  other type — between-turn input, policy and descriptor events, plugin events — may stand in
  any phase.
* Pairing, the one rule that spans events: a tool call announced in a step (by a ``tool-call``
  block of its ``assistant/message`` or by a ``tool/call``) is *pending* until its
  ``tool/result``, and a step cannot end while a call is pending.
* Closing an open turn is walking to :attr:`Phase.IDLE` along :data:`PHASE_CHANGES`
  (:func:`closing_walk`), after answering every pending call. A phase nests as deep as its
  walk is long; a turn or step boundary met deeper than it needs finds the levels that walk
  closes first still open (:func:`closings_before`), and one met shallower finds a level it
  needs not open (:func:`opened_from` names the level a boundary opens from a phase).
* :data:`STEP_ORDER` is the order DSH's agent loop writes inside a step. The validator does not
  require it (DSH's reader accepts other orders); the loop writes it and the generator draws it.

Theory of operation: a phase is a property of the log so far, not of an event, so folding one
event is a table lookup, ``phase_after(phase, type)``; ``None`` means the event cannot stand
there. The few rules that need more than the phase (numbering, pairing, the surface) are code,
in :mod:`.trace`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

from .._checking import checked

__all__ = [
    "Phase",
    "TURN_START",
    "TURN_END",
    "STEP_START",
    "STEP_END",
    "PHASE_CHANGES",
    "CONFINED",
    "STEP_ORDER",
    "phase_of",
    "phase_after",
    "allowed_phases",
    "closing_walk",
    "closings_before",
    "opened_from",
]


class Phase(enum.Enum):
    """Where a log stands between two events."""

    #: No turn is open: only between-turn events, and ``turn/start``.
    IDLE = "between turns"
    #: A turn is open and none of its steps is.
    TURN = "inside a turn"
    #: A step of the open turn is open.
    STEP = "inside a step"

    # Members are singletons, equal only to themselves: hashed by identity, in C (the trace
    # looks a phase up per event; Enum's own hash is a Python call).
    __hash__ = object.__hash__


TURN_START = "turn/start"
TURN_END = "turn/end"
STEP_START = "step/start"
STEP_END = "step/end"

#: The events that change the phase: type -> (the phase it needs, the phase it leaves).
PHASE_CHANGES: Mapping[str, tuple[Phase, Phase]] = MappingProxyType({
    TURN_START: (Phase.IDLE, Phase.TURN),
    STEP_START: (Phase.TURN, Phase.STEP),
    STEP_END: (Phase.STEP, Phase.TURN),
    TURN_END: (Phase.TURN, Phase.IDLE),
})

_IN_STEP = frozenset({Phase.STEP})
_IN_TURN = frozenset({Phase.TURN, Phase.STEP})

#: Types that may stand only in some phases and do not change the phase. A ``tool/result`` that
#: *replaces* an earlier result on the surface (a pruning) is the one exception: it may also
#: stand between the steps of its turn (the trace checks it against the surface instead).
CONFINED: Mapping[str, frozenset[Phase]] = MappingProxyType({
    "assistant/chunk": _IN_STEP,
    "assistant/message": _IN_STEP,
    "tool/call": _IN_STEP,
    "tool/result": _IN_STEP,
    # A retry belongs to the step whose model call failed (DSH's llm-retry invariant).
    "llm/retry": _IN_STEP,
    "llm/retry-started": _IN_STEP,
    "request/header": _IN_TURN,
    "request/context": _IN_TURN,
    "todo/write": _IN_TURN,
})

#: The order DSH's loop writes inside a step, one entry per kind of event (wire-format §6.4):
#: the turn's claimed input and the runtime context, the request header, the model's chunks
#: (a failed call's are followed by the retry it schedules, the end of its wait, and the
#: retried call's chunks), its assembled message, then each tool call with its result.
STEP_ORDER: tuple[str, ...] = (
    STEP_START,
    "user/message",
    "request/header",
    "assistant/chunk",
    "llm/retry",
    "llm/retry-started",
    "assistant/message",
    "tool/call",
    "tool/result",
    STEP_END,
)

_ANYWHERE = frozenset(Phase)
# The members as module globals: an enum's class attribute costs far more to read, and the
# trace asks for the phase per event.
_IDLE, _TURN, _STEP = Phase.IDLE, Phase.TURN, Phase.STEP


@checked
def phase_of(open_turn: int | None, open_step: int | None) -> Phase:
    """The phase of a log whose open turn and open step are these (``None``: none open): the
    one statement of it, which the trace, its ``Trace.phase``, the closers and the turn
    machine read.

    >>> phase_of(None, None), phase_of(3, None), phase_of(3, 1)
    (<Phase.IDLE: 'between turns'>, <Phase.TURN: 'inside a turn'>, <Phase.STEP: 'inside a step'>)
    """
    if open_step is not None:
        return _STEP
    return _IDLE if open_turn is None else _TURN


@checked
def allowed_phases(event_type: str) -> frozenset[Phase]:
    """The phases an event of this type may stand in.

    >>> sorted(phase.name for phase in allowed_phases("request/header"))
    ['STEP', 'TURN']
    >>> allowed_phases("agent/inbox/spliced") == frozenset(Phase)
    True
    """
    change = PHASE_CHANGES.get(event_type)
    if change is not None:
        return frozenset({change[0]})
    return CONFINED.get(event_type, _ANYWHERE)


@checked
def phase_after(phase: Phase, event_type: str) -> Phase | None:
    """The phase after an event of ``event_type`` in ``phase``; ``None``: it cannot stand there.

    >>> phase_after(Phase.IDLE, "turn/start")
    <Phase.TURN: 'inside a turn'>
    >>> phase_after(Phase.TURN, "assistant/chunk") is None
    True
    """
    change = PHASE_CHANGES.get(event_type)
    if change is not None:
        return change[1] if change[0] is phase else None
    allowed = CONFINED.get(event_type)
    return phase if allowed is None or phase in allowed else None


def _walk(start: Phase) -> tuple[str, ...]:
    # Breadth-first over the phase-changing events: the shortest way back to IDLE.
    paths: dict[Phase, tuple[str, ...]] = {start: ()}
    frontier = [start]
    while frontier and Phase.IDLE not in paths:
        following: list[Phase] = []
        for phase in frontier:
            for event_type, (needs, leaves) in PHASE_CHANGES.items():
                if needs is phase and leaves not in paths:
                    paths[leaves] = (*paths[phase], event_type)
                    following.append(leaves)
        frontier = following
    return paths[Phase.IDLE]


_CLOSING_WALKS: Mapping[Phase, tuple[str, ...]] = MappingProxyType(
    {phase: _walk(phase) for phase in Phase})


@checked
def closing_walk(phase: Phase) -> tuple[str, ...]:
    """The phase-changing events that take a log from ``phase`` back to IDLE, in order.

    Pending calls are answered before the first of them (a step cannot end with one pending).

    >>> closing_walk(Phase.STEP)
    ('step/end', 'turn/end')
    >>> closing_walk(Phase.IDLE)
    ()
    """
    return _CLOSING_WALKS[phase]


def _closings(phase: Phase, needs: Phase) -> tuple[str, ...] | None:
    # The part of the walk back to idle from ``phase`` that reaches ``needs``.
    walk, reached = _CLOSING_WALKS[phase], phase
    for taken, event_type in enumerate(walk):
        if reached is needs:
            return walk[:taken]
        reached = PHASE_CHANGES[event_type][1]
    return walk if reached is needs else None


_CLOSINGS_BEFORE: Mapping[tuple[Phase, str], tuple[str, ...] | None] = MappingProxyType({
    (phase, boundary): _closings(phase, needs)
    for phase in Phase for boundary, (needs, _) in PHASE_CHANGES.items()})


@checked
def closings_before(phase: Phase, boundary: str) -> tuple[str, ...] | None:
    """For a turn or step boundary (a type of :data:`PHASE_CHANGES`) met in ``phase``: the
    boundaries that first close what is open deeper than the phase it needs, in order (the
    start of the closing walk); ``()`` where it stands; ``None``: a level it needs is not open.

    >>> closings_before(Phase.STEP, "turn/start")
    ('step/end', 'turn/end')
    >>> closings_before(Phase.TURN, "turn/end")
    ()
    >>> closings_before(Phase.IDLE, "step/start") is None
    True
    """
    return _CLOSINGS_BEFORE[phase, boundary]


#: The level a boundary opens from each phase that has one, named as its type is: the boundary
#: that needs the phase and is not on its walk back to idle.
_OPENED_FROM: Mapping[Phase, str] = MappingProxyType({
    needs: boundary.partition("/")[0] for boundary, (needs, _) in PHASE_CHANGES.items()
    if boundary not in _CLOSING_WALKS[needs]})


@checked
def opened_from(phase: Phase) -> str | None:
    """The level a boundary opens from ``phase``; ``None`` where none opens (inside a step).

    >>> opened_from(Phase.IDLE), opened_from(Phase.TURN), opened_from(Phase.STEP)
    ('turn', 'step', None)
    """
    return _OPENED_FROM.get(phase)
