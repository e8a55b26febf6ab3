"""The README's documentation list leads to every page of docs/, and to nothing that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _documentation_links() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Documentation\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"\]\(([^)#\s]+)\)", section))


def test_every_docs_page_is_linked_from_the_readme() -> None:
    """A page in docs/ that the README's documentation list does not link is hard to find."""
    pages = {path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md")}
    missing = sorted(pages - _documentation_links())
    assert not missing, f"README.md's documentation list does not link: {missing}"


def test_every_documentation_link_resolves() -> None:
    """Each file the README's documentation list links exists."""
    broken = sorted(link for link in _documentation_links() if not (ROOT / link).is_file())
    assert not broken, f"README.md links files that do not exist: {broken}"
