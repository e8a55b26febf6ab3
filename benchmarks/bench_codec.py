"""Decode + trace of a K-turn parent log (JSONL bytes) against the baselines a user would pick.

Contenders, interleaved in one run, each given the same bytes:

* ours: ``core.decode_log(data)`` then ``core.trace_log(events)`` (beartype checks on, as always);
* pydantic: baseline A (:mod:`benchmarks.baseline_pydantic`), models validated line by line plus
  the same rules checked in Python;
* json+dicts: baseline B (:mod:`benchmarks.baseline_dicts`), ``json.loads`` per line plus the same
  rules;
* msgspec plain: ``msgspec.json.Decoder().decode_lines(data)`` into dicts and lists, no checks
  (the practical limit, and the baseline of the ≤ 2× target: one C call for the whole text,
  faster than ``msgspec.json.decode`` per line, which is also shown);
* and, to show where our time goes, ours split into its two calls, ``decode_log`` on the same
  log without its one opaque event (``request/context``), and baseline B's checks alone over
  pre-decoded dicts.

Before timing, every checking contender must report the same outcome for the log.

Every contender returns what it built (ours: the events and the trace; the baselines: their
records), so the harness frees it after the clock stops, as it does for msgspec plain's list:
each figure is the cost of reading the log, not of dropping what was read. Two diagnostic
rows time ours and msgspec plain with their results freed inside the call instead.
"""

from __future__ import annotations

import cProfile
import io
import pstats
from collections.abc import Callable

import msgspec

from turnfork import core

from . import baseline_dicts
from .checks import Outcome, outcome_of_trace
from .harness import (
    Contender,
    GcMode,
    Row,
    Section,
    Settings,
    Target,
    Timing,
    format_ns,
    measure,
)
from .workloads import parent_log

__all__ = ["NAME", "TITLE", "profile", "run"]

NAME = "codec"
TITLE = "decode + trace of a parent log (JSONL) vs pydantic v2, json+dicts, msgspec plain"
GC_MODES: tuple[GcMode, ...] = ("on", "off")


def _ours_read(data: bytes) -> tuple[tuple[core.Event, ...], core.Trace]:
    events = core.decode_log(data).unwrap()
    return events, core.trace_log(events).unwrap()


def _ours(data: bytes) -> Outcome:
    return outcome_of_trace(_ours_read(data)[1])


def _freed_inside(call: Callable[[bytes], object], data: bytes) -> None:
    """``call(data)`` with its result dropped before the clock stops."""
    result = call(data)
    del result


def _dicts_read(data: bytes) -> tuple[object, Outcome]:
    records = baseline_dicts.decode(data)
    return records, baseline_dicts.check(records)


def _pydantic() -> tuple[Callable[[bytes], Outcome], Callable[[bytes], object]] | str:
    """Baseline A's entry point and its reading that keeps the models, or why it cannot run
    (pydantic is the ``bench`` extra)."""
    try:
        from . import baseline_pydantic
    except ImportError as exc:
        return f"pydantic is not installed ({exc}); pip install 'turnfork[bench]'"

    def read(data: bytes) -> tuple[object, Outcome]:
        models = baseline_pydantic.decode(data)
        return models, baseline_pydantic.check(models)

    return baseline_pydantic.decode_and_check, read


def run(settings: Settings) -> Section:
    turns = 100 if settings.quick else 1000
    rounds = settings.rounds(full=15, quick=3)
    log = parent_log(turns)
    data = log.jsonl
    plain = msgspec.json.Decoder()
    events = core.decode_log(data).unwrap()
    pydantic = _pydantic()
    # Diagnostics for where our time goes (see BENCHMARKS.md): the same log minus its one
    # event outside the typed model (request/context), and the checks alone over dicts.
    typed_only = b"".join(line + b"\n" for line in data.splitlines()
                          if not line.startswith(b'{"type":"request/context"'))
    assert len(core.decode_log(typed_only).unwrap()) == len(events) - 1
    dicts = baseline_dicts.decode(data)

    checking: dict[str, Callable[[bytes], Outcome]] = {
        "ours": _ours, "json+dicts": baseline_dicts.decode_and_check}
    if not isinstance(pydantic, str):
        checking["pydantic"] = pydantic[0]
    expected = _ours(data)
    assert expected.problem is None and expected.completed_prefix_length == log.cut
    for name, check in checking.items():
        got = check(data)
        assert got == expected, f"{name} disagrees with the core: {got} != {expected}"
    assert len(plain.decode_lines(data)) == len(events)
    decode_line = plain.decode

    def per_line() -> list[object]:
        return [decode_line(line) for line in data.split(b"\n") if line]

    assert len(per_line()) == len(events)

    contenders = [
        Contender("ours", lambda: _ours_read(data)),
        Contender("json+dicts", lambda: _dicts_read(data)),
        Contender("msgspec plain", lambda: plain.decode_lines(data)),
        Contender("diagnostic: ours, result freed inside the call",
                  lambda: _freed_inside(_ours_read, data)),
        Contender("diagnostic: msgspec plain, result freed inside the call",
                  lambda: _freed_inside(plain.decode_lines, data)),
        Contender("msgspec plain, json.decode per line", per_line),
        Contender("ours: decode_log only", lambda: core.decode_log(data)),
        Contender("ours: trace_log only", lambda: core.trace_log(events)),
        Contender("diagnostic: decode_log, log without its opaque line",
                  lambda: core.decode_log(typed_only)),
        Contender("diagnostic: dict checks only, pre-decoded",
                  lambda: baseline_dicts.check(dicts)),
    ]
    if not isinstance(pydantic, str):
        read_pydantic = pydantic[1]
        contenders.insert(1, Contender("pydantic", lambda: read_pydantic(data)))

    timings: dict[str, dict[str, Timing]] = {}
    rows: list[Row] = []
    spreads: list[str] = []
    for gc_mode in GC_MODES:
        timed = measure(contenders, rounds=rounds, gc_mode=gc_mode)
        timings[f"gc {gc_mode}"] = timed
        rows.extend(Row.time(f"[gc {gc_mode}] {name}", t) for name, t in timed.items())
        ours = timed["ours"]
        if "pydantic" in timed:
            rows.append(Row.ratio(f"[gc {gc_mode}] speedup: pydantic / ours",
                                  timed["pydantic"], ours, Target(">=", 6)))
        rows.append(Row.ratio(f"[gc {gc_mode}] speedup: json+dicts / ours",
                              timed["json+dicts"], ours))
        rows.append(Row.ratio(f"[gc {gc_mode}] ratio: ours / msgspec plain",
                              ours, timed["msgspec plain"], Target("<=", 2)))
        rows.append(Row.ratio(
            f"[gc {gc_mode}] diagnostic: ours / msgspec plain, both freed inside the call",
            timed["diagnostic: ours, result freed inside the call"],
            timed["diagnostic: msgspec plain, result freed inside the call"]))
        rows.append(Row.ratio(f"[gc {gc_mode}] diagnostic: decode_log only / msgspec plain",
                              timed["ours: decode_log only"], timed["msgspec plain"]))
        rows.append(Row.ratio(f"[gc {gc_mode}] diagnostic: trace_log only / msgspec plain",
                              timed["ours: trace_log only"], timed["msgspec plain"]))
        spreads.append(f"[gc {gc_mode}] spread of the wall samples (min-max): " + "; ".join(
            f"{name} {format_ns(min(timed[name].samples_ns))}-"
            f"{format_ns(max(timed[name].samples_ns))}"
            for name in ("ours", "msgspec plain", "pydantic", "ours: decode_log only",
                         "ours: trace_log only") if name in timed))

    notes = [f"K = {turns} completed turns + 1 in flight: {len(events):,} events, "
             f"{len(data):,} bytes; {rounds} interleaved rounds per GC mode",
             "all checking contenders agreed on the outcome before timing",
             "each contender's result is freed after the clock stops, except in the two "
             "'freed inside the call' diagnostics", *spreads]
    if isinstance(pydantic, str):
        notes.append(f"baseline A not run: {pydantic}")
    return Section(name=NAME, title=TITLE, notes=tuple(notes), rows=tuple(rows),
                   timings=timings,
                   params={"completed_turns": turns, "events": len(events), "bytes": len(data),
                           "rounds": rounds, "gc_modes": list(GC_MODES)})


def profile(settings: Settings, top: int = 25) -> str:
    """cProfile of ours (decode + trace) on the benchmark's log, top functions by own time."""
    data = parent_log(100 if settings.quick else 1000).jsonl
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(5):
        _ours(data)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()
