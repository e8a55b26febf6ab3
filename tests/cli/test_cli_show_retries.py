"""`turnfork show` draws a retried model call (DSH's empty-response-retry log): the failed
call's chunks on their own, the retry with its number, delay and failure, its start, and the
retried call's message with only its own chunks."""

from __future__ import annotations

import pytest
from _cli_helpers import REPO

from turnfork.shell.cli import main

FIXTURE = (REPO / "tests" / "fixtures" / "dsh"
           / "examples__acp-agent__tests__snapshots__empty-response-retry__session.jsonl")


def test_show_draws_the_failed_call_the_retry_and_the_answer(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["show", str(FIXTURE), "--all", "--plain", "--no-pager"]) == 0
    lines = [line.strip(" │├└─") for line in capsys.readouterr().out.splitlines()]
    assert ("9 ✗ 2 streamed chunks, no assistant/message (finish error EMPTY_RESPONSE)"
            in lines)
    assert ('11 llm/retry 1 of 2 in 1 ms after EMPTY_RESPONSE: "model returned a completed '
            'response with no content"') in lines
    assert "12 llm/retry-started: retry 1" in lines
    assert '18 assistant: "Recovered." (streamed in 5 chunks)' in lines
