"""docs/formats/: the examples run, and every public name of the formats is documented."""

from __future__ import annotations

import doctest
import importlib
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs" / "formats").glob("*.md"))
MODULES = ("turnfork.core.formats", "turnfork.core.formats.openai_chat",
           "turnfork.core.formats.openai_responses", "turnfork.core.formats.anthropic",
           "turnfork.core.formats.strategies", "turnfork.core.wire_seed")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_examples_in_page_run(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `>>>` example on the page gives the output written under it."""
    monkeypatch.chdir(ROOT)
    results = doctest.testfile(os.fspath(path), module_relative=False,
                               optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert results.failed == 0, f"{results.failed} example(s) failed in {path.name}"


def test_every_public_name_is_documented() -> None:
    """A name in a formats module's __all__ that no formats page mentions is undocumented."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*",
                           "\n".join(p.read_text(encoding="utf-8") for p in PAGES)))
    missing = sorted(f"{name}.{word}" for name in MODULES
                     for word in importlib.import_module(name).__all__ if word not in words)
    assert not missing, f"undocumented: {missing}"
