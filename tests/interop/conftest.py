"""The interop tests need real peers (`pip install -e '.[interop]'`); without them they skip.

CI installs the extra and sets TURNFORK_REQUIRE_INTEROP=1: then a skipped interop test, or
none collected, fails the run instead of passing it quietly.
"""

from __future__ import annotations

import os

import pytest

REQUIRED = os.environ.get("TURNFORK_REQUIRE_INTEROP") == "1"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not REQUIRED:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if skipped or session.testscollected == 0:
        names = ", ".join(report.nodeid for report in skipped) or "no test collected"
        print(f"\nTURNFORK_REQUIRE_INTEROP=1: interop tests must run, not skip ({names})")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
