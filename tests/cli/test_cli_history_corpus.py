"""The broken-history corpus through the command line: `check` names each defect where the
fixture says (index, rule, the provider's complaint), `seed` writes the completed-turn prefix
the fixture gives, which checks closed, and `show` marks the defect and the cut.

They run in this process through `main` (quick), and `check` also as a real `turnfork`
process for one fixture per format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_helpers import (
    BROKEN_HISTORIES,
    Run,
    assert_check_names_the_defect,
    core_state,
    history_file,
    load_fixture,
    run_cli,
)

from turnfork.shell.cli import main

CORPUS = BROKEN_HISTORIES[0].parent


@pytest.mark.parametrize("path", BROKEN_HISTORIES, ids=lambda p: p.stem)
def test_check_names_the_defect(path: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """`check --json`: the detected format, the defect's index and rule, the cut; exit 3 when
    an item breaks a rule, 1 when only where the history ends does."""
    fixture = load_fixture(path)
    code = main(["check", "--json", str(history_file(tmp_path, fixture))])
    captured = capsys.readouterr()
    assert_check_names_the_defect(fixture, Run(code, captured.out, captured.err))


@pytest.mark.parametrize("name", ["chat-cancel-during-tool-call",
                                  "responses-replayed-orphan-call",
                                  "anthropic-thinking-stripped-from-tool-loop"])
def test_check_as_a_process(name: str, tmp_path: Path) -> None:
    """The same through a real `turnfork` process, one fixture per format (all fixtures:
    test_cli_history_corpus_processes.py, a slow family)."""
    fixture = load_fixture(CORPUS / f"{name}.json")
    assert_check_names_the_defect(
        fixture, run_cli("check", "--json", history_file(tmp_path, fixture)))


@pytest.mark.parametrize("path", BROKEN_HISTORIES, ids=lambda p: p.stem)
def test_seed_writes_the_prefix_the_corpus_gives(path: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`seed -o OUT`: the fixture's first `cut` items, in the input's own shape, then
    `check --format` of OUT says closed (exit 0)."""
    fixture = load_fixture(path)
    given = history_file(tmp_path, fixture)
    out = tmp_path / "seed.json"
    assert main(["seed", str(given), "-o", str(out)]) == 0
    report = capsys.readouterr().err
    cut = fixture["expected"]["cut"]
    written = json.loads(out.read_text(encoding="utf-8"))
    if "thinking" in fixture:  # a request body keeps its other keys
        original = json.loads(given.read_text(encoding="utf-8"))
        assert list(written) == list(original)
        assert {k: v for k, v in written.items() if k != "messages"} == {
            k: v for k, v in original.items() if k != "messages"}
        written = written["messages"]
    assert written == fixture["history"][:cut]
    left = len(fixture["history"]) - cut
    assert f"excluded: {left} item{'s' if left > 1 else ''} after the last completed turn" in report
    assert main(["check", "--format", fixture["format"], str(out)]) == 0
    assert "valid and closed" in capsys.readouterr().out


@pytest.mark.parametrize("path", BROKEN_HISTORIES, ids=lambda p: p.stem)
def test_show_marks_the_defect_and_the_cut(path: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`show --json`: the cut item at the fixture's cut, the defect marked at its index; the
    drawing (`--all --plain`) shows both."""
    fixture = load_fixture(path)
    given = history_file(tmp_path, fixture)
    expected = fixture["expected"]
    state = core_state(fixture)
    assert main(["show", "--json", str(given)]) == (3 if state == "invalid" else 0)
    outline = json.loads(capsys.readouterr().out)
    cuts = [entry for entry in outline["entries"] if entry.get("kind") == "cut"]
    assert [cut["seq"] for cut in cuts] == [expected["cut"]]
    marked = [item for turn in outline["entries"] if turn["node"] == "turn"
              for item in turn["entries"] if item["kind"] in ("violation", "pending")]
    assert [(item["seq"], item["kind"]) for item in marked] == [
        (expected["index"], "violation" if state == "invalid" else "pending")]
    assert f"(rule: {expected['rule']})" in marked[0]["text"]
    assert main(["show", "--all", "--plain", "--no-pager", str(given)]) in (0, 3)
    drawn = capsys.readouterr().out
    assert "completed-turn prefix ends here" in drawn
    mark = (f"{expected['index']} ✗ invalid here: " if state == "invalid"
            else f"open: item {expected['index']}: ")
    assert mark in drawn
