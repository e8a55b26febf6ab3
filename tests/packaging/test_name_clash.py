"""Other projects' top-level `core` and `shell` packages next to turnfork (issue 11.1): both
installs (wheel, and editable from the checkout) keep working, and so do theirs."""

from __future__ import annotations

from pathlib import Path

import pytest
from _packaging import (
    CLOSED_LOG,
    ROOT,
    USER_SCRIPT,
    Venv,
    changed_files,
    record_entries,
    repo_version,
    run,
)

pytestmark = pytest.mark.slow

THEIRS = """
import core, shell, shell.cli, turnfork.core
assert core.OWNER == "their_core" and core.decode_log() == "their decode_log"
assert shell.OWNER == "their_shell" and shell.cli.main() == "their shell.cli"
assert core is not turnfork.core
print("theirs ok")
"""

INSTALLS = ["wheel_then_rivals", "rivals_then_editable"]


def _expected_package(venv: Venv, install: str) -> Path:
    if install == "wheel_then_rivals":
        return venv.site_packages.resolve() / "turnfork"
    return ROOT / "turnfork"


@pytest.mark.parametrize("install", INSTALLS)
def test_turnfork_imports_its_own_core_and_shell(install: str,
                                                 request: pytest.FixtureRequest) -> None:
    """turnfork.core and turnfork.shell are turnfork's, whatever `core` and `shell` are."""
    venv: Venv = request.getfixturevalue(install)
    version, package, core, shell = venv.py(USER_SCRIPT).stdout.split()
    expected = _expected_package(venv, install)
    assert version == repo_version()
    assert Path(package) == expected
    if install == "wheel_then_rivals":
        assert (Path(core), Path(shell)) == (expected / "core", expected / "shell")
    else:  # editable: the checkout's top-level folders
        assert (Path(core), Path(shell)) == (ROOT / "core", ROOT / "shell")


@pytest.mark.parametrize("install", INSTALLS)
def test_the_turnfork_command_still_runs(install: str, request: pytest.FixtureRequest) -> None:
    """`turnfork --version` and `turnfork check` work with the rivals installed."""
    venv: Venv = request.getfixturevalue(install)
    version = run([venv.script("turnfork"), "--version"], cwd=venv.scratch)
    assert version.stdout == f"turnfork {repo_version()}\n"
    checked = run([venv.python, "-I", "-m", "turnfork", "check", CLOSED_LOG], cwd=venv.scratch)
    assert "valid and closed: 259 events" in checked.stdout


@pytest.mark.parametrize("install", INSTALLS)
def test_the_rivals_keep_their_own_packages(install: str,
                                            request: pytest.FixtureRequest) -> None:
    """Their `core` and `shell` import as theirs, and no installed file of anyone's changed."""
    venv: Venv = request.getfixturevalue(install)
    assert venv.py(THEIRS).stdout == "theirs ok\n"
    site = venv.site_packages
    for distribution in ("turnfork", "their_core", "their_shell"):
        assert changed_files(site, distribution) == [], distribution


def test_the_editable_install_adds_two_path_lines_and_no_package(rivals_then_editable: Venv,
                                                                 ) -> None:
    """`pip install -e` adds a `.pth` naming `.editable/`, one importing the finder from there,
    and the dist-info; no package, so the rivals' files are untouched."""
    site = rivals_then_editable.site_packages
    recorded = {path.split("/", 1)[0] for path, _ in record_entries(site, "turnfork")}
    assert recorded == {"_turnfork.pth", "_turnfork_editable.pth",
                        f"turnfork-{repo_version()}.dist-info", ".."}, recorded
    assert (site / "_turnfork.pth").read_text(encoding="utf-8").split() == [
        str(ROOT / ".editable")]
    assert (site / "_turnfork_editable.pth").read_text(encoding="utf-8") == (
        "import _turnfork_editable\n")
