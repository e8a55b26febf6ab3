"""Untrusted text is inert on a terminal: what a log, a model or a file name holds is printed with
every control escaped (issue 14, item 4), in show, check, seed, demo and every error line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _cli_helpers import Run, event, write_lines

from turnfork.shell.cli import main
from turnfork.shell.cli.terminal import inert, inert_json
from turnfork.shell.models import openai_chat
from turnfork.shell.models.scripted import Reply, ScriptedModel

#: Writes "rm -rf ~" to the clipboard (OSC 52), clears the screen, homes the cursor.
OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"
CLEAR = "\x1b[2J\x1b[H"
#: A carriage return to overwrite what was printed, a right-to-left override, C1's CSI, a BEL.
HOSTILE = f"{OSC52}{CLEAR}fine\rFORGED \u202eexe.txt \x9b31m\x07 \u2028next"
#: Everything a terminal may act on: C0 but the line break, DEL, C1, bidi controls, separators.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                 "\u2066-\u2069]")


def _hostile_log(tmp_path: Path) -> Path:
    """A session whose id, user text, tool name, call id and result all carry controls; the
    last call has no result yet, so `check` quotes its id."""
    message = {"content": [{"type": "text", "text": HOSTILE}], "source": {"kind": "user"},
               "role": "user", "id": "u1"}
    call = f"call{CLEAR}1"
    header = json.dumps({"type": "session", "version": 0, "id": f"s{OSC52}", "createdAt": 1,
                         "delegationDepth": 0})
    lines = [header,
             event("turn/start", 0, {"turn": 1}),
             event("step/start", 1, {"turn": 1, "step": 1}),
             event("user/message", 2, message, surfaceOp="append"),
             event("tool/call", 3, {"turn": 1, "step": 1, "callId": call,
                                    "name": f"ec{CLEAR}ho", "arguments": json.dumps(HOSTILE)})]
    return write_lines(tmp_path / "hostile.jsonl", lines)


def _run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str | Path,
         **env: str) -> Run:
    """``turnfork ARGS`` in this process, 400 columns wide, colour as ``env`` says."""
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"COLUMNS": "400", **env}.items():
        monkeypatch.setenv(name, value)
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)


def _assert_inert(text: str) -> None:
    assert RAW.search(text) is None, ascii(RAW.findall(text))


@pytest.mark.parametrize("args", [
    ["show"], ["show", "--all"], ["show", "--turns", "1"], ["show", "--all", "--plain"],
    ["check"], ["seed"],
])
def test_log_text_is_escaped_in_every_command(args: list[str], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """show (summary and trees), check and seed's report print no raw control at all."""
    path = _hostile_log(tmp_path)
    run = _run(capsys, monkeypatch, *args, path)
    assert run.code in (0, 1), run
    _assert_inert(run.stdout)
    _assert_inert(run.stderr)
    printed = run.stdout + run.stderr
    if args[0] == "show":
        assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in printed  # shown, visibly
        assert "fine FORGED \\u202eexe.txt \\x9b31m" in printed  # text on one line: CR is a space
        assert "session s\\x1b]52" in printed
    if args[0] == "check":
        assert "with call\\x1b[2J\\x1b[H1 still waiting" in printed


def test_forced_colour_adds_only_the_tool_s_own_styles(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On a (forced) colour terminal the only escapes are SGR colours (ESC [ … m), ours."""
    run = _run(capsys, monkeypatch, "show", "--all", _hostile_log(tmp_path), FORCE_COLOR="1")
    assert run.code == 0
    without_colours = re.sub("\x1b\\[[0-9;]*m", "", run.stdout)
    assert "\x1b[" in run.stdout
    _assert_inert(without_colours)


@pytest.mark.parametrize("args", [["show", "--json"], ["check", "--json"]])
def test_json_output_escapes_and_keeps_the_exact_text(
        args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--json: no raw control either, and a JSON reader gets the log's exact characters."""
    run = _run(capsys, monkeypatch, *args, _hostile_log(tmp_path))
    _assert_inert(run.stdout)
    decoded = run.json()
    if args[0] == "show":
        texts = json.dumps(decoded, ensure_ascii=False)
        assert "\u202eexe.txt" in json.loads(json.dumps(texts))
        assert decoded["header"]["id"] == f"s{OSC52}"
    else:
        assert decoded["pending_calls"] == [f"call{CLEAR}1"]


def test_error_lines_escape_type_names_and_file_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown event type and a file name, quoted in an error, stay one inert line."""
    weird = write_lines(tmp_path / "types.jsonl", [event(f"x{CLEAR}\r/y", 0, {})])
    run = _run(capsys, monkeypatch, "check", weird)
    assert run.code == 2
    _assert_inert(run.stderr)
    assert "x\\x1b[2J\\x1b[H\\r/y" in run.stderr and run.stderr.count("\n") == 1
    missing = tmp_path / f"no{OSC52}such.jsonl"
    run = _run(capsys, monkeypatch, "show", missing)
    assert run.code == 2
    _assert_inert(run.stderr)
    assert "no\\x1b]52;c;cm0gLXJmIH4=\\x07such.jsonl: cannot read" in run.stderr


def test_usage_errors_escape_the_arguments_they_quote(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's own error line quotes the bad argument; it is made inert too."""
    assert main(["show", "--turns", CLEAR, "x"]) == 2
    err = capsys.readouterr().err
    _assert_inert(err)
    assert "'\\x1b[2J\\x1b[H' is not a turn" in err


def test_seed_messages_escape_the_output_name(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`seed -o` into a name holding controls: the report quotes it escaped."""
    out = tmp_path / f"seed{CLEAR}.jsonl"
    assert main(["seed", str(_hostile_log(tmp_path)), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    _assert_inert(err)
    assert "seed\\x1b[2J\\x1b[H.jsonl" in err
    assert out.exists()


class _HostileModel(ScriptedModel):
    """Stands in for OpenAIChatModel: a model whose every answer carries terminal controls."""

    def __init__(self, model: str, **options: Any) -> None:
        super().__init__([Reply.text(HOSTILE)] * 3)

    async def aclose(self) -> None:
        return None


def test_demo_output_escapes_what_the_model_says(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`demo --model`: the picture and the error line show the model's controls escaped."""
    monkeypatch.setattr(openai_chat, "OpenAIChatModel", _HostileModel)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["demo", "--model", "m", "--plain"]) == 1
    captured = capsys.readouterr()
    _assert_inert(captured.out)
    _assert_inert(captured.err)
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in captured.out


def test_inert_escapes_exactly_the_controls() -> None:
    """Printable text (accents, CJK, emoji with joiners) is untouched; every control is not."""
    text = "café 東京 👩\u200d💻 →"
    assert inert(text) == text
    for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)]:
        assert inert(chr(code)) != chr(code)
    for char in "\u061c\u200e\u200f\u2028\u2029\u202a\u202e\u2066\u2069\ud800":
        assert inert(char) == f"\\u{ord(char):04x}"
    assert inert("a\nb\tc", lines=True) == "a\nb\tc"
    assert inert("a\nb\tc") == "a\\nb\\tc"
    assert json.loads(inert_json(json.dumps("\x9b\u202e", ensure_ascii=False))) == "\x9b\u202e"
