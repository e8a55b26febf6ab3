"""`seed X -o X` is refused, whatever spelling or link names X, and X is left untouched."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from _cli_helpers import FORK_PARENT, OPEN_LOG, REPO

from turnfork.shell.cli import main


def _copy(tmp_path: Path) -> Path:
    log = tmp_path / "parent.jsonl"
    log.write_bytes(OPEN_LOG.read_bytes())
    return log


def _same(log: Path) -> str:
    return str(log)


def _dotted(log: Path) -> str:
    return f"./{log.name}"  # the test runs in log's directory


def _symlink(log: Path) -> str:
    link = log.parent / "link.jsonl"
    link.symlink_to(log)
    return str(link)


def _hardlink(log: Path) -> str:
    link = log.parent / "hard.jsonl"
    os.link(log, link)
    return str(link)


def _roundabout(log: Path) -> str:
    (log.parent / "sub").mkdir()
    return str(log.parent / "sub" / ".." / log.name)


SPELLINGS: dict[str, Callable[[Path], str]] = {
    "same path": _same, "./X": _dotted, "symlink": _symlink, "hard link": _hardlink,
    "sub/../X": _roundabout,
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_seed_onto_its_own_input_is_refused(spelling: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Exit 2, one line naming OUT and the input, the input byte for byte as it was."""
    monkeypatch.chdir(tmp_path)
    log = _copy(tmp_path)
    before = log.read_bytes()
    out = SPELLINGS[spelling](log)
    assert main(["seed", str(log), "-o", out]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"turnfork: error: {out}: is the input log ({log}): writing the "
                            "seed over it would destroy the log; nothing written\n")
    assert log.read_bytes() == before
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_the_session_file_of_a_directory_input_is_the_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PATH a session directory, OUT its session.jsonl: refused too."""
    session = tmp_path / "session"
    session.mkdir()
    file = session / "session.jsonl"
    file.write_bytes(FORK_PARENT.read_bytes())
    assert main(["seed", str(session), "-o", str(file)]) == 2
    assert "is the input log" in capsys.readouterr().err
    assert file.read_bytes() == FORK_PARENT.read_bytes()


def test_the_sibling_header_is_part_of_the_input(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`seed X.events.jsonl -o X.header.json` would destroy the header it was read with."""
    events = tmp_path / "run.events.jsonl"
    events.write_bytes(OPEN_LOG.read_bytes())
    header = tmp_path / "run.header.json"
    header.write_text('{"version":0,"id":"parent","createdAt":1}')
    assert main(["seed", str(events), "-o", str(header)]) == 2
    assert "is the input log" in capsys.readouterr().err
    assert header.read_text() == '{"version":0,"id":"parent","createdAt":1}'


def test_stdin_redirected_from_out_is_refused(tmp_path: Path) -> None:
    """`seed - -o X < X`: X is what stdin reads, so it is refused as well."""
    log = _copy(tmp_path)
    before = log.read_bytes()
    with log.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "turnfork", "seed", "-", "-o", str(log)],
                              stdin=stdin, capture_output=True, text=True, cwd=REPO,
                              timeout=60, check=False)
    assert done.returncode == 2, done
    assert "is the input log" in done.stderr
    assert log.read_bytes() == before


def test_a_different_file_is_written(tmp_path: Path) -> None:
    """The check does not refuse an ordinary OUT next to the input."""
    log = _copy(tmp_path)
    assert main(["seed", str(log), "-o", str(tmp_path / "seed.jsonl")]) == 0
    assert (tmp_path / "seed.jsonl").read_bytes().count(b"\n") == 232
