"""`check --strict` on a wire history, and request bodies whose history the provider keeps.

* `--strict` adds the providers' rules about one item's content (exit 3 naming the rule, the
  input described with "strict rules"); without it the same history is valid; a DSH log has no
  strict level (exit 2).
* A Responses body with `previous_response_id` (or `conversation`) is refused by `check`,
  `seed` and `show` alike (exit 2, nothing written): its history is the provider's. On cb407df
  `seed` wrote `{…, "previous_response_id": "resp_abc123", "input": []}` and said the child
  starts with no history.
* An `item_reference` is `stored-item`: `check` exit 3; `seed` writes the turns before it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from _cli_helpers import FORK_PARENT, Run

from turnfork.shell.cli import main

EMPTY_TEXT = [{"role": "user", "content": "hi"},
              {"role": "assistant", "content": [{"type": "text", "text": ""}]},
              {"role": "user", "content": "again"}, {"role": "assistant", "content": "ok"}]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    def run(*args: str | Path) -> Run:
        code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)
    return run


def _write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_strict_names_the_providers_rule(tmp_path: Path, cli: Callable[..., Run]) -> None:
    """Valid and closed at balance level (exit 0); invalid with --strict (exit 3)."""
    path = _write(tmp_path / "h.json", EMPTY_TEXT)
    assert cli("check", "--format", "anthropic", path).code == 0
    run = cli("check", "--strict", "--format", "anthropic", path)
    assert run.code == 3
    assert ("invalid: item 1: messages: text content blocks must be non-empty "
            "(messages.1.content.0) (rule: empty-text)") in run.stdout
    assert "Anthropic Messages (--format), a JSON list, strict rules" in run.stdout
    report = cli("check", "--strict", "--json", "--format", "anthropic", path).json()
    assert (report["violation"]["index"], report["violation"]["rule"]) == (1, "empty-text")
    assert report["completed_prefix_length"] == 0


def test_strict_reads_a_request_body_with_its_thinking(tmp_path: Path,
                                                       cli: Callable[..., Run]) -> None:
    """--strict keeps the request's own settings (Anthropic thinking)."""
    body = {"model": "claude", "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "content": "hello"}]}
    run = cli("check", "--strict", "--format", "anthropic", _write(tmp_path / "r.json", body))
    assert run.code == 0, run
    assert "thinking on (the request), strict rules" in run.stdout


def test_strict_refuses_a_dsh_log(cli: Callable[..., Run]) -> None:
    """A DSH log has no strict level: exit 2, saying so."""
    run = cli("check", "--strict", FORK_PARENT)
    assert run.code == 2
    assert "--strict checks a wire history's items" in run.stderr


@pytest.mark.parametrize("key", ["previous_response_id", "conversation"])
def test_a_body_continuing_a_stored_response_is_refused(key: str, tmp_path: Path,
                                                        cli: Callable[..., Run]) -> None:
    """check, seed and show: exit 2, the stored history named; seed writes nothing."""
    body = {"model": "gpt-4o", key: "resp_abc123",
            "input": [{"type": "function_call_output", "call_id": "call_1", "output": "ok"}]}
    path = _write(tmp_path / "r.json", body)
    out = tmp_path / "seed.json"
    for args in (("check",), ("seed", "-o", out), ("show", "--plain"),
                 ("check", "--format", "openai-responses")):
        run = cli(*args, path)
        assert run.code == 2, (args, run)
        assert f"the request continues stored {'response' if key[0] == 'p' else 'conversation'}"\
               f" resp_abc123 (`{key}`)" in run.stderr
        assert "can be neither checked nor cut here" in run.stderr
    assert not out.exists()


def test_an_item_reference_is_cut_before(tmp_path: Path, cli: Callable[..., Run]) -> None:
    """check: stored-item at the reference (exit 3); seed: the completed turn before it."""
    items = [{"role": "user", "content": "q"},
             {"type": "message", "role": "assistant", "content": "a"},
             {"type": "item_reference", "id": "msg_old"},
             {"role": "user", "content": "q2"}]
    path = _write(tmp_path / "h.json", items)
    run = cli("check", "--format", "openai-responses", path)
    assert run.code == 3 and "(rule: stored-item)" in run.stdout
    seed = cli("seed", "--format", "openai-responses", path)
    assert seed.code == 0 and json.loads(seed.stdout) == items[:2]
    assert "stored-item" in seed.stderr


def test_show_draws_the_pending_shapes(tmp_path: Path, cli: Callable[..., Run]) -> None:
    """show: a legacy function_call answered by its function message, a program answered by its
    program_output and an approval request still waiting (the history's open turn)."""
    chat = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": None,
             "function_call": {"name": "weather", "arguments": "{}"}},
            {"role": "function", "name": "weather", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."}]
    outline = cli("show", "--json", "--format", "openai-chat",
                  _write(tmp_path / "c.json", chat)).json()
    turns = [e for e in outline["entries"] if e["node"] == "turn"]
    assert [t["reason"] for t in turns] == ["completed"] and outline["state"] == "closed"
    items = [{"role": "user", "content": "q"},
             {"type": "program", "id": "prg_1", "call_id": "c1", "code": "1",
              "fingerprint": "f"},
             {"type": "program_output", "id": "po_1", "call_id": "c1", "result": "1",
              "status": "completed"},
             {"type": "message", "role": "assistant", "content": "done"},
             {"role": "user", "content": "deploy"},
             {"type": "mcp_approval_request", "id": "mcpr_1", "name": "deploy",
              "server_label": "ops", "arguments": "{}"}]
    run = cli("show", "--plain", "--all", "--format", "openai-responses",
              _write(tmp_path / "r.json", items))
    assert run.code == 0, run  # show shows an open history as it shows a closed one
    assert "mcp_approval_request mcpr_1" in run.stdout
    assert "no result yet" in run.stdout
    report = cli("show", "--json", "--format", "openai-responses", tmp_path / "r.json").json()
    turns = [e for e in report["entries"] if e["node"] == "turn"]
    assert [t["reason"] for t in turns] == ["completed", None] and report["cut"] == 4
