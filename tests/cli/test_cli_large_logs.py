"""Logs of any size (issue 22): a progress bar on a terminal for a long read, trees and JSON
written as the log streams in. (Time and memory are measured by `python -m benchmarks --only
large-logs`, not asserted here.)"""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import struct
import termios
import threading
from pathlib import Path

import pytest
from _cli_helpers import OPEN_LOG

from benchmarks.workloads import parent_log
from turnfork.shell import logfile
from turnfork.shell.cli import main, render, terminal


@pytest.fixture(scope="module")
def k1000(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DSH's K1000 shape: 1,000 completed turns and one in flight (23,009 events, 4 MB)."""
    path = tmp_path_factory.mktemp("k1000") / "K1000-parent.events.jsonl"
    path.write_bytes(parent_log(1000).jsonl)
    return path


class _Terminal:
    """A pseudo-terminal to stand for stderr, and what was shown on it."""

    def __init__(self) -> None:
        self.controller, terminal_fd = pty.openpty()
        fcntl.ioctl(terminal_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
        self.stream = io.TextIOWrapper(os.fdopen(terminal_fd, "wb", buffering=0),
                                       encoding="utf-8", write_through=True)
        self.shown = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.controller, 1 << 16)
            except OSError:
                return
            if not data:
                return
            self.shown += data

    def close(self) -> str:
        self.stream.close()
        self._reader.join(timeout=10)
        os.close(self.controller)
        return self.shown.decode(errors="replace")


@pytest.mark.parametrize("command", ["check", "seed", "show"])
def test_a_long_read_draws_a_progress_bar_on_a_terminal(
        command: str, k1000: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """stderr on a terminal, a read past the delay: a bar names what is read and how much
    (before: nothing moved until the end)."""
    monkeypatch.setattr(terminal, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(logfile, "CHUNK_TEXT", 64 << 10)
    screen = _Terminal()
    monkeypatch.setattr("sys.stderr", screen.stream)
    args = {"check": ["check", str(k1000)], "seed": ["seed", str(k1000), "-o",
                                                     str(tmp_path / "seed.jsonl")],
            "show": ["show", str(k1000)]}[command]
    main(args)
    shown = screen.close()
    assert k1000.name in shown and "MB" in shown, shown[:400]
    capsys.readouterr()


def test_no_bar_when_stderr_is_not_a_terminal_or_the_read_is_short(
        k1000: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """stderr a pipe: no bar, whatever the delay; a terminal and a short read: none either."""
    monkeypatch.setattr(terminal, "PROGRESS_AFTER", 0.0)
    assert main(["check", str(k1000)]) == 1
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(terminal, "PROGRESS_AFTER", 60.0)
    screen = _Terminal()
    monkeypatch.setattr("sys.stderr", screen.stream)
    main(["check", str(OPEN_LOG)])
    assert screen.close() == ""


def test_trees_are_drawn_as_the_log_streams_in(k1000: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`show --all`: the first turns are drawn after a few chunks of the log are read, long
    before its end; memory holds a turn at a time (before: nothing until all of it was read
    and built, 122 s for 82 MB)."""
    monkeypatch.setattr(logfile, "CHUNK_TEXT", 64 << 10)
    read: list[int] = []
    at_first_draw: list[int] = []
    chunks = logfile.LogStream._chunks

    def counting(self: logfile.LogStream):  # type: ignore[no-untyped-def]
        for chunk in chunks(self):
            read.append(1)
            yield chunk

    draw = render.TreeStream.draw

    def drawing(self: render.TreeStream, entries: list[object]) -> None:
        if not at_first_draw:
            at_first_draw.append(len(read))
        draw(self, entries)  # type: ignore[arg-type]

    monkeypatch.setattr(logfile.LogStream, "_chunks", counting)
    monkeypatch.setattr(render.TreeStream, "draw", drawing)
    assert main(["show", "--all", "--plain", str(k1000)]) == 0
    out = capsys.readouterr().out
    assert "Turn 1001 · in flight" in out
    assert len(read) > 50 and at_first_draw[0] <= 2, (len(read), at_first_draw)


def test_show_json_is_one_object_written_as_it_streams(
        k1000: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`show --json` of a long log: one JSON object, the entries in log order, the figures."""
    assert main(["show", "--json", str(k1000)]) == 0
    outline = json.loads(capsys.readouterr().out)
    assert list(outline) == ["path", "source", "header", "entries", "events", "cut", "state",
                             "verdict", "excluded", "counts", "seed", "window", "turns_ended",
                             "left_out"]
    assert (outline["events"], outline["cut"], outline["state"]) == (23009, 23002, "open")
    turns = [entry for entry in outline["entries"] if entry.get("node") == "turn"]
    assert [turn["turn"] for turn in turns] == list(range(1, 1002))
    cut = [entry for entry in outline["entries"] if entry.get("kind") == "cut"]
    assert len(cut) == 1
    before = outline["entries"][outline["entries"].index(cut[0]) - 1]
    assert (before["node"], before["turn"], before["end_seq"]) == ("turn", 1000, 23001)
    assert turns[-1]["in_flight"] is True and turns[-2]["in_flight"] is False


def test_a_summary_keeps_the_turns_it_lists_only(k1000: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The default summary of K1000 draws the same lines from the streamed entries as it did
    from the whole outline: the first 3 turns, one line for 4..995, the last 6."""
    assert main(["show", "--plain", str(k1000)]) == 0
    lines = capsys.readouterr().out.splitlines()
    turns = [line.split(" · ")[0] for line in lines if line.startswith("Turn ")]
    assert turns == ["Turn 1", "Turn 2", "Turn 3", *(f"Turn {n}" for n in range(996, 1002))]


def test_a_choice_naming_no_turn_draws_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """Streamed, `--turns` still draws nothing when it names no turn: not even the line of a
    fork child's seed read before the end shows that there was none."""
    child = OPEN_LOG.with_name("K10-child0.events.jsonl")
    assert main(["show", "--turns", "50..60", str(child)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"turnfork: error: {child}: --turns 50..60: no such turn (the log "
                            "has turns 1..11)\n")
