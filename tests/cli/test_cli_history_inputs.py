"""How `check`, `seed` and `show` take a wire history: the layouts (a JSON list, a request
body, JSONL with --format), detection and its refusals, --format and --thinking, stdin, and
the shared reader's bounds. A DSH log reads as it always did."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cli_helpers import FORK_PARENT, OPEN_LOG, REPO, Run, zstd_frames

from turnfork.shell.cli import histories, main
from turnfork.shell.logfile import ReadLimits, read_text

CHAT = [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny."}]
RESPONSES = [{"role": "user", "content": "Weather in Paris?"},
             {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"}]
PLAIN = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
#: An Anthropic tool loop, open, whose turn has no thinking block.
LOOP = [{"role": "user", "content": "Refactor utils.py"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "u.py"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def f(): ..."}]}]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    """`turnfork ARGS` in this process."""
    def run(*args: str | os.PathLike[str]) -> Run:
        code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)
    return run


def _json(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_a_json_list_is_detected(tmp_path: Path, cli: Callable[..., Run]) -> None:
    """A JSON list of Chat messages: detected, valid and closed, exit 0."""
    run = cli("check", "--json", _json(tmp_path / "h.json", CHAT))
    assert run.code == 0, run
    report = run.json()
    assert (report["format"], report["layout"], report["detected"]) == (
        "openai-chat", "list", True)
    assert (report["state"], report["items"], report["completed_prefix_length"]) == (
        "closed", 5, 5)


def test_a_request_body_is_detected_from_its_key(tmp_path: Path,
                                                 cli: Callable[..., Run]) -> None:
    """A request body with `input` is a Responses history; the call waits: open, exit 1."""
    body = {"model": "gpt-5", "input": RESPONSES, "tools": []}
    run = cli("check", _json(tmp_path / "request.json", body))
    assert run.code == 1, run
    first, second, _ = run.stdout.splitlines()
    assert first.endswith("open: item 1: No tool output found for function call c1 (rule: "
                          "unanswered-call); the history ends inside a turn (no turn has "
                          "completed, 2 items)")
    assert second == ("  input: OpenAI Responses input items (detected), a request body "
                      "(`input`); 2 items")


def test_jsonl_items_need_the_format(tmp_path: Path, cli: Callable[..., Run]) -> None:
    """JSONL is a DSH log unless --format says otherwise: with it, one item per line, and a
    violation names its line; without it, the DSH reader's error and a hint."""
    path = tmp_path / "h.jsonl"
    items = [*CHAT[:3], {"role": "user", "content": "Never mind."}]
    path.write_text("".join(json.dumps(item) + "\n\n" for item in items), encoding="utf-8")
    run = cli("check", "--format", "openai-chat", path)
    assert run.code == 3, run
    assert run.stdout.startswith(f"{path}:5: invalid: item 2: an assistant message with "
                                 "'tool_calls' must be followed by tool messages")
    refused = cli("check", path)
    assert refused.code == 2
    assert refused.stderr.startswith(f"turnfork: error: {path}:1: ")
    assert refused.stderr.rstrip().endswith(
        "(JSONL is read as a DSH log; for a wire history with one item per line, pass "
        "--format openai-chat, openai-responses or anthropic)")


def test_an_ambiguous_history_asks_for_the_format(tmp_path: Path,
                                                  cli: Callable[..., Run]) -> None:
    """Plain user and assistant text fits every format: exit 2, and the error says to pass
    --format; with --format it reads."""
    path = _json(tmp_path / "h.json", PLAIN)
    for command in ("check", "seed", "show"):
        run = cli(command, path)
        assert (run.code, run.stdout) == (2, ""), command
        assert run.stderr == (
            f"turnfork: error: {path}: a JSON list whose history format cannot be told: "
            "ambiguous: plain user and assistant messages are valid in openai-chat, "
            "openai-responses, anthropic; name the format (--format openai-chat, "
            "openai-responses or anthropic reads it as that format)\n")
    assert cli("check", "--format", "anthropic", path).code == 0


def test_mixed_formats_are_refused(tmp_path: Path, cli: Callable[..., Run]) -> None:
    """A Chat `tool` message among Responses items: not detected, exit 2, naming the item."""
    path = _json(tmp_path / "h.json", [*RESPONSES, {"role": "tool", "tool_call_id": "c1",
                                                    "content": "x"}])
    run = cli("check", path)
    assert run.code == 2
    assert "mixed formats: item 2 fits only openai-chat" in run.stderr


def test_a_named_format_reads_by_its_rules(tmp_path: Path, cli: Callable[..., Run]) -> None:
    """--format anthropic on a Chat history: read by Anthropic's rules (a `developer` role is
    not one of them): invalid, exit 3."""
    developer = [{"role": "developer", "content": "Be brief."}, CHAT[1]]
    run = cli("check", "--json", "--format", "anthropic", _json(tmp_path / "h.json", developer))
    assert run.code == 3
    report = run.json()
    assert (report["detected"], report["violation"]["index"], report["violation"]["rule"]) == (
        False, 0, "shape")


def test_a_named_format_needs_its_key_in_a_request(tmp_path: Path,
                                                   cli: Callable[..., Run]) -> None:
    """--format openai-responses on a body holding `messages`: exit 2, saying where it looked."""
    path = _json(tmp_path / "request.json", {"messages": CHAT})
    run = cli("check", "--format", "openai-responses", path)
    assert run.code == 2
    assert run.stderr == (f"turnfork: error: {path}: --format openai-responses: the request "
                          "body has no `input` list (a openai-responses request holds its "
                          "history there)\n")


def test_dsh_logs_read_as_before(cli: Callable[..., Run]) -> None:
    """A DSH log, with or without --format dsh, is what it always was; a wire format named
    for it reads its records as items (they break that format's rules)."""
    for args in ([OPEN_LOG], ["--format", "dsh", OPEN_LOG]):
        run = cli("check", "--json", *args)
        assert (run.code, run.json()["format"], run.json()["events"]) == (1, "events-jsonl", 239)
    assert cli("check", "--format", "openai-chat", FORK_PARENT).code == 3


def test_format_dsh_refuses_a_history(tmp_path: Path, cli: Callable[..., Run]) -> None:
    """--format dsh on a JSON list: the DSH reader's error, exit 2; without its newline the
    list is the log's only line, torn by the DSH rule: left out, and the log is empty."""
    path = _json(tmp_path / "h.json", CHAT)
    path.write_bytes(path.read_bytes() + b"\n")
    run = cli("check", "--format", "dsh", path)
    assert (run.code, run.stderr) == (
        2, f"turnfork: error: {path}:1: Expected `object`, got `array`\n")
    path.write_bytes(path.read_bytes()[:-1])
    run = cli("check", "--format", "dsh", path)
    assert run.code == 0 and run.stderr == ""
    assert run.stdout.startswith(f"{path}: empty: no events (its only line is left out: left "
                                 "out line 1 (")


def test_thinking_comes_from_the_request_or_the_option(tmp_path: Path,
                                                       cli: Callable[..., Run]) -> None:
    """An open tool loop without thinking: fine when thinking is off or unsaid; with the
    request's `thinking` enabled, or --thinking on, the thinking-first rule names item 1."""
    listed = _json(tmp_path / "h.json", LOOP)
    body = _json(tmp_path / "request.json", {"thinking": {"type": "enabled",
                                                          "budget_tokens": 2048},
                                             "messages": LOOP})
    unsaid = cli("check", "--json", listed).json()
    assert (unsaid["thinking"], unsaid["end_violation"]) == (None, None)
    for args in ([body], ["--thinking", "on", listed]):
        report = cli("check", "--json", *args).json()
        assert report["thinking"] is True
        assert (report["end_violation"]["index"], report["end_violation"]["rule"]) == (
            1, "thinking-first")
    off = cli("check", "--json", "--thinking", "off", body).json()
    assert (off["thinking"], off["end_violation"]) == (False, None)
    assert "thinking off (--thinking)" in off["source"]


def test_thinking_is_refused_for_anything_but_anthropic(tmp_path: Path,
                                                        cli: Callable[..., Run]) -> None:
    """--thinking with a Chat history or a DSH log: exit 2, saying why."""
    chat = cli("check", "--thinking", "on", _json(tmp_path / "h.json", CHAT))
    assert chat.code == 2
    assert chat.stderr.endswith("--thinking is the setting of an Anthropic request, and this "
                                "is OpenAI Chat messages\n")
    log = cli("seed", "--thinking", "off", OPEN_LOG)
    assert log.code == 2 and log.stderr.endswith("and a DSH log\n")


def test_stdin_and_zstd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                        cli: Callable[..., Run]) -> None:
    """`-` reads a history from stdin (named <stdin>); a zstd file holding one is read too."""
    data = json.dumps(CHAT).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    report = cli("check", "--json", "-").json()
    assert (report["path"], report["file"], report["format"]) == ("-", "<stdin>", "openai-chat")
    packed = tmp_path / "h.json.zstd"
    packed.write_bytes(zstd_frames(data[:40], data[40:]))
    report = cli("check", "--json", packed).json()
    assert (report["state"], report["source"]) == (
        "closed", "OpenAI Chat messages (detected), a JSON list, zstd")


@pytest.mark.parametrize(("text", "where", "words"), [
    (b'[{"role": "user",\n "content": "hi"},\n', ":3: ", "not JSON: Expecting value (line 3"),
    (b'[{"role": "user", "content": NaN}]', ": ", "not JSON: NaN is not JSON"),
    (b'[{"role": "user", "content": "\xff"}]', ":1: ", "not UTF-8 (byte 30)"),
])
def test_broken_json_is_one_line(text: bytes, where: str, words: str, tmp_path: Path,
                                 cli: Callable[..., Run]) -> None:
    """A JSON list that does not parse: one error line with its line, exit 2."""
    path = tmp_path / "h.json"
    path.write_bytes(text)
    run = cli("check", "--format", "openai-chat", path)
    assert (run.code, run.stdout) == (2, "")
    assert run.stderr.startswith(f"turnfork: error: {path}{where}{words}"), run.stderr
    if not text.startswith(b'[{"role": "user", "content": "\xff'):
        assert cli("check", path).code == 2  # detected as a history too: its error, not DSH's


def test_a_device_and_a_fifo_are_refused_at_once(tmp_path: Path,
                                                 cli: Callable[..., Run]) -> None:
    """--format names a history: /dev/zero and a FIFO are refused from their file type, in a
    process that would otherwise wait."""
    run = cli("check", "--format", "openai-chat", "/dev/zero")
    assert run.code == 2 and "character device" in run.stderr
    fifo = tmp_path / "h.json"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "turnfork", "check", "--format", "anthropic",
                           str(fifo)], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2 and "FIFO" in done.stderr, done


def test_a_history_over_the_read_limit_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  cli: Callable[..., Run]) -> None:
    """The reader's limits bound a history as they bound a log (here a 100-byte limit)."""
    def small(path: str) -> object:
        return read_text(path, limits=ReadLimits(max_bytes=100))

    monkeypatch.setattr(histories, "read_text", small)
    run = cli("check", "--format", "openai-chat", _json(tmp_path / "h.json", CHAT))
    assert run.code == 2
    assert "over the read limit of 100 bytes (ReadLimits.max_bytes)" in run.stderr


def test_the_format_choices_are_dsh_and_the_cores() -> None:
    """--format offers dsh and every wire format core.formats knows, in its order."""
    from turnfork.core.formats import FORMAT_NAMES
    from turnfork.shell.cli.app import INPUT_FORMATS

    assert ("dsh", *FORMAT_NAMES) == INPUT_FORMATS
