"""The examples of docs/formats/kit.md run against the real peers (langchain-core, the OpenAI
Agents SDK, pydantic-ai) and print what their comments say: how many examples each ran and what
it found."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from _capture import EXTRA

for _package in ("langchain_core", "agents", "pydantic_ai"):
    pytest.importorskip(_package, reason=EXTRA)

DOC = Path(__file__).resolve().parents[2] / "docs" / "formats" / "kit.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def _promised(code: str) -> str:
    lines = code.rstrip("\n").splitlines()
    promised: list[str] = []
    while lines and lines[-1].startswith("# "):
        promised.insert(0, lines.pop()[2:])
    return "\n".join(promised) + "\n"


def test_the_page_holds_its_examples() -> None:
    """Two for langchain-core, three for the Agents SDK, two for pydantic-ai, one fork."""
    assert len(BLOCKS) == 8
    assert all(_promised(code).strip() for code in BLOCKS)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_the_example_prints_what_the_page_says(index: int) -> None:
    code = BLOCKS[index]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, f"{DOC}:block{index}", "exec"), {"__name__": "kit_example"})
    assert output.getvalue() == _promised(code)
