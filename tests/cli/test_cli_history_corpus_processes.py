"""The whole broken-history corpus through real `turnfork check --json` processes, one per
fixture (a slow family: 25 interpreter starts; the default run checks every fixture through
`main` and one per format as a process, in test_cli_history_corpus.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _cli_helpers import (
    BROKEN_HISTORIES,
    REPO,
    Run,
    assert_check_names_the_defect,
    history_file,
    load_fixture,
)

pytestmark = pytest.mark.slow


def test_every_fixture_through_a_process(tmp_path: Path) -> None:
    """Each fixture's `check --json` process names its defect, its cut and its exit status."""
    assert len(BROKEN_HISTORIES) >= 20
    fixtures = [load_fixture(path) for path in BROKEN_HISTORIES]
    inputs = [history_file(tmp_path, fixture, f"{path.stem}.json")
              for path, fixture in zip(BROKEN_HISTORIES, fixtures, strict=True)]
    running = [subprocess.Popen([sys.executable, "-m", "turnfork", "check", "--json", str(p)],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, encoding="utf-8") for p in inputs]
    for path, fixture, process in zip(BROKEN_HISTORIES, fixtures, running, strict=True):
        out, err = process.communicate(timeout=120)
        try:
            assert_check_names_the_defect(fixture, Run(process.returncode, out, err))
        except AssertionError as failed:
            raise AssertionError(f"{path.name}: {failed}") from failed
