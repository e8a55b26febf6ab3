"""A user's `mypy --strict` against turnfork installed from its wheel (issue 11.2): turnfork's
types are found (py.typed, no missing stubs) and are precise enough to catch a wrong call."""

from __future__ import annotations

import doctest
import re

import pytest
from _doc_blocks import ROOT, python_blocks
from _packaging import Venv, WheelInstall, run

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

#: ``agent.run``'s result and the ModelError family, as a user reads them.
RUN_USER_CODE = '''\
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

RUN_MISTAKE = '''
async def wrong(host: Host) -> int:
    return (await host.create_agent(provider="s", model="m").run("x")).output
'''


NOT_FOUND = re.compile(r"import-not-found|import-untyped|missing library stubs|"
                       r"Cannot find implementation|Skipping analyzing", re.IGNORECASE)


@pytest.fixture(scope="module")
def typing_venv(wheel_install: WheelInstall) -> Venv:
    """An environment with turnfork's wheel installed and mypy added, as a user's project would
    have it. (An editable install maps turnfork with an import hook, which static checkers do not
    run: DEVELOPERS.md says how the project's own mypy check works instead.)"""
    venv = wheel_install.venv
    venv.pip("mypy>=1.11", "hypothesis>=6.100")  # hypothesis: the README's property test
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


def _readme_modules() -> dict[str, str]:
    """The README's Python examples as modules a user would save: its doctest blocks together,
    in order (they share one namespace), and each other block on its own."""
    blocks = python_blocks(ROOT / "README.md")
    examples = [example for block in blocks if block.is_doctest
                for example in doctest.DocTestParser().get_examples(block.code)]
    modules = {"readme_doctests.py": "".join(example.source for example in examples)}
    modules |= {f"readme_block_{block.line}.py": block.code for block in blocks
                if not block.is_doctest}
    return modules


def test_the_readme_examples_pass_mypy_strict(typing_venv: Venv) -> None:
    """The README's examples, saved as a user would save them, pass `mypy --strict` against the
    installed wheel: no error, nothing missing (issue 22)."""
    modules = _readme_modules()
    assert len(modules) >= 2 and "completed_turn_prefix" in modules["readme_doctests.py"]
    for name, source in modules.items():
        (typing_venv.scratch / name).write_text(source, encoding="utf-8")
    done = run([typing_venv.script("mypy"), "--strict", "--no-incremental",
                "--cache-dir", typing_venv.scratch / ".mypy_cache", *sorted(modules)],
               cwd=typing_venv.scratch, check=False)
    output = done.stdout + done.stderr
    assert not NOT_FOUND.search(output), output
    assert done.returncode == 0, output
    assert f"Success: no issues found in {len(modules)} source files" in output


def test_mypy_strict_reads_the_run_result_and_the_model_errors(typing_venv: Venv) -> None:
    """`agent.run`'s result and the ModelError family type-check without narrowing:
    ``result.output`` is a ``str``, ``error.status`` an ``int | None``."""
    status, output = _mypy(typing_venv, RUN_USER_CODE, "user_run.py")
    assert not NOT_FOUND.search(output), output
    assert status == 0, output


def test_mypy_strict_catches_a_wrong_use_of_the_run_result(typing_venv: Venv) -> None:
    """Reading ``output`` as an ``int`` is reported (so the result's type is really seen)."""
    status, output = _mypy(typing_venv, RUN_USER_CODE + RUN_MISTAKE, "user_run_mistake.py")
    assert not NOT_FOUND.search(output), output
    assert status == 1, output
    assert 'Incompatible return value type (got "str", expected "int")' in output, output
    assert "Found 1 error in 1 file" in output, output
