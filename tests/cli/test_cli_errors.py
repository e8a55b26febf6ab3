"""Unreadable input: one line naming file, line (and seq) and problem; exit 2; no traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from _cli_helpers import (
    FORK_PARENT,
    OPEN_LOG,
    event,
    run_cli,
    session_zstd,
    turn_lines,
    write_lines,
    zstd_frames,
)

from turnfork.shell.cli import inputs, main

GOOD = turn_lines(0, 1, "c1")


def _missing(tmp_path: Path) -> Path:
    return tmp_path / "nope.jsonl"


def _directory_without_session(tmp_path: Path) -> Path:
    (tmp_path / "empty-session").mkdir()
    (tmp_path / "empty-session" / "notes.txt").write_text("hi")
    return tmp_path / "empty-session"


def _not_json(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "x.jsonl", [*GOOD[:2], "{not json", *GOOD[3:]])


def _invalid_utf8(tmp_path: Path) -> Path:
    path = tmp_path / "x.jsonl"
    path.write_bytes(("\n".join(GOOD[:3]) + "\n").encode() + b'{"type":"\xff"}\n')
    return path


def _wrong_types(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "x.jsonl",
                       [*GOOD[:1], event("step/start", 1, {"turn": 1, "step": "one"})])


def _unknown_type(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "x.jsonl", [*GOOD[:2], event("mystery/thing", 2, {})])


def _cut_inside_a_complete_frame(tmp_path: Path) -> Path:
    """Complete zstd frames whose text ends inside a record: corruption, not a torn tail."""
    path = tmp_path / "session.jsonl.zstd"
    text = FORK_PARENT.read_bytes()[:-1]
    header, _, rest = text.partition(b"\n")
    path.write_bytes(zstd_frames(header + b"\n", rest))
    return path


def _not_a_directory(tmp_path: Path) -> Path:
    (tmp_path / "plain").write_text("")
    return tmp_path / "plain" / "session.jsonl"


#: name, how to build the bad input, the line it names (None: no line), words of the problem.
CASES: list[tuple[str, Callable[[Path], Path], int | None, str]] = [
    ("missing file", _missing, None, "cannot read: no such file or directory"),
    ("directory without session", _directory_without_session, None,
     "directory holds no session.jsonl or session.jsonl.zstd"),
    ("not JSON", _not_json, 3, "JSON is malformed"),
    ("invalid UTF-8", _invalid_utf8, 4, "invalid UTF-8 at byte"),
    ("wrong types", _wrong_types, 2, "seq 1 (step/start): Expected `int`, got `str` - at "
                                     "`data.step`"),
    ("unknown event type", _unknown_type, 3,
     'seq 2 (mystery/thing): unknown event type "mystery/thing" is not marked "ignorable"'),
    ("zstd record cut inside a complete frame", _cut_inside_a_complete_frame, 50,
     "a record is cut short inside a complete zstd frame"),
    ("path through a file", _not_a_directory, None,
     "cannot read: a component of the path is not a directory"),
]


@pytest.mark.parametrize(("name", "build", "line", "words"), CASES, ids=[c[0] for c in CASES])
def test_unreadable_input_is_one_line_exit_2(tmp_path: Path, name: str,
                                             build: Callable[[Path], Path], line: int | None,
                                             words: str) -> None:
    """Each class of bad input: exit 2, one stderr line `turnfork: error: file[:line]: …`."""
    path = build(tmp_path)
    run = run_cli("check", path)
    assert run.code == 2, (name, run.stdout, run.stderr)
    assert run.stdout == ""
    assert "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, lines
    where = str(path) if line is None else f"{path}:{line}"
    assert lines[0].startswith(f"turnfork: error: {where}: "), lines[0]
    assert words in lines[0]


def test_every_command_reports_unreadable_input_the_same_way(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """check, seed and show all exit 2 with the same one-line error."""
    path = _wrong_types(tmp_path)
    messages = set()
    for command in ("check", "seed", "show"):
        assert main([command, str(path)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        messages.add(captured.err)
    assert len(messages) == 1
    assert messages.pop().startswith(f"turnfork: error: {path}:2: seq 1 (step/start): ")


def test_json_error_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json still prints an object on stdout, with the error's file, line, seq, type."""
    path = _unknown_type(tmp_path)
    assert main(["check", "--json", str(path)]) == 2
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["state"] == "unreadable"
    assert (report["valid"], report["closed"], report["events"]) == (False, False, None)
    error = report["error"]
    assert (error["file"], error["line"], error["seq"], error["event_type"]) == (
        str(path), 3, 2, "mystery/thing")
    assert error["message"] in captured.err


def test_corrupt_zstd_checksum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A zstd frame whose content does not match its checksum is refused, not half-read."""
    data = bytearray(session_zstd(FORK_PARENT))
    data[-6] ^= 0xFF
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(bytes(data))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"turnfork: error: {path}: corrupt zstd frame 3 at byte ")


def test_zstd_name_without_zstd_content(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A .zstd file that is not zstd says so instead of being read as text."""
    path = tmp_path / "session.jsonl.zstd"
    path.write_bytes(FORK_PARENT.read_bytes())
    assert main(["check", str(path)]) == 2
    assert "not a zstd stream" in capsys.readouterr().err


def test_directory_with_both_session_files(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A directory holding both session.jsonl and session.jsonl.zstd is ambiguous."""
    (tmp_path / "session.jsonl").write_bytes(FORK_PARENT.read_bytes())
    (tmp_path / "session.jsonl.zstd").write_bytes(session_zstd(FORK_PARENT))
    assert main(["check", str(tmp_path)]) == 2
    assert "holds both session.jsonl and session.jsonl.zstd" in capsys.readouterr().err


def test_bad_header_line_and_bad_sibling_header(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A newer header version, and a broken X.header.json, name their file and line 1."""
    newer = tmp_path / "session.jsonl"
    newer.write_text('{"type":"session","version":1,"id":"s","createdAt":0,'
                     '"delegationDepth":0}\n')
    assert main(["check", str(newer)]) == 2
    assert capsys.readouterr().err.startswith(
        f"turnfork: error: {newer}:1: session format version 1 is not supported")
    events = tmp_path / "run.events.jsonl"
    events.write_bytes(OPEN_LOG.read_bytes())
    (tmp_path / "run.header.json").write_text('{"id": 5}')
    assert main(["check", str(events)]) == 2
    assert capsys.readouterr().err.startswith(
        f"turnfork: error: {tmp_path / 'run.header.json'}:1: header: ")


def test_keyboard_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Ctrl-C ends the command with status 130 and one line, not a traceback."""
    def interrupted(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(inputs, "open_log", interrupted)
    assert main(["check", str(FORK_PARENT)]) == 130
    assert capsys.readouterr().err == "turnfork: interrupted\n"
