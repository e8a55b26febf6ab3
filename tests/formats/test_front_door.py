"""The formats tier's front door is its contract: its public names, less its submodules, are
exactly its `__all__` (no star-import); and no `assert` stands guard over untrusted items in the
tier or in the CLI's reading of a history (under `python -O` an assert is gone)."""

from __future__ import annotations

import ast
import types
from pathlib import Path

from turnfork.core import formats

ROOT = Path(__file__).resolve().parents[2]
#: Where a history from outside is read: the tier (its strategies are test code) and the CLI's
#: history modules.
UNTRUSTED_PATH = sorted([*(p for p in (ROOT / "core" / "formats").glob("*.py")
                           if p.name != "strategies.py"),
                         ROOT / "shell" / "cli" / "histories.py",
                         ROOT / "shell" / "cli" / "history_outline.py"])


def test_the_front_door_lists_exactly_its_public_names() -> None:
    public = {name for name, value in vars(formats).items() if not name.startswith("_")
              and not (isinstance(value, types.ModuleType) and name not in formats.__all__)}
    assert public == set(formats.__all__)
    assert len(formats.__all__) == len(set(formats.__all__))


def test_the_front_door_has_no_star_import() -> None:
    tree = ast.parse((ROOT / "core" / "formats" / "__init__.py").read_text(encoding="utf-8"))
    stars = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
             and any(alias.name == "*" for alias in node.names)]
    assert stars == []


def test_no_assert_guards_an_item() -> None:
    found = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in UNTRUSTED_PATH
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Assert)]
    assert found == []
    assert len(UNTRUSTED_PATH) == 8
