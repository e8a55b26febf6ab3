"""``turnfork check``: valid/closed verdicts, exit codes 0 (closed), 1 (open) and 3 (invalid),
the --json report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_helpers import (
    FIXTURES,
    FORK_PARENT,
    OPEN_LOG,
    event,
    run_cli,
    session_zstd,
    turn_lines,
    write_lines,
)

from turnfork.shell.cli import main

INFLIGHT_PARENT = FIXTURES / "derived" / "fork-parent-inflight-at-subagent-call.DERIVED.jsonl"


def _broken_balance(tmp_path: Path) -> Path:
    """Turn 1 closes properly; turn 2's tool/result answers a call nobody made (seq 9)."""
    lines = turn_lines(0, 1, "call_1")
    lines += turn_lines(6, 2, "call_2")
    lines[9] = lines[9].replace('"callId": "call_2"', '"callId": "call_7"').replace(
        '"toolCallId": "call_2"', '"toolCallId": "call_7"')
    return write_lines(tmp_path / "broken.jsonl", lines)


def test_closed_log_exits_0() -> None:
    """A valid, closed DSH session file is reported as such with exit status 0."""
    run = run_cli("check", FORK_PARENT)
    assert run.code == 0, run.stderr
    first = run.stdout.splitlines()[0]
    assert first == f"{FORK_PARENT}: valid and closed: 200 events, 2 turns (2 completed)"
    assert "projected fixture" in run.stdout
    assert run.stderr == ""


def test_open_log_exits_1_and_says_open() -> None:
    """A log ending inside a turn is 'open' with the in-flight turn and the events after the cut."""
    run = run_cli("check", OPEN_LOG)
    assert run.code == 1
    first = run.stdout.splitlines()[0]
    assert first.startswith(f"{OPEN_LOG}: open: the log ends inside turn 11")
    assert "(in-flight turn; 7 events after the last turn/end)" in first
    assert "completed-turn prefix: 232 events, 10 turns" in run.stdout


def test_broken_balance_exits_3_naming_file_line_seq_and_rule(tmp_path: Path) -> None:
    """An invalid log is 'invalid' (exit 3, not open's 1) with file:line, seq, problem, rule."""
    path = _broken_balance(tmp_path)
    run = run_cli("check", path)
    assert run.code == 3
    assert run.stdout.splitlines()[0] == (
        f"{path}:10: invalid: seq 9: tool/result for call_7 has no tool/call in turn 2 "
        "step 1 (rule: pairing)")


def test_json_report_of_an_open_log() -> None:
    """--json prints one object with the documented fields, pending calls included."""
    run = run_cli("check", "--json", INFLIGHT_PARENT)
    assert run.code == 1
    report = run.json()
    assert report["path"] == str(INFLIGHT_PARENT)
    assert report["format"] == "session-jsonl"
    assert report["projected"] is True
    assert report["events"] == 159
    assert (report["valid"], report["closed"], report["state"]) == (True, False, "open")
    assert report["completed_prefix_length"] == 42
    assert (report["open_turn"], report["open_step"]) == (2, 1)
    assert report["pending_calls"] == ["call_00_sAtKUseRzHRBvL4CF7XF1334"]
    assert report["events_after_cut"] == 117
    assert report["violation"] is None and report["error"] is None


def test_json_report_of_an_invalid_log(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       ) -> None:
    """--json of an invalid log carries the violation (seq, rule, message, line)."""
    code = main(["check", "--json", str(_broken_balance(tmp_path))])
    report = json.loads(capsys.readouterr().out)
    assert code == 3
    assert (report["valid"], report["closed"], report["state"]) == (False, False, "invalid")
    assert report["violation"] == {
        "seq": 9, "rule": "pairing", "line": 10,
        "message": "tool/result for call_7 has no tool/call in turn 2 step 1"}
    assert report["completed_prefix_length"] is None


def test_json_report_of_a_closed_log(capsys: pytest.CaptureFixture[str]) -> None:
    """--json of a closed log: valid, closed, cut at the end, no open turn."""
    assert main(["check", "--json", str(FORK_PARENT)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["valid"], report["closed"], report["state"]) == (True, True, "closed")
    assert report["completed_prefix_length"] == 200
    assert report["completed_turns"] == 2
    assert report["open_turn"] is None


def test_session_directory_plain_and_zstd(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          ) -> None:
    """A DSH session directory is read through its session.jsonl or session.jsonl.zstd."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "session.jsonl").write_bytes(FORK_PARENT.read_bytes())
    packed = tmp_path / "packed"
    packed.mkdir()
    (packed / "session.jsonl.zstd").write_bytes(session_zstd(FORK_PARENT))
    for directory, fmt in ((plain, "session-jsonl"), (packed, "session-jsonl-zstd")):
        assert main(["check", "--json", str(directory)]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["format"] == fmt
        assert report["file"] == str(directory / ("session.jsonl" if fmt == "session-jsonl"
                                                  else "session.jsonl.zstd"))
        assert (report["events"], report["closed"]) == (200, True)


def test_events_log_with_sibling_header(capsys: pytest.CaptureFixture[str]) -> None:
    """A runtime dump X.events.jsonl is read with seq/time as written and its X.header.json."""
    child = FIXTURES / "generated" / "K10-child0.events.jsonl"
    assert main(["check", str(child)]) == 0
    out = capsys.readouterr().out
    assert "JSONL event log, header from K10-child0.header.json; 259 events" in out
    assert "projected" not in out


def test_a_0_byte_file_is_empty_not_valid_and_closed(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A 0-byte file (an empty seed) is said to be empty, exit 0, state `empty` (before: "valid
    and closed: 0 events, 0 completed turns", as if it were a finished session)."""
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{path}: empty: no events (a 0-byte file)"
    assert "valid and closed" not in out
    assert main(["check", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["state"], report["valid"], report["closed"], report["events"]) == (
        "empty", True, True, 0)


def test_trailing_between_turn_events_are_still_closed(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       ) -> None:
    """Events after the last turn/end but outside a turn leave the log closed (exit 0)."""
    lines = [*turn_lines(0, 1, "c1"), event("goal/change", 6, {"kind": "pause"})]
    assert main(["check", str(write_lines(tmp_path / "t.jsonl", lines))]) == 0
    assert "1 between-turn event after the last turn/end" in capsys.readouterr().out
