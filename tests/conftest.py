"""Suite-wide settings: the hypothesis profiles and the budget every property test scales by.

Profiles (pick one with ``--hypothesis-profile``):

* ``dev`` (default): a quarter of each test's CI budget, so the README's test command stays
  quick on a laptop. Still random: every run explores new examples.
* ``ci``: each test's full budget; ``.ci/run`` uses it for the slow families.

A test states its CI budget once, ``@settings(max_examples=examples(400))``; ``examples`` scales
it by the loaded profile (see ``_budget.py``). The crash, fuzz and load families are marked
``slow``: the default run leaves them out and ``.ci/run`` runs them after the README command.
The run's summary says so: how many slow tests of which families it deselected, and which
modules it skipped for want of an extra (tests/ray, tests/interop).
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import settings

settings.register_profile("dev", max_examples=25, deadline=None, print_blob=True)
settings.register_profile("ci", max_examples=100, deadline=None, print_blob=True)
settings.load_profile("dev")


#: Where the default run's skips come from when an extra is not installed, and how to add it.
_EXTRAS = {"tests/ray": "ray", "tests/interop": "interop"}


def _family(nodeid: str) -> str:
    """``tests/packaging/test_x.py::test_y`` -> ``tests/packaging`` (a top-level test file stays
    itself)."""
    path = nodeid.split("::", 1)[0].split("/")
    return "/".join(path[:2]) if len(path) > 2 else "/".join(path)


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say what this run left out and where it runs: the slow families (``-m 'not slow'``
    deselects them) and the modules skipped for want of an extra. Printed just above pytest's
    own closing line, which stays last."""
    deselected = [item for item in terminalreporter.stats.get("deselected", [])
                  if item.get_closest_marker("slow") is not None]
    skipped = terminalreporter.stats.get("skipped", [])
    lines = []
    if deselected:
        families = Counter(_family(item.nodeid) for item in deselected)
        listed = ", ".join(f"{name} {count:,}" for name, count in sorted(families.items()))
        lines.append(f"{_counted(len(deselected), 'slow test')} deselected by -m 'not slow': "
                     f"{listed}")
    for folder, extra in _EXTRAS.items():
        reports = [r for r in skipped if _family(r.nodeid) == folder]
        if reports:
            modules = sum(isinstance(r, pytest.CollectReport) for r in reports)
            counted = ", ".join(_counted(count, noun) for count, noun in (
                (modules, "module"), (len(reports) - modules, "test")) if count)
            reasons = "; ".join(sorted({_skip_reason(r) for r in reports}))
            hint = "" if "pip install" in reasons else f"; pip install -e '.[{extra}]'"
            lines.append(f"{folder}: {counted} skipped ({reasons}{hint})")
    if not lines:
        return
    terminalreporter.write_sep("-", "left to CI")
    for line in lines:
        terminalreporter.write_line(line)
    terminalreporter.write_line("bash .ci/run runs all of them (and every build path, ruff, mypy "
                                "and the other supported Pythons)")
