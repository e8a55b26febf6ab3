"""Bounded input, the command line's side (issue 14, item 3): whatever the reader meets, the user
gets one error line and exit 2, never a MemoryError traceback."""

from __future__ import annotations

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


@pytest.mark.parametrize("command", ["check", "seed", "show"])
def test_running_out_of_memory_is_one_line(command: str, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A MemoryError while reading: `turnfork: error: PATH: out of memory…`, exit 2."""
    def exhausted(path: object) -> object:
        raise MemoryError

    monkeypatch.setattr(inputs, "read_log", exhausted)
    assert main([command, str(FORK_PARENT)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"turnfork: error: {FORK_PARENT}: out of memory: the input is "
                            "larger than this machine can hold\n")


@pytest.mark.slow
def test_a_zstd_bomb_in_bounded_memory(tmp_path: Path) -> None:
    """`check bomb.jsonl.zstd` with 1.5 GiB of address space: one line, exit 2, no traceback."""
    bomb = _zstd_bomb(tmp_path / "session.jsonl.zstd")
    assert bomb.stat().st_size < 135_000
    done = subprocess.run([sys.executable, "-m", "turnfork", "check", str(bomb)], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False,
                          preexec_fn=_limit_memory)
    assert done.returncode == 2, done
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"turnfork: error: {bomb}: ") and done.stderr.count("\n") == 1
