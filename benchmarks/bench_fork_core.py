"""The core's share of a fork, ours beside the naive fork DSH performs, at K = 10, 100, 1,000.

* naive (what DSH does on every fork): copy the parent's completed-turn prefix and re-validate
  it: ``tuple(prefix)`` then ``core.trace_log`` over the copy;
* ours: ``core.completed_turn_prefix`` (a view, no copy) plus the parent's trace snapshot at the
  cut, which the parent already holds (a ``Trace`` is immutable, so keeping the one taken at its
  last ``turn/end`` costs nothing); the child's trace continues from it.

Both then fold the child's first own event (``session/end-seed``) with ``core.advance``, so both
end with the same child trace (checked before timing). The shell-level fork benchmark (start
called to child published) is a separate module, added with the subagent runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import msgspec

from turnfork import core
from turnfork.core import Event

from .harness import Contender, Row, Section, Settings, Target, Timing, measure
from .workloads import parent_log

__all__ = ["NAME", "TITLE", "naive_fork", "our_fork", "run"]

NAME = "fork-core"
TITLE = "core-level fork: completed_turn_prefix + trace snapshot vs copy + re-validate"


def naive_fork(parent: Sequence[Event], end_seed: Event,
               ) -> tuple[tuple[Event, ...], core.Trace]:
    """Copy the seed and trace it from scratch, then fold the child's first event."""
    seed = tuple(core.completed_turn_prefix(parent))
    trace = core.trace_log(seed).unwrap()
    return seed, core.advance(trace, end_seed).unwrap()


def our_fork(parent: Sequence[Event], at_cut: core.Trace, end_seed: Event,
             ) -> tuple[Sequence[Event], core.Trace]:
    """View the seed and continue from the parent's snapshot at the cut."""
    seed = core.completed_turn_prefix(parent)
    if at_cut.length != len(seed) or not at_cut.is_closed:
        raise ValueError("the snapshot is not the parent's trace at the cut")
    return seed, core.advance(at_cut, end_seed).unwrap()


def _comparable(trace: core.Trace) -> tuple[core.Trace, list[int]]:
    """A trace with its surface (whose nodes compare by identity) as a list of seqs."""
    seqs = []
    node = trace.surface
    while node is not None:
        seqs.append(node.seq)
        node = node.previous
    return msgspec.structs.replace(trace, surface=None), seqs


def run(settings: Settings) -> Section:
    sizes = (10, 100) if settings.quick else (10, 100, 1000)
    rounds = settings.rounds(full=41, quick=3)
    contenders: list[Contender] = []
    events_at: dict[int, int] = {}
    for turns in sizes:
        log = parent_log(turns)
        parent = log.events
        at_cut = core.check_balance(parent[:log.cut]).unwrap()
        end_seed = core.SessionEndSeedEvent(seq=log.cut, time=parent[-1].time)
        naive_seed, naive_trace = naive_fork(parent, end_seed)
        our_seed, our_trace = our_fork(parent, at_cut, end_seed)
        assert tuple(our_seed) == naive_seed and len(naive_seed) == log.cut
        assert _comparable(naive_trace) == _comparable(our_trace)
        events_at[turns] = len(parent)
        contenders.append(Contender(f"ours K={turns}", partial(our_fork, parent, at_cut, end_seed),
                                    inner=200))
        contenders.append(Contender(f"naive K={turns}", partial(naive_fork, parent, end_seed),
                                    inner=max(1, 200 // turns)))
    timed = measure(contenders, rounds=rounds, gc_mode="on")

    rows: list[Row] = []
    for turns in sizes:
        ours, naive = timed[f"ours K={turns}"], timed[f"naive K={turns}"]
        rows.append(Row.time(f"ours K={turns} ({events_at[turns]:,} events)", ours))
        rows.append(Row.time(f"naive copy + re-validate K={turns}", naive))
        rows.append(Row.ratio(f"speedup K={turns}: naive / ours", naive, ours))
    rows.append(Row.ratio(f"flatness: ours K={sizes[-1]} / ours K={sizes[0]}",
                          timed[f"ours K={sizes[-1]}"], timed[f"ours K={sizes[0]}"],
                          Target("<=", 1.5, "(core-level analogue of the fork-start target)")))
    timings: dict[str, dict[str, Timing]] = {"gc on": timed}
    notes = (f"{rounds} interleaved rounds; ours timed 200 calls per sample; GC on",
             "both forks give the same seed and the same child trace (checked before timing)")
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows), timings=timings,
                   params={"completed_turns": list(sizes),
                           "events": {str(k): v for k, v in events_at.items()},
                           "rounds": rounds})
