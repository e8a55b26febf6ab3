"""Tracing a log of surface replacements: the cost per event stays flat as the log grows.

Each log is a session whose every other turn prunes an old tool result (a ``tool/result`` that
replaces one earlier result half as many turns back, the shape that made the trace quadratic:
each replace rewrote the surface from the end back to its target). The logs are traced by
``core.trace_log`` in one fold, at three sizes, interleaved in one measurement; the figure is
the cost per event at the largest size over the smallest.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import msgspec

from turnfork import core
from turnfork.core import events as ev
from turnfork.core.closers import tool_result_event

from .harness import Contender, Row, Section, Settings, Target, Timing, measure

__all__ = ["NAME", "TITLE", "pruning_log", "run"]

NAME = "surface"
TITLE = "trace_log over logs that prune old tool results (1k / 4k / 16k turns)"


def pruning_log(turns: int) -> tuple[ev.Event, ...]:
    """``turns`` turns with one tool call each; every even turn prunes the result of the turn
    half its number back (``replace start=end=<that result>``, citing it)."""
    log: list[ev.Event] = []
    results: list[ev.ToolResultEvent] = []
    source = ev.MessageSource(kind="model", provider="p", model="m")

    def add(event: ev.Event) -> None:
        log.append(event)

    for turn in range(1, turns + 1):
        add(ev.TurnStartEvent(seq=len(log), time=turn, data=ev.TurnStartData(turn=turn)))
        add(ev.StepStartEvent(seq=len(log), time=turn, data=ev.StepData(turn=turn, step=1)))
        call = f"c{turn}"
        message = ev.AssistantMessage(
            content=(ev.ToolCallBlock(id=call, name="read", arguments="{}"),), id=f"a{turn}",
            source=source)
        add(ev.AssistantMessageEvent(seq=len(log), time=turn, surface_op="append",
                                     data=ev.AssistantMessageData(turn=turn, step=1,
                                                                  message=message)))
        add(ev.ToolCallEvent(seq=len(log), time=turn, data=ev.ToolCallData(
            turn=turn, step=1, call_id=call, name="read", arguments="{}")))
        result = tool_result_event(seq=len(log), time=turn, turn=turn, step=1, call_id=call,
                                   message_id=f"r{turn}", text="file contents " * 4,
                                   is_error=False, call_seq=len(log) - 1)
        add(result)
        results.append(result)
        if turn % 2 == 0:
            old = results[turn // 2 - 1]
            pruned = tool_result_event(
                seq=len(log), time=turn, turn=old.data.turn, step=old.data.step,
                call_id=call_of(old), message_id=old.data.message.id, text="[pruned]",
                is_error=False)
            add(msgspec.structs.replace(pruned, source_event_seqs=(old.seq,),
                                        surface_op=ev.SurfaceReplace(start=old.seq,
                                                                     end=old.seq)))
        add(ev.StepEndEvent(seq=len(log), time=turn, data=ev.StepData(turn=turn, step=1)))
        add(ev.TurnEndEvent(seq=len(log), time=turn,
                            data=ev.TurnEndData(turn=turn, reason=ev.TurnCompleted())))
    return tuple(log)


def call_of(result: ev.ToolResultEvent) -> str:
    call_id = result.data.message.source.call_id
    assert call_id is not None
    return call_id


def _per_event(timing: Timing, events: int) -> Timing:
    return dataclasses.replace(
        timing, samples_ns=tuple(ns / events for ns in timing.samples_ns),
        cpu_samples_ns=tuple(ns / events for ns in timing.cpu_samples_ns))


def _trace(log: tuple[ev.Event, ...]) -> None:
    core.trace_log(log).unwrap()


def run(settings: Settings) -> Section:
    sizes = (250, 1_000, 4_000) if settings.quick else (1_000, 4_000, 16_000)
    rounds = settings.rounds(full=9, quick=3)
    logs = {size: pruning_log(size) for size in sizes}
    for log in logs.values():
        assert core.check_balance(log).unwrap().is_closed
    contenders = [Contender(f"{size} turns", partial(_trace, log), inner=1)
                  for size, log in logs.items()]
    timed = measure(contenders, rounds=rounds, gc_mode="on")
    per_event = {size: _per_event(timed[f"{size} turns"], len(logs[size])) for size in sizes}
    rows = [Row.time(f"trace_log, {size:,} turns ({len(logs[size]):,} events), per event",
                     per_event[size]) for size in sizes]
    small, large = sizes[0], sizes[-1]
    rows.append(Row.ratio(f"flatness: per event at {large:,} / at {small:,} turns",
                          per_event[large], per_event[small],
                          Target("<=", 1.3, "(linear: each replace costs what it shadows)")))
    notes = (f"{rounds} interleaved rounds, one fold per sample, GC on",
             "before this change a replace rewrote the surface from its end back to the "
             "target: 16k turns took ~1.6 ms per event, 1k turns ~19 µs (this machine)")
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows),
                   timings={"gc on": timed},
                   params={"events": {str(s): len(log) for s, log in logs.items()},
                           "rounds": rounds})
