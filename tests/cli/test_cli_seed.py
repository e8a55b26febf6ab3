"""``turnfork seed``: the completed-turn prefix as JSONL, its report, and atomic output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _cli_helpers import FORK_PARENT, OPEN_LOG, event, run_cli, turn_lines, write_lines

from turnfork.core import check_balance, decode_log, decode_session
from turnfork.shell.cli import main


def _invalid(tmp_path: Path) -> Path:
    """Turn 2 ends while its step is still open: a violation before the last turn/end."""
    lines = turn_lines(0, 1, "c1") + turn_lines(6, 2, "c2")
    del lines[10]  # step/end of turn 2
    lines[10] = lines[10].replace('"seq": 11', '"seq": 10')
    return write_lines(tmp_path / "invalid.jsonl", lines)


def _siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


def test_seed_to_stdout_is_the_valid_prefix_of_the_parent() -> None:
    """stdout holds the 232 events through the last turn/end, which decode and balance."""
    run = run_cli("seed", OPEN_LOG)
    assert run.code == 0, run.stderr
    seed = decode_log(run.stdout.encode()).unwrap()
    parent = decode_log(OPEN_LOG.read_bytes()).unwrap()
    assert len(seed) == 232
    assert seed == parent[:232]
    assert check_balance(seed).unwrap().is_closed
    assert run.stderr.splitlines() == [
        "seed: 232 events (seq 0..231), 10 turns (10 completed) → stdout",
        "excluded: 7 events after the last turn/end: 1 between-turn event, then in-flight "
        "turn 11 (6 events from seq 233)",
    ]


def test_seed_file_checks_closed(tmp_path: Path) -> None:
    """`seed -o OUT` writes a file that `check` reports valid and closed."""
    out = tmp_path / "seed.jsonl"
    run = run_cli("seed", OPEN_LOG, "-o", out)
    assert run.code == 0, run.stderr
    assert run.stdout == ""
    assert "→ " + str(out) in run.stderr
    checked = run_cli("check", out)
    assert checked.code == 0
    assert "valid and closed: 232 events, 10 turns (10 completed)" in checked.stdout


def test_seed_json_report(tmp_path: Path) -> None:
    """--json (with -o) prints the length and what was excluded."""
    out = tmp_path / "seed.jsonl"
    run = run_cli("seed", "--json", "-o", out, OPEN_LOG)
    assert run.code == 0, run.stderr
    report = run.json()
    assert report["seed_length"] == 232
    assert report["completed_turns"] == 10
    assert report["output"] == str(out)
    assert report["excluded"] == {"events": 7, "open_turn": 11, "open_turn_seq": 233,
                                  "in_flight_events": 6, "between_turn_events": 1}
    assert report["violation"] is None and report["error"] is None


def test_invalid_input_is_refused_and_out_untouched(tmp_path: Path) -> None:
    """A rule broken before the cut: exit 3, one error line, OUT keeps its old content."""
    source = _invalid(tmp_path)
    out = tmp_path / "seed.jsonl"
    out.write_text("old content\n")
    before = _siblings(out)
    run = run_cli("seed", source, "-o", out)
    assert run.code == 3
    assert run.stderr.splitlines() == [
        f"turnfork: error: {source}:11: invalid: seq 10: turn/end for turn 2 while step 1 is "
        "still open (rule: step); a seed must be valid, nothing written"]
    assert out.read_text() == "old content\n"
    assert _siblings(out) == before


def test_unreadable_input_leaves_out_absent(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Unreadable input: exit 2 and no OUT is created."""
    out = tmp_path / "seed.jsonl"
    assert main(["seed", str(tmp_path / "missing.jsonl"), "-o", str(out)]) == 2
    assert not out.exists()
    assert os.listdir(tmp_path) == []
    assert capsys.readouterr().err.count("\n") == 1


def test_failed_rename_leaves_out_unchanged_and_no_temp_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """If the final rename fails, OUT is unchanged and the temporary file is removed."""
    out = tmp_path / "seed.jsonl"
    out.write_text("old content\n")
    attempted: list[str] = []

    def failing_replace(source: str, target: str) -> None:
        attempted.append(source)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    assert main(["seed", str(OPEN_LOG), "-o", str(out)]) == 2
    assert out.read_text() == "old content\n"
    assert os.listdir(tmp_path) == ["seed.jsonl"]
    assert len(attempted) == 1 and Path(attempted[0]).parent == tmp_path
    err = capsys.readouterr().err
    assert err == (f"turnfork: error: {out}: cannot write: No space left on device; "
                   "nothing written\n")


def test_out_is_a_directory_or_in_a_missing_directory(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      ) -> None:
    """OUT naming a directory, or inside a missing one, is exit 2 with nothing written."""
    assert main(["seed", str(OPEN_LOG), "-o", str(tmp_path)]) == 2
    assert "cannot write: is a directory" in capsys.readouterr().err
    missing = tmp_path / "no" / "seed.jsonl"
    assert main(["seed", str(OPEN_LOG), "-o", str(missing)]) == 2
    assert "cannot write" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_new_out_gets_ordinary_permissions(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A new OUT gets the mode a plain open() would give (0666 minus umask), not 0600."""
    out = tmp_path / "seed.jsonl"
    assert main(["seed", str(OPEN_LOG), "-o", str(out)]) == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    capsys.readouterr()


def test_json_needs_out(capsys: pytest.CaptureFixture[str]) -> None:
    """--json without -o is a usage error: stdout cannot hold both the seed and the report."""
    assert main(["seed", "--json", str(OPEN_LOG)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("turnfork: error: seed --json needs -o OUT")


def test_closed_log_seed_excludes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """A log ending with turn/end is its own seed; a projected fixture gets real seq/time."""
    assert main(["seed", str(FORK_PARENT)]) == 0
    captured = capsys.readouterr()
    seed = decode_log(captured.out.encode()).unwrap()
    _, parent = decode_session(FORK_PARENT.read_bytes(), projected=True).unwrap()
    assert seed == parent
    assert "excluded: nothing (the log ends with turn/end)" in captured.err


def test_no_completed_turn_gives_an_empty_seed(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A log whose first turn is still in flight seeds nothing (the child starts fresh)."""
    path = write_lines(tmp_path / "first.jsonl", turn_lines(0, 1, "c1", close=False))
    out = tmp_path / "seed.jsonl"
    assert main(["seed", str(path), "-o", str(out)]) == 0
    assert out.read_bytes() == b""
    err = capsys.readouterr().err
    assert err.startswith("seed: empty, no turn has completed")
    assert "excluded: 3 events after the last turn/end: in-flight turn 1 (3 events from seq 0)" \
        in err


def test_violation_after_the_cut_warns_but_seeds(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A broken rule only in the excluded in-flight part: the seed is written, with a warning."""
    lines = [*turn_lines(0, 1, "c1"), event("turn/start", 6, {"turn": 5})]
    path = write_lines(tmp_path / "tail.jsonl", lines)
    assert main(["seed", str(path)]) == 0
    captured = capsys.readouterr()
    assert len(decode_log(captured.out.encode()).unwrap()) == 6
    assert (f"warning: {path}:7: the excluded part breaks a rule: seq 6: turn/start for turn "
            "5, expected turn 2 (rule: turn)") in captured.err


def test_seed_json_refusal_has_the_violation(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """--json refusal: exit 3, no seed length, the violation with its line."""
    out = tmp_path / "seed.jsonl"
    assert main(["seed", "--json", "-o", str(out), str(_invalid(tmp_path))]) == 3
    report = json.loads(capsys.readouterr().out)
    assert report["seed_length"] is None
    assert report["violation"]["seq"] == 10 and report["violation"]["line"] == 11
    assert not out.exists()
