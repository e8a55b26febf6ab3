"""The Pythons turnfork promises are the ones CI runs (issue 11.4)."""

from __future__ import annotations

import re
import tomllib

from _packaging import ROOT


def _ci_versions() -> list[str]:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    declared = re.search(r'^SUPPORTED_PYTHONS="([^"]+)"$', ci, re.MULTILINE)
    assert declared is not None, ".ci/run declares no SUPPORTED_PYTHONS"
    return declared.group(1).split()


def test_ci_runs_every_python_the_classifiers_name() -> None:
    """`.ci/run`'s versions are exactly the `Python :: 3.x` classifiers, oldest first."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    classified = [c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
                  if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert _ci_versions() == classified


def test_requires_python_starts_at_the_oldest_version_ci_runs() -> None:
    """`requires-python` is `>=` the oldest version CI runs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["requires-python"] == f">={_ci_versions()[0]}"
