"""`-` reads the log from stdin (plain or zstd, bounded) for check, show and seed."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from collections.abc import Callable

import pytest
from _cli_helpers import FORK_PARENT, OPEN_LOG, REPO, Run, session_zstd, turn_lines

from turnfork.core import decode_log
from turnfork.shell.cli import main
from turnfork.shell.cli.inputs import STDIN_LIMIT, STDIN_NAME, read_input
from turnfork.shell.logfile import DEFAULT_LIMITS, LogReadError


def _piped(data: bytes, *args: str) -> Run:
    """``turnfork ARGS`` with ``data`` on a real pipe to its stdin."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-m", "turnfork", *args], input=data, cwd=REPO,
                          env=env, capture_output=True, timeout=60, check=False)
    return Run(done.returncode, done.stdout.decode(), done.stderr.decode())


@pytest.fixture
def fed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        ) -> Callable[..., Run]:
    """``turnfork ARGS`` in this process with the given bytes on stdin."""
    def run(data: bytes, *args: str) -> Run:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        monkeypatch.setenv("COLUMNS", "100")
        code = main(list(args))
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)
    return run


def test_check_reads_a_pipe_like_the_file() -> None:
    """`check -` on a pipe: the verdict of the file, the input named <stdin>, exit status 1."""
    run = _piped(OPEN_LOG.read_bytes(), "check", "-")
    assert run.code == 1, run
    lines = run.stdout.splitlines()
    assert lines[0].startswith("<stdin>: open: the log ends inside turn 11 step 1")
    assert lines[1] == "  input: JSONL event log; 239 events"


def test_zstd_on_stdin(fed: Callable[..., Run]) -> None:
    """A DSH session.jsonl.zstd piped in is recognised by its content."""
    run = fed(session_zstd(FORK_PARENT), "check", "--json", "-")
    assert run.code == 0, run
    report = run.json()
    assert (report["path"], report["file"], report["format"]) == ("-", STDIN_NAME,
                                                                  "session-jsonl-zstd")
    assert (report["events"], report["closed"]) == (200, True)


def test_seed_and_show_read_stdin(fed: Callable[..., Run]) -> None:
    """`seed -` writes the prefix of what came in; `show -` summarises it."""
    seeded = _piped(OPEN_LOG.read_bytes(), "seed", "-")
    assert seeded.code == 0, seeded
    assert len(decode_log(seeded.stdout.encode()).unwrap()) == 232
    shown = fed(OPEN_LOG.read_bytes(), "show", "-")
    assert shown.code == 0
    assert "<stdin> · JSONL event log · 239 events" in shown.stdout


def test_errors_on_stdin_name_it_and_the_line(fed: Callable[..., Run]) -> None:
    """A broken line on stdin: `<stdin>:LINE: …`, exit 2, one line."""
    lines = turn_lines(0, 1, "c1")
    data = ("\n".join(lines[:2]) + "\n{not json\n" + lines[2] + "\n").encode()
    run = fed(data, "check", "-")
    assert run.code == 2
    assert run.stderr.startswith("turnfork: error: <stdin>:3: ")
    assert run.stderr.count("\n") == 1


def test_a_device_on_stdin_is_refused_at_once() -> None:
    """`check - < /dev/zero`: refused before a byte is read, exit 2, one line."""
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run([sys.executable, "-m", "turnfork", "check", "-"], stdin=zero,
                              cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr == "turnfork: error: <stdin>: stdin is a device, not a log\n"


def test_a_terminal_on_stdin_is_refused_at_once() -> None:
    """`check -` typed at a terminal would wait for ever: it says what to do instead."""
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "turnfork", "check", "-"], stdin=terminal,
                              cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    finally:
        os.close(controller)
        os.close(terminal)
    assert done.returncode == 2
    assert done.stderr == ("turnfork: error: <stdin>: stdin is a terminal: pipe or redirect a "
                           "log into turnfork\n")


def test_stdin_is_read_up_to_its_limit() -> None:
    """More than the limit on stdin: refused with the limit named; at the limit: read."""
    data = OPEN_LOG.read_bytes()
    refused = read_input("-", stdin=io.BytesIO(data), limit=len(data) - 1)
    assert isinstance(refused, LogReadError)
    assert refused.message == (f"<stdin>: stdin holds more than the read limit of "
                               f"{len(data) - 1:,} bytes (ReadLimits.max_bytes)")
    read = read_input("-", stdin=io.BytesIO(data), limit=len(data))
    assert not isinstance(read, LogReadError)
    assert (read.path, read.file, len(read.events)) == (STDIN_NAME, STDIN_NAME, 239)


@pytest.mark.parametrize("limit", [1 << 10, 3 << 20])
def test_an_endless_stream_stops_at_the_limit(limit: int) -> None:
    """A stream that never ends (a pipe from /dev/zero) is cut at the limit, the reader's own."""
    refused = read_input("-", stdin=_Endless(), limit=limit)
    assert isinstance(refused, LogReadError)
    assert f"more than the read limit of {limit:,} bytes" in refused.problem
    assert STDIN_LIMIT == DEFAULT_LIMITS.max_bytes == 1 << 30


class _Endless(io.RawIOBase):
    """A stream of zeros that never ends (a pipe from /dev/zero), read without a file."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer)
        view[:] = b"\0" * len(view)
        return len(view)


class _Failing(io.RawIOBase):
    """A stdin whose read fails (EIO from a terminal that went away, say)."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        raise OSError(5, "Input/output error")


def test_a_failing_stdin_is_one_error() -> None:
    """A read error on stdin is a LogReadError naming it, not a traceback."""
    refused = read_input("-", stdin=_Failing())
    assert isinstance(refused, LogReadError)
    assert refused.message == "<stdin>: cannot read stdin: Input/output error"
