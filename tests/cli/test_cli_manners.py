"""Everyday manners of the command line (issue 22): a closed stdout, a zstd name, Ctrl-C in the
pager, how turns ended, an empty log, one way to write numbers, no trailing spaces.

Each test fails on the code before these fixes (cb407df), as its docstring says."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_helpers import FORK_PARENT, OPEN_LOG, REPO, event, run_cli, turn_lines, write_lines

from benchmarks.workloads import parent_log
from turnfork.core import decode_log
from turnfork.shell.cli import main, terminal


@pytest.fixture(scope="module")
def k1000(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DSH's K1000 shape: 1,000 completed turns and one in flight (23,009 events, 4 MB)."""
    path = tmp_path_factory.mktemp("k1000") / "K1000-parent.events.jsonl"
    path.write_bytes(parent_log(1000).jsonl)
    return path


def _into_a_closed_pipe(*args: str | os.PathLike[str],
                        stdin: Path | None = None) -> tuple[int, str]:
    """``turnfork ARGS`` with stdout a pipe whose reader has gone before anything is written
    (and stdin redirected from ``stdin``)."""
    read, write = os.pipe()
    os.close(read)
    try:
        with open(os.devnull if stdin is None else stdin, "rb") as source:
            done = subprocess.run([sys.executable, "-m", "turnfork", *map(str, args)],
                                  cwd=REPO, stdin=source, stdout=write, stderr=subprocess.PIPE,
                                  text=True, timeout=120, check=False)
    finally:
        os.close(write)
    return done.returncode, done.stderr


def test_seed_into_head_exits_141_and_claims_nothing(k1000: Path) -> None:
    """`turnfork seed LOG | head -c 100`: exit 141, no report of a seed written (before: exit 0
    and `seed: 23002 events … → stdout` after 65,536 of 4 MB were written)."""
    done = subprocess.run(f"{shlex.quote(sys.executable)} -m turnfork seed "
                          f"{shlex.quote(str(k1000))} | head -c 100 > /dev/null; "
                          "echo $PIPESTATUS >&2", shell=True, executable="/bin/bash",
                          cwd=REPO, stderr=subprocess.PIPE, text=True, timeout=120,
                          check=False)
    assert done.stderr.splitlines()[-1] == "141", done.stderr
    assert "seed:" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("args", [
    ("check", "{log}"), ("check", "--json", "{log}"), ("seed", "{log}"), ("show", "{log}"),
    ("show", "--all", "{log}"), ("show", "--json", "{log}"), ("export", "{session}", "-o", "-"),
    ("demo", "--plain"), ("--help",), ("show", "--all", "-"), ("seed", "-"),
], ids=" ".join)
def test_every_command_into_a_closed_pipe_exits_141(args: tuple[str, ...], k1000: Path) -> None:
    """Every command whose stdout has no reader: 141, nothing on stderr but nothing claimed;
    the log on stdin too (before, `show -` into a closed pipe ended in a traceback)."""
    filled = [arg.format(log=k1000, session=FORK_PARENT) for arg in args]
    code, err = _into_a_closed_pipe(*filled, stdin=k1000 if "-" in args else None)
    assert code == 141, err
    assert "Traceback" not in err
    assert not re.search(r"^(seed|exported)", err, re.MULTILINE), err


def test_export_zstd_refuses_a_name_that_does_not_say_zstd(tmp_path: Path) -> None:
    """`export --zstd -o x.jsonl`: refused, nothing written (before: zstd bytes written into a
    file its name calls plain JSONL, which turnfork then read as text)."""
    out = tmp_path / "x.jsonl"
    run = run_cli("export", FORK_PARENT, "--zstd", "-o", out)
    assert run.code == 2, run
    assert "--zstd writes zstd" in run.stderr and "x.jsonl.zstd" in run.stderr
    assert not out.exists()
    named = tmp_path / "x.jsonl.zstd"
    assert run_cli("export", FORK_PARENT, "--zstd", "-o", named).code == 0
    assert named.read_bytes().startswith(b"\x28\xb5\x2f\xfd")
    assert run_cli("check", named).code == 0


def test_seed_refuses_a_zstd_name(tmp_path: Path) -> None:
    """`seed -o x.jsonl.zstd` writes plain JSONL, which a `.zstd` name would misname."""
    out = tmp_path / "seed.jsonl.zstd"
    run = run_cli("seed", OPEN_LOG, "-o", out)
    assert run.code == 2 and "seed writes plain JSONL" in run.stderr
    assert not out.exists()


def test_ctrl_c_in_the_pager_says_the_document_was_cut(
        tmp_path: Path, k1000: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Interrupted while the pager is fed: the pager's document ends with a line that says it
    is cut there, and stderr says so too (before: the document just stopped)."""
    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("TURNFORK_PAGER", f"cat > {shlex.quote(str(paged))}")
    monkeypatch.setattr(terminal, "_isatty", lambda stream: stream is sys.stdout)
    from turnfork.shell.cli import render

    drawn = render.TreeStream.draw
    calls = []

    def interrupted(self: render.TreeStream, entries: list[object]) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        drawn(self, entries)  # type: ignore[arg-type]

    monkeypatch.setattr(render.TreeStream, "draw", interrupted)
    assert main(["show", "--all", "--plain", str(k1000)]) == 130
    text = paged.read_text()
    assert text.rstrip("\n").splitlines()[-1] == terminal.CUT_NOTICE
    assert "Turn 1 · completed" in text and "Turn 1000 " not in text
    assert capsys.readouterr().err == ("turnfork: interrupted: the document in the pager was "
                                       "cut short\n")


def _one_error_turn(tmp_path: Path) -> Path:
    """Turn 1 completed, turn 2 ended in error."""
    lines = turn_lines(0, 1, "c1")
    lines += [event("turn/start", 6, {"turn": 2}),
              event("turn/end", 7, {"turn": 2, "reason": {
                  "kind": "error", "error": {"message": "model failed", "code": "SERVER"}}})]
    return write_lines(tmp_path / "errored.jsonl", lines)


def test_an_errored_turn_is_not_a_completed_turn(tmp_path: Path) -> None:
    """check, seed and show say how the turns ended (before: `2 completed turns`, the error
    counted as completed)."""
    path = _one_error_turn(tmp_path)
    checked = run_cli("check", path)
    assert checked.code == 0
    assert checked.stdout.splitlines()[0] == (
        f"{path}: valid and closed: 8 events, 2 turns (1 completed, 1 error)")
    assert "completed turns" not in checked.stdout
    report = run_cli("check", "--json", path).json()
    assert report["turns_ended"] == {"completed": 1, "error": 1}
    seeded = run_cli("seed", path, "-o", tmp_path / "seed.jsonl")
    assert "2 turns (1 completed, 1 error)" in seeded.stderr
    shown = run_cli("show", "--plain", path)
    assert "2 turns (1 completed, 1 error) · " in shown.stdout
    assert "Turn 2 · error SERVER: model failed" in shown.stdout


def test_a_header_only_session_and_a_0_byte_file_are_empty(tmp_path: Path) -> None:
    """No events: `empty`, with why (before: `valid and closed: 0 events`)."""
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_bytes(b"")
    header = tmp_path / "session.jsonl"
    header.write_text('{"type":"session","version":0,"id":"s","createdAt":0,'
                      '"delegationDepth":0}\n')
    for path, why in ((nothing, "a 0-byte file"),
                      (header, "a session header and nothing after it")):
        run = run_cli("check", path)
        assert (run.code, run.stdout.splitlines()[0]) == (0, f"{path}: empty: no events ({why})")
        assert run_cli("check", "--json", path).json()["state"] == "empty"
        assert "empty: no events" in run_cli("show", "--plain", path).stdout


def test_numbers_are_written_one_way(k1000: Path, tmp_path: Path) -> None:
    """Counts with thousands separators in every command's words, plain in --json; what is
    typed back (seqs, turn numbers) bare (before: `23009 events`, beside `4,904 bytes` in the
    demo and `1,073,741,824 bytes` in a limit's error)."""
    checked = run_cli("check", k1000)
    assert "23,009 events" in checked.stdout and "23009" not in checked.stdout
    assert "1,000 turns (1,000 completed)" in checked.stdout
    assert "turn 1001 step 1" in checked.stdout  # a turn number, as --turns takes it
    assert run_cli("check", "--json", k1000).json()["events"] == 23009
    seeded = run_cli("seed", k1000, "-o", tmp_path / "seed.jsonl")
    assert seeded.stderr.startswith("seed: 23,002 events (seq 0..23001), 1,000 turns")
    shown = run_cli("show", "--plain", k1000, columns=200)
    assert "1,001 turns (1,000 completed, 1 in flight) · 2,001 steps · 1,000 tool calls" in (
        shown.stdout)
    assert "--turns 4..995 draws them" in shown.stdout
    demo = run_cli("demo", "--plain")
    assert re.search(r"\b\d{4,}\b bytes", demo.stdout) is None
    assert "4,904 bytes" in demo.stdout


@pytest.mark.parametrize("args", [("show",), ("show", "--all"), ("demo",)],
                         ids=" ".join)
def test_no_line_ends_with_a_space(args: tuple[str, ...]) -> None:
    """Wrapped lines keep no trailing space, plain or coloured (before: the source line of
    `show` ended `header from ` at 100 columns)."""
    target = [] if args == ("demo",) else [OPEN_LOG]
    for plain in ([], ["--plain"]):
        run = run_cli(*args, *plain, *target, FORCE_COLOR="1" if not plain else "")
        assert run.code == 0, run
        trailing = [line for line in run.stdout.splitlines()
                    if re.sub(r"\x1b\[[0-9;]*m", "", line).endswith(" ")]
        assert trailing == [], trailing


def test_the_seed_of_a_log_is_what_it_was(tmp_path: Path) -> None:
    """Streaming the seed writes the same bytes as before: the prefix, event for event."""
    out = tmp_path / "seed.jsonl"
    assert run_cli("seed", OPEN_LOG, "-o", out).code == 0
    events = decode_log(OPEN_LOG.read_bytes()).unwrap()
    assert decode_log(out.read_bytes()).unwrap() == events[:232]
    assert json.loads(run_cli("check", "--json", out).stdout)["state"] == "closed"
