"""What a demanding user at a terminal and in scripts found: each test failed before its fix.

Run in child processes, since what is under test is the process's own stdout and stderr: a
disk that is full (``/dev/full``), a descriptor the shell closed (``>&-``, ``2>&-``).
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_helpers import OPEN_LOG, REPO, event, turn_lines, write_lines

from turnfork.shell.cli import outputs

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


@pytest.mark.parametrize("content", [b"", b"\n\n"], ids=["0-byte", "blank-lines"])
def test_an_empty_log_is_not_said_to_end_with_turn_end(tmp_path: Path, content: bytes) -> None:
    """A log with no events has no turn/end to end with: ``seed`` and ``show`` said it did."""
    log = tmp_path / "empty.jsonl"
    log.write_bytes(content)
    seeded = _run(["seed", str(log)])
    shown = _run(["show", str(log)])
    for done in (seeded, shown):
        said = (done.stdout + done.stderr).decode()
        assert done.returncode == 0, said
        assert "the log ends with turn/end" not in said, said
        assert "excluded: nothing (the log holds no events)" in said, said


def test_an_empty_history_is_not_said_to_end_at_a_completed_turn(tmp_path: Path) -> None:
    """``[]`` read as a history: nothing is excluded because there is nothing."""
    history = tmp_path / "empty.json"
    history.write_text("[]\n")
    done = _run(["seed", "--format", "openai-chat", str(history)])
    said = done.stderr.decode()
    assert done.returncode == 0, said
    assert "excluded: nothing (the history holds no items)" in said, said


def test_a_seed_record_whose_size_ends_inside_a_line_says_so(tmp_path: Path) -> None:
    """A fork child's seed record names the first ``size`` bytes of ``seed-0.jsonl``; a size
    that ends inside a record was msgspec's "Input data was truncated", of a file that is
    whole."""
    assert _run(["demo", "--save", str(tmp_path / "saved")]).returncode == 0
    child = tmp_path / "saved" / "_no-cwd" / "demo-23"
    session = child / "session.jsonl"
    head, record, *rest = session.read_bytes().split(b"\n", 2)
    fields = json.loads(record)
    seed = (child / "seed-0.jsonl").read_bytes()
    size = seed.index(b"\n", seed.index(b"\n") + 1) - 10  # inside line 2
    fields["size"] = size
    session.write_bytes(b"\n".join([head, json.dumps(fields).encode(), *rest]))
    done = _run(["check", str(child)])
    stderr = done.stderr.decode()
    assert done.returncode == 2
    assert stderr == (
        f"turnfork: error: {child / 'seed-0.jsonl'}:2: the seed record ({session}:2) names "
        f"the first {size:,} bytes of seed-0.jsonl, which end inside this line: the record "
        "does not fit the file\n"), stderr


_RAW_CONTROLS = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_HOSTILE = "a\u202egnp.exe \x9b31m \u2028 \x7f \u2066 end"


def _on_a_terminal(args: list[str]) -> tuple[int, str]:
    """``python -m turnfork ARGS`` with stdout on a pseudo-terminal: its status and what the
    terminal got (stderr is kept apart)."""
    main, secondary = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "turnfork", *args], cwd=REPO,
                               stdout=secondary, stderr=subprocess.PIPE,
                               env={**os.environ, "TURNFORK_PAGER": "cat", "NO_COLOR": "1"})
    os.close(secondary)
    received = bytearray()
    while True:
        try:
            piece = os.read(main, 65536)
        except OSError:  # the terminal's last writer closed it
            break
        if not piece:
            break
        received += piece
    os.close(main)
    process.communicate(timeout=60)
    return process.returncode, received.decode("utf-8").replace("\r\n", "\n")


def test_a_seed_shown_on_a_terminal_holds_no_raw_control(tmp_path: Path) -> None:
    """``turnfork seed LOG`` on a terminal printed a log's bidi and C1 controls raw (JSON
    leaves them unescaped): U+202E reversed the text after it. On a terminal they are
    ``\\uNNNN`` escapes, the same JSON values."""
    lines = [event("turn/start", 0, {"turn": 1}),
             event("turn/end", 1, {"turn": 1, "reason": {"kind": "error", "error": {
                 "code": "AUTH", "message": _HOSTILE}}})]
    log = write_lines(tmp_path / "log.jsonl", lines)
    history = tmp_path / "history.json"
    history.write_text(json.dumps([{"role": "user", "content": _HOSTILE},
                                   {"role": "assistant", "content": _HOSTILE}]))
    for args, read in ((["seed", str(log)], _jsonl), (["seed", "--format", "openai-chat",
                                                     str(history)], json.loads)):
        code, shown = _on_a_terminal(args)
        assert code == 0, shown
        assert _RAW_CONTROLS.search(shown) is None, repr(shown)
        assert _HOSTILE in json.dumps(read(shown), ensure_ascii=False)
    piped = _run(["seed", str(log)]).stdout.decode()
    assert _HOSTILE in piped  # a file or a pipe gets the seed as it is


def _jsonl(text: str) -> list[object]:
    return [json.loads(line) for line in text.splitlines()]


class _Terminal(io.BytesIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("piece", [1, 2, 3, 5])
def test_the_terminals_escapes_hold_across_pieces(monkeypatch: pytest.MonkeyPatch,
                                                  piece: int) -> None:
    """The spool is copied a piece at a time: a character cut by a piece's end is still
    escaped whole, and every other character passes as it was."""
    monkeypatch.setattr(outputs, "_COPY", piece)
    text = json.dumps({"t": "é\u202e漢\x9b😀\u2069\x7f.\u00a0"}, ensure_ascii=False) + "\n"
    sink = outputs.open_sink(None)
    sink.write(text.encode())
    out = _Terminal()
    sink._handle.seek(0)  # what commit does, into a terminal of our own
    sink._copy(out)  # type: ignore[attr-defined]
    sink.abort()
    shown = out.getvalue().decode("utf-8")
    assert shown == '{"t": "é\\u202e漢\\u009b😀\\u2069\\u007f.\u00a0"}\n'
    assert json.loads(shown) == json.loads(text)


def test_a_summary_shows_the_broken_rule_mark_at_80_columns(tmp_path: Path) -> None:
    """The turn line said ``✗ breaks a rule at seq N`` last, after its steps and calls, and
    the line is cut at the width: at 80 columns (a pipe's default, a common terminal) the mark
    was cut off, and the turn listed for breaking a rule did not say so."""
    lines = [line for turn in range(1, 31) for line in turn_lines(6 * (turn - 1), turn, f"c{turn}")]
    lines[15 * 6 + 3] = lines[15 * 6 + 3].replace('"c16"', '"c-stray"')
    log = write_lines(tmp_path / "bad.jsonl", lines)
    for columns in ("80", "70"):
        done = subprocess.run([sys.executable, "-m", "turnfork", "show", "--plain", str(log)],
                              cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
                              env={**os.environ, "COLUMNS": columns})
        assert done.returncode == 3, done.stderr
        flagged = [line for line in done.stdout.splitlines() if line.startswith("Turn 16 ·")]
        assert len(flagged) == 1 and "✗ breaks a rule at seq 93" in flagged[0], flagged


@pytest.mark.parametrize("command", ["check", "show", "seed"])
def test_a_closed_stdin_for_dash_is_one_error_line(command: str) -> None:
    """``turnfork check - <&-``: Python starts with ``sys.stdin`` ``None``; reading it was an
    ``AttributeError`` traceback and exit 1 (open, to a script)."""
    done = _run([command, "-"], close=0)
    assert done.stderr.decode() == (
        "turnfork: error: <stdin>: stdin is closed: pipe or redirect a log into turnfork\n")
    assert (done.returncode, done.stdout) == (2, b"")


def test_export_to_a_name_ending_in_a_slash_makes_a_directory(tmp_path: Path) -> None:
    """``export LOG -o out/``: the slash says a directory, and ``Path`` drops it; a file named
    ``out`` was written (``seed -o out/`` refuses: not a directory)."""
    header = json.dumps({"type": "session", "version": 0, "id": "s1", "createdAt": 0,
                         "delegationDepth": 0})
    log = write_lines(tmp_path / "session.jsonl", [header, *turn_lines(0, 1, "c1")])
    out = tmp_path / "out"
    done = _run(["export", str(log), "-o", f"{out}/"])
    assert done.returncode == 0, done.stderr
    assert out.is_dir()
    assert _run(["check", str(out / "_no-cwd" / "s1" / "session.jsonl")]).returncode == 0
    existing = tmp_path / "file"
    existing.write_text("kept\n")
    refused = _run(["export", str(log), "-o", f"{existing}/"])
    assert refused.returncode == 2
    assert existing.read_text() == "kept\n"


@pytest.mark.parametrize("command", [["show", "--all"], ["show"], ["check"]])
def test_columns_0_still_draws_at_80(command: list[str]) -> None:
    """``COLUMNS=0`` (what ``$(tput cols)`` gives where there is no terminal) made rich draw
    at width 0: ``show`` printed nothing at all, and exited 0."""
    done = subprocess.run([sys.executable, "-m", "turnfork", *command, "--plain", str(OPEN_LOG)]
                          if command[0] == "show" else
                          [sys.executable, "-m", "turnfork", *command, str(OPEN_LOG)],
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "COLUMNS": "0"})
    assert done.returncode in (0, 1), done.stderr
    lines = done.stdout.splitlines()
    assert lines and "open: the log ends inside turn 11" in done.stdout
    if command[0] == "show":
        assert max(map(len, lines)) == 80


def test_a_huge_columns_is_drawn_at_most_10000_wide() -> None:
    """Rules are drawn across the whole width: ``COLUMNS=99999999`` wrote 100 MB of dashes
    per rule line, for minutes."""
    done = subprocess.run([sys.executable, "-m", "turnfork", "show", "--all", "--plain",
                           str(OPEN_LOG)], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False, env={**os.environ, "COLUMNS": "1000000"})
    assert done.returncode == 0, done.stderr
    assert max(map(len, done.stdout.splitlines())) == 10_000
