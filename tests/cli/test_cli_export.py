"""``turnfork export``: a saved fork child as one self-contained DSH session file (its seed
inline), several sessions into DSH's layout, and refusals that name the file and write nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard
from _cli_helpers import FIXTURES, event, run_cli, turn_lines, write_lines

from turnfork.core import decode_session
from turnfork.shell import JsonlSessionStore
from turnfork.shell.cli.demo import DemoResult, run_demo

_CHILD0 = FIXTURES / "generated" / "K10-child0.events.jsonl"
_HEADER = json.dumps({"type": "session", "version": 0, "id": "s", "createdAt": 1,
                      "delegationDepth": 0})


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DemoResult]:
    """The demo's parent and fork child, saved by the disk store (the child's seed a
    reference to the parent's file)."""
    root = tmp_path_factory.mktemp("saved")
    store = JsonlSessionStore(root)
    result = run_demo(store=store)
    assert result.ok, result.problems
    return root, result


def _child_dir(saved: tuple[Path, DemoResult]) -> Path:
    result = saved[1]
    fork = result.fork
    assert fork is not None and fork.saved_path is not None
    return Path(fork.saved_path).parent


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_a_saved_fork_child_is_exported_with_its_seed_inline(
        saved: tuple[Path, DemoResult], tmp_path: Path) -> None:
    """The child's file refers to its parent's; the export holds the header and every event,
    the seed's too, with no seed record, byte for byte what JsonlSessionStore.export writes."""
    root, result = saved
    fork = result.fork
    assert fork is not None
    child = _child_dir(saved)
    assert b'"type":"turnfork/seed"' in (child / "session.jsonl").read_bytes()
    out = tmp_path / "child.jsonl"
    run = run_cli("export", child, "-o", out)
    assert run.code == 0, run.stderr
    assert run.stdout.splitlines() == [
        f"exported {child} → {out}: session {fork.child_id}, {len(fork.events)} events (the "
        f"first {fork.seed_length} its seed, written inline from seed-0.jsonl)"]
    data = out.read_bytes()
    assert b"turnfork/seed" not in data
    header, events = decode_session(data).unwrap()
    assert header.id == fork.child_id and events == fork.events
    assert data == JsonlSessionStore(root).export(fork.child_id, tmp_path / "by-store.jsonl") \
        .read_bytes()
    check = run_cli("check", out)
    assert check.code == 0 and "input: DSH session file; " in check.stdout


def test_several_sessions_go_into_dshs_layout_and_the_store_reads_them(
        saved: tuple[Path, DemoResult], tmp_path: Path) -> None:
    """With several inputs OUT is a sessions root: OUT/<project>/<id>/session.jsonl each, with
    no seed file beside the child; a store on OUT reads both back; --json says what was done."""
    result = saved[1]
    fork = result.fork
    assert fork is not None
    parent = Path(result.parent_saved_path or "").parent
    out = tmp_path / "dsh-sessions"
    run = run_cli("export", parent, _child_dir(saved), "-o", out, "--json")
    assert run.code == 0, run.stderr
    report = run.json()
    assert report["written"] == 2 and report["errors"] == []
    assert [e["session_id"] for e in report["exports"]] == [result.parent_header.id,
                                                            fork.child_id]
    assert report["exports"][1]["seed_events"] == fork.seed_length
    assert report["exports"][0]["seed_events"] is None
    assert _tree(out) == ["_no-cwd", "_no-cwd/demo-1", "_no-cwd/demo-1/session.jsonl",
                          "_no-cwd/demo-23", "_no-cwd/demo-23/session.jsonl"]
    exported = JsonlSessionStore(out).inspect(fork.child_id)
    assert exported.seed is None and exported.events == fork.events
    assert JsonlSessionStore(out).inspect("demo-1").events == result.parent_events


def test_zstd_is_written_when_asked_or_named(saved: tuple[Path, DemoResult],
                                            tmp_path: Path) -> None:
    """--zstd writes session.jsonl.zstd in the layout; an OUT file named *.zstd is zstd too;
    both decompress to the plain export."""
    child = _child_dir(saved)
    assert run_cli("export", child, "-o", tmp_path / "plain.jsonl").code == 0
    plain = (tmp_path / "plain.jsonl").read_bytes()
    layout = tmp_path / "root"
    layout.mkdir()
    assert run_cli("export", child, "-o", layout, "--zstd").code == 0
    named = tmp_path / "child.jsonl.zstd"
    assert run_cli("export", child, "-o", named).code == 0
    for written in (layout / "_no-cwd" / "demo-23" / "session.jsonl.zstd", named):
        reader = zstandard.ZstdDecompressor().stream_reader(written.read_bytes(),
                                                            read_across_frames=True)
        assert reader.read() == plain


def test_an_existing_output_is_kept_unless_forced_and_then_said(
        saved: tuple[Path, DemoResult], tmp_path: Path) -> None:
    """An output that exists refuses the export (exit 2, the file untouched); --force
    replaces it and says so."""
    child = _child_dir(saved)
    out = tmp_path / "child.jsonl"
    out.write_bytes(b"mine\n")
    run = run_cli("export", child, "-o", out)
    assert run.code == 2 and out.read_bytes() == b"mine\n"
    assert run.stderr.splitlines() == [
        f"turnfork: error: {out}: exists (--force replaces it)",
        "turnfork: error: nothing exported (1 problem)"]
    forced = run_cli("export", child, "-o", out, "--force")
    assert forced.code == 0, forced.stderr
    assert forced.stdout.rstrip().endswith("; replaced the file that was there")
    assert out.read_bytes().startswith(b'{"type":"session",')


def test_the_input_itself_is_never_the_output(saved: tuple[Path, DemoResult]) -> None:
    """Exporting into the store the sessions live in would replace the child's file: refused,
    even with --force, and the file is as it was."""
    root, _ = saved
    child = _child_dir(saved)
    before = (child / "session.jsonl").read_bytes()
    run = run_cli("export", child, "-o", root, "--force")
    assert run.code == 2
    assert f"turnfork: error: {child / 'session.jsonl'}: is where {child} was read from" \
        in run.stderr
    assert (child / "session.jsonl").read_bytes() == before


def _broken_line(tmp_path: Path) -> Path:
    header = _HEADER
    lines = [header, *turn_lines(0, 1, "c1")]
    lines[3] = lines[3].replace('"name": "echo"', '"name": 7')
    return write_lines(tmp_path / "broken.jsonl", lines)


def _invalid(tmp_path: Path) -> Path:
    header = _HEADER
    lines = [header, *turn_lines(0, 1, "c1"),
             event("turn/end", 6, {"turn": 1, "reason": {"kind": "completed"}})]
    return write_lines(tmp_path / "invalid.jsonl", lines)


def test_bad_inputs_are_named_each_on_a_line_and_nothing_is_written(
        saved: tuple[Path, DemoResult], tmp_path: Path) -> None:
    """A missing file, a line that does not decode, a log without a header and a FIFO are
    each named (file, line), the good input beside them is not exported either: exit 2, no
    traceback, OUT not created."""
    no_header = write_lines(tmp_path / "events.jsonl", turn_lines(0, 1, "c1"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    run = run_cli("export", _child_dir(saved), tmp_path / "missing.jsonl",
                  _broken_line(tmp_path), no_header, fifo, "-o", out)
    assert run.code == 2 and not out.exists()
    lines = run.stderr.splitlines()
    assert "Traceback" not in run.stderr and len(lines) == 5
    assert lines[0] == f"turnfork: error: {tmp_path / 'missing.jsonl'}: cannot read: no such " \
        "file or directory"
    assert lines[1].startswith(f"turnfork: error: {tmp_path / 'broken.jsonl'}:4: seq 2")
    assert lines[2] == f"turnfork: error: {no_header}: has no session header (a JSONL event " \
        "log): a DSH session file starts with one; export a session file or a session directory"
    assert lines[3].startswith(f"turnfork: error: {fifo}: ") and "FIFO" in lines[3]
    assert lines[4] == "turnfork: error: nothing exported (4 problems)"


def test_an_invalid_log_is_refused_with_its_line_and_seq(tmp_path: Path) -> None:
    """A log that breaks a balance rule is not exported: exit 3, file:line and seq named."""
    out = tmp_path / "out.jsonl"
    run = run_cli("export", _invalid(tmp_path), "-o", out, "--json")
    assert run.code == 3 and not out.exists()
    error = run.json()["errors"][0]
    assert (error["line"], error["seq"]) == (8, 6)
    assert run.stderr.startswith(f"turnfork: error: {tmp_path / 'invalid.jsonl'}:8: seq 6: "
                                 "invalid: ")


def test_one_session_given_twice_or_several_into_a_file_is_refused(
        saved: tuple[Path, DemoResult], tmp_path: Path) -> None:
    """Two spellings of one session would write one file twice; several sessions need a
    directory: both refused before anything is written."""
    child = _child_dir(saved)
    twice = run_cli("export", child, child / "session.jsonl", "-o", tmp_path / "root")
    assert twice.code == 2 and "would both be written here" in twice.stderr
    assert not (tmp_path / "root").exists()
    afile = tmp_path / "a-file"
    afile.write_bytes(b"")
    many = run_cli("export", child, _CHILD0, "-o", afile)
    assert many.code == 2 and f"{afile}: is not a directory: 2 sessions are exported" \
        in many.stderr
    assert afile.read_bytes() == b""


def test_a_write_that_fails_is_one_error_line(saved: tuple[Path, DemoResult],
                                             tmp_path: Path) -> None:
    """An OUT whose directory cannot be made (a file is in the way) is an error line, exit 2."""
    blocker = tmp_path / "blocker"
    blocker.write_bytes(b"")
    run = run_cli("export", _child_dir(saved), "-o", blocker / "child.jsonl")
    assert run.code == 2 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"turnfork: error: {blocker / 'child.jsonl'}: cannot write: ")


def test_a_dsh_runtime_dump_exports_to_stdout_as_dsh_wrote_it() -> None:
    """DSH's K10 child (events beside a header file) exported to stdout (-o -): its header
    line, then the very records DSH wrote; the report goes to stderr."""
    run = run_cli("export", _CHILD0, "-o", "-")
    assert run.code == 0, run.stderr
    header, *records = [json.loads(line) for line in run.stdout.splitlines()]
    written = json.loads(_CHILD0.with_name("K10-child0.header.json").read_text())
    assert header == {"type": "session", **written}
    assert records == [json.loads(line) for line in _CHILD0.read_text().splitlines()]
    assert run.stderr.startswith(f"exported {_CHILD0} → stdout: session {written['id']}, "
                                 f"{len(records)} events")
    assert run_cli("export", _CHILD0, "-o", "-", "--json").code == 2


def test_a_fork_child_on_stdin_names_the_seed_file_it_lacks(
        saved: tuple[Path, DemoResult], tmp_path: Path) -> None:
    """A child's file piped in names a seed file that is not beside stdin: one line saying
    which, and what to give instead."""
    child = _child_dir(saved) / "session.jsonl"
    with child.open("rb") as piped:
        done = subprocess.run([sys.executable, "-m", "turnfork", "export", "-", "-o",
                               str(tmp_path / "out.jsonl")], stdin=piped,
                              capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and not (tmp_path / "out.jsonl").exists()
    assert done.stderr.splitlines()[0] == (
        "turnfork: error: <stdin>: seed-0.jsonl: cannot read: no such file or directory (the "
        "log on stdin names a file beside it, a fork child's seed: give the session file's "
        "path instead)")
