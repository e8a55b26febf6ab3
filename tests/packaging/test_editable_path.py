"""What an editable install puts on sys.path makes only `turnfork` importable (issue 11.1)."""

from __future__ import annotations

import tomllib

from _packaging import ROOT


def test_the_editable_path_holds_only_the_turnfork_link() -> None:
    """`.editable/` holds one entry, a link to `turnfork/`, and pyproject names that folder."""
    entries = list((ROOT / ".editable").iterdir())
    assert [p.name for p in entries] == ["turnfork"]
    assert entries[0].is_symlink() and entries[0].resolve() == ROOT / "turnfork"
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["dev-mode-dirs"] == [".editable"] and wheel["packages"] == ["turnfork"]
