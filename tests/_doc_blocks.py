"""The Python code blocks of README.md and docs/**/*.md, as the tests that run them see them.

A block is a fenced block whose info string is ``python``. It is one of three kinds:

* a doctest (its first line starts with ``>>>``): run with doctest, in one namespace shared by
  the document's doctest blocks, in order (as ``doctest.testfile`` would);
* a test module (it defines ``test_*`` functions at its top level and does not call them):
  run by pytest, as the page tells a reader to;
* a script: run as ``python block.py`` from the repository's root; each
  ``print(...)  # TEXT`` line claims that it prints the line TEXT (``...`` in TEXT stands for
  any text).

A block that cannot run here says so in an HTML comment on the line right before its fence,
``<!-- not run: REASON -->``; the reason is required.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Every document whose code blocks are run: found anew each run, so new pages are included.
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))

_FENCE = re.compile(r"^(?P<indent>[ ]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_NOT_RUN = re.compile(r"^\s*<!--\s*not run:(?P<reason>.*?)-->\s*$")
_CLAIMED_PRINT = re.compile(r"^\s*print\(.*\)\s+#\s?(?P<text>.*)$")


@dataclass(frozen=True)
class Block:
    """One ```python block of a document."""

    document: Path
    #: The line of its opening fence (1-based).
    line: int
    #: Its text, with the fence's indentation taken off every line.
    code: str
    #: The reason given in a ``<!-- not run: ... -->`` comment right before it, if any.
    not_run: str | None

    @property
    def label(self) -> str:
        return f"{self.document.relative_to(ROOT).as_posix()}:{self.line}"

    @property
    def is_doctest(self) -> bool:
        return self.code.lstrip().startswith(">>>")

    @cached_property
    def test_functions(self) -> tuple[str, ...]:
        """The ``test_*`` functions it defines at its top level and leaves to pytest (none for a
        doctest, nor for a block that calls them itself: that one is a script)."""
        if self.is_doctest:
            return ()
        body = ast.parse(self.code).body
        defined = tuple(node.name for node in body
                        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                        and node.name.startswith("test_"))
        called = {node.value.func.id for node in body
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                  and isinstance(node.value.func, ast.Name)}
        return () if called & set(defined) else defined

    @property
    def claimed_output(self) -> list[str]:
        """The lines its ``print(...)  # TEXT`` statements claim, in order."""
        found = (_CLAIMED_PRINT.match(line) for line in self.code.splitlines())
        return [match.group("text").rstrip() for match in found if match]


@dataclass(frozen=True)
class Fence:
    """A fenced block of any language (for the checks that no example hides outside one)."""

    info: str
    line: int
    end: int


def _parse(document: Path) -> tuple[list[Block], list[Fence]]:
    lines = document.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    fences: list[Fence] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = len(opening["indent"]), opening["fence"]
        info = opening["info"].strip()
        closing = re.compile(rf"^[ ]*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = index + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        assert end < len(lines), f"{document}:{index + 1}: a code fence that never closes"
        fences.append(Fence(info=info, line=index + 1, end=end + 1))
        if info.split(maxsplit=1)[:1] == ["python"]:
            previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
            marker = _NOT_RUN.match(previous)
            code = "\n".join(line[indent:] if line[:indent].strip() == "" else line
                             for line in lines[index + 1:end])
            blocks.append(Block(document=document, line=index + 1, code=code + "\n",
                                not_run=marker["reason"].strip() if marker else None))
        index = end + 1
    return blocks, fences


def python_blocks(document: Path) -> list[Block]:
    """The document's ```python blocks, in order."""
    return _parse(document)[0]


def fences(document: Path) -> list[Fence]:
    """Every fenced block of the document, in order."""
    return _parse(document)[1]


def all_blocks() -> list[Block]:
    """Every ```python block of README.md and docs/**/*.md."""
    return [block for document in DOCUMENTS for block in python_blocks(document)]
