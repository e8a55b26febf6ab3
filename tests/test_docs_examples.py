"""The examples in README.md and docs/*.md run, so they cannot rot."""

from __future__ import annotations

import doctest
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_examples_in_document_run(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `>>>` example in the document gives the output written under it."""
    monkeypatch.chdir(ROOT)
    results = doctest.testfile(
        os.fspath(path), module_relative=False, verbose=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert results.failed == 0, f"{results.failed} example(s) failed in {path.name}"


def test_the_architecture_and_model_pages_hold_examples() -> None:
    """The pages that explain the seed and the models' view carry runnable examples."""
    for name in ("architecture.md", "model-experience.md"):
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        assert ">>> " in text, name
