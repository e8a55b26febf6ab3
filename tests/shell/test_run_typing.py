"""A user's ``mypy --strict`` reads ``agent.run``'s result and the ``ModelError`` family without
narrowing: ``result.output`` is a ``str``, ``error.status`` an ``int | None``; and a wrong use
is caught (so the types are really seen)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

USER_CODE = '''\
from __future__ import annotations

from turnfork.shell import Host, ModelError, ModelServerError, Reply, RunResult, ScriptedModel


async def ask(prompt: str) -> str:
    async with Host() as host:
        host.models.register("s", ScriptedModel([Reply.text("hi")]))
        async with host.create_agent(provider="s", model="m") as agent:
            result: RunResult = await agent.run(prompt)
            try:
                await agent.run(prompt, raise_on_failure=True)
            except ModelServerError as error:
                status: int | None = error.status
                print(status)
            except ModelError as error:
                print(error.code, error.failure.message)
            last = await agent.when_idle()
            if last is not None:
                print(last.output.upper())
            return result.output.upper()
'''

MISTAKE = '''
async def wrong(host: Host) -> int:
    return (await host.create_agent(provider="s", model="m").run("x")).output
'''


def _mypy(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "user.py").write_text(code, encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "user.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, check=False)


def test_the_result_and_the_errors_type_check_as_written(tmp_path: Path) -> None:
    done = _mypy(tmp_path, USER_CODE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_wrong_use_of_the_result_is_caught(tmp_path: Path) -> None:
    done = _mypy(tmp_path, USER_CODE + MISTAKE)
    assert done.returncode == 1
    assert 'Incompatible return value type (got "str", expected "int")' in done.stdout
