"""docs/conformance.md's continuation inventory is true to the tests: every DSH case it lists
names tests that exist and that cite that case (its spec file and line) in their docstrings, or
says why it is not ported; the counts it states are the table's."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "conformance.md"
ROW = re.compile(r"^\| ([\w-]+\.spec\.ts):(\d+) \| (.+?) \| (.+) \|$")
TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
CITE = re.compile(r"([\w-]+\.spec\.ts)?:(\d+)")


def _inventory() -> list[tuple[str, int, str]]:
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("### The continuation inventory"):]
    section = section[:section.index("\n## ")]
    return [(m.group(1), int(m.group(2)), m.group(4))
            for line in section.splitlines() if (m := ROW.match(line))]


def _cited(path: str, name: str) -> set[tuple[str, int]]:
    """The spec cases a test's docstring cites (``file.spec.ts:N``, then ``:M`` for more of
    the same file)."""
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            cases: set[tuple[str, int]] = set()
            spec = None
            for match in CITE.finditer(ast.get_docstring(node) or ""):
                spec = match.group(1) or spec
                if spec is not None:
                    cases.add((spec, int(match.group(2))))
            return cases
    raise AssertionError(f"{path} has no test {name}")


def test_every_listed_case_is_held_by_a_test_that_cites_it_or_says_why_not() -> None:
    """Each row names at least one test, each of which exists and cites the row's case;
    a row without a test says it is a deliberate difference or not ported here."""
    rows = _inventory()
    assert rows
    for spec, line, cell in rows:
        tests = TEST.findall(cell)
        if not tests:
            assert cell.startswith(("deliberate difference", "not ported here")), (spec, line)
            continue
        for path, name in tests:
            assert (spec, line) in _cited(path, name), f"{path}::{name} does not cite " \
                                                       f"{spec}:{line}"


def test_each_case_is_listed_once_and_the_stated_counts_are_the_tables() -> None:
    """No case twice; the section's counts (cases, ported, not ported) are the table's."""
    rows = _inventory()
    cases = [(spec, line) for spec, line, _ in rows]
    assert len(cases) == len(set(cases))
    ported = [row for row in rows if TEST.search(row[2])]
    plugin = [row for row in rows if row[2].startswith("deliberate difference")
              and not TEST.search(row[2])]
    elsewhere = [row for row in rows if row[2].startswith("not ported here")]
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert f"**{len(rows)} cases**" in text
    assert f"{len(ported)} cases ported, all passing" in text
    assert f"{len(plugin)} are not ported because they test a DSH plugin" in text
    assert f"{len(elsewhere)} is left to other work" in text
    assert len(ported) + len(plugin) + len(elsewhere) == len(rows)
