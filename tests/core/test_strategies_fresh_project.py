"""The README's property-testing example, copied into a fresh project, passes its first run and
fails a wrong runtime; without hypothesis the strategies' import names the extra (issue 11.3)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTION = "## Property-testing your own runtime"

#: A runtime that copies the whole log, in-flight turn included: its seed is not balanced.
NAIVE_COPY = '''

def fork_seed(log):
    return log
'''

#: A runtime whose seed is balanced but stops at the first turn/end, not the last.
FIRST_TURN_ONLY = '''

def fork_seed(log):
    ends = [index for index, event in enumerate(log) if isinstance(event, TurnEndEvent)]
    return log[: ends[0] + 1] if ends else log[:0]
'''


def _readme_example() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split(SECTION, 1)[1]
    found = re.search(r"```python\n(.+?)\n```", section.split("\n## ", 1)[0], re.DOTALL)
    assert found is not None, "the README section holds no python example"
    return found.group(1) + "\n"


def _run_as_a_new_project(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """``pytest`` on the example as test_fork_seed.py, from a new directory with no cache."""
    assert not (tmp_path / ".hypothesis").exists()
    (tmp_path / "test_fork_seed.py").write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-W", "error", "test_fork_seed.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)


def test_the_readme_example_passes_its_first_run_in_a_fresh_project(tmp_path: Path) -> None:
    """No .hypothesis cache, default settings and health checks: it passes and warns nothing."""
    done = _run_as_a_new_project(tmp_path, _readme_example())
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "1 passed" in done.stdout, output
    assert "HealthCheck" not in output and "too_slow" not in output, output
    assert "warning" not in output.lower(), output


def test_the_readme_example_fails_a_runtime_whose_seed_is_unbalanced(tmp_path: Path) -> None:
    """The naive copy of an in-flight log fails the example's balance check, with the violation."""
    done = _run_as_a_new_project(tmp_path, _readme_example() + NAIVE_COPY)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    # The balance line's message is the trace's violation, as check_balance words it.
    assert re.search(r"AssertionError: seq \d+: the log ends inside turn \d+", output), output


def test_the_readme_example_fails_a_balanced_but_wrong_seed(tmp_path: Path) -> None:
    """A seed cut at the first turn/end is balanced, and fails the comparison with the cut."""
    done = _run_as_a_new_project(tmp_path, _readme_example() + FIRST_TURN_ONLY)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert re.search(r"^>\s+assert list\(seed\) == list\(completed_turn_prefix\(log\)\)$",
                     output, re.MULTILINE), output
    assert "AssertionError: seq " not in output, output


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
        "turnfork.core.strategies needs hypothesis: install the turnfork[hypothesis] extra "
        "(pip install 'turnfork[hypothesis]')"), done.stdout
