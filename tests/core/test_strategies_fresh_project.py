"""The README's property-testing example, copied into a fresh project, passes its first run and
fails a wrong runtime; without hypothesis the strategies' import names the extra (issue 11.3)."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Property-testing your own runtime"

#: Wrong runtimes, each appended to the example so that its test calls them instead.
WRONG_RUNTIMES = {
    # Copies the whole log, in-flight turn included: its seed is not balanced.
    "test_naive_copy.py": '''

def fork_seed(log):
    return log
''',
    # Cuts at the first turn/end, not the last: balanced, but not the completed-turn prefix.
    "test_first_turn_only.py": '''

def fork_seed(log):
    ends = [index for index, event in enumerate(log) if isinstance(event, TurnEndEvent)]
    return log[: ends[0] + 1] if ends else log[:0]
''',
}


def _readme_example() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split(SECTION, 1)[1]
    found = re.search(r"```python\n(.+?)\n```", section.split("\n## ", 1)[0], re.DOTALL)
    assert found is not None, "the README section holds no python example"
    return found.group(1) + "\n"


@pytest.fixture(scope="module")
def fresh_project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ET.Element]:
    """`pytest` in a new directory with no .hypothesis cache: the example as printed runs
    first, then the example with each wrong runtime. Returns each file's test case report."""
    project = tmp_path_factory.mktemp("fresh-project")
    assert not (project / ".hypothesis").exists()
    example = _readme_example()
    files = {"test_fork_seed.py": example,
             **{name: example + runtime for name, runtime in WRONG_RUNTIMES.items()}}
    for name, source in files.items():
        (project / name).write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-W", "error", "--junitxml=report.xml", *files],
        cwd=project, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout + done.stderr  # the wrong runtimes fail
    cases = ET.parse(project / "report.xml").getroot().iter("testcase")
    return {case.get("classname", "") + ".py": case for case in cases}


def _failure(case: ET.Element) -> str:
    failures = [child for child in case if child.tag in ("failure", "error")]
    assert len(failures) == 1, ET.tostring(case, encoding="unicode")
    return (failures[0].get("message") or "") + "\n" + (failures[0].text or "")


def test_the_readme_example_passes_its_first_run_in_a_fresh_project(
        fresh_project: dict[str, ET.Element]) -> None:
    """No .hypothesis cache, default settings and health checks, warnings as errors: it
    passes (a too_slow health check or a warning would fail it)."""
    case = fresh_project["test_fork_seed.py"]
    assert list(case) == [], ET.tostring(case, encoding="unicode")


def test_the_readme_example_fails_a_runtime_whose_seed_is_unbalanced(
        fresh_project: dict[str, ET.Element]) -> None:
    """The naive copy of an in-flight log fails the example's balance check, with the violation."""
    report = _failure(fresh_project["test_naive_copy.py"])
    # The balance line's message is the trace's violation, as check_balance words it.
    assert re.search(r"AssertionError: seq \d+: the log ends inside turn \d+", report), report


def test_the_readme_example_fails_a_balanced_but_wrong_seed(
        fresh_project: dict[str, ET.Element]) -> None:
    """A seed cut at the first turn/end is balanced, and fails the comparison with the cut."""
    report = _failure(fresh_project["test_first_turn_only.py"])
    assert re.search(r"^>\s+assert list\(seed\) == list\(completed_turn_prefix\(log\)\)$",
                     report, re.MULTILINE), report
    assert "AssertionError: seq " not in report, report


MISSING_HYPOTHESIS = """
import sys

class _NoHypothesis:
    def find_spec(self, name, path=None, target=None):
        if name == "hypothesis" or name.startswith("hypothesis."):
            raise ImportError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, _NoHypothesis())
import turnfork.core  # the core itself does not need hypothesis
assert "hypothesis" not in sys.modules
try:
    import turnfork.core.strategies
except ImportError as err:
    print(err)
else:
    raise SystemExit("imported without hypothesis")
"""


def test_without_hypothesis_the_import_names_the_extra(tmp_path: Path) -> None:
    """Importing the strategies without hypothesis says to install turnfork[hypothesis]."""
    done = subprocess.run([sys.executable, "-c", MISSING_HYPOTHESIS], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "turnfork.core.log.strategies needs hypothesis: install the turnfork[hypothesis] extra "
        "(pip install 'turnfork[hypothesis]')"), done.stdout
