"""``python -m benchmarks.mutation [--module NAME]... [--jobs N] [--seed S] [--report]``.

Runs the mutants of each module (all of :data:`MODULES` by default, in order), one line per
mutant as it finishes, then prints the table; each module's outcomes are written to
``benchmarks/results/mutation/<module>.json``. ``--report`` prints the table from those files
without running anything. ``--list`` prints the mutants without running them.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from . import MODULES, short_name
from .equivalent import EQUIVALENT
from .operators import mutants
from .runner import Outcome, module_file, run_module

RESULTS = Path(__file__).resolve().parent.parent / "results" / "mutation"


def _pick(names: list[str]) -> list[str]:
    if not names:
        return list(MODULES)
    chosen = []
    for name in names:
        matches = [m for m in MODULES if m == name or short_name(m) == name]
        if not matches:
            raise SystemExit(f"unknown module {name!r}; known: "
                             + ", ".join(short_name(m) for m in MODULES))
        chosen.extend(matches)
    return chosen


def _summary(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One row of the table, and the notes (survivors, stale equivalents) under it."""
    module = short_name(data["module"])
    listed = EQUIVALENT.get(module, {})
    counts = {"mutants": 0, "killed": 0, "survived": 0, "equivalent": 0, "not covered": 0,
              "error": 0}
    notes: list[str] = []
    seen: set[str] = set()
    for outcome in data["outcomes"]:
        key, status = outcome["key"], outcome["status"]
        seen.add(key)
        counts["mutants"] += 1
        if key in listed:
            if status == "killed":
                notes.append(f"  stale equivalent (it was killed): {key}")
                counts["killed"] += 1
            else:
                counts["equivalent"] += 1
            continue
        counts[status] += 1
        if status != "killed":
            mutant = outcome["mutant"]
            notes.append(f"  {status}: line {mutant['line']} {key}")
    existing = {m.key for m in mutants(module_file(data["module"]).read_text())}
    notes.extend(f"  stale equivalent (no such mutant): {key}"
                 for key in listed if key not in existing)
    judged = counts["mutants"] - counts["equivalent"]
    counts["score"] = counts["killed"] / judged if judged else 1.0
    counts["module"] = module
    return counts, notes


def _table(rows: list[dict[str, Any]]) -> str:
    head = "| module | mutants | killed | survived | not covered | equivalent | score |"
    lines = [head, "|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['module']} | {row['mutants']} | {row['killed']} | "
                     f"{row['survived'] + row['error']} | {row['not covered']} | "
                     f"{row['equivalent']} | {row['score']:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mutation",
                                     description=__doc__.split("\n\n")[1])
    parser.add_argument("--module", action="append", default=[],
                        help="a module to run (short name, e.g. seed); repeatable")
    parser.add_argument("--jobs", type=int, default=1, help="mutants run at once (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="--hypothesis-seed (default 0)")
    parser.add_argument("--report", action="store_true",
                        help="print the table from the saved results; run nothing")
    parser.add_argument("--list", action="store_true", help="print the mutants; run nothing")
    parser.add_argument("--line", type=int, action="append", default=[],
                        help="only the mutants on this line (repeatable; for one module)")
    parser.add_argument("--sample", type=int, default=0,
                        help="only N mutants per module, drawn at random with --seed (an "
                             "estimate: the table says so)")
    args = parser.parse_args(argv)
    chosen = _pick(args.module)
    if args.list:
        for name in chosen:
            for mutant in mutants(module_file(name).read_text()):
                print(f"{short_name(name)}:{mutant.line} {mutant.operator}: {mutant.key}")
        return 0
    rows, status = [], 0
    for name in chosen:
        target = RESULTS / f"{short_name(name)}.json"
        if not args.report:
            started = time.monotonic()
            print(f"== {short_name(name)} ({module_file(name)})", flush=True)

            def progress(outcome: Outcome, done: int, total: int) -> None:
                mark = {"killed": "killed  ", "survived": "SURVIVED"}.get(outcome.status,
                                                                           outcome.status)
                print(f"  [{done}/{total}] {mark} line {outcome.mutant.line} "
                      f"{outcome.mutant.key} ({outcome.tests} tests, {outcome.seconds:.1f} s)",
                      flush=True)

            only = (lambda m: m.line in args.line) if args.line else None
            if args.sample:
                every = mutants(module_file(name).read_text())
                drawn = {(m.site, m.variant) for m in random.Random(args.seed).sample(
                    every, min(args.sample, len(every)))}
                only = lambda m, drawn=drawn: (m.site, m.variant) in drawn  # noqa: E731
            run = run_module(name, MODULES[name], seed=args.seed, jobs=args.jobs, only=only,
                             progress=progress)
            data = {**run.to_json(), "seed": args.seed,
                    "minutes": round((time.monotonic() - started) / 60, 1)}
            if args.sample:
                data["sample_of"] = len(every)
            if not args.line:
                RESULTS.mkdir(parents=True, exist_ok=True)
                target.write_text(json.dumps(data, indent=1))
        elif target.exists():
            data = json.loads(target.read_text())
        else:
            print(f"no results for {short_name(name)} ({target})", file=sys.stderr)
            status = 1
            continue
        row, notes = _summary(data)
        if "sample_of" in data:
            row["module"] += f" (random {row['mutants']} of {data['sample_of']})"
        rows.append(row)
        print(f"{row['module']}: {row['killed']} of {row['mutants']} killed, "
              f"{row['equivalent']} equivalent, score {row['score']:.2f}"
              + (f" ({data.get('minutes')} min)" if "minutes" in data else ""))
        for note in notes:
            print(note)
    if rows:
        print()
        print(_table(rows))
    if any(row["score"] < 0.90 for row in rows):
        status = status or 1
    return status


if __name__ == "__main__":
    sys.exit(main())
