"""Bounded input end to end (issue 14, item 3): a zstd bomb, /dev/zero, a FIFO give one error line
and exit 2, in seconds and bounded memory; a MemoryError never reaches the user as a traceback.
(The limits are the shared reader's, shell/logfile.py; this is what the command line makes of
them.)"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard
from _cli_helpers import FORK_PARENT, REPO

from turnfork.shell.cli import inputs, main

#: The most address space the bomb's reader may use (the interpreter included).
MEMORY_LIMIT = 3 << 29


def _zstd_bomb(path: Path) -> Path:
    """131 KB of zstd frames that decompress to 4 GiB of zeros (63 frames of 64 MiB)."""
    frame = zstandard.ZstdCompressor(level=3).compress(b"\0" * (64 << 20))
    path.write_bytes(frame * 63)
    return path


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _check(path: Path | str) -> subprocess.CompletedProcess[str]:
    """``turnfork check PATH`` in a process with 1.5 GiB of address space and 60 s."""
    return subprocess.run([sys.executable, "-m", "turnfork", "check", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=False,
                          preexec_fn=_limit_memory)


def _one_line(done: subprocess.CompletedProcess[str], path: Path | str, words: str) -> None:
    assert done.returncode == 2, done
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"turnfork: error: {path}: ") and done.stderr.count("\n") == 1
    assert words in done.stderr, done.stderr


@pytest.mark.parametrize("command", ["check", "seed", "show"])
def test_running_out_of_memory_is_one_line(command: str, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A MemoryError while reading: `turnfork: error: PATH: out of memory…`, exit 2."""
    def exhausted(*args: object, **kwargs: object) -> object:
        raise MemoryError

    monkeypatch.setattr(inputs, "open_log", exhausted)
    assert main([command, str(FORK_PARENT)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"turnfork: error: {FORK_PARENT}: out of memory: the input is "
                            "larger than this machine can hold\n")


@pytest.mark.slow
def test_a_zstd_bomb_is_refused_at_a_limit_in_bounded_memory(tmp_path: Path) -> None:
    """131 KB that would decompress to 4 GiB: refused at a read limit, within 1.5 GiB."""
    bomb = _zstd_bomb(tmp_path / "session.jsonl.zstd")
    assert bomb.stat().st_size < 135_000
    done = _check(bomb)
    _one_line(done, bomb, "read limit")
    assert "out of memory" not in done.stderr  # the limit, not the machine, stopped it


def test_a_device_is_refused_without_reading_it() -> None:
    """`check /dev/zero`: refused from its file type, at once."""
    _one_line(_check("/dev/zero"), "/dev/zero", "character device")


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    """`check FIFO` with no writer: refused, not waited on."""
    fifo = tmp_path / "session.jsonl"
    os.mkfifo(fifo)
    _one_line(_check(fifo), fifo, "FIFO")
