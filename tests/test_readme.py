"""The README's two commands are a promise; CI runs the second one verbatim."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_readme_has_exactly_two_commands() -> None:
    """One command runs the demo, the other runs the tests."""
    commands = _readme_commands()
    assert len(commands) == 2
    assert commands[0].endswith("turnfork demo")
    assert commands[1].endswith("python -m pytest")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    """`.ci/run` holds the README's test command character for character."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    declared = re.search(r'^TEST_COMMAND="(.+)"$', ci, re.MULTILINE)
    assert declared is not None
    assert declared.group(1) == _readme_commands()[1]


def test_the_test_command_ends_with_its_summary_and_names_what_it_left_to_ci() -> None:
    """pytest as the README's command runs it (the project's `-q` settings): the last line is
    the pass summary, and above it the run names the slow tests it deselected, by family, the
    modules it skipped for want of an extra, and `bash .ci/run`."""
    ray_missing = importlib.util.find_spec("ray.actor") is None
    selection = ["tests/test_readme.py::test_readme_has_exactly_two_commands",
                 "tests/packaging/test_wheel_install.py", "tests/ray/test_ray_seed.py"]
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *selection],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
                          env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.rstrip().splitlines()
    summary = re.fullmatch(r"1 passed, (?:\d+ skipped, )?(\d+) deselected in [\d.]+s(?: \(.*\))?",
                           lines[-1])
    assert summary is not None, done.stdout
    slow = int(summary.group(1))
    assert slow >= 4, done.stdout
    assert f"{slow} slow tests deselected by -m 'not slow': tests/packaging {slow}" in lines
    assert ("tests/ray: 1 module skipped (the Ray tests need the ray extra; pip install -e "
            "'.[ray]')" in lines) == ray_missing, done.stdout
    assert lines[-2].startswith("bash .ci/run runs all of them"), done.stdout
