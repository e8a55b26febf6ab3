"""The examples in the formats modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

FORMATS = Path(__file__).resolve().parents[2] / "core" / "formats"
MODULE_NAMES = sorted("turnfork.core.formats" if p.stem == "__init__"
                      else f"turnfork.core.formats.{p.stem}"
                      for p in FORMATS.glob("*.py"))
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.mark.parametrize("name", MODULE_NAMES)
def test_module_doctests_pass(name: str) -> None:
    """Every doctest of the module passes."""
    result = doctest.testmod(importlib.import_module(name), optionflags=FLAGS, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_the_format_modules_hold_examples() -> None:
    """Each format module shows its decoding in an example, so the test above checks it."""
    for name in ("openai_chat", "openai_responses", "anthropic", "detect"):
        module = f"turnfork.core.formats.{name}"
        found = doctest.testmod(importlib.import_module(module), optionflags=FLAGS,
                                report=False)
        assert found.attempted >= 1, module
