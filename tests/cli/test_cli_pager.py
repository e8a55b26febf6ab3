"""`show` on a terminal pages as git does: TURNFORK_PAGER, PAGER or less, LESS=FRX; never when
stdout is not a terminal, nor with --no-pager."""

from __future__ import annotations

import fcntl
import os
import pty
import shlex
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from _cli_helpers import CUT_MARKER, FORK_PARENT, OPEN_LOG, REPO, run_cli, turn_lines, write_lines

from turnfork.shell.cli.terminal import pager_command

COLUMNS = 117


def _on_terminal(*args: str | Path, **env: str) -> tuple[int, str, str]:
    """``turnfork ARGS`` with stdout on a pseudo-terminal COLUMNS wide; what it showed there."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, COLUMNS, 0, 0))
    child_env = {k: v for k, v in os.environ.items()
                 if k not in {"NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "PAGER",
                              "TURNFORK_PAGER", "LESS"}}
    child_env.update({"PYTHONIOENCODING": "utf-8", "TERM": "xterm-256color", **env})
    child = subprocess.Popen([sys.executable, "-m", "turnfork", *map(str, args)], cwd=REPO,
                             env=child_env, stdin=subprocess.DEVNULL, stdout=terminal,
                             stderr=subprocess.PIPE)
    os.close(terminal)
    shown = bytearray()
    while True:
        try:
            data = os.read(controller, 1 << 16)
        except OSError:  # EIO: every writer of the terminal has gone
            break
        if not data:
            break
        shown += data
    os.close(controller)
    assert child.stderr is not None
    err = child.stderr.read().decode()
    child.stderr.close()
    return child.wait(timeout=60), shown.decode(), err


def _recording_pager(tmp_path: Path) -> tuple[str, Path, Path]:
    """A pager that keeps what it is given, and the LESS it was started with."""
    out, env = tmp_path / "paged.txt", tmp_path / "less.txt"
    return (f"cat > {shlex.quote(str(out))}; printf %s \"$LESS\" > {shlex.quote(str(env))}",
            out, env)


def test_a_terminal_gets_the_pager_with_less_frx(tmp_path: Path) -> None:
    """TURNFORK_PAGER gets the whole picture, coloured, as wide as the terminal; LESS=FRX."""
    pager, out, env = _recording_pager(tmp_path)
    code, shown, err = _on_terminal("show", OPEN_LOG, TURNFORK_PAGER=pager)
    assert (code, shown, err) == (0, "", "")
    paged = out.read_text()
    assert CUT_MARKER in paged and "\x1b[" in paged
    rule = next(line for line in paged.splitlines() if CUT_MARKER in line)
    assert len(_plain(rule)) == COLUMNS
    assert env.read_text() == "FRX"


def test_turnfork_pager_wins_over_pager_and_less_is_kept(tmp_path: Path) -> None:
    """PAGER is used without TURNFORK_PAGER; a LESS already set is left as it is."""
    pager, out, env = _recording_pager(tmp_path)
    code, _, _ = _on_terminal("show", FORK_PARENT, PAGER=pager, LESS="-S")
    assert code == 0 and CUT_MARKER in out.read_text() and env.read_text() == "-S"
    out.unlink()
    code, shown, _ = _on_terminal("show", FORK_PARENT, PAGER=pager, TURNFORK_PAGER="cat")
    assert code == 0 and not out.exists() and CUT_MARKER in shown  # cat: no pager


def test_no_pager_and_no_terminal_mean_no_pager(tmp_path: Path) -> None:
    """--no-pager on a terminal, or stdout a pipe: the pager is never started."""
    pager, out, _ = _recording_pager(tmp_path)
    code, shown, _ = _on_terminal("show", "--no-pager", FORK_PARENT, TURNFORK_PAGER=pager)
    assert code == 0 and CUT_MARKER in shown and not out.exists()
    piped = run_cli("show", FORK_PARENT, TURNFORK_PAGER=pager)
    assert piped.code == 0 and CUT_MARKER in piped.stdout and not out.exists()


def test_quitting_the_pager_early_is_not_an_error(tmp_path: Path) -> None:
    """A pager that stops reading after a few bytes: exit 0, nothing on stderr."""
    lines: list[str] = []
    for turn in range(1, 801):
        lines += turn_lines(len(lines), turn, f"c{turn}")
    big = write_lines(tmp_path / "big.jsonl", lines)
    code, _, err = _on_terminal("show", "--all", big, TURNFORK_PAGER="head -c 100 >/dev/null")
    assert (code, err) == (0, "")


def test_a_pager_that_is_not_installed_is_not_used(tmp_path: Path) -> None:
    """TURNFORK_PAGER naming no program: the output goes straight to the terminal."""
    code, shown, err = _on_terminal("show", FORK_PARENT,
                                    TURNFORK_PAGER="no-such-pager-here --flag")
    assert (code, err) == (0, "") and CUT_MARKER in shown


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, "less"), ({"PAGER": "more"}, "more"), ({"PAGER": "more", "TURNFORK_PAGER": "less -S"},
                                                 "less -S"),
    ({"PAGER": ""}, None), ({"TURNFORK_PAGER": "cat"}, None), ({"TURNFORK_PAGER": "  "}, None),
    ({"PAGER": "'unterminated"}, None),
])
def test_which_pager(environ: dict[str, str], expected: str | None) -> None:
    """TURNFORK_PAGER, then PAGER, then less; empty, cat or not installed means none."""
    if expected is not None and not _installed(expected.split()[0]):
        expected = None
    assert pager_command(environ) == expected


def _installed(program: str) -> bool:
    return any(os.access(os.path.join(d, program), os.X_OK)
               for d in os.environ.get("PATH", "").split(os.pathsep))


def _plain(line: str) -> str:
    import re

    return re.sub("\x1b\\[[0-9;]*m", "", line).rstrip("\r")
