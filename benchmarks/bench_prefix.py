"""``core.completed_turn_prefix`` on ever longer logs: the cost follows the events after the cut.

Each log is a parent of DSH's shape whose last turn is in flight (7 events after the last
``turn/end``), at about 10k, 100k and 1M events. Ours is the call that seeds a fork; for contrast
the naive seed, a full copy ``tuple(events[:cut])``, is timed beside it at every size. All six
contenders run interleaved in one measurement.
"""

from __future__ import annotations

from functools import partial

from turnfork import core
from turnfork.core import Event

from .harness import Contender, Row, Section, Settings, Target, Timing, measure
from .workloads import IN_FLIGHT_EVENTS, repeated_log

__all__ = ["NAME", "TITLE", "check_long_log", "run"]

NAME = "prefix"
TITLE = "completed_turn_prefix at 10k / 100k / 1M events (cut 7 events before the end)"


def check_long_log(events: tuple[Event, ...]) -> int:
    """Check a long workload with the core's trace; returns the cut."""
    cut = len(events) - IN_FLIGHT_EVENTS
    trace = core.trace_log(events[:cut]).unwrap()
    assert trace.is_closed and trace.completed_prefix_length == cut
    assert core.completed_turn_cut(events) == cut
    return cut


def _copy(events: tuple[Event, ...], cut: int) -> tuple[Event, ...]:
    """The naive seed: a full copy of the prefix."""
    return tuple(events[:cut])


def _label(size: int) -> str:
    return f"{size // 1_000_000}M" if size >= 1_000_000 else f"{size // 1000}k"


def run(settings: Settings) -> Section:
    sizes = (1_000, 10_000, 100_000) if settings.quick else (10_000, 100_000, 1_000_000)
    rounds = settings.rounds(full=41, quick=3)
    logs = {size: repeated_log(size) for size in sizes}
    cuts = {size: check_long_log(events) for size, events in logs.items()}
    for size, events in logs.items():
        view = core.completed_turn_prefix(events)
        assert len(view) == cuts[size] and isinstance(view[-1], core.TurnEndEvent)

    contenders: list[Contender] = []
    for size, events in logs.items():
        cut = cuts[size]
        contenders.append(Contender(f"ours {_label(size)}",
                                    partial(core.completed_turn_prefix, events), inner=200))
        contenders.append(Contender(f"naive copy {_label(size)}", partial(_copy, events, cut),
                                    inner=max(1, 200_000 // size)))
    timed = measure(contenders, rounds=rounds, gc_mode="on")

    rows: list[Row] = []
    for size in sizes:
        rows.append(Row.time(f"completed_turn_prefix, {len(logs[size]):,} events",
                             timed[f"ours {_label(size)}"]))
    for size in sizes:
        rows.append(Row.time(f"naive tuple(events[:cut]), {len(logs[size]):,} events",
                             timed[f"naive copy {_label(size)}"]))
    small, large = _label(sizes[0]), _label(sizes[-1])
    rows.append(Row.ratio(f"flatness: ours {large} / ours {small}",
                          timed[f"ours {large}"], timed[f"ours {small}"],
                          Target("<=", 1.5, "(flat: O(events after the cut))")))
    rows.append(Row.ratio(f"naive copy {large} / ours {large}",
                          timed[f"naive copy {large}"], timed[f"ours {large}"]))
    timings: dict[str, dict[str, Timing]] = {"gc on": timed}
    notes = (f"{rounds} interleaved rounds; ours timed 200 calls per sample; GC on",
             "every log checked balanced by core.trace_log before timing")
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows), timings=timings,
                   params={"events": {_label(s): len(e) for s, e in logs.items()},
                           "cuts": {_label(s): c for s, c in cuts.items()},
                           "rounds": rounds})
