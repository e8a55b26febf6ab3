"""A user's `mypy --strict` against an installed turnfork, from the wheel and editable (issue
11.2): turnfork's types are found (py.typed, no missing stubs, no import hook to get lost in)
and are precise enough to catch a wrong call."""

from __future__ import annotations

import re

import pytest
from _packaging import Venv, run

pytestmark = pytest.mark.slow

USER_MODULE = '''\
"""A user's code, typed against turnfork."""

from __future__ import annotations

from collections.abc import Sequence

import turnfork
from turnfork.core import Event, TurnEndEvent, completed_turn_prefix, decode_log, trace_log
from turnfork.shell import Agent, Host, Reply, ScriptedModel


def make_parent(host: Host, replies: list[str]) -> Agent:
    host.models.register("scripted", ScriptedModel([Reply.text(r) for r in replies]))
    return host.create_agent(provider="scripted", model="m")


def seed_of(data: bytes) -> Sequence[Event]:
    return completed_turn_prefix(decode_log(data).unwrap())


def open_turn(data: bytes) -> int | None:
    return trace_log(decode_log(data).unwrap()).unwrap().open_turn


def ends_a_turn(event: Event) -> bool:
    return isinstance(event, TurnEndEvent)


async def greet(agent: Agent) -> None:
    agent.followup("hello")
    await agent.when_idle()
    await agent.dispose()


VERSION: str = turnfork.__version__
'''

#: Two deliberate mistakes, each caught only if turnfork's signatures are really seen.
MISTAKES = '''
WRONG_COUNT: int = completed_turn_prefix(decode_log(b"").unwrap())
WRONG_AGENT = Host().create_agent(provider=1, model="m")
'''

NOT_FOUND = re.compile(r"import-not-found|import-untyped|missing library stubs|"
                       r"Cannot find implementation|Skipping analyzing", re.IGNORECASE)


@pytest.fixture(scope="module", params=["wheel", "editable"])
def typing_venv(request: pytest.FixtureRequest) -> Venv:
    """An environment with turnfork installed (the wheel; or editable from the checkout, next
    to the rivals' `core` and `shell`) and mypy added, as a user's project would have it."""
    if request.param == "wheel":
        venv: Venv = request.getfixturevalue("wheel_install").venv
    else:
        venv = request.getfixturevalue("rivals_then_editable")
    venv.pip("mypy>=1.11")
    return venv


def _mypy(venv: Venv, source: str, name: str) -> tuple[int, str]:
    path = venv.scratch / name
    path.write_text(source, encoding="utf-8")
    done = run([venv.script("mypy"), "--strict", "--no-incremental",
                "--cache-dir", venv.scratch / ".mypy_cache", path.name],
               cwd=venv.scratch, check=False)
    return done.returncode, done.stdout + done.stderr


def test_mypy_strict_accepts_a_users_typed_module(typing_venv: Venv) -> None:
    """`mypy --strict` on a module using Host, Agent, ScriptedModel and core functions is clean."""
    status, output = _mypy(typing_venv, USER_MODULE, "user_module.py")
    assert not NOT_FOUND.search(output), output
    assert status == 0, output
    assert "Success: no issues found in 1 source file" in output


def test_mypy_strict_catches_wrong_uses_of_turnfork(typing_venv: Venv) -> None:
    """Both deliberate mistakes are reported, at their lines, and nothing is missing."""
    source = USER_MODULE + MISTAKES
    status, output = _mypy(typing_venv, source, "user_mistakes.py")
    assert not NOT_FOUND.search(output), output
    assert status == 1, output
    lines = source.splitlines()
    count_line = lines.index('WRONG_COUNT: int = completed_turn_prefix(decode_log(b"").unwrap())')
    agent_line = lines.index('WRONG_AGENT = Host().create_agent(provider=1, model="m")')
    assert re.search(rf"user_mistakes\.py:{count_line + 1}: error: .*Sequence\[.*\[assignment\]",
                     output), output
    assert re.search(rf'user_mistakes\.py:{agent_line + 1}: error: Argument "provider" .*'
                     r'"int".* "str".*\[arg-type\]', output), output
    assert "Found 2 errors in 1 file" in output
