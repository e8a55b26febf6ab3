"""The Python examples of docs/ray.md that need a cluster run as written here, in CI's Ray step
(each in a process of its own, which starts its own local cluster, with no outside network)
and print what their last comment promises. The docs' own test (tests/docs/test_doc_blocks.py)
does not run them: each is marked ``<!-- not run: … tests/ray/test_ray_docs.py runs it … -->``
right before it; any other example says why it is not run at all."""

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
_BLOCK = re.compile(r"(<!-- not run: (?P<reason>[^>]+?) -->\n)?```python\n(?P<code>.*?)```",
                    re.DOTALL)
_RUN_HERE = "tests/ray/test_ray_docs.py runs it"
_PROMISE = re.compile(r"^print\(.*\)\s+# (?P<output>.+)$", re.MULTILINE)


def _examples() -> list[tuple[str, str | None]]:
    """``(code, reason it does not run)`` of every Python block, in order."""
    return [(match["code"], match["reason"])
            for match in _BLOCK.finditer(DOC.read_text(encoding="utf-8"))]


def _runnable() -> list[str]:
    return [code for code, reason in _examples() if reason is not None and _RUN_HERE in reason]


def test_every_example_is_run_somewhere_or_says_why_not() -> None:
    """Every example is marked not run by the docs' test, with a reason; at least the two that
    start a cluster are run here."""
    examples = _examples()
    assert len(_runnable()) >= 2
    assert all(reason is not None and reason.strip() for _, reason in examples)


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
