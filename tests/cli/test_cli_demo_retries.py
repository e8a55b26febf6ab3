"""`turnfork demo --model M` retries failed model requests as the library does (`--max-retries
N`), says what is wrong with a `--base-url` that has no scheme, and draws a turn its
`--timeout` cut short as a timeout (issue 22)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import pytest
from _cli_helpers import REPO

sys.path.insert(0, str(REPO / "tests" / "shell"))
from fake_openai_server import FakeOpenAI, Recorded, Reply, chunk

from turnfork.shell.cli import main

KEYS = ("DEEPSEEK_API_KEY", "OPENAI_API_KEY")
BOOM = Reply(status=500, body={"error": {"message": "boom"}})


def _answer(text: str) -> Reply:
    return Reply(events=(chunk({"role": "assistant", "content": text}), chunk(finish="stop")))


def _demo(replies: list[Reply], *options: str) -> tuple[int, str, str, list[Recorded]]:
    """The demo (``--model``) against a local server playing ``replies``."""
    async def scenario() -> tuple[int, str, str, list[Recorded]]:
        async with FakeOpenAI(replies) as server:
            env = {k: v for k, v in os.environ.items() if k not in KEYS}
            env["PYTHONIOENCODING"] = "utf-8"
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "turnfork", "demo", "--model", "local-model",
                "--base-url", server.base_url, *options, cwd=REPO, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(process.communicate(), 120)
            assert process.returncode is not None
            return process.returncode, out.decode(), err.decode(), server.requests
    return asyncio.run(scenario())


def _summary(out: str) -> dict[str, Any]:
    value = json.loads(out)
    assert isinstance(value, dict)
    return value


def test_a_failed_request_is_retried_by_default() -> None:
    """A 500 before the first answer costs one more request, not the turn."""
    code, out, _, requests = _demo([BOOM, _answer("answer 1"), _answer("answer 2"),
                                    _answer("answer 3")], "--json")
    summary = _summary(out)
    assert code == 1  # it ran; the model answers in text and never delegates
    assert summary["parent_turns"] == ["completed"] * 3
    assert len(requests) == 4
    assert requests[0].raw == requests[1].raw


@pytest.mark.parametrize(("retries", "requests_made"), [("0", 1), ("1", 2)])
def test_max_retries_bounds_the_retries(retries: str, requests_made: int) -> None:
    """--max-retries N: N retries of the first turn's request, then the turn's error."""
    code, out, err, requests = _demo([BOOM] * 3, "--json", "--max-retries", retries)
    assert code == 1
    assert _summary(out)["parent_turns"] == ["error"]
    assert len(requests) == requests_made
    assert "the parent's turn 1 ended error SERVER" in err


def test_a_negative_max_retries_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--max-retries", "-1"]) == 2
    assert capsys.readouterr().err == ("turnfork: error: demo --max-retries must be 0 or more, "
                                       "not -1\n")


def test_a_max_retries_past_a_safe_integer_is_bad_usage(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the retry policy's ValueError as a traceback."""
    assert main(["demo", "--max-retries", "99999999999999999999"]) == 2
    assert capsys.readouterr().err == (
        "turnfork: error: demo --max-retries: max_retries must be a non-negative whole number, "
        "not 99999999999999999999\n")


def test_a_base_url_without_a_scheme_says_so(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "needs an API key for localhost:8080/v1"."""
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    assert main(["demo", "--model", "m", "--base-url", "localhost:8080/v1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("turnfork: error: demo --base-url: base_url 'localhost:8080/v1' has "
                            "no scheme: write it as http://localhost:8080/v1 (a local server) or "
                            "https://localhost:8080/v1\n")


def test_a_turn_the_timeout_cut_short_is_drawn_as_a_timeout() -> None:
    """A model that never answers and --timeout 1: the turn is drawn timed out, not as the
    user's cancellation."""
    code, out, err, _ = _demo([Reply(end="stall")] * 3, "--plain", "--timeout", "1")
    assert code == 1
    assert "Turn 1 · aborted (hook: timed out after 1 s (--timeout))" in out
    assert "aborted (user)" not in out
    assert "the parent's turn 1 took longer than 1 s and was cancelled" in err
