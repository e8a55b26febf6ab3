"""Fuzzing the CLI: corrupted logs and cut or damaged zstd files give exit 0, 1, 2 or 3, an exit-2
error is one stderr line, and no traceback ever shows (issue 8, item 1). The CLI reads by the
torn-tail rule every reader applies (issue 22): what it reads is what the decoder reads of the
text once its torn final line is left out."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import zstandard
from _fuzzing import (
    EVERY,
    Corrupted,
    Text,
    corrupted,
    decode_and_trace,
    fuzz_settings,
    line_count,
    texts,
    time_bound,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn
from returns.result import Success

from turnfork.core import check_balance, is_json_line
from turnfork.shell.cli import main

#: The crash, fuzz and load families run after the README command (`.ci/run`), not in it.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PREFIX = "turnfork: error: "
COMMANDS = (("check",), ("check", "--json"), ("seed",), ("seed", "-o", "{out}"),
            ("seed", "--json", "-o", "{out}"), ("show", "--plain"), ("show", "--all", "--plain"),
            ("show", "--json"))


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def _run(capsys: pytest.CaptureFixture[str], command: tuple[str, ...], path: Path,
         out: Path) -> Ran:
    """``turnfork COMMAND PATH`` in this process, bounded in time; nothing left captured."""
    capsys.readouterr()
    argv = [command[0], str(path), *(part.format(out=out) for part in command[1:])]
    with time_bound():
        code = main(argv)
    captured = capsys.readouterr()
    return Ran(code, captured.out, captured.err)


def _assert_clean(ran: Ran, command: tuple[str, ...]) -> None:
    """What holds for every input: a known exit code, no traceback, one line for exit 2."""
    assert ran.code in (0, 1, 2, 3), ran
    assert "Traceback" not in ran.out and "Traceback" not in ran.err, ran
    if ran.code == 2:
        assert ran.err.endswith("\n") and len(ran.err.splitlines()) == 1, ran.err
        assert ran.err.startswith(PREFIX), ran.err
    if "--json" in command:
        assert isinstance(json.loads(ran.out), dict)


def _write(directory: Path, case: Corrupted, *, in_directory: bool) -> tuple[Path, Path]:
    """The file to read (a session directory's file, or a plain file) and the path to pass."""
    name = "session.jsonl" if case.session else "log.jsonl"
    if in_directory and case.session:
        session_dir = directory / "session-dir"
        session_dir.mkdir(exist_ok=True)
        (session_dir / name).write_bytes(case.data)
        return session_dir / name, session_dir
    (directory / name).write_bytes(case.data)
    return directory / name, directory / name


def _without_a_torn_tail(case: Corrupted) -> Corrupted:
    """``case`` as every reader reads it: without its final line when that line has no
    newline, or is not JSON (read as `JSON.parse` reads it, invalid UTF-8 as U+FFFD); a
    session file's header line is never a tail."""
    data = case.data
    if data.endswith(b"\n"):
        start = data.rfind(b"\n", 0, len(data) - 1) + 1
        line = data[start:-1].rstrip(b"\r")
        if not line.strip() or is_json_line(line.decode("utf-8", "replace").encode()):
            return case
    else:
        start = data.rfind(b"\n") + 1
    if case.session and start == 0:
        return case  # the header line: incomplete, an error of its own
    return dataclasses.replace(case, data=data[:start])


def _reads_like_the_decoder(case: Corrupted) -> bool:
    """The CLI tells a session file by its first line and a projected fixture by its first
    record; a corruption at or before them may change what the file is read as."""
    if not case.touched:
        return True
    return min(case.touched) > (case.first_record_line or line_count(case.data))


@fuzz_settings(350)
@given(case=corrupted(EVERY), command=st.sampled_from(COMMANDS), in_directory=st.booleans())
def test_cli_on_corrupted_logs_exits_cleanly_without_traceback(
        case: Corrupted, command: tuple[str, ...], in_directory: bool,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """check/seed/show on any corrupted log: a clean exit (0 closed, 1 open, 3 invalid), and the
    decoder's line on exit 2."""
    file, path = _write(tmp_path, case, in_directory=in_directory)
    ran = _run(capsys, command, path, tmp_path / "seed-out.jsonl")
    _assert_clean(ran, command)
    if not _reads_like_the_decoder(case):
        return
    read = _without_a_torn_tail(case)
    if read.session and b"\n" not in read.data and read.data.strip():
        assert ran.code == 2 and "the header line is incomplete" in ran.err, ran
        return
    outcome = decode_and_trace(read)
    if outcome.error is not None:
        assert ran.code == 2, (ran, outcome.error, case.describe())
        assert f"{PREFIX}{file}:{outcome.error.line}: " in ran.err, (ran.err, outcome.error)
        return
    assert ran.code in (0, 1, 3), (ran, case.describe())
    assert outcome.events is not None
    invalid = outcome.violation is not None
    if command[0] == "check":
        closed = isinstance(check_balance(outcome.events), Success)
        assert ran.code == (3 if invalid else 0 if closed else 1), (ran, case.describe())
    elif command[0] == "show":
        assert ran.code == (3 if invalid else 0), ran


# --------------------------------------------------------------------------- zstd


@dataclass(frozen=True)
class ZstdCase:
    """A DSH ``session.jsonl.zstd`` (header frame, one frame per batch), then damaged."""

    data: bytes
    damage: str
    #: Byte offsets where a frame ends (0 included): a cut there leaves whole frames.
    boundaries: tuple[int, ...]
    #: Events held by the frames before each boundary.
    events_before: tuple[int, ...]
    text: Text
    cut: int | None

    def __repr__(self) -> str:
        return (f"<zstd {self.damage}, {len(self.data)} bytes, frames end at "
                f"{self.boundaries}>")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


@st.composite
def zstd_cases(draw: DrawFn) -> ZstdCase:
    """Valid zstd session files (random batch sizes) cut at any byte, or damaged."""
    text = draw(texts(session=True))
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    frames = [compressor.compress(text.lines[0] + b"\n")]
    events_before = [0, 0]
    index = 1
    while index < len(text.lines):
        size = draw(st.integers(1, 12))
        batch = text.lines[index:index + size]
        frames.append(compressor.compress(b"".join(line + b"\n" for line in batch)))
        events_before.append(events_before[-1] + sum(text.counts[index:index + size]))
        index += size
    boundaries = [0]
    for frame in frames:
        boundaries.append(boundaries[-1] + len(frame))
    whole = b"".join(frames)
    damage = draw(st.sampled_from(["cut", "cut", "cut", "flip", "append"]))
    cut: int | None = None
    if damage == "cut":
        cut = draw(st.one_of(st.integers(0, len(whole)), st.sampled_from(boundaries)))
        data = whole[:cut]
    elif damage == "flip":
        at = draw(st.integers(0, len(whole) - 1))
        data = whole[:at] + bytes([whole[at] ^ draw(st.integers(1, 255))]) + whole[at + 1:]
    else:
        data = whole + draw(st.binary(min_size=1, max_size=40))
    return ZstdCase(data=data, damage=damage, boundaries=tuple(boundaries),
                    events_before=tuple(events_before), text=text, cut=cut)


@fuzz_settings(250)
@given(case=zstd_cases(), command=st.sampled_from(COMMANDS), in_directory=st.booleans())
def test_cli_on_damaged_zstd_sessions_exits_cleanly(
        case: ZstdCase, command: tuple[str, ...], in_directory: bool, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A zstd session cut at any byte reads as its whole frames, or fails in one line."""
    directory = tmp_path / "zstd-session"
    directory.mkdir(exist_ok=True)
    file = directory / "session.jsonl.zstd"
    file.write_bytes(case.data)
    ran = _run(capsys, command, directory if in_directory else file, tmp_path / "out.jsonl")
    _assert_clean(ran, command)
    if case.cut is None:
        return
    if case.cut not in case.boundaries[1:]:  # empty, or a frame cut off
        if case.cut < case.boundaries[1]:  # nothing, or the header's own frame cut off
            if ran.code == 0:  # no whole line in it: a one-line log, torn (the rule's case)
                assert not in_directory and "incomplete final zstd frame" in (
                    ran.out + ran.err), ran
                return
            assert ran.code == 2, ran
            assert "zstd" in ran.err or "header line is incomplete" in ran.err, ran.err
            return
        # An incomplete final frame is a torn tail: its whole lines are read, as the store
        # reads them.
        frame = next(index for index, end in enumerate(case.boundaries) if end > case.cut)
        assert ran.code in (0, 1, 3), ran
        if command == ("check", "--json"):
            report = json.loads(ran.out)
            assert report["left_out"]["cause"] == "incomplete-frame", report
            assert case.events_before[frame - 1] <= report["events"] <= (
                case.events_before[frame]), (report["events"], case)
        return
    events = case.events_before[case.boundaries.index(case.cut)]
    kept = case.text.events[:events]
    assert ran.code in (0, 1, 3), ran
    if command == ("check", "--json"):
        report = json.loads(ran.out)
        assert report["events"] == events and report["format"] == "session-jsonl-zstd"
        state = {0: "closed" if events else "empty", 1: "open", 3: "invalid"}[ran.code]
        assert report["state"] == state
        assert (ran.code == 0) == isinstance(check_balance(kept), Success)


# --------------------------------------------------------------------------- real processes

_CUT_ZSTD = zstandard.ZstdCompressor(write_checksum=True).compress(
    b'{"type":"session","version":0,"id":"s","createdAt":1,"delegationDepth":0}\n')
_RECORD = b'{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}\n'
#: Unreadable inputs for the real process, each with the line its error must name.
SUBPROCESS_CASES = {
    "invalid-utf8.jsonl": (_RECORD + b'{"type":"turn/end","seq":1,"time":6,"da\xfft\n'
                           + _RECORD, ":2: "),
    "deep.jsonl": (_RECORD + b'{"type":"goal/change","seq":1,"time":6,"data":'
                   + b"[" * 50_000 + b"]" * 50_000 + b"}\n", ":2: "),
    "deep-first-line.jsonl": (b'{"type":"goal/change","data":' + b'{"a":' * 50_000 + b"0"
                              + b"}" * 50_000 + b"}\n", ":1: "),
    "newline-type.jsonl": (b'{"type":"x\\ny\\u2028z","seq":0,"time":5,"data":{}}\n', ":1: "),
    "infinite.jsonl": (b'{"type":"tool/result","seq":0,"time":1,"data":{"turn":1,"step":1,'
                       b'"message":{"source":{"kind":"tool","callId":"c"},"content":[{"type":'
                       b'"tool-result","toolCallId":"c","content":[],"isError":false}],'
                       b'"role":"user","id":"i"},"meta":{"exitCode":1e999}},'
                       b'"sourceEventSeqs":[0],"surfaceOp":"append"}\n', ":1: "),
    "cut.jsonl.zstd": (_CUT_ZSTD[:-3], "the incomplete final zstd frame holds more than events"),
    "empty.jsonl.zstd": (b"", "not a zstd stream"),
}


@pytest.mark.parametrize("name", sorted(SUBPROCESS_CASES))
def test_real_process_prints_one_line_and_exits_2(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m turnfork check`` exits 2 with the same single line as in-process."""
    data, expected = SUBPROCESS_CASES[name]
    path = tmp_path / name
    path.write_bytes(data)
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run([sys.executable, "-m", "turnfork", "check", str(path)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr and not done.stdout, done
    assert len(done.stderr.splitlines()) == 1 and expected in done.stderr, done.stderr
    in_process = _run(capsys, ("check",), path, tmp_path / "unused")
    assert (in_process.code, in_process.err) == (done.returncode, done.stderr)
