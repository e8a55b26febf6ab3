"""Running mutants: one clean run that maps lines to tests, then each mutant in a fork.

How a mutant runs. Nothing is written to the source tree. This process imports pytest and the
libraries the tests use, never the module under test; each run is a forked child that puts a
finder first on ``sys.meta_path`` which loads *that one module* (by its dotted name, wherever
the package lives: a link, a path mapping, an installed copy) from its source with the mutant
applied, compiled under the original file name. Then the child runs ``pytest.main`` on the
mutant's tests and exits with pytest's status.

Which tests. The clean run (the module unchanged, loaded the same way, with a call recording
each statement's line before it) runs the module's test paths once and records, per test, the
module's statements it executes (what runs while the module is imported counts for every
test). A mutant then runs, fastest first and stopping at the first failure (``-x``), the tests
that execute its statement. It is *killed* when
they fail (an import error, a collection error and a timeout count: the change was noticed),
*survives* when they pass, and is *not covered* when no test executes its line.

Hypothesis: the ``ci`` profile (each test's full budget), with a fixed ``--hypothesis-seed`` so
that a run can be repeated, and without the example database (a mutant's failing examples
must not steer the next mutant's run).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib.machinery
import importlib.util
import json
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import CodeType
from typing import Any

from .operators import Mutant, mutants, mutated_tree

__all__ = ["Outcome", "ModuleRun", "module_file", "run_module"]

#: Libraries the tests import, loaded once here so that each forked run starts warm.
_WARM = ("pytest", "hypothesis", "msgspec", "beartype")


@dataclass
class Outcome:
    mutant: Mutant
    #: ``killed``, ``survived``, ``not covered`` or ``error`` (the run itself failed).
    status: str
    #: How it was killed (``tests failed``, ``timeout``), or the tests a survivor passed.
    detail: str = ""
    tests: int = 0
    seconds: float = 0.0


@dataclass
class ModuleRun:
    module: str
    file: str
    tests: list[str]
    clean_seconds: float
    outcomes: list[Outcome] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"module": self.module, "file": self.file, "tests": self.tests,
                "clean_seconds": self.clean_seconds,
                "outcomes": [{**asdict(o), "mutant": asdict(o.mutant), "key": o.mutant.key}
                             for o in self.outcomes]}


def _warm() -> None:
    """Import the test libraries and pytest's plugins here, once: each forked run then starts
    with them loaded (seconds per mutant on a busy machine)."""
    from importlib.metadata import entry_points

    for library in _WARM:
        importlib.import_module(library)
    for plugin in entry_points(group="pytest11"):
        with contextlib.suppress(Exception):
            importlib.import_module(plugin.value.split(":")[0])


def module_file(name: str) -> Path:
    """The source file of module ``name``, found without importing it or its package (only
    the top-level package is imported, to learn where it lives). Every finder on
    ``sys.meta_path`` is asked, as the import system asks them, so a package mapped by an
    editable install's finder (``turnfork.core`` from the checkout's ``core/``) is found too."""
    top, *rest = name.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None:
        raise LookupError(f"no module {top!r}")
    for index in range(len(rest)):
        locations = spec.submodule_search_locations if spec is not None else None
        if locations is None:
            raise LookupError(f"{'.'.join([top, *rest[:index]])} is not a package")
        qualified = ".".join([top, *rest[:index + 1]])
        spec = next((found for finder in sys.meta_path
                     if (find := getattr(finder, "find_spec", None)) is not None
                     and (found := find(qualified, list(locations))) is not None), None)
        if spec is None:
            raise LookupError(f"no module {name!r}")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin)


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """Loads the module from ``code`` (the mutant, or the clean source) instead of its file."""

    def __init__(self, fullname: str, path: str, code: CodeType) -> None:
        super().__init__(fullname, path)
        self._code = code

    def get_code(self, fullname: str) -> CodeType:
        return self._code


class _OneModuleFinder:
    """First on ``sys.meta_path``: serves one module from the given code."""

    def __init__(self, name: str, path: Path, code: CodeType) -> None:
        self.name, self.path, self.code = name, path, code

    def find_spec(self, fullname: str, path: Any = None, target: Any = None,
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(
            fullname, str(self.path), loader=_SourceLoader(fullname, str(self.path), self.code))

    def invalidate_caches(self) -> None:
        return None


def _install(name: str, path: Path, tree: ast.Module,
             hit: Callable[[int], None] | None = None) -> None:
    if hit is not None:
        tree = ast.fix_missing_locations(_Instrument().visit(tree))
        # A builtin, so that the instrumented module finds it without a new global name.
        setattr(builtins, _HIT, hit)
    code = compile(tree, str(path), "exec", dont_inherit=True)
    sys.meta_path.insert(0, _OneModuleFinder(name, path, code))


#: The name the clean run's instrumented module calls with each statement's line.
_HIT = "__mutation_statement_hit__"


class _Instrument(ast.NodeTransformer):
    """Before each statement inside a function, a call recording its line (a function's
    docstring stays first). Module and class bodies run at import: not instrumented."""

    def __init__(self) -> None:
        self.depth = 0

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        if self.depth == 0:
            return node
        for name in ("body", "orelse", "finalbody"):
            statements = getattr(node, name, None)
            if not isinstance(statements, list) or not statements or not isinstance(
                    statements[0], ast.stmt):
                continue
            marked: list[ast.stmt] = []
            for index, statement in enumerate(statements):
                docstring = (index == 0 and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                             and isinstance(statement, ast.Expr)
                             and isinstance(statement.value, ast.Constant)
                             and isinstance(statement.value.value, str))
                if not docstring:
                    hit = ast.Expr(ast.Call(ast.Name(_HIT, ast.Load()),
                                            [ast.Constant(statement.lineno)], []))
                    marked.append(ast.copy_location(hit, statement))
                marked.append(statement)
            setattr(node, name, marked)
        return node


class _LineRecorder:
    """A pytest plugin: per test, the statements of the module it runs (by line), and how
    long it takes. The clean module is instrumented (:class:`_Instrument`) rather than traced:
    a tracer would slow every call of every library the tests use."""

    def __init__(self) -> None:
        self.current = "<import>"
        self.lines: dict[str, set[int]] = {"<import>": set()}
        self.seconds: dict[str, float] = {}
        self.failed: list[str] = []
        self.started = 0.0

    def hit(self, line: int) -> None:
        self.lines[self.current].add(line)

    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> None:
        self.current = item.nodeid
        self.lines.setdefault(item.nodeid, set())
        self.started = time.perf_counter()

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.seconds[nodeid] = time.perf_counter() - self.started
        self.current = "<import>"

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.failed:
            self.failed.append(report.nodeid)


class _Profile:
    """A pytest plugin: the ``ci`` profile without the example database, and the module's
    finder first on ``sys.meta_path``."""

    def pytest_configure(self, config: Any) -> None:
        # pytest's assertion rewriter is first on sys.meta_path by now, and it serves the
        # modules of a pytest plugin's package (turnfork is one) from their files: the
        # module's own finder goes back in front of it.
        for finder in [f for f in sys.meta_path if isinstance(f, _OneModuleFinder)]:
            sys.meta_path.remove(finder)
            sys.meta_path.insert(0, finder)
        from hypothesis import settings

        settings.register_profile("mutation", parent=settings.get_profile("ci"), database=None)
        settings.load_profile("mutation")


def _pytest_args(tests: Sequence[str], seed: int) -> list[str]:
    return [*tests, "-q", "-p", "no:cacheprovider", "--hypothesis-profile=ci",
            f"--hypothesis-seed={seed}",
            # hypothesis loads returns (its strategies plugin) before pytest can rewrite the
            # asserts of returns' pytest plugin: nothing to do with the code under test
            "-W", "ignore::pytest.PytestAssertRewriteWarning"]


#: Address space a mutant's tests may take: a mutant that makes a loop append forever fails
#: with MemoryError (killed: its tests failed) instead of filling the machine until the
#: kernel kills some process, perhaps another one.
MUTANT_MEMORY_BYTES = 4 * 2**30


def _cap_memory() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = MUTANT_MEMORY_BYTES if hard == resource.RLIM_INFINITY else min(hard,
                                                                        MUTANT_MEMORY_BYTES)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _in_child(work: Callable[[], int], timeout: float) -> tuple[int, bool]:
    """Run ``work`` in a forked child; (its exit status, whether it ran out of time)."""
    pid = os.fork()
    if pid == 0:  # the child
        status = 3
        try:
            status = work()
        except BaseException:
            traceback.print_exc()
            status = 3
        finally:
            os._exit(status)
    deadline = time.monotonic() + timeout
    while True:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            return (os.waitstatus_to_exitcode(raw), False)
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return (-1, True)
        time.sleep(0.02)


def _clean_run(name: str, path: Path, tests: Sequence[str], seed: int,
               ) -> tuple[dict[str, set[int]], dict[str, float], float]:
    """Run the tests on the unchanged module under the line tracer; the map is handed back
    through a file (the run is a child, like every mutant's)."""
    source = path.read_text()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "coverage.json"

        def work() -> int:
            import pytest

            recorder = _LineRecorder()
            _install(name, path, ast.parse(source), recorder.hit)
            status = int(pytest.main(_pytest_args(tests, seed), plugins=[recorder, _Profile()]))
            out.write_text(json.dumps({"lines": {k: sorted(v) for k, v in recorder.lines.items()},
                                       "seconds": recorder.seconds,
                                       "failed": recorder.failed, "status": status}))
            return 0

        started = time.perf_counter()
        status, timed_out = _in_child(work, timeout=6 * 3600)
        elapsed = time.perf_counter() - started
        if timed_out or status != 0 or not out.exists():
            raise RuntimeError(f"the clean run of {name} did not finish (status {status})")
        data = json.loads(out.read_text())
    if data["status"] != 0:
        raise RuntimeError(f"the tests fail on the unchanged {name}: {data['failed'][:5]}")
    lines = {test: set(found) for test, found in data["lines"].items()}
    return lines, data["seconds"], elapsed


def run_module(name: str, tests: Sequence[str], *, seed: int = 0, jobs: int = 1,
               only: Callable[[Mutant], bool] | None = None,
               progress: Callable[[Outcome, int, int], None] | None = None) -> ModuleRun:
    """Every mutant of module ``name`` against ``tests`` (paths pytest takes)."""
    _warm()
    path = module_file(name)
    source = path.read_text()
    found = [m for m in mutants(source) if only is None or only(m)]
    lines, seconds, clean = _clean_run(name, path, tests, seed)
    at_import = lines.pop("<import>", set())
    if lines and not any(lines.values()):
        raise RuntimeError(f"the clean run of {name} recorded no statement: the tests did not "
                           "load it through the runner's finder")
    run = ModuleRun(module=name, file=str(path), tests=list(tests), clean_seconds=clean)
    ordered = sorted(lines, key=lambda test: seconds.get(test, 0.0))
    queue = list(found)
    running: dict[int, tuple[Mutant, list[str], float, float, bool]] = {}
    total = len(found)

    def start(mutant: Mutant, by_file: bool = False) -> None:
        chosen = (ordered if not mutant.in_function or mutant.statement in at_import
                  else [t for t in ordered if mutant.statement in lines[t]])
        if not chosen:
            finish(Outcome(mutant, "not covered"))
            return
        budget = 60 + 5 * sum(seconds.get(t, 1.0) for t in chosen)
        if by_file:  # the tests' files, collected as the mutant has them
            chosen = list(dict.fromkeys(test.split("::")[0] for test in chosen))
        tree = mutated_tree(source, mutant)
        pid = os.fork()
        if pid == 0:
            status = 3
            try:
                _cap_memory()
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                import pytest

                _install(name, path, tree)
                status = int(pytest.main([*_pytest_args(chosen, seed), "-x"],
                                         plugins=[_Profile()]))
            except BaseException:
                status = 3
            finally:
                os._exit(status)
        running[pid] = (mutant, chosen, time.monotonic(), budget, by_file)

    def finish(outcome: Outcome) -> None:
        run.outcomes.append(outcome)
        if progress is not None:
            progress(outcome, len(run.outcomes), total)

    while queue or running:
        while queue and len(running) < jobs:
            start(queue.pop(0))
        if not running:
            continue
        time.sleep(0.02)
        for pid, (mutant, chosen, began, budget, by_file) in list(running.items()):
            done, raw = os.waitpid(pid, os.WNOHANG)
            elapsed = time.monotonic() - began
            if not done and elapsed > budget:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                del running[pid]
                finish(Outcome(mutant, "killed", "timeout", len(chosen), elapsed))
            elif done:
                del running[pid]
                status = os.waitstatus_to_exitcode(raw)
                if status == 0:
                    finish(Outcome(mutant, "survived", "", len(chosen), elapsed))
                elif status in (1, 2):
                    detail = "tests failed" if status == 1 else "collection or import failed"
                    finish(Outcome(mutant, "killed", detail, len(chosen), elapsed))
                elif status == 4 and not by_file:
                    # Test ids the mutant does not have (a parametrization read off the
                    # module changed, or its import failed): run their files instead.
                    start(mutant, by_file=True)
                else:  # the run itself went wrong: neither a kill nor a survivor
                    finish(Outcome(mutant, "error", f"pytest exit {status}", len(chosen),
                                   elapsed))
    run.outcomes.sort(key=lambda o: (o.mutant.site, o.mutant.variant))
    return run

