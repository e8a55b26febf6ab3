"""`turnfork demo --model M --base-url URL` against a keyless local OpenAI-compatible server (as
Ollama, llama.cpp or vLLM serve on loopback), and `--api-key` (issue 11, item 5)."""

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


def _answer(text: str) -> Reply:
    return Reply(events=(chunk({"role": "assistant", "content": text}), chunk(finish="stop")))


def _demo(*options: str, **env: str) -> tuple[int, dict[str, Any], str, list[Recorded]]:
    """The demo against a fresh local server that answers each of the three turns in text."""
    async def scenario() -> tuple[int, dict[str, Any], str, list[Recorded]]:
        async with FakeOpenAI([_answer(f"answer {n}") for n in (1, 2, 3)]) as server:
            child_env = {k: v for k, v in os.environ.items() if k not in KEYS}
            child_env.update({"PYTHONIOENCODING": "utf-8", **env})
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "turnfork", "demo", "--model", "local-model",
                "--base-url", server.base_url, "--json", "--timeout", "60", *options,
                cwd=REPO, env=child_env, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(process.communicate(), 120)
            assert process.returncode is not None
            return process.returncode, json.loads(out), err.decode(), server.requests
    return asyncio.run(scenario())


def test_a_keyless_local_server_needs_no_key() -> None:
    """No key anywhere: the demo runs its three turns against the server and sends no key."""
    code, summary, err, requests = _demo()
    assert code == 1  # it ran; this model answers in text and never delegates
    assert err == ("turnfork: error: demo: the model never called the subagent tool: nothing "
                   "was delegated\n")
    assert summary["model"] == {"embedded": False, "provider": "openai-compatible",
                                "model": "local-model"}
    assert summary["parent_turns"] == ["completed"] * 3
    assert len(requests) == 3
    assert all("authorization" not in request.headers for request in requests)
    assert [request.body["model"] for request in requests] == ["local-model"] * 3


def test_api_key_is_sent_and_wins_over_the_environment() -> None:
    """--api-key KEY is the key sent with every call, whatever the environment holds."""
    code, _, _, requests = _demo("--api-key", "sk-local", DEEPSEEK_API_KEY="sk-from-env")
    assert code == 1
    assert [request.headers.get("authorization") for request in requests] == (
        ["Bearer sk-local"] * 3)


def test_a_remote_server_without_a_key_names_both_ways_to_give_one(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A non-local URL and no key: one line naming the variable and --api-key; exit 2."""
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    assert main(["demo", "--model", "m", "--base-url", "https://llm.example.com/v1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("turnfork: error: demo --model m needs an API key for "
                            "https://llm.example.com/v1: set DEEPSEEK_API_KEY or pass --api-key "
                            "KEY (or run `turnfork demo` without --model for the embedded "
                            "scripted models)\n")


def test_api_key_without_model_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    """--api-key means nothing to the embedded demo: exit 2."""
    assert main(["demo", "--api-key", "sk-x"]) == 2
    assert capsys.readouterr().err == ("turnfork: error: demo --api-key needs --model NAME (the "
                                       "embedded demo needs no key)\n")
