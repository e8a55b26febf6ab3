"""Every Python example of docs/ray.md runs as written (each in a process of its own, which
starts its own local cluster) and prints what its last comment promises; an example that
cannot run here says why, in an HTML comment right before it: ``<!-- no-run: reason -->``."""

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
_BLOCK = re.compile(r"(<!-- no-run: (?P<reason>[^>]+?) -->\n)?```python\n(?P<code>.*?)```",
                    re.DOTALL)
_PROMISE = re.compile(r"^print\(.*\)\s+# (?P<output>.+)$", re.MULTILINE)


def _examples() -> list[tuple[str, str | None]]:
    """``(code, reason it does not run)`` of every Python block, in order."""
    return [(match["code"], match["reason"])
            for match in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))]


def _runnable() -> list[str]:
    return [code for code, reason in _examples() if reason is None]


def test_every_example_runs_or_says_why_not() -> None:
    """At least the two examples that start a cluster run; every other one gives a reason."""
    examples = _examples()
    assert len(_runnable()) >= 2
    assert all(reason is None or reason.strip() for _, reason in examples)


@pytest.mark.slow
@pytest.mark.parametrize("number", range(len(_runnable())))
def test_the_example_runs(number: int) -> None:
    """The example runs in a fresh process, exits 0 and prints what its comment promises."""
    code = _runnable()[number]
    problem = isolation_problem()
    if problem is not None:
        pytest.fail(problem)
    promised = _PROMISE.search(code)
    assert promised is not None, "an example that runs ends with print(...)  # its output"
    directory = Path(tempfile.mkdtemp(prefix="tf-ray-"))
    try:
        script = directory / "example.py"
        script.write_text(code, encoding="utf-8")
        environment = {**os.environ, **worker_environment(directory / "home"),
                       "RAY_TMPDIR": str(directory)}
        done = subprocess.run([sys.executable, str(script)], cwd=directory, env=environment,
                              capture_output=True, text=True, timeout=240, check=False)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == promised["output"] + "\n"
