"""The mutation runner on a package pytest rewrites the asserts of (as it does every package
that ships a pytest plugin, turnfork among them): pytest's import hook goes first on
``sys.meta_path`` and would load the module unchanged from its file, so that every mutant
survived and the clean run recorded nothing. The runner keeps its own finder in front."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.mutation.runner import run_module

MODULE = '''\
def clamp(x, low, high):
    if x < low:
        return low
    return min(x, high)
'''

TEST = '''\
from rewrittenpkg.clamp import clamp


def test_clamp():
    assert (clamp(-1, 0, 3), clamp(2, 0, 3), clamp(5, 0, 3)) == (0, 2, 3)
'''


def test_a_mutant_of_a_rewritten_package_is_the_module_the_tests_load(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "rewrittenpkg").mkdir()
    (tmp_path / "rewrittenpkg" / "__init__.py").write_text("")
    (tmp_path / "rewrittenpkg" / "clamp.py").write_text(MODULE)
    (tmp_path / "test_rewritten.py").write_text(TEST)
    (tmp_path / "conftest.py").write_text(
        'import pytest\nfrom hypothesis import settings\n'
        'settings.register_profile("ci", max_examples=10)\n'
        'pytest.register_assert_rewrite("rewrittenpkg")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    run = run_module("rewrittenpkg.clamp", [str(tmp_path / "test_rewritten.py")],
                     only=lambda mutant: mutant.line == 3)
    outcome = {o.mutant.key: o.status for o in run.outcomes}
    assert outcome == {"clamp: `return low` -> `pass`": "killed",
                       "clamp: `return low` -> `return None`": "killed"}, outcome
