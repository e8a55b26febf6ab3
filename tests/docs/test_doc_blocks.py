"""Every Python block of README.md and docs/**/*.md runs as written and shows what it claims
(issue 22): doctests give the output written under them; a page's test module passes under
pytest; a script exits 0 from the repository's root and prints each line its `print(...)  #
TEXT` comments claim. A block that cannot run here is marked `<!-- not run: REASON -->` and
says why. New pages and blocks are found on every run (see `tests/_doc_blocks.py`)."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _doc_blocks import DOCUMENTS, ROOT, Block, all_blocks, fences, python_blocks

BLOCKS = all_blocks()
SCRIPTS = [b for b in BLOCKS if not b.is_doctest and not b.test_functions and b.not_run is None]
TEST_MODULES = [b for b in BLOCKS if b.test_functions and b.not_run is None]
NOT_RUN = [b for b in BLOCKS if b.not_run is not None]
WITH_DOCTESTS = [d for d in DOCUMENTS if any(b.is_doctest for b in python_blocks(d))]
TIMEOUT_S = 300


def _label(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _claim_pattern(claim: str) -> re.Pattern[str]:
    """A claimed line; `...` (or `…`) in it stands for any text, as in a doctest."""
    return re.compile(".*".join(re.escape(part) for part in re.split(r"\.\.\.|…", claim)))


@pytest.mark.parametrize("document", WITH_DOCTESTS, ids=_label)
def test_doctest_blocks_give_their_written_output(document: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The document's doctest blocks, in order and in one namespace, from the repository root."""
    monkeypatch.chdir(ROOT)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    namespace: dict[str, object] = {"__name__": "__main__"}
    report: list[str] = []
    for block in python_blocks(document):
        if not block.is_doctest or block.not_run is not None:
            continue
        test = parser.get_doctest(block.code, namespace, block.label, str(document), block.line)
        runner.run(test, out=report.append, clear_globs=False)
        namespace = test.globs  # a DocTest runs in a copy: the next block goes on from here
    results = runner.summarize(verbose=False)
    assert results.attempted > 0
    assert results.failed == 0, "".join(report)


@pytest.mark.parametrize("block", SCRIPTS, ids=lambda b: b.label)
def test_script_blocks_run_and_print_what_they_claim(block: Block, tmp_path: Path) -> None:
    """`python block.py` from the repository root exits 0; each claimed line is printed, in
    order (`...` in a claim stands for any text)."""
    script = tmp_path / "block.py"
    script.write_text(block.code, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                          text=True, timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{block.label} exited {done.returncode}:\n{done.stderr}"
    printed = iter(line.rstrip() for line in done.stdout.splitlines())
    missing = [claim for claim in block.claimed_output
               if not any(_claim_pattern(claim).fullmatch(line) for line in printed)]
    assert missing == [], f"{block.label} printed {done.stdout!r}"


@pytest.mark.parametrize("block", TEST_MODULES, ids=lambda b: b.label)
def test_test_module_blocks_pass_under_pytest(block: Block, tmp_path: Path) -> None:
    """Saved as a test file in an empty folder and run with pytest, as the page says: every
    test it defines passes."""
    module = tmp_path / ("test_" + re.sub(r"\W", "_", block.label) + ".py")
    module.write_text(block.code, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           module.name], cwd=tmp_path, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    count = len(block.test_functions)
    assert re.search(rf"^{count} passed\b", done.stdout, re.MULTILINE), done.stdout


def test_blocks_that_are_not_run_say_why() -> None:
    """A block marked not run gives a reason; one that names the test running it instead names
    a test that exists and reads that page."""
    for block in NOT_RUN:
        assert block.not_run, f"{block.label}: `<!-- not run: -->` without a reason"
        for named in re.findall(r"tests/[\w/]+\.py", block.not_run):
            test = ROOT / named
            assert test.is_file(), f"{block.label} names {named}, which does not exist"
            assert block.document.name in test.read_text(encoding="utf-8"), (
                f"{block.label}: {named} does not read {block.document.name}")


@pytest.mark.parametrize("document", DOCUMENTS, ids=_label)
def test_no_example_hides_outside_a_python_block(document: Path) -> None:
    """Every `>>>` line is inside a ```python block (so it is run), and no block is fenced as
    Python under another name (`py`, `pycon`), which would not be run."""
    lines = document.read_text(encoding="utf-8").splitlines()
    inside_python: set[int] = set()
    for fence in fences(document):
        assert not (fence.info.startswith("py") and fence.info.split()[0] != "python"), (
            f"{_label(document)}:{fence.line}: fenced as {fence.info!r}, not `python`")
        if fence.info.split()[:1] == ["python"]:
            inside_python.update(range(fence.line, fence.end + 1))
    stray = [number for number, line in enumerate(lines, 1)
             if line.lstrip().startswith(">>>") and number not in inside_python]
    assert stray == [], f"{_label(document)}: `>>>` outside a python block at lines {stray}"


def test_the_collection_finds_the_known_kinds_of_block() -> None:
    """The parser sees the README's blocks as what they are (a guard on the parser itself)."""
    readme = python_blocks(ROOT / "README.md")
    assert [b.is_doctest for b in readme][:2] == [True, True]
    assert [b.test_functions for b in readme if b.test_functions] == [
        ("test_my_fork_seed_is_balanced_and_matches_the_reference",)]
    assert len(BLOCKS) == len(SCRIPTS) + len(TEST_MODULES) + len(NOT_RUN) + sum(
        1 for b in BLOCKS if b.is_doctest and b.not_run is None)


def test_the_architecture_and_model_pages_hold_examples() -> None:
    """The pages that explain the seed and the models' view carry runnable examples."""
    for name in ("architecture.md", "model-experience.md"):
        assert any(b.is_doctest for b in python_blocks(ROOT / "docs" / name)), name
