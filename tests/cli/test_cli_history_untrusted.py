"""Untrusted history files on the command line: an item that does not read is a `shape`
violation (exit 3 for `check` and `show`, the empty seed written with a warning), never a
traceback; a number beyond a double is refused on read (exit 2, naming the line), never read
as infinity and written back as `Infinity`.

Regressions for findings G05 and G09 (issue 25): on cb407df `check` on `[{"role":"tool"},{}]`
printed an AssertionError traceback, and `seed` turned `1e400` into `Infinity`, a seed turnfork
then refused to read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from _cli_helpers import Run

from turnfork.shell.cli import main


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    def run(*args: str | Path) -> Run:
        code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)
    return run


UNCHECKED = {
    "openai-chat": [{"role": "tool"}, {}],
    "openai-responses": [{"type": "function_call_output"}, {}],
    "anthropic": [{"role": "assistant", "content": [{"type": "tool_use"}]}, {}],
}


@pytest.mark.parametrize("fmt", sorted(UNCHECKED))
def test_an_unchecked_item_is_invalid_not_a_traceback(fmt: str, tmp_path: Path,
                                                      cli: Callable[..., Run]) -> None:
    """check and show: invalid at item 0 (rule shape), exit 3; seed: the empty seed, exit 0,
    with the rule in its warning; detected or named, no traceback anywhere."""
    path = tmp_path / "h.json"
    path.write_text(json.dumps(UNCHECKED[fmt]), encoding="utf-8")
    for args in (("check",), ("check", "--format", fmt), ("show", "--plain", "--format", fmt),
                 ("check", "--json", "--format", fmt)):
        run = cli(*args, path)
        assert run.code == 3, (args, run)
        assert "Traceback" not in run.stdout + run.stderr
    report = cli("check", "--json", "--format", fmt, path).json()
    assert (report["violation"]["index"], report["violation"]["rule"]) == (0, "shape")
    seed = cli("seed", "--format", fmt, path)
    assert seed.code == 0 and json.loads(seed.stdout) == []
    assert "(rule: shape)" in seed.stderr and "Traceback" not in seed.stderr


@pytest.mark.parametrize(("text", "line", "literal"), [
    ('[{"role": "user", "content": "hi", "x": 1e400},\n {"role": "assistant", "content": "ok"}]',
     1, "1e400"),
    ('{"model": "m",\n "messages": [{"role": "user", "content": "1e400"},\n'
     '  {"role": "assistant", "content": "ok", "n": -1E+400}]}', 3, "-1E+400"),
])
def test_a_number_beyond_a_double_is_refused_on_read(text: str, line: int, literal: str,
                                                     tmp_path: Path,
                                                     cli: Callable[..., Run]) -> None:
    """check, seed and show: exit 2, the error names the file, the line and the number; the
    same text inside a string is not a number and is not refused."""
    path = tmp_path / "h.json"
    path.write_text(text, encoding="utf-8")
    for args in (("check",), ("seed", "--format", "openai-chat"),
                 ("show", "--plain", "--format", "openai-chat")):
        run = cli(*args, path)
        assert run.code == 2, (args, run)
        assert f"{path}:{line}: not JSON this reader can hold: the number {literal} " in run.stderr
        assert "Infinity" not in run.stdout and "Traceback" not in run.stderr


def test_jsonl_names_the_line_of_the_number(tmp_path: Path, cli: Callable[..., Run]) -> None:
    """JSONL (with --format): the line of the item holding it."""
    path = tmp_path / "h.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n'
                    '{"role": "assistant", "content": "x", "v": [1e999]}\n', encoding="utf-8")
    run = cli("check", "--format", "openai-chat", path)
    assert run.code == 2 and f"{path}:2: " in run.stderr and "1e999" in run.stderr


def test_a_large_finite_number_round_trips_through_the_seed(tmp_path: Path,
                                                            cli: Callable[..., Run]) -> None:
    """1e308 is a double: read, written into the seed as JSON, and the seed reads back."""
    path = tmp_path / "h.json"
    path.write_text('[{"role": "user", "content": "hi", "x": 1e308}, '
                    '{"role": "assistant", "content": "ok"}]', encoding="utf-8")
    out = tmp_path / "seed.json"
    assert cli("seed", "--format", "openai-chat", path, "-o", out).code == 0
    assert json.loads(out.read_text(encoding="utf-8"))[0]["x"] == 1e308
    assert cli("check", "--format", "openai-chat", out).code == 0
