"""Logs of any size (issue 22): ``turnfork check``, ``show``, ``seed -o`` and ``show --all`` on
a generated parent of DSH's shape (20,000 completed turns and one in flight: 460,009 events,
82 MB of JSONL; ``--quick``: 300 turns, 1.2 MB, one round), each against msgspec's own decode
of the same bytes, side by side in one run.

Every contender is a fresh process of the interpreter running the suite, reading the log from
a scratch directory (the page cache warm after the warm-up round):

* ``msgspec decode_lines`` — the baseline: ``msgspec.json.Decoder().decode_lines`` of the
  file's bytes (read whole), msgspec's plain JSONL decode into Python objects, the garbage
  collector at its defaults, as any program would run it;
* ``msgspec typed decode`` — for comparison only: the same bytes decoded into turnfork's event
  structs by msgspec (``core.codec``'s typed decoder, ``decode_lines``), the floor of any
  reading of these bytes into events;
* ``turnfork check LOG``, ``turnfork show LOG`` (the summary), ``turnfork seed LOG -o OUT`` and
  ``turnfork show --all LOG``, stdout a pipe drained to its end (no terminal: no pager, no
  bar); and ``turnfork show --all`` of a 10-turn log, whose first output is the start-up any
  log pays (``show --all`` must start drawing about as soon on the large log).

The processes run interleaved, one warm-up round first (``show --all``, which takes a minute at
full size, runs in every other round and not in the warm-up). A sample is the process's life
from spawn to reaping (wall), its user + system time and its peak RSS (``os.wait4``, taken by
a small interpreter that starts it: a child's peak counts what its parent had mapped when it
forked, so the suite's own memory must not be that parent); ``show --all`` also records how
long its first byte of output took. Figures are medians; ratios are of medians of this run:
time against the baseline's (target 2× for ``check`` and ``show``, issue 22) and peak RSS
against the file's size (target 2× for ``check``, ``show`` and ``seed``).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from turnfork import core

from .harness import Row, Section, Settings, Target, Timing
from .workloads import parent_events

__all__ = ["NAME", "TITLE", "run"]

NAME = "large-logs"
TITLE = ("check, show, seed and show --all of a large log, beside msgspec's decode of the same "
         "bytes (fresh processes)")

_BASELINE = "msgspec decode_lines"
_TYPED = "msgspec typed decode"
_TIME_TARGET = Target("<=", 2.0, "(issue 22: within 2x of msgspec's decode)")
_MEMORY_TARGET = Target("<=", 2.0, "(issue 22: peak RSS <= 2x the file)")
_FIRST_OUTPUT = Target("<=", 1e9, "(starts drawing promptly: 1 s)")
_PROMPT = Target("<=", 2.0, "(starts about as soon as on a 10-turn log)")
_SMALL = "turnfork show --all, 10 turns"
_TIMED = ("turnfork check", "turnfork show")
_BOUNDED = ("turnfork check", "turnfork show", "turnfork seed -o")

_DECODE = ("import msgspec, sys\n"
           "data = open(sys.argv[1], 'rb').read()\n"
           "msgspec.json.Decoder().decode_lines(data)\n")
_TYPED_DECODE = ("import sys\n"
                 "from turnfork.core.codec import _RECORD_DECODER\n"
                 "data = open(sys.argv[1], 'rb').read()\n"
                 "_RECORD_DECODER.decode_lines(data)\n")


@dataclass
class _Samples:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)
    first_output: list[float] = field(default_factory=list)

    def timing(self, name: str) -> Timing:
        return Timing(name=name, inner=1, gc="on", samples_ns=tuple(self.wall),
                      cpu_samples_ns=tuple(self.cpu))


#: Runs one command and reports it, from a small interpreter of its own: a child's peak RSS
#: (``ru_maxrss``) counts what its parent had mapped when it forked, so the suite's own memory
#: (the log it generated) must not be that parent. The command's stdout goes to a pipe drained
#: to its end; the first byte of it is timed.
_SPAWNER = """
import json, os, select, subprocess, sys, time
read, write = os.pipe()
start = time.perf_counter_ns()
child = subprocess.Popen(sys.argv[1:], stdout=write, stderr=subprocess.PIPE)
os.close(write)
first = None
while True:
    select.select([read], [], [])
    data = os.read(read, 1 << 20)
    if not data:
        break
    if first is None:
        first = time.perf_counter_ns() - start
os.close(read)
errors = child.stderr.read()
_, status, usage = os.wait4(child.pid, 0)
wall = time.perf_counter_ns() - start
print(json.dumps({"code": os.waitstatus_to_exitcode(status), "wall": wall,
                  "cpu": (usage.ru_utime + usage.ru_stime) * 1e9,
                  "rss": usage.ru_maxrss * 1024, "first": first,
                  "errors": errors.decode(errors="replace")[-500:]}))
"""


def _sample(command: Sequence[str], cwd: Path, samples: _Samples) -> None:
    """One run of ``command`` (it must exit 0, or 1 for an open log): wall, CPU, peak RSS, and
    when its first byte of output came."""
    done = subprocess.run([sys.executable, "-c", _SPAWNER, *command], cwd=cwd,
                          capture_output=True, text=True, check=True, timeout=1800)
    report = json.loads(done.stdout)
    if report["code"] not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} exited {report['code']}: {report['errors']}")
    samples.wall.append(report["wall"])
    samples.cpu.append(report["cpu"])
    samples.rss.append(report["rss"])
    if report["first"] is not None:
        samples.first_output.append(report["first"])


def _commands(log: Path, seed: Path, small: Path) -> dict[str, list[str]]:
    python = sys.executable
    script = Path(python).parent / "turnfork"
    turnfork = [str(script)] if script.exists() else [python, "-m", "turnfork"]
    return {
        _BASELINE: [python, "-c", _DECODE, str(log)],
        _TYPED: [python, "-c", _TYPED_DECODE, str(log)],
        "turnfork check": [*turnfork, "check", str(log)],
        "turnfork show": [*turnfork, "show", str(log)],
        "turnfork seed -o": [*turnfork, "seed", str(log), "-o", str(seed)],
        "turnfork show --all": [*turnfork, "show", "--all", str(log)],
        _SMALL: [*turnfork, "show", "--all", str(small)],
    }


def _measure(commands: dict[str, list[str]], cwd: Path, rounds: int) -> dict[str, _Samples]:
    """Every command once per round (``show --all`` every other round), the order rotating;
    one unrecorded warm-up round."""
    names = list(commands)
    samples = {name: _Samples() for name in names}
    for name in names:
        if name != "turnfork show --all":  # a minute at full size; the cache is warm by then
            _sample(commands[name], cwd, _Samples())
    for round_no in range(rounds):
        shift = round_no % len(names)
        for name in (*names[shift:], *names[:shift]):
            if name == "turnfork show --all" and round_no % 2:
                continue
            _sample(commands[name], cwd, samples[name])
    return samples


def _mb(size: float) -> str:
    return f"{size / 1e6:,.1f} MB"


def run(settings: Settings) -> Section:
    turns = 300 if settings.quick else 20_000
    rounds = settings.rounds(full=5, quick=1)
    with tempfile.TemporaryDirectory(prefix="turnfork-large-logs-") as scratch:
        cwd = Path(scratch)
        log = cwd / f"K{turns}-parent.events.jsonl"
        log.write_bytes(core.encode_log(parent_events(turns)))
        small = cwd / "K10-parent.events.jsonl"
        small.write_bytes(core.encode_log(parent_events(10)))
        size = log.stat().st_size
        commands = _commands(log, cwd / "seed.jsonl", small)
        samples = _measure(commands, cwd, rounds)
        seed_size = (cwd / "seed.jsonl").stat().st_size

    timings = {name: s.timing(name) for name, s in samples.items()}
    baseline = timings[_BASELINE]
    rows: list[Row] = [Row.time(name, timing) for name, timing in timings.items()]
    for name in commands:
        if name == _BASELINE:
            continue
        rows.append(Row.ratio(f"{name} / {_BASELINE}", timings[name], baseline,
                              _TIME_TARGET if name in _TIMED else None))
    for name in commands:
        if name == _SMALL:
            continue
        rss = statistics.median(samples[name].rss)
        rows.append(Row(f"{name}: peak RSS / file size", rss / size, "x",
                        _MEMORY_TARGET if name in _BOUNDED else None))
    first = samples["turnfork show --all"].first_output
    small_first = samples[_SMALL].first_output
    rows.append(Row("turnfork show --all: first output", statistics.median(first), "ns",
                    _FIRST_OUTPUT))
    rows.append(Row("turnfork show --all: first output / that of a 10-turn log",
                    statistics.median(first) / statistics.median(small_first), "x", _PROMPT))
    notes = (
        f"log: {turns:,} completed turns and one in flight, {_mb(size)} of JSONL "
        f"(benchmarks.workloads.parent_events); the seed written: {_mb(seed_size)}",
        f"{rounds} interleaved rounds of fresh processes (show --all in every other round), "
        "one warm-up round; medians; stdout to a pipe drained to its end",
        "peak RSS (median; at least the starting interpreter's, ~10 MB): " + "; ".join(
            f"{name} {_mb(statistics.median(s.rss))}" for name, s in samples.items()),
        "wall spreads (min..max): " + "; ".join(
            f"{name} {min(s.wall) / 1e9:.2f}..{max(s.wall) / 1e9:.2f} s"
            for name, s in samples.items()),
    )
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows),
                   timings={"fresh process": timings},
                   params={"turns": turns, "file_bytes": size, "seed_bytes": seed_size,
                           "rounds": rounds,
                           "commands": {n: " ".join(c) for n, c in commands.items()},
                           "peak_rss_bytes": {n: s.rss for n, s in samples.items()},
                           "first_output_ns": first})
