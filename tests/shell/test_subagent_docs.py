"""The documented subagent example runs as written and prints what its comment promises."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "api-shell-subagents.md"


def _fork_example() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Fork in Python", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the Fork in Python section has no python block"
    return match.group(1)


def test_fork_in_python_example_runs() -> None:
    """The example forks a child that answers from the parent's completed turn."""
    code = _fork_example()
    assert len(code.splitlines()) <= 20
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, str(DOC), "exec"), {"__name__": "docs_example"})
    assert output.getvalue() == "completed: BLUE\n"
    assert "# completed: BLUE" in code
