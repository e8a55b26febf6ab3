"""The suite's command line: ``python -m benchmarks [--quick] [--only NAME] …``.

Runs the benchmark modules in order, prints one aligned table and writes every figure, every
sample and the machine's description as JSON (``benchmarks/results/latest.json``, or
``quick.json`` with ``--quick``, or ``--output PATH``).

A benchmark module has ``NAME``, ``TITLE`` and ``run(settings: Settings) -> Section``; a module
that cannot run here (a missing extra, a runtime not yet built) returns a ``Section`` with
``unavailable`` set instead of rows. Adding a benchmark is adding its module to ``MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, cast

from .harness import Report, Section, Settings, machine, render, write_json

__all__ = ["MODULES", "OPTIONAL", "main"]

#: Benchmark modules, in the order they run and print: the core's codec, prefix and fork share,
#: then the shell-level fork benchmarks (start to publication, memory per child, and 1,000
#: concurrent children in a fresh subprocess), the disk store beside the memory store (fork
#: start on disk, group-commit throughput), the wire-history formats, the CLI on a large log
#: (fresh processes beside msgspec's decode of the same bytes), then the cost of a turn
#: in a long session (last:
#: its 10,000-turn agent would weigh on every collection of the benchmarks after it).
MODULES: tuple[str, ...] = (
    "benchmarks.bench_startup",
    "benchmarks.bench_codec",
    "benchmarks.bench_prefix",
    "benchmarks.bench_surface",
    "benchmarks.bench_fork_core",
    "benchmarks.bench_fork_shell",
    "benchmarks.bench_fork_floor",
    "benchmarks.bench_fork_memory",
    "benchmarks.bench_fork_load",
    "benchmarks.bench_store",
    "benchmarks.bench_formats",
    "benchmarks.bench_large_logs",
    "benchmarks.bench_prompt_cache",
    "benchmarks.bench_turns",
)

#: Benchmarks that run only when asked for: DSH side by side needs a DSH checkout (``--dsh``);
#: Ray needs the ``ray`` extra and a network namespace (``--only ray``).
OPTIONAL: tuple[str, ...] = ("benchmarks.bench_dsh", "benchmarks.bench_ray")

_RESULTS = Path(__file__).resolve().parent / "results"


class _Benchmark(Protocol):
    NAME: str
    TITLE: str

    def run(self, settings: Settings) -> Section: ...


def _load(module: str) -> _Benchmark:
    return cast(_Benchmark, importlib.import_module(module))


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="turnfork's benchmark suite: prints a table and writes JSON results.")
    parser.add_argument("--quick", action="store_true",
                        help="small workloads and few rounds (a smoke run, seconds)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only this benchmark (repeatable); names: "
                             + ", ".join(_load(m).NAME for m in (*MODULES, *OPTIONAL)))
    parser.add_argument("--repeats", type=int, metavar="N",
                        help="interleaved rounds per comparison (default: per benchmark)")
    parser.add_argument("--output", type=Path, metavar="PATH",
                        help="JSON file to write (default: benchmarks/results/latest.json, "
                             "or quick.json with --quick)")
    parser.add_argument("--dsh", type=Path, metavar="PATH",
                        help="also run DSH's own fork start from this DSH checkout (node, "
                             "pnpm, `pnpm install` done in it), side by side with ours")
    parser.add_argument("--profile", action="store_true",
                        help="also print a cProfile of ours on the codec workload")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite; 0 on success (missed targets are figures, not failures)."""
    args = _parse(argv)
    dsh = None if args.dsh is None else args.dsh.expanduser().resolve()
    settings = Settings(quick=args.quick, repeats=args.repeats, dsh=dsh)
    benchmarks = [_load(m) for m in MODULES]
    optional = [_load(m) for m in OPTIONAL]
    known = {b.NAME for b in (*benchmarks, *optional)}
    unknown = sorted(set(args.only or ()) - known)
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}; known: {', '.join(sorted(known))}",
              file=sys.stderr)
        return 2
    # An optional benchmark runs when named by --only, or (DSH) when given its checkout.
    wanted = [*benchmarks, *(b for b in optional
                             if b.NAME in (args.only or ()) or (b.NAME == "dsh" and dsh))]
    chosen = [b for b in wanted if not args.only or b.NAME in args.only]

    meta = machine()
    meta["mode"] = "quick" if settings.quick else "full"
    meta["command"] = " ".join(["python -m benchmarks", *(argv or sys.argv[1:])])
    started = time.perf_counter()
    sections = []
    for benchmark in chosen:
        print(f"running {benchmark.NAME} …", file=sys.stderr, flush=True)
        sections.append(benchmark.run(settings))
    meta["duration_s"] = round(time.perf_counter() - started, 1)
    report = Report(meta=meta, sections=tuple(sections))
    print(render(report))
    output = args.output or _RESULTS / ("quick.json" if settings.quick else "latest.json")
    write_json(report, output)
    print(f"wrote {output} ({meta['duration_s']} s)")
    if args.profile:
        from .bench_codec import profile

        print(profile(settings))
    return 0
