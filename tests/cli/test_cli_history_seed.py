"""`turnfork seed` of a wire history: the completed-turn prefix in the input's own shape (a list
stays a list, a request body keeps its other keys, JSONL stays JSONL), written atomically,
never over its input, with what it excluded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _cli_helpers import run_cli

from turnfork.shell.cli import main

#: Turn 1 completes at item 2; turn 2's call at item 4 still waits for its result.
HISTORY = [
    {"role": "user", "content": "Remember: the colour is BLUE."},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "Ask a subagent which colour."},
    {"role": "assistant", "content": [{"type": "text", "text": "Delegating."}]},
    {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "subagent",
         "input": {"prompt": "Which colour?"}}]},
]


def _write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_seed_to_stdout_and_what_it_excluded(tmp_path: Path) -> None:
    """stdout holds the two items of turn 1 as a JSON list; stderr says what was left out."""
    run = run_cli("seed", _write(tmp_path / "h.json", HISTORY))
    assert run.code == 0, run.stderr
    assert json.loads(run.stdout) == HISTORY[:2]
    assert run.stderr.splitlines() == [
        "seed: 2 items (items 0..1) → stdout",
        "excluded: 3 items after the last completed turn (items 2..4)",
        "the excluded turn is in flight: item 4: `tool_use` ids were found without "
        "`tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a "
        "corresponding `tool_result` block in the next message (rule: unanswered-call)",
    ]


def test_a_request_body_keeps_its_other_keys(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The body's keys stay, in their order, with `messages` cut; the seed checks closed."""
    body = {"model": "claude-sonnet-4-5", "system": "Be brief.", "messages": HISTORY,
            "max_tokens": 512}
    out = tmp_path / "seed.json"
    assert main(["seed", str(_write(tmp_path / "request.json", body)), "-o", str(out)]) == 0
    written = json.loads(out.read_text(encoding="utf-8"))
    assert list(written) == ["model", "system", "messages", "max_tokens"]
    assert written == {**body, "messages": HISTORY[:2]}
    capsys.readouterr()
    assert main(["check", "--format", "anthropic", str(out)]) == 0


def test_jsonl_stays_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One item per line in, one item per line out."""
    given = tmp_path / "h.jsonl"
    given.write_text("".join(json.dumps(item) + "\n" for item in HISTORY), encoding="utf-8")
    out = tmp_path / "seed.jsonl"
    assert main(["seed", "--format", "anthropic", str(given), "-o", str(out)]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == HISTORY[:2]


def test_no_completed_turn_gives_an_empty_seed(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing completed: an empty list, and the report says the child starts like a spawn."""
    out = tmp_path / "seed.json"
    given = _write(tmp_path / "h.json", HISTORY[2:])
    assert main(["seed", "--format", "anthropic", str(given), "-o", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == []
    assert capsys.readouterr().err.startswith(
        f"seed: empty, no turn has completed (a fork child starts with no history, like a "
        f"spawn) → {out}\n")


def test_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--json (with -o): the seed's length, what was excluded, the rule the end breaks."""
    out = tmp_path / "seed.json"
    assert main(["seed", "--json", str(_write(tmp_path / "h.json", HISTORY)), "-o",
                 str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["format"], report["layout"], report["output"]) == (
        "anthropic", "list", str(out))
    assert (report["seed_length"], report["excluded"]) == (2, {"items": 3, "first_index": 2})
    assert report["tail_violation"] is None
    assert (report["end_violation"]["index"], report["end_violation"]["rule"]) == (
        4, "unanswered-call")


def test_a_broken_tail_warns_but_seeds(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A rule broken after the cut: the seed is written (exit 0) and a warning names it."""
    broken = [*HISTORY, {"role": "user", "content": "Hurry."}]
    out = tmp_path / "seed.json"
    assert main(["seed", str(_write(tmp_path / "h.json", broken)), "-o", str(out)]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == HISTORY[:2]
    warning = capsys.readouterr().err.splitlines()[-1]
    assert warning.startswith(f"warning: {tmp_path / 'h.json'}: the excluded part breaks a "
                              "rule: item 4: `tool_use` ids were found without")


@pytest.mark.parametrize("spelling", ["same", "dot", "link"])
def test_seed_onto_its_input_is_refused(spelling: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """-o naming the input (the path, ./path, a symlink): exit 2, the input untouched."""
    given = _write(tmp_path / "h.json", HISTORY)
    before = given.read_bytes()
    out = {"same": str(given), "dot": str(tmp_path / "." / "h.json"),
           "link": str(tmp_path / "link.json")}[spelling]
    if spelling == "link":
        Path(out).symlink_to(given)
    assert main(["seed", str(given), "-o", out]) == 2
    assert capsys.readouterr().err == (
        f"turnfork: error: {out}: is the input history ({given}): writing the seed over it "
        "would destroy the history; nothing written\n")
    assert given.read_bytes() == before


def test_an_unwritable_out_writes_nothing(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """OUT in a missing directory: exit 2, one error line, nothing left behind."""
    out = tmp_path / "missing" / "seed.json"
    assert main(["seed", str(_write(tmp_path / "h.json", HISTORY)), "-o", str(out)]) == 2
    assert capsys.readouterr().err.startswith(f"turnfork: error: {out}: cannot write: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.json"]
