"""The continuable example of docs/api-shell-subagents.md runs as written and prints what its
comment promises."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "api-shell-subagents.md"


def test_continuable_example_runs() -> None:
    """Ensures the example starts a child, is told it settled, resumes it with a follow-up."""
    section = DOC.read_text(encoding="utf-8").split("## Continuable children", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the continuable section has no python block"
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(match.group(1), str(DOC), "exec"), {"__name__": "docs_example"})
    printed = output.getvalue()
    assert re.fullmatch(r"Background subagent \S+ finished and will do no further work unless "
                        r"you send it more\.\n", printed), printed
