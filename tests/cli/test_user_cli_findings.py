"""What a demanding user at a terminal and in scripts found: each test failed before its fix.

Run in child processes, since what is under test is the process's own stdout and stderr: a
disk that is full (``/dev/full``), a descriptor the shell closed (``>&-``, ``2>&-``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_helpers import OPEN_LOG, REPO

HISTORY = REPO / "tests" / "cli" / "histories" / "chat-parent-delegating.json"


def _run(args: list[str], *, stdout: int | None = subprocess.PIPE,
         close: int | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python -m turnfork ARGS``, stdout where given; ``close``: a descriptor the child
    starts without (as the shell's ``>&-`` leaves it)."""
    def closing() -> None:
        if close is not None:
            os.close(close)

    return subprocess.run([sys.executable, "-m", "turnfork", *args], cwd=REPO,
                          stdout=stdout, stderr=subprocess.PIPE if close != 2 else None,
                          preexec_fn=closing, timeout=60, check=False)


@pytest.mark.parametrize("args", [
    ["check", str(OPEN_LOG)],
    ["check", "--json", str(OPEN_LOG)],
    ["show", str(OPEN_LOG)],
    ["show", "--all", "--no-pager", str(OPEN_LOG)],
    ["check", str(HISTORY)],
    ["--help"],
], ids=["check", "check-json", "show", "show-all", "check-history", "help"])
def test_a_full_disk_on_stdout_is_one_error_line_and_exit_2(args: list[str]) -> None:
    """``turnfork check LOG > report`` on a full disk: exit 1 would tell a script the log is
    open, and a traceback is no answer; the report was not written, which one line says."""
    with open("/dev/full", "wb") as full:  # Linux: every write fails with ENOSPC
        done = _run(args, stdout=full.fileno())
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr, stderr
    assert stderr.splitlines() == ["turnfork: error: stdout: cannot write: No space left on "
                                   "device"], stderr
    assert done.returncode == 2


def test_a_closed_stderr_never_puts_the_report_into_the_seed(tmp_path: Path) -> None:
    """``turnfork seed LOG 2>&- > seed.jsonl``: with no stderr, Python's ``print(file=None)``
    writes to stdout, so the report lines ended up after the seed's events in the file."""
    seed = tmp_path / "seed.jsonl"
    with seed.open("wb") as out:
        done = _run(["seed", str(OPEN_LOG)], stdout=out.fileno(), close=2)
    assert done.returncode == 0
    expected = _run(["seed", str(OPEN_LOG)]).stdout
    assert seed.read_bytes() == expected
    assert b"seed: " not in seed.read_bytes()


@pytest.mark.parametrize("args", [["check", str(OPEN_LOG)], ["show", str(OPEN_LOG)],
                                  ["seed", str(OPEN_LOG)]], ids=["check", "show", "seed"])
def test_a_closed_stdout_is_one_error_line_and_exit_2(args: list[str]) -> None:
    """``turnfork check LOG >&-``: Python starts with ``sys.stdout`` ``None``, and writing
    to it was an ``AttributeError`` traceback and exit 1 (open, to a script)."""
    done = _run(args, close=1)
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr, stderr
    assert len(stderr.splitlines()) == 1 and stderr.startswith(
        "turnfork: error: stdout: cannot write: "), stderr
    assert done.returncode == 2

