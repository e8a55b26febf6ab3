"""The examples of docs/formats/adapters.md run as written and print what their comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from _capture import EXTRA

pytest.importorskip("pydantic_ai", reason=EXTRA)
pytest.importorskip("agents", reason=EXTRA)

DOC = Path(__file__).resolve().parents[2] / "docs" / "formats" / "adapters.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def _promised(code: str) -> str:
    """The output the block's trailing comment lines promise."""
    lines = code.rstrip("\n").splitlines()
    promised: list[str] = []
    while lines and lines[-1].startswith("# "):
        promised.insert(0, lines.pop()[2:])
    return "\n".join(promised) + "\n"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_the_example_runs(index: int) -> None:
    code = BLOCKS[index]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, str(DOC), "exec"), {"__name__": "docs_example"})
    assert output.getvalue() == _promised(code)


def test_the_page_holds_both_examples() -> None:
    assert len(BLOCKS) == 2
