"""``turnfork show`` at scale: a summary by default, --turns/--tail/--all, a fork child's seed in
one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_helpers import CUT_MARKER, FIXTURES, OPEN_LOG, turn_lines, write_lines

from benchmarks.workloads import parent_log
from turnfork.shell.cli import main

CHILD = FIXTURES / "generated" / "K10-child0.events.jsonl"
TREE = "├── "


@pytest.fixture(scope="module")
def k1000(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DSH's K1000 shape: 1,000 completed turns and one in flight (23,009 events, 4 MB)."""
    path = tmp_path_factory.mktemp("k1000") / "K1000-parent.events.jsonl"
    path.write_bytes(parent_log(1000).jsonl)
    return path


def _show(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str,
          ) -> tuple[int, list[str]]:
    monkeypatch.setenv("COLUMNS", "200")
    code = main(["show", *args])
    captured = capsys.readouterr()
    return code, captured.out.splitlines() + captured.err.splitlines()


def test_default_is_a_summary_of_every_turn_of_a_short_log(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """K10: the figures, one line per turn, the cut, what lies beyond it; no trees."""
    code, lines = _show(capsys, monkeypatch, str(OPEN_LOG))
    assert code == 0
    assert lines[3] == ("11 turns (10 completed, 1 in flight) · 21 steps · 10 tool calls, "
                        "10 results · 20 assistant messages · 102 streamed chunks · "
                        "11 between-turn events")
    turns = [line for line in lines if line.startswith("Turn ")]
    assert len(turns) == 11
    assert turns[0] == ('Turn 1 · completed · seq 1..24 · 2 steps, 1 tool call (echo) · '
                        '"user turn 0"')
    assert turns[-1] == ('Turn 11 · in flight · seq 233.. · 1 step (open), 0 tool calls · '
                         '"in-flight parent turn"')
    cut = next(i for i, line in enumerate(lines) if CUT_MARKER in line)
    assert lines[cut - 1].startswith("Turn 10 · completed")
    assert lines[cut + 2] == ("excluded: 7 events after the last turn/end: 1 between-turn event, "
                              "then in-flight turn 11 (6 events from seq 233)")
    assert not any(TREE in line for line in lines)
    assert lines[-2].startswith("open: the log ends inside turn 11 step 1")


def test_a_thousand_turn_log_summary_fits_one_screen(
        k1000: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """K1000: the first 3 and last 6 turns, one line for the 992 between, the cut and beyond."""
    code, lines = _show(capsys, monkeypatch, str(k1000))
    assert code == 0
    assert len(lines) <= 25, lines
    turns = [line.split(" · ")[0] for line in lines if line.startswith("Turn ")]
    assert turns == ["Turn 1", "Turn 2", "Turn 3", *(f"Turn {n}" for n in range(996, 1002))]
    assert ("… turns 4..995 not listed: 992 turns (992 completed); --turns 4..995 draws them"
            in lines)
    assert any(f"{CUT_MARKER} (seq 0..23001, 23,002 events)" in line for line in lines)
    assert lines[3].startswith("1,001 turns (1,000 completed, 1 in flight) · 2,001 steps · "
                               "1,000 tool calls, 1,000 results")


def test_turn_ranges_draw_those_turns_and_one_line_for_the_rest(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """--turns 3..4: trees for turns 3 and 4, a line for each stretch left out, the cut once."""
    code, lines = _show(capsys, monkeypatch, "--turns", "3..4", str(OPEN_LOG))
    assert code == 0
    drawn = [line.split(" · ")[0] for line in lines if line.startswith("Turn ")]
    assert drawn == ["Turn 3", "Turn 4"]
    assert "seq 0..47 · not drawn: 48 events (turns 1..2)" in lines
    elided = lines.index("seq 94..238 · not drawn: 145 events (turns 5..11)")
    assert CUT_MARKER in lines[elided + 1]  # the cut lies in what was left out
    assert sum(CUT_MARKER in line for line in lines) == 1
    assert any(TREE in line for line in lines)


@pytest.mark.parametrize(("spelled", "turns"), [
    ("4", [4]), ("10..", [10, 11]), ("..2", [1, 2]), ("9..11", [9, 10, 11]),
    ("..", list(range(1, 12))),
])
def test_every_spelling_of_a_range(spelled: str, turns: list[int],
                                   capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """N, A.., ..B, A..B and .. select exactly those turns."""
    code, lines = _show(capsys, monkeypatch, "--turns", spelled, str(OPEN_LOG))
    assert code == 0
    assert [int(line.split(" · ")[0][5:]) for line in lines if line.startswith("Turn ")] == turns


def test_tail_and_all(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """--tail 2 draws what --turns 10..11 draws; --all draws what --turns .. draws."""
    assert _show(capsys, monkeypatch, "--tail", "2", str(OPEN_LOG)) == _show(
        capsys, monkeypatch, "--turns", "10..11", str(OPEN_LOG))
    assert _show(capsys, monkeypatch, "--tail", "50", str(OPEN_LOG)) == _show(
        capsys, monkeypatch, "--all", str(OPEN_LOG))
    assert _show(capsys, monkeypatch, "--all", str(OPEN_LOG)) == _show(
        capsys, monkeypatch, "--turns", "..", str(OPEN_LOG))


@pytest.mark.parametrize(("args", "words"), [
    (["--turns", "x"], "'x' is not a turn or a range of turns (use N, A..B, A.. or ..B)"),
    (["--turns", "3-5"], "'3-5' is not a turn or a range of turns"),
    (["--turns", ""], "'' is not a turn or a range of turns"),
    (["--turns", "0"], "'0': turns are numbered from 1"),
    (["--turns", "..0"], "'..0': turns are numbered from 1"),
    (["--turns", "7..3"], "'7..3' runs backwards (did you mean 3..7?)"),
    (["--tail", "0"], "'0' is not a number of turns (1 or more)"),
    (["--tail", "-2"], "'-2' is not a number of turns (1 or more)"),
    (["--turns", "1", "--tail", "1"], "not allowed with argument"),
    (["--all", "--tail", "1"], "not allowed with argument"),
])
def test_bad_ranges_are_usage_errors(args: list[str], words: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A range that is not one, runs backwards or names turn 0: usage and exit 2."""
    assert main(["show", *args, str(OPEN_LOG)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("usage: turnfork show")
    assert words in captured.err.splitlines()[-1]


def test_a_range_with_no_turn_is_one_error_line(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """--turns past the last turn, or --tail on a log without turns: exit 2, one line."""
    assert main(["show", "--turns", "50..60", str(OPEN_LOG)]) == 2
    assert capsys.readouterr().err == (f"turnfork: error: {OPEN_LOG}: --turns 50..60: no such "
                                       "turn (the log has turns 1..11)\n")
    empty = write_lines(tmp_path / "empty.jsonl", [])
    assert main(["show", "--tail", "1", str(empty)]) == 2
    assert capsys.readouterr().err.endswith("--tail 1: no such turn (the log has no turns)\n")


def test_fork_child_seed_is_one_line_unless_asked_for(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A child's 232 inherited events are one line in the summary and the trees; --seed draws
    them."""
    seed_line = ("seq 0..231 · the inherited seed from parent parent: 232 events, turns 1..10; "
                 "not drawn (--seed draws it)")
    for args in ([], ["--all"]):
        code, lines = _show(capsys, monkeypatch, *args, str(CHILD))
        assert code == 0
        assert seed_line in lines
        assert [line.split(" · ")[0] for line in lines if line.startswith("Turn ")] == ["Turn 11"]
    for args in (["--seed"], ["--all", "--seed"]):
        _, lines = _show(capsys, monkeypatch, *args, str(CHILD))
        assert seed_line not in lines
        assert sum(line.startswith("Turn ") for line in lines) == 11
    _, lines = _show(capsys, monkeypatch, "--turns", "3", str(CHILD))
    assert seed_line in lines and not any(line.startswith("Turn ") for line in lines)


def test_json_has_the_figures_the_seed_and_the_window(capsys: pytest.CaptureFixture[str]) -> None:
    """--json carries counts, the seed's facts and the drawn window with the entries."""
    assert main(["show", "--json", str(CHILD)]) == 0
    outline = json.loads(capsys.readouterr().out)
    assert outline["seed"] == {"length": 232, "completed_turns": 10, "parent": "parent",
                               "drawn": False}
    assert outline["counts"]["turns"] == 11 and outline["counts"]["tool_calls"] == 11
    assert outline["window"] == [0, 259]
    assert outline["entries"][0]["kind"] == "seed"
    assert main(["show", "--json", "--turns", "3..4", str(OPEN_LOG)]) == 0
    outline = json.loads(capsys.readouterr().out)
    assert outline["window"] == [48, 94]
    turns = [entry["turn"] for entry in outline["entries"] if entry["node"] == "turn"]
    assert turns == [3, 4]
    assert outline["entries"][0]["kind"] == "elided"


def test_a_summary_marks_an_invalid_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn that breaks a rule is never left out of a summary, and exit status is 3."""
    lines: list[str] = []
    for turn in range(1, 31):
        lines += turn_lines(len(lines), turn, f"c{turn}")
    lines[15 * 6 + 5] = lines[15 * 6 + 5].replace('"turn": 16', '"turn": 99')
    code, out = _show(capsys, monkeypatch, str(write_lines(tmp_path / "bad.jsonl", lines)))
    assert code == 3
    flagged = [line for line in out if line.startswith("Turn 16 ·")]
    assert len(flagged) == 1 and "✗ breaks a rule at seq 95" in flagged[0]
