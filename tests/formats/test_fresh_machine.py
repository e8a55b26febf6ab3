"""The strategies' documented example passes its first run on a fresh machine, and a missing
hypothesis is a clear ImportError."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "formats" / "README.md"


def _documented_example() -> str:
    section = PAGE.read_text(encoding="utf-8").split("## Property-testing your runtime", 1)[1]
    found = re.search(r"```python\n(.+?)\n```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_documented_example_passes_its_first_run_without_a_cache(tmp_path: Path) -> None:
    """Fresh cwd, no .hypothesis, default settings and health checks: it passes, warns nothing."""
    assert not (tmp_path / ".hypothesis").exists()
    done = subprocess.run([sys.executable, "-W", "error", "-c", _documented_example()],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "HealthCheck" not in done.stderr and "too_slow" not in done.stderr
    assert done.stderr == ""


MISSING_HYPOTHESIS = """
import sys

class _NoHypothesis:
    def find_spec(self, name, path=None, target=None):
        if name == "hypothesis" or name.startswith("hypothesis."):
            raise ImportError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, _NoHypothesis())
import turnfork.core.formats  # the namespace itself does not need hypothesis
try:
    import turnfork.core.formats.strategies
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
    assert "turnfork[hypothesis]" in done.stdout
