"""The example of docs/ray.md runs as written (its own local cluster, in a subprocess) and
prints what its comment promises."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_env import isolation_problem, worker_environment

DOC = Path(__file__).resolve().parents[2] / "docs" / "ray.md"


def _example() -> str:
    section = DOC.read_text(encoding="utf-8").split("## A fork on Ray", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the 'A fork on Ray' section has no python block"
    return match.group(1)


@pytest.mark.slow
def test_the_fork_on_ray_example_runs() -> None:
    """The example starts a local cluster, forks on it and prints `completed: BLUE`."""
    problem = isolation_problem()
    if problem is not None:
        pytest.fail(problem)
    code = _example()
    assert "# completed: BLUE" in code
    directory = Path(tempfile.mkdtemp(prefix="tf-ray-"))
    try:
        script = directory / "example.py"
        script.write_text(code, encoding="utf-8")
        environment = {**os.environ, **worker_environment(directory / "home"),
                       "RAY_TMPDIR": str(directory)}
        done = subprocess.run([sys.executable, str(script)], cwd=directory, env=environment,
                              capture_output=True, text=True, timeout=180, check=False)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "completed: BLUE\n"
