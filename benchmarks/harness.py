"""Timing, results and reporting shared by every benchmark module.

Method (stated once, applied everywhere):

* Every timing is ``time.perf_counter_ns`` around one call (or, for calls of a few microseconds,
  around ``inner`` calls in a row, divided by ``inner``); a figure is the median of the samples.
  The thread's CPU time (``time.thread_time_ns``) is recorded beside it: on a shared machine a
  sample's wall time also counts the time the process waited for a core, its CPU time does not.
  Targets are judged on wall time; the table shows the CPU-time figure next to it.
* Contenders of one comparison run interleaved: each round runs every contender once, and the
  order rotates from round to round, so drift of the machine (other processes, frequency
  changes) hits all of them alike. One warm-up round runs first and is not recorded.
* Before every sample ``gc.collect()`` runs; then the collector is left enabled (the
  interpreter's default thresholds) or disabled for the sample, as the benchmark states. What a
  call returns is dropped only after the clock has stopped.
* Ratios are ratios of the medians of one interleaved run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "Contender",
    "GcMode",
    "Report",
    "Row",
    "Section",
    "Settings",
    "Target",
    "Timing",
    "format_bytes",
    "format_ns",
    "machine",
    "measure",
    "render",
    "report_section",
    "rounds_timing",
    "worker_parser",
    "write_json",
]

GcMode = Literal["on", "off"]


@dataclass(frozen=True)
class Settings:
    """How hard to measure: ``quick`` shrinks the workloads and the number of rounds."""

    quick: bool = False
    #: Rounds per comparison (``None``: each benchmark's own default for the mode).
    repeats: int | None = None
    #: A DSH checkout for the optional side-by-side benchmark (``--dsh PATH``).
    dsh: Path | None = None

    def rounds(self, full: int, quick: int) -> int:
        if self.repeats is not None:
            return self.repeats
        return quick if self.quick else full


@dataclass(frozen=True)
class Contender:
    """One side of a comparison: a call to time, ``inner`` times per sample."""

    name: str
    call: Callable[[], object]
    inner: int = 1


@dataclass(frozen=True)
class Timing:
    """The samples of one contender, in nanoseconds per call (by default one call per sample,
    the collector on)."""

    name: str
    samples_ns: tuple[float, ...]
    cpu_samples_ns: tuple[float, ...]
    inner: int = 1
    gc: GcMode = "on"

    @property
    def median_ns(self) -> float:
        return statistics.median(self.samples_ns)

    @property
    def cpu_median_ns(self) -> float:
        return statistics.median(self.cpu_samples_ns)

    def as_json(self) -> dict[str, Any]:
        return {"median_ns": self.median_ns, "min_ns": min(self.samples_ns),
                "max_ns": max(self.samples_ns), "cpu_median_ns": self.cpu_median_ns,
                "rounds": len(self.samples_ns), "calls_per_sample": self.inner,
                "gc": self.gc, "samples_ns": list(self.samples_ns),
                "cpu_samples_ns": list(self.cpu_samples_ns)}


def _sample(contender: Contender, gc_mode: GcMode) -> tuple[float, float]:
    """One sample: (wall ns, thread CPU ns) per call."""
    call, inner = contender.call, contender.inner
    gc.collect()
    if gc_mode == "off":
        gc.disable()
    try:
        if inner == 1:
            cpu_start, start = time.thread_time_ns(), time.perf_counter_ns()
            result = call()
            elapsed, cpu = time.perf_counter_ns() - start, time.thread_time_ns() - cpu_start
        else:
            results = []
            cpu_start, start = time.thread_time_ns(), time.perf_counter_ns()
            for _ in range(inner):
                results.append(call())
            elapsed, cpu = time.perf_counter_ns() - start, time.thread_time_ns() - cpu_start
            result = results
    finally:
        gc.enable()
    del result
    return elapsed / inner, cpu / inner


def measure(contenders: Sequence[Contender], *, rounds: int, gc_mode: GcMode = "on",
            ) -> dict[str, Timing]:
    """Time the contenders interleaved, rotating their order each round; medians by name."""
    if rounds < 1:
        raise ValueError("rounds must be >= 1")
    for contender in contenders:  # warm-up: caches, lazy imports, first allocations
        _sample(contender, gc_mode)
    samples: dict[str, list[tuple[float, float]]] = {c.name: [] for c in contenders}
    count = len(contenders)
    for round_no in range(rounds):
        shift = round_no % count
        for contender in (*contenders[shift:], *contenders[:shift]):
            samples[contender.name].append(_sample(contender, gc_mode))
    return {c.name: Timing(name=c.name, inner=c.inner, gc=gc_mode,
                           samples_ns=tuple(wall for wall, _ in samples[c.name]),
                           cpu_samples_ns=tuple(cpu for _, cpu in samples[c.name]))
            for c in contenders}


def rounds_timing(name: str, rounds: Sequence[Mapping[str, float]], key: str) -> Timing:
    """The figure ``key`` of each round a worker subprocess reported, its ``cpu_ns`` beside it."""
    return Timing(name=name, samples_ns=tuple(r[key] for r in rounds),
                  cpu_samples_ns=tuple(r["cpu_ns"] for r in rounds))


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Target:
    """A bound a figure must meet: ``value >= bound`` or ``value <= bound``."""

    op: Literal[">=", "<="]
    bound: float
    note: str = ""

    def met(self, value: float) -> bool:
        return value >= self.bound if self.op == ">=" else value <= self.bound

    def __str__(self) -> str:
        text = f"{self.op} {self.bound:g}"
        return f"{text} {self.note}" if self.note else text


@dataclass(frozen=True)
class Row:
    """One line of the table: a figure (wall time, and CPU time beside it), its target if any.

    Units: ``ns`` a time, ``x`` a ratio, ``B`` a size in bytes (decimal KB/MB, as DSH's figures),
    ``%`` a share (the value a fraction of 1), ``tokens`` a count of tokens.
    """

    label: str
    value: float
    unit: Literal["ns", "x", "B", "%", "tokens"]
    target: Target | None = None
    #: The same figure from thread CPU time.
    cpu_value: float | None = None

    @classmethod
    def time(cls, label: str, timing: Timing) -> Row:
        return cls(label, timing.median_ns, "ns", cpu_value=timing.cpu_median_ns)

    @classmethod
    def ratio(cls, label: str, numerator: Timing, denominator: Timing,
              target: Target | None = None) -> Row:
        return cls(label, numerator.median_ns / denominator.median_ns, "x", target,
                   numerator.cpu_median_ns / denominator.cpu_median_ns)

    @property
    def status(self) -> str:
        if self.target is None:
            return ""
        return "MET" if self.target.met(self.value) else "MISSED"

    @property
    def cpu_status(self) -> str:
        if self.target is None or self.cpu_value is None:
            return ""
        return "MET" if self.target.met(self.cpu_value) else "MISSED"

    def shown(self, value: float | None = None) -> str:
        return _SHOWN[self.unit](self.value if value is None else value)

    def as_json(self) -> dict[str, Any]:
        return {"label": self.label, "value": self.value, "unit": self.unit,
                "cpu_value": self.cpu_value,
                "target": str(self.target) if self.target else None,
                "status": self.status or None, "cpu_status": self.cpu_status or None}


@dataclass(frozen=True)
class Section:
    """What one benchmark module reports: table rows plus everything measured, for the JSON."""

    name: str
    title: str
    notes: tuple[str, ...]
    rows: tuple[Row, ...]
    timings: Mapping[str, Mapping[str, Timing]] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    #: Set when the benchmark could not run here (the reason); then it has no rows.
    unavailable: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title, "notes": list(self.notes), "unavailable": self.unavailable,
            "params": dict(self.params), "rows": [row.as_json() for row in self.rows],
            "timings": {group: {name: timing.as_json() for name, timing in by_name.items()}
                        for group, by_name in self.timings.items()},
        }


@dataclass(frozen=True)
class Report:
    meta: Mapping[str, Any]
    sections: tuple[Section, ...]

    def as_json(self) -> dict[str, Any]:
        return {"meta": dict(self.meta),
                "benchmarks": {s.name: s.as_json() for s in self.sections}}


def _scaled(value: float, units: tuple[str, str, str, str], smallest: str) -> str:
    """``value`` in the largest of the decimal units (10^9, 10^6, 10^3, 1) its size reaches,
    three significant digits; below 10^3 formatted with ``smallest``."""
    magnitude = abs(value)
    for scale, unit in zip((1e9, 1e6, 1e3), units, strict=False):
        if magnitude >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:{smallest}} {units[-1]}"


def format_ns(value: float) -> str:
    """A duration with a unit that keeps three significant digits readable."""
    return _scaled(value, ("s", "ms", "us", "ns"), ".3g")


def format_bytes(value: float) -> str:
    """A size in decimal units (DSH's MB are 10^6 bytes)."""
    return _scaled(value, ("GB", "MB", "KB", "B"), ".0f")


_SHOWN: dict[str, Callable[[float], str]] = {
    "ns": format_ns,
    "x": lambda value: f"{value:.2f}x",
    "B": format_bytes,
    "%": lambda value: f"{100 * value:.2f} %",
    "tokens": lambda value: f"{value:,.0f} tok",
}


def report_section(run: Callable[[Settings], Section], quick: bool) -> int:
    """A benchmark module run alone: its section's table on stdout (no JSON written)."""
    report = Report(meta={**machine(), "mode": "quick" if quick else "full"},
                    sections=(run(Settings(quick=quick)),))
    print(render(report))
    return 0


def worker_parser(prog: str) -> argparse.ArgumentParser:
    """The arguments every worker subprocess takes: ``--worker`` (its entry), the parent's
    completed turns, the children and the rounds."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--worker", action="store_true", required=True)
    parser.add_argument("--turns", type=int, required=True)
    parser.add_argument("--children", type=int, required=True)
    parser.add_argument("--rounds", type=int, required=True)
    return parser


def render(report: Report) -> str:
    """The plain-text table: one block per benchmark, columns aligned."""
    lines = [_machine_line(report.meta), ""]
    header = ("figure", "wall", "cpu", "target", "result (wall)", "result (cpu)")
    for section in report.sections:
        lines.append(f"== {section.name}: {section.title}")
        lines.extend(f"   {note}" for note in section.notes)
        if section.unavailable is not None:
            lines.extend((f"   not run: {section.unavailable}", ""))
            continue
        table = [header] + [
            (r.label, r.shown(), "" if r.cpu_value is None else r.shown(r.cpu_value),
             str(r.target or ""), r.status, r.cpu_status) for r in section.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        for row in table:
            cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]),
                     row[2].rjust(widths[2]), row[3].ljust(widths[3]),
                     row[4].ljust(widths[4]), row[5]]
            lines.append("   " + "  ".join(cells).rstrip())
        lines.append("")
    return "\n".join(lines)


def _machine_line(meta: Mapping[str, Any]) -> str:
    m = meta["machine"]
    v = meta["versions"]
    return (f"{m['cpu']} x{m['cpus']}, {m['memory_gib']} GiB; python {v['python']}, "
            f"msgspec {v['msgspec']}, pydantic {v['pydantic']}, beartype {v['beartype']} "
            f"(core checks {meta['core_beartype']}); mode {meta['mode']}; {meta['when']}; "
            f"load average {meta['load_average_at_start'][0]}; core at "
            f"{meta['source']['commit']}"
            f"{' + uncommitted changes' if meta['source']['core_changes'] else ''}")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str | None:
    """Read-only git query in the checkout the suite runs from (None without git)."""
    try:
        done = subprocess.run(["git", *args], cwd=Path(__file__).resolve().parent,
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def machine() -> dict[str, Any]:
    """What the figures were measured on, read now (CPU model, cores, memory, versions)."""
    from turnfork import core

    checked = hasattr(core.decode_log, "__wrapped__") and hasattr(core.trace_log, "__wrapped__")
    return {
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": {"cpu": _cpu_model(), "cpus": os.cpu_count(),
                    "memory_gib": _memory_gib(), "platform": platform.platform()},
        "versions": {"python": platform.python_version(), "implementation":
                     sys.implementation.name, "msgspec": _version("msgspec"),
                     "pydantic": _version("pydantic"), "beartype": _version("beartype"),
                     "returns": _version("returns"), "turnfork": _version("turnfork")},
        "core_beartype": "on" if checked else "off",
        # What was measured: the commit, and whether core/ had uncommitted changes.
        "source": {"commit": _git("rev-parse", "--short", "HEAD"),
                   "core_changes": (_git("status", "--porcelain", "--", "../core")
                                    or "").splitlines()},
        "timer": "time.perf_counter_ns",
        # Other processes share the cores: the load at the start says how quiet it was.
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def write_json(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.as_json(), indent=1) + "\n", encoding="utf-8")
