"""The README's two commands are a promise; CI runs the second one verbatim."""

from __future__ import annotations

import re
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
