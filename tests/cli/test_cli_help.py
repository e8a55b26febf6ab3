"""The command line's conventions: --help everywhere, --version, usage errors, entry points."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from _cli_helpers import run_cli

import turnfork
from turnfork.shell.cli import COMMANDS, main


def test_top_level_help_lists_every_command() -> None:
    """`turnfork --help` exits 0 on stdout and lists every command and the exit codes."""
    run = run_cli("--help")
    assert run.code == 0
    assert run.stdout.startswith("usage: turnfork ")
    for command in COMMANDS:
        assert f"    {command.name} " in run.stdout
    assert "exit status:" in run.stdout


@pytest.mark.parametrize("name", [command.name for command in COMMANDS])
def test_every_subcommand_has_help(name: str) -> None:
    """`turnfork COMMAND --help` exits 0 and documents PATH and the exit status."""
    run = run_cli(name, "--help")
    assert run.code == 0
    assert run.stdout.startswith(f"usage: turnfork {name} ")
    assert "PATH" in run.stdout and "exit status:" in run.stdout


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """--version prints the installed version and exits 0."""
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"turnfork {turnfork.__version__}\n"
    assert turnfork.__version__ == metadata.version("turnfork")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """No command, an unknown command or a missing PATH: usage on stderr, exit 2."""
    run = run_cli()
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.startswith("usage: turnfork")
    assert "error: the following arguments are required: COMMAND" in run.stderr
    for args in (["frobnicate"], ["check"]):
        assert main(args) == 2, args
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith("usage: turnfork")
        assert "error:" in captured.err


def test_console_script_is_installed() -> None:
    """The `turnfork` console script and `python -m turnfork` both run main()."""
    script = Path(sys.executable).with_name("turnfork")
    for command in ([str(script)], [sys.executable, "-m", "turnfork"]):
        done = subprocess.run([*command, "--version"], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"turnfork {turnfork.__version__}\n"


def test_help_documents_open_and_invalid_apart(capsys: pytest.CaptureFixture[str]) -> None:
    """The epilogs give open and invalid their own statuses: check 1 open, 3 invalid."""
    assert main(["--help"]) == 0
    top = " ".join(capsys.readouterr().out.split())
    assert "1 the log is open (check)" in top and "3 the log is invalid" in top
    assert main(["check", "--help"]) == 0
    check = " ".join(capsys.readouterr().out.split())
    assert "0 valid and closed; 1 valid but open" in check
    assert "2 unreadable input; 3 invalid" in check
