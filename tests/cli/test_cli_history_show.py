"""`turnfork show` of a wire history: items drawn with their roles, tool calls with their
results beneath them, reasoning, thinking and server tool use, the cut marked; untrusted text
inert; a summary by default that fits a screen, turns drawn with --turns/--tail/--all."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cli_helpers import CUT_MARKER, Run

from turnfork.shell.cli import main

RESPONSES = [
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris and Rome?"},
                                 {"type": "input_image", "image_url": "data:image/png;base64,"}]},
    {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA",
     "summary": [{"type": "summary_text", "text": "Two cities: two calls."}]},
    {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "weather",
     "arguments": '{"city":"Paris"}'},
    {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "weather",
     "arguments": '{"city":"Rome"}'},
    {"type": "function_call_output", "call_id": "c2", "output": "rainy"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "paris events"}},
    {"type": "message", "role": "assistant",
     "content": [{"type": "output_text", "text": "Paris sunny, Rome rainy."}]},
    {"role": "user", "content": "And Oslo?"},
    {"type": "function_call", "id": "fc_3", "call_id": "c3", "name": "weather",
     "arguments": '{"city":"Oslo"}'},
]
ANTHROPIC = [
    {"role": "user", "content": "Search, then read notes.md"},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I will search first.", "signature": "sig"},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
         "input": {"query": "turnfork"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": [{"type": "web_search_result", "url": "https://x.test", "title": "x"}]},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file",
         "input": {"path": "notes.md"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                  "content": "no such file", "is_error": True}]},
    {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xx"},
                                      {"type": "text", "text": "notes.md does not exist."}]},
]


@pytest.fixture
def show(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
         tmp_path: Path) -> Callable[..., Run]:
    """`turnfork show --plain ARGS HISTORY` in this process, 100 columns."""
    monkeypatch.setenv("COLUMNS", "100")

    def run(history: list[Any], *args: str) -> Run:
        path = tmp_path / "history.json"
        path.write_text(json.dumps(history), encoding="utf-8")
        code = main(["show", "--plain", *args, str(path)])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)
    return run


def _body(run: Run) -> list[str]:
    """The drawing after its header (up to its first blank line)."""
    lines = [line.rstrip() for line in run.stdout.splitlines()]
    return lines[lines.index("") + 1:]


def test_responses_items_calls_paired_and_the_cut(show: Callable[..., Run]) -> None:
    """Reasoning, parallel calls each with its output beneath (answered out of order), a
    hosted web search, and the in-flight turn after the cut with its call waiting."""
    run = show(RESPONSES, "--all")
    assert run.code == 0, run.stderr
    assert run.stdout.splitlines()[0] == "openai-responses history"
    body = _body(run)
    assert f" {CUT_MARKER} (items 0..8, 9 items) " in body.pop(10)
    assert body[:13] == [
        "Turn 1 · completed · items 0..8",
        "├── 0 developer: \"Be brief.\"",
        "├── 1 user: \"Weather in Paris and Rome? [image]\"",
        "├── 2 reasoning (summary \"Two cities: two calls.\"; encrypted)",
        "├── 3 weather({\"city\":\"Paris\"})",
        "│   └── 6 → \"sunny\"",
        "├── 4 weather({\"city\":\"Rome\"})",
        "│   └── 5 → \"rainy\"",
        "├── 7 web_search_call \"paris events\" (completed)",
        "└── 8 assistant: \"Paris sunny, Rome rainy.\"",
        "a fork child is seeded with the items above; nothing below is part of any seed",
        "Turn 2 · in flight, not part of any seed · items 9..10",
        "├── 9 user: \"And Oslo?\"",
    ]
    assert body[-6:-2] == [
        "├── open: item 10: No tool output found for function call c3 (rule: unanswered-call)",
        "└── 10 weather({\"city\":\"Oslo\"})",
        "    └── … no result yet (the history ends here)", ""]
    assert " ".join(body[-2:]).endswith(
        "open: item 10: No tool output found for function call c3 (rule: unanswered-call); "
        "the history ends inside a turn (2 items after the last completed turn)")


def test_anthropic_thinking_server_tools_and_error_results(show: Callable[..., Run]) -> None:
    """Thinking by length, a server tool's result under its use, a client call under the
    message that made it with its error result beneath."""
    run = show(ANTHROPIC, "--all")
    assert _body(run)[:8] == [
        "Turn 1 · completed · items 0..3",
        "├── 0 user: \"Search, then read notes.md\"",
        "├── 1 assistant (calls read_file; server tool web_search; thinking 20 chars)",
        "│   ├── web_search({\"query\":\"turnfork\"}) · server tool",
        "│   │   └── 1 → \"web_search_tool_result: 1 result\"",
        "│   └── read_file({\"path\":\"notes.md\"})",
        "│       └── 2 ✗ → \"no such file\"",
        "└── 3 assistant: \"notes.md does not exist.\" (1 redacted thinking block)",
    ]


def test_the_summary_has_the_figures(show: Callable[..., Run]) -> None:
    """By default: the figures, a line per turn, the cut with what lies beyond, the verdict."""
    run = show(RESPONSES)
    assert run.code == 0
    body = _body(run)
    figures = " ".join(body[:body.index("")])
    assert figures == ("11 items · 2 turns (1 completed, 1 in flight) · 3 steps · 3 tool "
                       "calls, 2 results · 1 assistant message · reasoning or thinking in 1 "
                       "item · 1 server tool call")
    turns = body[body.index("") + 1:]
    assert turns[0].startswith("Turn 1 · completed · items 0..8 · 2 steps, 2 tool calls "
                               "(weather) · \"Weather in Paris")
    assert turns[3] == "excluded: 2 items after the last completed turn (items 9..10)"
    assert turns[4] == ("Turn 2 · in flight · items 9..10 · 1 step (open), 1 tool call "
                        "(weather), 1 waiting · \"And Oslo?\"")


def _long(turns: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for number in range(1, turns + 1):
        items += [{"role": "user", "content": f"question {number}"},
                  {"role": "assistant", "content": None, "tool_calls": [
                      {"id": f"call_{number}", "type": "function",
                       "function": {"name": "lookup", "arguments": "{}"}}]},
                  {"role": "tool", "tool_call_id": f"call_{number}", "content": "found"},
                  {"role": "assistant", "content": f"answer {number}"}]
    return items


def test_a_long_history_summary_fits_a_screen(show: Callable[..., Run]) -> None:
    """40 turns: the first 3 and the last 6 listed, one line for the 31 between."""
    run = show(_long(40))
    body = _body(run)
    assert len(run.stdout.splitlines()) < 25
    assert body[2].startswith("Turn 1 · completed · items 0..3 · 2 steps, 1 tool call (lookup)")
    assert "… turns 4..34 not listed: 31 turns (31 completed); --turns 4..34 draws them" in body
    assert body[-2] == "valid and closed: 160 items, ending at a completed turn"


def test_turns_and_tail_choose_turns(show: Callable[..., Run]) -> None:
    """--turns draws those turns, one line for each stretch left out; --tail the last ones;
    a range with no turn is one error line."""
    run = show(_long(5), "--turns", "2..3")
    body = _body(run)
    assert body[0] == "items 0..3 · not drawn: 4 items (turn 1)"
    assert body[1] == "Turn 2 · completed · items 4..7"
    assert "items 12..19 · not drawn: 8 items (turns 4..5)" in body
    assert f"{CUT_MARKER} (items 0..19, 20 items)" in run.stdout
    tail = show(_long(5), "--tail", "1")
    assert _body(tail)[:2] == ["items 0..15 · not drawn: 16 items (turns 1..4)",
                               "Turn 5 · completed · items 16..19"]
    missing = show(_long(5), "--turns", "9..")
    assert (missing.code, missing.stdout) == (2, "")
    assert missing.stderr.endswith("--turns 9..: no such turn (the history has turns 1..5)\n")


def test_seed_is_refused(show: Callable[..., Run]) -> None:
    """--seed draws a fork child's inherited seed; a wire history has none: exit 2."""
    run = show(ANTHROPIC, "--seed")
    assert run.code == 2
    assert run.stderr.endswith("--seed draws a fork child's inherited seed, and a wire "
                               "history has none\n")


def test_untrusted_text_is_inert(show: Callable[..., Run],
                                 capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Terminal controls in content, tool names and ids are shown escaped, in the picture and
    in check's verdict; --json keeps the exact characters."""
    hostile = [{"role": "user", "content": "hi\x1b[2J there\u202e"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "call\x07", "type": "function",
                    "function": {"name": "rm\x1b]52;c;aGk=\x07", "arguments": "{}"}}]}]
    run = show(hostile, "--all")
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout and "\u202e" not in run.stdout
    assert '0 user: "hi\\x1b[2J there\\u202e"' in run.stdout
    assert "rm\\x1b]52;c;aGk=\\x07({})" in run.stdout
    assert main(["check", str(tmp_path / "history.json")]) == 1
    checked = capsys.readouterr().out
    assert "call\\x07" in checked and "\x07" not in checked
    assert main(["show", "--json", str(tmp_path / "history.json")]) == 0
    outline = capsys.readouterr().out
    assert "\x1b" not in outline
    turn = json.loads(outline)["entries"][1]
    assert turn["entries"][0]["text"] == 'user: "hi\x1b[2J there\u202e"'
