"""Every exported name is documented in docs/api*.md."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

from turnfork import core, shell

ROOT = Path(__file__).resolve().parents[1]


def _documented_words() -> set[str]:
    text = "\n".join(path.read_text(encoding="utf-8")
                     for path in sorted((ROOT / "docs").glob("api*.md")))
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))


@pytest.mark.parametrize("module", [core, shell], ids=lambda m: m.__name__)
def test_every_exported_name_is_documented(module: ModuleType) -> None:
    """A name in __all__ that no API page mentions is an undocumented public name."""
    missing = sorted(set(module.__all__) - _documented_words())
    assert not missing, f"undocumented {module.__name__} names: {missing}"
