"""Shared helpers of the CLI tests: running ``turnfork``, fixture paths, small logs on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "dsh"
#: DSH's fork parent: 2 completed turns, closed, projected fixture.
FORK_PARENT = FIXTURES / ("examples__acp-agent__tests__snapshots__subagent-fork-in-process"
                          "__session.jsonl")
#: A real runtime dump that ends inside turn 11 (232 events up to the last turn/end).
OPEN_LOG = FIXTURES / "generated" / "K10-parent.events.jsonl"
#: Every session log fixture, projected and generated.
ALL_FIXTURES = sorted(p for p in FIXTURES.rglob("*.jsonl"))
CUT_MARKER = "completed-turn prefix ends here"


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(*args: str | os.PathLike[str], cwd: Path = REPO, columns: int = 100,
            **env: str) -> Run:
    """``python -m turnfork ARGS`` in a child process with a clean colour environment."""
    child_env = {k: v for k, v in os.environ.items()
                 if k not in {"NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "TERM"}}
    child_env.update({"COLUMNS": str(columns), "PYTHONIOENCODING": "utf-8", **env})
    done = subprocess.run([sys.executable, "-m", "turnfork", *map(str, args)], cwd=cwd,
                          env=child_env, capture_output=True, text=True, timeout=60,
                          check=False)
    return Run(done.returncode, done.stdout, done.stderr)


def event(kind: str, seq: int, data: dict[str, Any], **extra: Any) -> str:
    return json.dumps({"type": kind, "seq": seq, "time": 1000 + seq, "data": data, **extra})


def _tool_result(seq: int, turn: int, call_id: str, *, text: str, cites: int) -> str:
    step = 1
    message = {"source": {"kind": "tool", "callId": call_id},
               "content": [{"type": "tool-result", "toolCallId": call_id, "isError": False,
                            "content": [{"type": "text", "text": text}]}],
               "role": "user", "id": f"result-{call_id}"}
    return event("tool/result", seq, {"turn": turn, "step": step, "message": message},
                 sourceEventSeqs=[cites], surfaceOp="append")


def turn_lines(first_seq: int, turn: int, call_id: str, *, close: bool = True) -> list[str]:
    """One turn with one step and one tool call and its result (6 events; 3 when open)."""
    lines = [event("turn/start", first_seq, {"turn": turn}),
             event("step/start", first_seq + 1, {"turn": turn, "step": 1}),
             event("tool/call", first_seq + 2, {"turn": turn, "step": 1, "callId": call_id,
                                                "name": "echo", "arguments": '{"x":1}'})]
    if close:
        lines += [_tool_result(first_seq + 3, turn, call_id, text=f"echoed {call_id}",
                               cites=first_seq + 2),
                  event("step/end", first_seq + 4, {"turn": turn, "step": 1}),
                  event("turn/end", first_seq + 5,
                        {"turn": turn, "reason": {"kind": "completed"}})]
    return lines


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def zstd_frames(*chunks: bytes) -> bytes:
    """A DSH-style ``.zstd`` file: one independent checksummed frame per chunk."""
    compressor = zstandard.ZstdCompressor(write_checksum=True)
    return b"".join(compressor.compress(chunk) for chunk in chunks)


def session_zstd(source: Path) -> bytes:
    """``source`` (a session.jsonl text) as zstd frames: the header line, then batches."""
    text = source.read_bytes()
    header, _, rest = text.partition(b"\n")
    middle = rest.rfind(b"\n", 0, len(rest) // 2) + 1
    return zstd_frames(header + b"\n", rest[:middle], rest[middle:])


#: Real-world broken wire histories: each names its format, the defect's index and rule, and
#: the length of its completed-turn prefix (tests/fixtures/broken_histories/README.md).
BROKEN_HISTORIES = sorted((REPO / "tests" / "fixtures" / "broken_histories").glob("*.json"))


def load_fixture(path: Path) -> dict[str, Any]:
    fixture: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return fixture


def history_file(directory: Path, fixture: dict[str, Any], name: str = "history.json") -> Path:
    """A broken-history fixture as a CLI input: its item list, or, when the shape depends on
    the request's thinking setting, an Anthropic request body that says it."""
    document: Any = fixture["history"]
    if "thinking" in fixture:
        setting = {"type": "enabled", "budget_tokens": 1024} if fixture["thinking"] else {
            "type": "disabled"}
        document = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "thinking": setting,
                    "messages": fixture["history"]}
    path = directory / name
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


def core_state(fixture: dict[str, Any]) -> str:
    """What the core says of a broken-history fixture: an item breaks a rule (``invalid``), or
    only where the history ends does (``open``)."""
    from turnfork.core.formats import anthropic, decode_history

    if fixture["format"] == "anthropic":
        history = anthropic.decode_history(fixture["history"], thinking=fixture.get("thinking"))
    else:
        history = decode_history(fixture["history"], fixture["format"]).unwrap()
    return "invalid" if history.violation is not None else "open"


def assert_check_names_the_defect(fixture: dict[str, Any], run: Run) -> None:
    """``check --json`` of a broken-history fixture: the detected format, the defect's index
    and rule, the cut, and exit 3 (an item breaks a rule) or 1 (only the end does)."""
    expected = fixture["expected"]
    state = core_state(fixture)
    assert run.code == {"invalid": 3, "open": 1}[state], run
    report = run.json()
    assert (report["format"], report["detected"]) == (fixture["format"], True)
    assert report["state"] == state and report["closed"] is False
    assert report["valid"] is (state == "open")
    found = report["violation"] if state == "invalid" else report["end_violation"]
    assert (found["index"], found["rule"]) == (expected["index"], expected["rule"]), found
    assert report["completed_prefix_length"] == expected["cut"]
    assert f"item {expected['index']}: " in report["verdict"]
    assert f"(rule: {expected['rule']})" in report["verdict"]
    assert run.stderr == ""
