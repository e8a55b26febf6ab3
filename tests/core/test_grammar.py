"""The turn grammar's tables, entry by entry, and the functions that read them (issue 29).

The expected placement is written out here from wire-format §1.1/§6.1 (where each DSH event
may stand), independently of ``core/grammar.py``: every confined type, every phase change,
the step order of §6.4. Dropping a type from ``CONFINED`` or a kind from ``STEP_ORDER``, or
answering a phase change's *target* instead of the phase it needs, fails here.
"""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from turnfork.core import TYPED_EVENT_CLASSES, Event, event_type
from turnfork.core.grammar import (
    CONFINED,
    PHASE_CHANGES,
    STEP_END,
    STEP_ORDER,
    STEP_START,
    TURN_END,
    TURN_START,
    Phase,
    allowed_phases,
    closing_walk,
    closings_before,
    opened_from,
    phase_after,
)
from turnfork.core.strategies import session_logs

IDLE, TURN, STEP = Phase.IDLE, Phase.TURN, Phase.STEP

#: type -> (phases it may stand in, the phase after it there; None: the phase stays).
EXPECTED: dict[str, tuple[frozenset[Phase], Phase | None]] = {
    "turn/start": (frozenset({IDLE}), TURN),
    "step/start": (frozenset({TURN}), STEP),
    "step/end": (frozenset({STEP}), TURN),
    "turn/end": (frozenset({TURN}), IDLE),
    "assistant/chunk": (frozenset({STEP}), None),
    "assistant/message": (frozenset({STEP}), None),
    "tool/call": (frozenset({STEP}), None),
    "tool/result": (frozenset({STEP}), None),
    "request/header": (frozenset({TURN, STEP}), None),
    "request/context": (frozenset({TURN, STEP}), None),
    "todo/write": (frozenset({TURN, STEP}), None),
    "llm/retry": (frozenset({STEP}), None),  # DSH's retry companion: a retry is a step's
    "llm/retry-started": (frozenset({STEP}), None),
}

#: Confined types the core reads as opaque events (placed by their type alone).
UNTYPED = frozenset({"request/context", "todo/write"})
#: Confined types DSH's loop writes inside a step without a place in STEP_ORDER.
UNORDERED = frozenset({"request/context", "todo/write"})

#: Types that stand anywhere: between-turn input, policies, descriptors, plugin events.
ANYWHERE = ("user/message", "agent/inbox/spliced", "session/end-seed", "session/title",
            "sandbox/mode", "approval/policy", "goal/change", "plugin/anything", "")


def test_the_constants_name_the_four_phase_changes() -> None:
    assert (TURN_START, STEP_START, STEP_END, TURN_END) == (
        "turn/start", "step/start", "step/end", "turn/end")
    assert dict(PHASE_CHANGES) == {kind: (next(iter(phases)), after)
                                   for kind, (phases, after) in EXPECTED.items()
                                   if after is not None}


def test_confined_lists_every_confined_type_with_its_phases() -> None:
    assert dict(CONFINED) == {kind: phases for kind, (phases, after) in EXPECTED.items()
                              if after is None}


def test_each_type_stands_where_the_wire_format_says() -> None:
    """allowed_phases and phase_after for every listed type in every phase: a phase change
    needs one phase and leads to another; a confined type keeps the phase it stands in."""
    for kind, (phases, after) in EXPECTED.items():
        assert allowed_phases(kind) == phases, kind
        for phase in Phase:
            expected = (after or phase) if phase in phases else None
            assert phase_after(phase, kind) is expected, (kind, phase)


@settings(max_examples=examples(100), deadline=None)
@given(st.sampled_from(ANYWHERE) | st.text(max_size=12).filter(lambda t: t not in EXPECTED),
       st.sampled_from(list(Phase)))
def test_every_other_type_stands_anywhere_and_keeps_the_phase(kind: str, phase: Phase) -> None:
    assert allowed_phases(kind) == frozenset(Phase)
    assert phase_after(phase, kind) is phase


def test_every_typed_event_is_placed_as_the_table_says() -> None:
    """The typed model's classes: each has the placement of its type above (or stands
    anywhere)."""
    kinds = {str(cls.__struct_config__.tag) for cls in TYPED_EVENT_CLASSES}
    assert set(EXPECTED) - UNTYPED <= kinds
    for kind in kinds:
        phases = EXPECTED.get(kind, (frozenset(Phase), None))[0]
        assert allowed_phases(kind) == phases, kind


def test_the_closing_walk_from_each_phase() -> None:
    assert closing_walk(IDLE) == ()
    assert closing_walk(TURN) == (TURN_END,)
    assert closing_walk(STEP) == (STEP_END, TURN_END)
    for start in Phase:  # walking it with phase_after does reach IDLE
        phase: Phase | None = start
        for kind in closing_walk(start):
            assert phase is not None
            phase = phase_after(phase, kind)
        assert phase is IDLE


#: (phase, boundary) -> what closes first (None: a level the boundary needs is not open),
#: written out from where each boundary may stand.
EXPECTED_CLOSINGS: dict[tuple[Phase, str], tuple[str, ...] | None] = {
    (IDLE, TURN_START): (), (IDLE, STEP_START): None, (IDLE, STEP_END): None,
    (IDLE, TURN_END): None,
    (TURN, TURN_START): (TURN_END,), (TURN, STEP_START): (), (TURN, STEP_END): None,
    (TURN, TURN_END): (),
    (STEP, TURN_START): (STEP_END, TURN_END), (STEP, STEP_START): (STEP_END,),
    (STEP, STEP_END): (), (STEP, TURN_END): (STEP_END,),
}


def test_what_a_boundary_closes_first_in_each_phase() -> None:
    assert {(phase, kind): closings_before(phase, kind) for phase in Phase
            for kind in PHASE_CHANGES} == EXPECTED_CLOSINGS
    for (start, kind), closings in EXPECTED_CLOSINGS.items():
        if closings is None:
            continue
        phase: Phase | None = start  # walking the closings brings the boundary where it stands
        for closing in closings:
            assert phase is not None
            phase = phase_after(phase, closing)
        assert phase is not None and phase_after(phase, kind) is not None, (start, kind)


def test_the_level_a_boundary_opens_from_each_phase() -> None:
    assert [opened_from(phase) for phase in Phase] == ["turn", "step", None]


def test_the_phases_in_words() -> None:
    assert [phase.value for phase in Phase] == ["between turns", "inside a turn",
                                                "inside a step"]


def test_step_order_is_dshs_loop_order() -> None:
    """Wire-format §6.4, every entry: step/start, the claimed input, the request header,
    the model's chunks (a failed call's, then its retry's scheduling and start, then the retried
    call's), its message, each tool call and its result, step/end."""
    assert STEP_ORDER == ("step/start", "user/message", "request/header", "assistant/chunk",
                          "llm/retry", "llm/retry-started", "assistant/message", "tool/call",
                          "tool/result", "step/end")


def _step_kinds(log: tuple[Event, ...]) -> list[list[str]]:
    steps: list[list[str]] = []
    inside = False
    for event in log:
        kind = event_type(event)
        if kind == STEP_START:
            steps.append([])
            inside = True
        if inside:
            steps[-1].append(kind)
        if kind == STEP_END:
            inside = False
    return steps


@settings(max_examples=examples(100), deadline=None)
@given(session_logs())
def test_every_kind_the_loop_writes_in_a_step_has_its_place_in_step_order(
        log: tuple[Event, ...]) -> None:
    """No kind is skipped: each event type in a generated step is in STEP_ORDER, or it may
    stand anywhere (a between-turn event the loop does not order), or it is one of the two
    the loop writes unordered; the step opens and closes with the first and last entry."""
    order = set(STEP_ORDER)
    for kinds in _step_kinds(log):
        assert kinds[0] == STEP_ORDER[0]
        for kind in kinds:
            assert (kind in order or kind in UNORDERED
                    or allowed_phases(kind) == frozenset(Phase)), (kind, kinds)
        if kinds[-1] == STEP_END:
            assert STEP_ORDER[-1] == STEP_END
