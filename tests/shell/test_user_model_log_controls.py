"""A provider's text in a log record is inert: the terminal controls of an error message (a
window title set, a screen cleared) are shown escaped, as the command line shows them, so a log
handler writing to a terminal cannot be steered by a server."""

from __future__ import annotations

import logging

import pytest
from _shell_helpers import make_host, run, scripted

from turnfork.shell import Reply

HOSTILE = "\x1b]0;pwned\x07\x1b[2J boom\r\u202e"


def test_a_failure_message_is_logged_with_its_controls_escaped(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="turnfork")

    async def main() -> None:
        agent, _ = scripted(make_host(), [Reply.error("AUTH", HOSTILE)])
        await agent.run("hello")
        await agent.dispose()

    run(main)
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.getMessage() == (
        "agent id-1: turn 1 failed: AUTH: \\x1b]0;pwned\\x07\\x1b[2J boom\\r\\u202e")
