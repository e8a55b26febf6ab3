"""The `$ turnfork …` examples in docs/cli.md and README.md are run and must print what the page
shows (so the README's picture of the cut is the real command's output)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from _cli_helpers import REPO

from turnfork.shell.cli import main

DOC = REPO / "docs" / "cli.md"
README = REPO / "README.md"


def _examples(page: Path = DOC) -> list[tuple[str, list[str]]]:
    """(command line, expected output lines) for each fenced block starting with `$ turnfork`."""
    examples = []
    blocks = page.read_text(encoding="utf-8").split("```")
    for block in blocks[1::2]:
        lines = block.strip("\n").split("\n")
        if lines[0].startswith("$ turnfork "):
            examples.append((lines[0][2:], lines[1:]))
    return examples


EXAMPLES = _examples()
README_EXAMPLES = _examples(README)


def test_the_page_has_examples_of_every_command() -> None:
    """docs/cli.md shows demo, check, seed, show, export and an error."""
    commands = {shlex.split(line)[1] for line, _ in EXAMPLES}
    assert commands == {"demo", "check", "seed", "show", "export"}
    assert any(out[0].startswith("turnfork: error: ") for _, out in EXAMPLES)


def test_the_readme_draws_the_cut_of_a_parent_and_its_child() -> None:
    """README.md shows the cut with the real command: a parent in flight and its fork child."""
    assert [shlex.split(line)[1:3] for line, _ in README_EXAMPLES] == [
        ["show", "--all"], ["show", "tests/fixtures/dsh/examples__acp-agent__tests__snapshots__"
                                    "subagent-fork-in-process__session.1.jsonl"]]


@pytest.mark.parametrize(("command", "expected"), EXAMPLES + README_EXAMPLES,
                         ids=[c for c, _ in EXAMPLES + README_EXAMPLES])
def test_example_output_matches(command: str, expected: list[str], tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """Running the example (100 columns, from a scratch directory) prints the shown text."""
    (tmp_path / "tests").symlink_to(REPO / "tests")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("NO_COLOR", raising=False)
    main(shlex.split(command)[1:])
    captured = capsys.readouterr()
    printed = (captured.out + captured.err).rstrip("\n").split("\n")
    assert [line.rstrip() for line in printed] == [line.rstrip() for line in expected]
