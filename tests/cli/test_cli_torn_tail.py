"""One rule for a torn last line (issue 22), in every reader: the CLI's, the store's and DSH's.

DSH's reader (``packages/session/session-persistence-jsonl/src/format.ts``,
``SessionLogScanner``: "a final record without a newline is a torn tail") leaves a final line
without its newline out; a complete line it cannot parse, with no ``turn/end`` after it, goes
with the tail. Ours leaves out a final line without its newline, or one that is not JSON; for
zstd an incomplete final frame. Before (cb407df) ``check`` read a final line without its
newline as an event ("valid and closed: 2329 events" where the store read 2328, open) and
failed on a file cut mid-line with msgspec's "Input data was truncated" where the store read
the rest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard
from _cli_helpers import FORK_PARENT, OPEN_LOG, run_cli, zstd_frames

from turnfork.core import is_json_line
from turnfork.shell import JsonlSessionStore
from turnfork.shell.logfile import read_log

SESSION = FORK_PARENT.read_bytes()  # a header line, then 49 record lines
HEADER_ID = json.loads(SESSION.split(b"\n", 1)[0])["id"]


def _dsh_kept_lines(text: bytes) -> int:
    """How many record lines DSH's scanner keeps of a plain session text (its rule for the
    end of a file: a final line without a newline is torn; a final line that does not parse
    is dropped, no turn/end following it)."""
    lines = text.split(b"\n")
    complete = lines[1:-1]  # the last piece has no newline (empty when the text ends with one)
    if complete and complete[-1].strip() and not is_json_line(complete[-1]):
        complete = complete[:-1]
    return sum(1 for line in complete if line.strip())


def _session_dir(root: Path, text: bytes) -> Path:
    directory = root / "_no-cwd" / HEADER_ID
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "session.jsonl").write_bytes(text)
    return directory


def test_every_cut_of_a_session_reads_alike_in_check_the_store_and_dsh(tmp_path: Path) -> None:
    """The session cut at every byte of its last 600: `read_log` (the CLI's reader) and
    `JsonlSessionStore.inspect` leave out the same tail, the same line, and keep the lines DSH
    keeps."""
    store = JsonlSessionStore(tmp_path)
    directory = _session_dir(tmp_path, SESSION)
    for size in range(len(SESSION) - 600, len(SESSION) + 1):
        text = SESSION[:size]
        (directory / "session.jsonl").write_bytes(text)
        cli = read_log(directory / "session.jsonl").unwrap()
        stored = store.inspect(HEADER_ID)
        assert len(cli.events) == len(stored.events), size
        assert cli.torn == stored.torn, size
        assert cli.text == stored.text
        kept = _dsh_kept_lines(text)
        assert cli.text.count(b"\n") - 1 == kept, size  # the header line, then those kept


def test_check_leaves_out_a_final_line_without_its_newline(tmp_path: Path) -> None:
    """The log's last record without its newline: left out, said with its line and bytes;
    the log is then open, as the store reads it (before: valid and closed, with that event)."""
    path = tmp_path / "session.jsonl"
    path.write_bytes(SESSION[:-1])
    last = SESSION[:-1].rsplit(b"\n", 1)[1]
    run = run_cli("check", path)
    assert run.code == 1, run
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"{path}: open: the log ends inside turn 2")
    assert lines[2] == (f"  left out line 50 ({len(last)} bytes): it has no newline, a write "
                        "cut short (the torn-tail rule)")
    report = run_cli("check", "--json", path).json()
    assert report["left_out"] == {"line": 50, "bytes": len(last), "cause": "no-newline",
                                  "keep_bytes": len(SESSION) - 1 - len(last),
                                  "message": lines[2].strip()}
    store = JsonlSessionStore(tmp_path / "store")
    _session_dir(tmp_path / "store", SESSION[:-1])
    assert report["events"] == len(store.inspect(HEADER_ID).events)


def test_check_reads_the_rest_of_a_file_cut_mid_line(tmp_path: Path) -> None:
    """Cut in the middle of a record: the lines before it are read (before: exit 2, `Input data
    was truncated`)."""
    path = tmp_path / "cut.jsonl"
    text = OPEN_LOG.read_bytes()
    path.write_bytes(text[:len(text) // 2])
    run = run_cli("check", "--json", path)
    assert run.code in (1, 0), run
    report = run.json()
    assert report["error"] is None and report["left_out"]["cause"] == "no-newline"
    assert report["events"] == text[:len(text) // 2].count(b"\n")
    assert "Input data was truncated" not in run.stderr


def test_a_final_line_that_is_not_json_is_left_out_and_one_before_it_is_an_error(
        tmp_path: Path) -> None:
    """Zeros where the last write was (a crash before the data reached the disk): left out,
    `it is not JSON`; the same line before the last is corruption, exit 2, as in the store."""
    path = tmp_path / "zeros.jsonl"
    lines = OPEN_LOG.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:100]) + b"\x00\x00\x00\x00\n")
    run = run_cli("check", path)
    assert run.code == 1
    assert "left out line 101 (5 bytes): it is not JSON" in run.stdout
    path.write_bytes(b"".join(lines[:100]) + b"\x00\x00\x00\x00\n" + lines[100])
    run = run_cli("check", path)
    assert run.code == 2 and run.stderr.startswith(f"turnfork: error: {path}:101: ")


def test_an_incomplete_final_zstd_frame_keeps_its_whole_lines(tmp_path: Path) -> None:
    """A session.jsonl.zstd whose last frame is cut: its whole lines are read, the rest left
    out and said, as the store reads it (before: exit 2, `truncated zstd stream`)."""
    header, _, rest = SESSION.partition(b"\n")
    middle = rest.rfind(b"\n", 0, len(rest) // 2) + 1
    whole = zstd_frames(header + b"\n", rest[:middle], rest[middle:])
    root = tmp_path / "store"
    directory = root / "_no-cwd" / HEADER_ID
    directory.mkdir(parents=True)
    path = directory / "session.jsonl.zstd"
    path.write_bytes(whole[:-40])
    run = run_cli("check", "--json", path)
    assert run.code == 1, run
    report = run.json()
    assert report["left_out"]["cause"] == "incomplete-frame"
    stored = JsonlSessionStore(root, compression="zstd").inspect(HEADER_ID)
    assert report["events"] == len(stored.events)
    assert stored.torn is not None and report["left_out"]["line"] == stored.torn.line
    words = run_cli("check", path).stdout
    assert "from an incomplete final zstd frame" in words


def test_seed_and_show_say_what_they_left_out(tmp_path: Path) -> None:
    """`seed` writes the prefix of what was read and says the line left out; `show` says it
    above the verdict."""
    path = tmp_path / "session.jsonl"
    path.write_bytes(SESSION[:-1])
    seeded = run_cli("seed", path, "-o", tmp_path / "seed.jsonl")
    assert seeded.code == 0
    assert "left out line 50" in seeded.stderr
    shown = run_cli("show", "--plain", path)
    lines = shown.stdout.splitlines()
    verdict = next(index for index, line in enumerate(lines) if line.startswith("open: "))
    assert lines[verdict - 1].startswith("left out line 50 (")
    assert run_cli("show", "--json", path).json()["left_out"].startswith("left out line 50")


@pytest.mark.parametrize("tail", [b'{"type":"turn/start","se', b"\xff\xfe", b"[1,2", b" ",
                                  b"\n  "])
def test_the_only_line_torn_is_an_empty_log(tmp_path: Path, tail: bytes) -> None:
    """An event log whose only line is torn holds no events: `empty`, and what was left out
    (a line of blanks without its newline too: it once made the reader look for a line after it
    for ever)."""
    path = tmp_path / "one.jsonl"
    path.write_bytes(tail)
    run = run_cli("check", "--format", "dsh", path)
    assert run.code == 0, run
    line = tail.count(b"\n") + 1
    assert run.stdout.startswith(f"{path}: empty: no events (its only line is left out: left "
                                 f"out line {line} (")


def test_a_zstd_text_cut_inside_a_complete_frame_is_corruption(tmp_path: Path) -> None:
    """Every frame complete, the text ending inside a record: not a torn write (a torn write
    leaves an incomplete frame), refused with its line, as the store and DSH refuse it."""
    path = tmp_path / "session.jsonl.zstd"
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    path.write_bytes(compressor.compress(SESSION[:-30]))
    run = run_cli("check", path)
    assert run.code == 2
    assert run.stderr.startswith(f"turnfork: error: {path}:50: a record is cut short inside "
                                 "a complete zstd frame")
