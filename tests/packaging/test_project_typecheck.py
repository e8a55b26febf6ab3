"""The project's own `mypy --strict` (`.ci/typecheck`, which CI runs) checks turnfork as it
installs and reports an error at its place in the checkout, with a failing exit status: a type
error in `shell/` cannot pass unseen because an editable install is invisible to mypy."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from _packaging import run

pytestmark = pytest.mark.slow

MISTAKE = 'WRONG: int = "not an int"\n'


def test_a_type_error_in_shell_fails_the_check_at_its_checkout_path(
        checkout: Path, tmp_path: Path) -> None:
    """A mistake added to a copy of the clone: exit 1, the error at `shell/...:line`."""
    copy = tmp_path / "checkout"
    run(["git", "clone", "-q", checkout, copy], cwd=tmp_path)
    module = copy / "shell" / "cli" / "__init__.py"
    line = module.read_text(encoding="utf-8").count("\n") + 1
    with module.open("a", encoding="utf-8") as file:
        file.write(MISTAKE)
    done = run(["bash", ".ci/typecheck"], cwd=copy, check=False,
               env={"PYTHON": sys.executable})
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert re.search(rf"^shell/cli/__init__\.py:{line}: error: Incompatible types in assignment",
                     output, re.MULTILINE), output
    assert "build/typecheck" not in output
    assert re.search(r"Found 1 error in 1 file \(checked \d+ source files\)", output), output
