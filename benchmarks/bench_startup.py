"""Start-up: how long a user waits before turnfork does anything (issue 11.7).

Each contender is a fresh interpreter of the environment running the suite (``sys.executable``
and the ``turnfork`` script beside it), started from an empty scratch directory:
``python -c pass`` (the floor every command pays), ``import turnfork``, ``import turnfork.core``,
``import turnfork.shell``, ``turnfork --help`` and ``turnfork check`` on a small closed log (the
K=10 parent's completed-turn prefix). The contenders run interleaved, one warm-up
round first (it also writes the bytecode caches); every run must exit 0.

A sample's wall time is the process's life from spawn to reaping; its CPU time is the child's
user + system time (``os.wait4``), which a loaded machine does not inflate. Ratios are to
``python -c pass`` in the same run. Then ``python -X importtime`` of the ``check`` command says
where its import time goes, grouped by package (the smallest self time of each module over a
few runs, summed).

The notes say how turnfork is installed where it was measured (``wheel`` or ``editable``; an
editable install imports its small finder, ``.editable/_turnfork_editable.py``, at every start).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

from turnfork import core

from .harness import Row, Section, Settings, Target, Timing
from .workloads import parent_log

__all__ = ["NAME", "TITLE", "import_breakdown", "run"]

NAME = "startup"
TITLE = "start-up in a fresh interpreter: the command, the imports, python -c pass beside them"

#: Issue 11.7: `turnfork --help` and `turnfork check` on a small log start in under 0.2 s.
_LIMIT = Target("<=", 200e6, "(0.2 s)")
_FLOOR = "python -c pass"
_JUDGED = ("turnfork --help", "turnfork check small.log")
_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| *(\S+)")
#: Packages whose import cost is reported on its own; everything else is "python and others".
_GROUPS = ("turnfork.core", "turnfork.shell", "turnfork", "beartype", "msgspec", "returns",
           "rich", "typing_extensions")


def _install_kind() -> str:
    """``editable`` or ``wheel``: how turnfork is installed in this environment."""
    try:
        direct_url = metadata.distribution("turnfork").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return "not installed (run from the checkout)"
    editable = bool(direct_url and json.loads(direct_url).get("dir_info", {}).get("editable"))
    return "editable" if editable else "wheel"


def _commands(small_log: Path) -> dict[str, list[str]]:
    python = sys.executable
    script = Path(python).parent / "turnfork"
    command = [str(script)] if script.exists() else [python, "-m", "turnfork"]
    return {
        _FLOOR: [python, "-c", "pass"],
        "import turnfork": [python, "-c", "import turnfork"],
        "import turnfork.core": [python, "-c", "import turnfork.core"],
        "import turnfork.shell": [python, "-c", "import turnfork.shell"],
        "turnfork --help": [*command, "--help"],
        "turnfork check small.log": [*command, "check", str(small_log)],
    }


def _sample(command: Sequence[str], cwd: Path) -> tuple[float, float]:
    """(wall ns, CPU ns) of one run of ``command``, which must exit 0."""
    start = time.perf_counter_ns()
    child = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter_ns() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    errors = child.stderr.read() if child.stderr else b""
    if child.stderr:
        child.stderr.close()
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {child.returncode}: "
                           f"{errors.decode(errors='replace')[-500:]}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1e9


def _measure(commands: Mapping[str, Sequence[str]], cwd: Path, rounds: int,
             ) -> dict[str, Timing]:
    """Every command once per round, the order rotating; one unrecorded warm-up round."""
    for command in commands.values():
        _sample(command, cwd)
    names = list(commands)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for round_no in range(rounds):
        shift = round_no % len(names)
        for name in (*names[shift:], *names[:shift]):
            samples[name].append(_sample(commands[name], cwd))
    return {name: Timing(name=name, inner=1, gc="on",
                         samples_ns=tuple(wall for wall, _ in samples[name]),
                         cpu_samples_ns=tuple(cpu for _, cpu in samples[name]))
            for name in names}


def _group(module: str) -> str:
    for group in _GROUPS:
        if module == group or module.startswith(group + "."):
            return group
    return "python and others"


def import_breakdown(arguments: Sequence[str], cwd: Path, runs: int) -> dict[str, float]:
    """Import time (ns) of ``python -m turnfork *arguments`` by package: each module's smallest
    self time over ``runs`` runs of ``python -X importtime``, summed per group, largest first."""
    command = [sys.executable, "-X", "importtime", "-m", "turnfork", *arguments]
    best: dict[str, int] = {}
    for _ in range(runs):
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False,
                              timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}")
        for self_us, _, module in _IMPORTTIME.findall(done.stderr):
            best[module] = min(best.get(module, int(self_us)), int(self_us))
    groups: dict[str, float] = {}
    for module, self_us in best.items():
        groups[_group(module)] = groups.get(_group(module), 0.0) + self_us * 1e3
    return dict(sorted(groups.items(), key=lambda item: -item[1]))


def _spread(timing: Timing) -> str:
    wall = sorted(timing.samples_ns)
    cpu = sorted(timing.cpu_samples_ns)
    return (f"{timing.name}: wall {wall[0] / 1e6:.1f}..{wall[-1] / 1e6:.1f} ms, "
            f"cpu {cpu[0] / 1e6:.1f}..{cpu[-1] / 1e6:.1f} ms")


def run(settings: Settings) -> Section:
    rounds = settings.rounds(full=21, quick=3)
    importtime_runs = 1 if settings.quick else 5
    with tempfile.TemporaryDirectory(prefix="turnfork-startup-") as scratch:
        cwd = Path(scratch)
        small_log = cwd / "small.log"
        events = core.completed_turn_prefix(parent_log(10).events)
        small_log.write_bytes(core.encode_log(events))
        commands = _commands(small_log)
        timed = _measure(commands, cwd, rounds)
        breakdown = import_breakdown(("check", str(small_log)), cwd, importtime_runs)

    floor = timed[_FLOOR]
    rows: list[Row] = []
    for name, timing in timed.items():
        rows.append(Row(name, timing.median_ns, "ns", _LIMIT if name in _JUDGED else None,
                        cpu_value=timing.cpu_median_ns))
    for name, timing in timed.items():
        if name != _FLOOR:
            rows.append(Row.ratio(f"{name} / {_FLOOR}", timing, floor))
    rows.extend(Row(f"check's imports: {group} (self time, importtime)", value, "ns")
                for group, value in breakdown.items() if value > 0)
    install = _install_kind()
    notes = (f"{rounds} interleaved rounds of fresh processes, one warm-up round; medians; "
             f"turnfork installed: {install}; run from an empty scratch directory",
             "spreads (min..max): " + "; ".join(_spread(t) for t in timed.values()),
             f"import breakdown of `turnfork check small.log`: min over {importtime_runs} "
             "run(s) of python -X importtime")
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows),
                   timings={"fresh process": timed},
                   params={"rounds": rounds, "install": install, "python": sys.executable,
                           "commands": {n: " ".join(c) for n, c in commands.items()},
                           "small_log_events": len(events),
                           "check_import_breakdown_ns": breakdown})
