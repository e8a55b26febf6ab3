"""The examples in core's docstrings run and hold (issue 2: documented public functions)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"
#: The core's modules and its tiers' (the wire formats have their own doctest module).
MODULE_NAMES = sorted(".".join(("turnfork", "core", *p.relative_to(CORE).with_suffix("").parts))
                      .removesuffix(".__init__")
                      for p in [*CORE.glob("*.py"), *CORE.glob("*/*.py")]
                      if p.parent.name != "formats")
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
    for name in ("turnfork.core.log.codec", "turnfork.core.log.trace", "turnfork.core.log.seed",
                 "turnfork.core.log.events", "turnfork.core.log.strategies"):
        assert attempted[name] >= 1, name
