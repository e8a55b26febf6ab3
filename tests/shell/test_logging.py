"""Failures you can see: the stdlib logger ``turnfork`` and its children per module report model
request errors, loop failures, children and store recovery; silent unless the application
configures logging; no prompt or model text above DEBUG (issue 22, "failures you can see")."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest
from _shell_helpers import make_host, run, scripted
from _subagent_helpers import finish, request, subagent_host

from turnfork.core import AgentOptions, SessionHeader, encode_header_line
from turnfork.shell import JsonlSessionStore, Reply, ScriptedModel
from turnfork.shell.store import SessionRepairWarning

PROMPT = "PROMPT-TEXT-7f3a"
ANSWER = "MODEL-TEXT-91c2"


def _records_above_debug(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.levelno > logging.DEBUG]


def _assert_no_conversation_text(caplog: pytest.LogCaptureFixture) -> None:
    for record in _records_above_debug(caplog):
        text = record.getMessage() + (record.exc_text or "")
        assert PROMPT not in text and ANSWER not in text, record


def test_the_library_is_silent_unless_logging_is_configured() -> None:
    """A failing turn, a failing child and a loop failure print nothing on stderr: the
    ``turnfork`` logger has a NullHandler, so logging's last-resort handler never fires."""
    program = f"""
import asyncio
from turnfork.shell import Host, Reply, ScriptedModel

async def main():
    async with Host() as host:
        host.models.register("m", ScriptedModel([Reply.error("AUTH", "bad key")]))
        agent = host.create_agent(provider="m", model="m")
        result = await agent.run({PROMPT!r})
        assert result.stop_reason == "error", result
        print("ran")

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ran\n", "")
    handlers = logging.getLogger("turnfork").handlers
    assert any(isinstance(handler, logging.NullHandler) for handler in handlers)


def test_a_failed_model_request_is_one_warning_naming_its_code(  # its turn's failure
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="turnfork")

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.error("AUTH", "the key was refused",
                                                      text=ANSWER)])
        await agent.run(PROMPT)
        await agent.dispose()

    run(main)
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert [record.name for record in warnings] == ["turnfork.shell.agent"]
    assert warnings[0].getMessage() == ("agent id-1: turn 1 failed: AUTH: the key was refused")
    debug = [record.getMessage() for record in caplog.records if record.levelno == logging.DEBUG]
    assert "agent id-1: turn 1 started" in debug
    _assert_no_conversation_text(caplog)


def test_a_turn_failed_by_something_else_than_the_model_warns_once(
        caplog: pytest.LogCaptureFixture) -> None:
    """A pre-step hook that raises ends the turn ``error`` (code ``UNKNOWN``): logged as the
    turn's failure."""
    caplog.set_level(logging.INFO, logger="turnfork")

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.text(ANSWER)])

        def refuse(*_: object) -> bool:
            raise RuntimeError("the hook broke")

        agent.pre_step_hooks.append(refuse)
        assert (await agent.run(PROMPT)).stop_reason == "error"
        await agent.dispose()

    run(main)
    assert [(r.name, r.levelname, r.getMessage()) for r in _records_above_debug(caplog)] == [
        ("turnfork.shell.agent", "WARNING", "agent id-1: turn 1 failed: UNKNOWN: the hook broke")]


def test_children_log_their_start_and_end(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="turnfork.shell.subagents")

    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("first")])
        host.models.register("child", ScriptedModel([Reply.error("UNAVAILABLE", "overloaded",
                                                                 text=ANSWER)]))
        await parent.run(PROMPT)
        started = await host.subagents.start(
            "fork", request(PROMPT, agent_options=AgentOptions(provider="child")),
            parent=parent)
        await started.result
        await started.dispose()
        await finish(parent, recorder)

    run(main)
    lines = [(r.name, r.levelname, r.getMessage()) for r in caplog.records
             if r.name.startswith("turnfork.shell.subagents")]
    assert lines == [
        ("turnfork.shell.subagents.run", "DEBUG",
         "subagent id-5 started by id-1 (provider fork, seed of 16 events)"),
        ("turnfork.shell.subagents.run", "INFO",
         "subagent id-5 ended: error (UNAVAILABLE: overloaded)")]
    _assert_no_conversation_text(caplog)


def test_store_recovery_is_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Loading a log a crash left open (and torn) repairs it, and says so on
    ``turnfork.shell.jsonl_store``."""
    caplog.set_level(logging.WARNING, logger="turnfork")
    path = tmp_path / "_no-cwd" / "s" / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(encode_header_line(SessionHeader(id="s", created_at=0)) + b"\n"
                     + b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}\n'
                     + b'{"type":"step/st')
    with pytest.warns(SessionRepairWarning):
        JsonlSessionStore(tmp_path).load("s")
    messages = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert messages[0] == ("turnfork.shell.jsonl_store", "WARNING",
                           f"{path}: closed turn 1, left open by a crash, as interrupted")
    assert messages[1][:2] == ("turnfork.shell.jsonl_store", "WARNING")
    assert messages[1][2].startswith(f"{path}: dropped ")
    assert len(messages) == 2
