"""The examples in core's docstrings run and hold (issue 2: documented public functions)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"
MODULE_NAMES = sorted(f"turnfork.core.{p.stem}" if p.stem != "__init__" else "turnfork.core"
                      for p in CORE.glob("*.py"))
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("name", MODULE_NAMES)
def test_module_doctests_pass(name: str) -> None:
    """Every doctest of the module passes."""
    result = doctest.testmod(importlib.import_module(name), optionflags=FLAGS, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_doctests_exist() -> None:
    """The core's docstrings hold examples at all, so the test above checks something."""
    attempted = {name: doctest.testmod(importlib.import_module(name), optionflags=FLAGS,
                                       report=False).attempted for name in MODULE_NAMES}
    assert sum(attempted.values()) >= 10, attempted
    for name in ("turnfork.core.codec", "turnfork.core.trace", "turnfork.core.seed",
                 "turnfork.core.events", "turnfork.core.strategies"):
        assert attempted[name] >= 1, name
