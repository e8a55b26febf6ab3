"""The mutation runner on a module of ten lines: it kills what the test notices, lets the
equivalent boundary change survive, and reports the function no test calls as not covered
(``python -m benchmarks.mutation`` itself runs for hours; this is its machinery)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks.mutation import MODULES, short_name
from benchmarks.mutation.operators import mutants
from benchmarks.mutation.runner import module_file, run_module

TINY = '''\
def clamp(x, low, high):
    if x < low:
        return low
    if x > high:
        return high
    return x


def unused():
    return 1
'''

TEST = '''\
from tinypkg.clamp import clamp


def test_clamp():
    assert (clamp(-1, 0, 3), clamp(2, 0, 3), clamp(5, 0, 3)) == (0, 2, 3)
'''


def test_the_runner_kills_survives_and_finds_the_uncovered(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tinypkg").mkdir()
    (tmp_path / "tinypkg" / "__init__.py").write_text("")
    (tmp_path / "tinypkg" / "clamp.py").write_text(TINY)
    (tmp_path / "test_tiny.py").write_text(TEST)
    (tmp_path / "conftest.py").write_text(
        'from hypothesis import settings\nsettings.register_profile("ci", max_examples=10)\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert module_file("tinypkg.clamp") == tmp_path / "tinypkg" / "clamp.py"
    assert "tinypkg.clamp" not in sys.modules  # found without importing it
    # The first branch and the uncovered function: enough to see each kind of outcome.
    run = run_module("tinypkg.clamp", [str(tmp_path / "test_tiny.py")], jobs=2,
                     only=lambda mutant: mutant.line in (2, 3, 10))
    outcome = {o.mutant.key: o.status for o in run.outcomes}
    assert outcome == {
        "clamp: `x < low` -> `not (x < low)`": "killed",
        "clamp: `x < low` -> `x <= low`": "survived",  # equal at the bound: equivalent
        "clamp: `return low` -> `pass`": "killed",
        "clamp: `return low` -> `return None`": "killed",
        "unused: `return 1` -> `return None`": "not covered",
        "unused: `1` -> `2`": "not covered",
        "unused: `1` -> `0`": "not covered",
    }, outcome
    assert "tinypkg.clamp" not in sys.modules  # every run was a child's
    assert (tmp_path / "tinypkg" / "clamp.py").read_text() == TINY  # nothing written


def test_every_listed_module_and_test_path_exists() -> None:
    """The one list of what the run mutates: each module is found and has mutants, each of
    its test paths exists (a module that moves is caught here, not hours into a run)."""
    root = Path(__file__).resolve().parents[2]
    for module, tests in MODULES.items():
        assert mutants(module_file(module).read_text()), module
        assert short_name(module) != module
        for test in tests:
            assert (root / test).exists(), (module, test)
