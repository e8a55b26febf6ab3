"""A DSH log the reader refuses past its first line is not read again, whole, as a candidate
wire history: a history is one JSON document, and a file whose first line is a record of its
own is none. The second read held the whole file in memory (a 1 GiB log broken at line 2 cost
gigabytes, and could end in "out of memory" instead of the log's own error)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _cli_helpers import event, turn_lines, write_lines

from turnfork.shell.cli import inputs
from turnfork.shell.cli.app import main


def test_a_log_broken_at_line_2_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    lines = turn_lines(0, 1, "c1")
    lines[1] = lines[1].replace('"seq": 1', '"sseq": 1')
    log = write_lines(tmp_path / "broken.jsonl", lines)
    reads: list[str] = []
    real = inputs.read_text

    def counted_read_text(path: str) -> object:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(inputs, "read_text", counted_read_text)
    assert main(["check", str(log)]) == 2
    assert capsys.readouterr().err.startswith(f"turnfork: error: {log}:2: ")
    assert reads == []


def test_a_history_refused_at_line_1_is_still_detected(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       ) -> None:
    """A pretty-printed JSON history fails the DSH reader at line 1, and is read as one."""
    history = tmp_path / "h.json"
    history.write_text('[\n  {"role": "tool", "tool_call_id": "c", "content": "x"}\n]\n')
    assert main(["check", str(history)]) == 3
    assert "OpenAI Chat messages (detected)" in capsys.readouterr().out


def test_a_one_line_event_log_with_a_role_still_gets_the_hint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write_lines(tmp_path / "h.jsonl", ['{"role": "user", "content": "hi"}',
                                             event("turn/start", 0, {"turn": 1})])
    assert main(["check", str(log)]) == 2
    assert "pass --format openai-chat" in capsys.readouterr().err
