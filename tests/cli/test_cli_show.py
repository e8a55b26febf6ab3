"""``turnfork show --all``: the picture of a log as trees, its cut marker, colour rules and the
--json outline (the default summary and the choice of turns: test_cli_show_summary.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _cli_helpers import (
    ALL_FIXTURES,
    CUT_MARKER,
    FIXTURES,
    FORK_PARENT,
    OPEN_LOG,
    REPO,
    run_cli,
    session_zstd,
    turn_lines,
    write_lines,
)

from turnfork.shell.cli import main

ANSI = "\x1b["
CANCEL_TOOLS = FIXTURES / "examples__acp-agent__tests__snapshots__cancel-tool-calls__session.jsonl"
FORK_CHILD = FIXTURES / ("examples__acp-agent__tests__snapshots__subagent-fork-in-process"
                         "__session.1.jsonl")
NEVER_RAN = FIXTURES / ("examples__acp-agent__tests__snapshots__subagent-published-run-failure"
                        "__session.1.jsonl")


def _show(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["show", "--all", *args, str(path)])
    captured = capsys.readouterr()
    assert captured.err == ""
    return code, captured.out


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=[p.name[-60:] for p in ALL_FIXTURES])
def test_every_fixture_draws_with_the_cut_marker(path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Each DSH fixture draws as trees (exit 0), marks the cut once and lists no chunk events."""
    code, out = _show(path, capsys)
    assert code == 0
    assert out.count(CUT_MARKER) == 1
    assert "assistant/chunk" not in out
    assert ANSI not in out


def test_open_log_picture() -> None:
    """The open dump: turns 1-10 above the cut, turn 11 below it marked in flight, no ANSI."""
    run = run_cli("show", "--all", OPEN_LOG, columns=120)
    assert run.code == 0, run.stderr
    out = run.stdout
    assert ANSI not in out
    cut = out.index(f"{CUT_MARKER} (seq 0..231, 232 events)")
    assert out.index("Turn 10 · completed · seq 210..231") < cut
    assert out.index("Turn 11 · in flight, not part of any seed · seq 233..") > cut
    assert "a fork child is seeded with the events above" in out
    assert "step 1 · seq 235.. (open)" in out
    assert "session parent" in out  # the header, from K10-parent.header.json
    assert out.rstrip().endswith("open: the log ends inside turn 11 step 1 (in-flight turn; "
                                 "7 events after the last turn/end)")


def test_tool_calls_results_and_chunk_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """A call carries its result beneath it; chunks become a count on the assistant line."""
    _, out = _show(OPEN_LOG, capsys)
    lines = out.splitlines()
    call = next(i for i, line in enumerate(lines) if '12 echo({"text":"payload-0"})' in line)
    assert '13 → "echo:payload-0"' in lines[call + 1]
    assert "11 assistant (calls echo; streamed in 4 chunks)" in out
    assert '22 assistant: "ok" (streamed in 6 chunks)' in out
    assert "237 2 streamed chunks, no assistant/message" in out


def test_turn_reasons_errors_and_header(capsys: pytest.CaptureFixture[str]) -> None:
    """Aborted turns and error results are marked; a child's header, its seed in one line and
    its end-seed are shown."""
    _, out = _show(CANCEL_TOOLS, capsys)
    assert "Turn 1 · aborted (user) · seq 1..23" in out
    assert "✗ → \"Error: tool call aborted\" (AbortError ABORTED)" in out
    _, out = _show(FORK_CHILD, capsys)
    assert "seq 0..41 · the inherited seed from parent " in out
    assert "depth 1 · seedLength 42 · origin subagent" in out
    assert "42 session/end-seed" in out
    assert "47 subagent/descriptor: one-shot child via fork" in out
    assert "43 approval/policy: never (set by delegation)" in out


def test_empty_prefix_marker_comes_first(capsys: pytest.CaptureFixture[str]) -> None:
    """With no completed turn the marker says the prefix is empty, above every event."""
    _, out = _show(NEVER_RAN, capsys)
    marker = out.index(f"{CUT_MARKER} (empty: no turn has completed)")
    assert marker < out.index("0 approval/policy: never")


def test_invalid_log_is_drawn_with_the_violation_and_exit_3(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A broken rule is marked where it breaks, the verdict says invalid, exit status 3."""
    lines = turn_lines(0, 1, "c1")
    lines[5] = lines[5].replace('"turn": 1', '"turn": 4')
    code, out = _show(write_lines(tmp_path / "bad.jsonl", lines), capsys)
    assert code == 3
    assert "✗ invalid here: turn/end for turn 4 but turn 1 is open (rule: turn)" in out
    assert "no fork child can be seeded from it" in out


def test_json_outline(capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints the outline the picture is drawn from."""
    code, out = _show(OPEN_LOG, capsys, "--json")
    outline = json.loads(out)
    assert code == 0
    assert (outline["events"], outline["cut"], outline["state"]) == (239, 232, "open")
    turns = [e for e in outline["entries"] if e["node"] == "turn"]
    assert [t["turn"] for t in turns] == list(range(1, 12))
    assert turns[-1]["in_flight"] is True and turns[-1]["reason"] is None
    cuts = [e for e in outline["entries"] if e["node"] == "item" and e["kind"] == "cut"]
    assert len(cuts) == 1 and cuts[0]["seq"] == 232


def test_zstd_session_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A zstd session directory draws like its plain text."""
    (tmp_path / "session.jsonl.zstd").write_bytes(session_zstd(FORK_PARENT))
    code, packed = _show(tmp_path, capsys)
    _, plain = _show(FORK_PARENT, capsys)
    assert code == 0
    assert packed.split("\n\n", 1)[1] == plain.split("\n\n", 1)[1]  # after the header


def test_narrow_terminal_does_not_break() -> None:
    """A 12-column terminal still draws (exit 0, no traceback)."""
    run = run_cli("show", "--all", FORK_PARENT, columns=12)
    assert run.code == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert max(len(line) for line in run.stdout.splitlines()) <= 12


def test_colour_rules() -> None:
    """Styled only on a terminal; --plain and NO_COLOR turn it off even when forced."""
    forced = run_cli("show", "--all", CANCEL_TOOLS, FORCE_COLOR="1")
    assert ANSI in forced.stdout
    plain = run_cli("show", "--all", "--plain", CANCEL_TOOLS, FORCE_COLOR="1")
    assert plain.code == 0 and ANSI not in plain.stdout
    no_color = run_cli("show", "--all", CANCEL_TOOLS, FORCE_COLOR="1", NO_COLOR="1")
    assert no_color.code == 0 and ANSI not in no_color.stdout


def test_closed_pipe_exits_141_quietly(tmp_path: Path) -> None:
    """`turnfork show big | head -1`: exit 128+SIGPIPE, nothing on stderr."""
    lines: list[str] = []
    for turn in range(1, 1001):  # a picture far larger than a pipe buffer
        lines += turn_lines(len(lines), turn, f"c{turn}")
    path = write_lines(tmp_path / "big.jsonl", lines)
    child = subprocess.Popen([sys.executable, "-m", "turnfork", "show", "--all", str(path)],
                             cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.readline()
    child.stdout.close()
    assert child.wait(timeout=60) == 141
    assert child.stderr.read() == b""
    child.stderr.close()


def test_a_waiting_call_is_the_traces_and_a_broken_logs_is_the_walks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An open log's started call without its result is marked waiting (the trace's pending
    call); in a log that breaks a rule (no trace), the call the walk saw no result for is."""
    open_log = write_lines(tmp_path / "open.jsonl",
                           [*turn_lines(0, 1, "c1"), *turn_lines(6, 2, "c2", close=False)])
    _, out = _show(open_log, capsys)
    assert out.count("no tool/result yet (the log ends here)") == 1
    assert out.index("echo(") < out.index("no tool/result yet") and "c2 still waiting" in out
    broken = write_lines(tmp_path / "broken.jsonl",
                         [*turn_lines(0, 1, "c1"), *turn_lines(6, 3, "c2", close=False)])
    _, out = _show(broken, capsys)
    assert "turn/start for turn 3, expected turn 2" in out
    assert out.count("no tool/result yet (the log ends here)") == 1


def test_a_broken_logs_waiting_calls_are_the_traces_up_to_the_break_and_the_walks_after(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A call started before the rule broken and never answered is the trace's (the trace up
    to the break has it pending); one started past the break is the walk's: both wait."""
    before = turn_lines(0, 1, "c1", close=False)  # seq 0..2: c1 started, no result
    after = turn_lines(3, 2, "c2", close=False)  # seq 3 breaks a rule: turn 1 never ended
    code, out = _show(write_lines(tmp_path / "broken.jsonl", [*before, *after]), capsys)
    assert code == 3 and "rule:" in out
    assert out.count("no tool/result yet (the log ends here)") == 2
    calls = [at for at in range(len(out)) if out.startswith("echo(", at)]
    waiting = [at for at in range(len(out)) if out.startswith("no tool/result yet", at)]
    assert calls[0] < waiting[0] < calls[1] < waiting[1]
