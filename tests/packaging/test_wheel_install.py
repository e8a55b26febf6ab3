"""turnfork installed from its wheel (not editable) into a fresh environment, as a user would
(issue 11.1, 11.2): one import package, ``python -m turnfork``, the ``turnfork`` command, and a
wheel that carries its licence and ``py.typed``."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from _packaging import CLOSED_LOG, ROOT, USER_SCRIPT, record_entries, repo_version, run
from conftest import WheelInstall

pytestmark = pytest.mark.slow


def _members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_holds_one_package_its_licence_and_py_typed(wheel: Path) -> None:
    """The wheel's top level is `turnfork/` and its dist-info; LICENSE and py.typed are in it."""
    members = _members(wheel)
    dist_info = f"turnfork-{repo_version()}.dist-info"
    assert {m.split("/", 1)[0] for m in members} == {"turnfork", dist_info}, sorted(members)
    assert "turnfork/py.typed" in members
    with zipfile.ZipFile(wheel) as archive:
        licence = archive.read(f"{dist_info}/licenses/LICENSE")
        metadata = archive.read(f"{dist_info}/METADATA").decode("utf-8")
    assert licence == (ROOT / "LICENSE").read_bytes()
    assert "Apache License" in licence.decode("utf-8")
    assert "License-Expression: Apache-2.0" in metadata
    assert "Requires-Python: >=3.11" in metadata


def test_the_wheel_holds_every_module_of_core_and_shell_and_nothing_else(wheel: Path) -> None:
    """Every `.py` under core/ and shell/ is in the wheel under turnfork/, and only sources."""
    package = {m for m in _members(wheel) if m.startswith("turnfork/")}
    expected = {"turnfork/__init__.py", "turnfork/__main__.py", "turnfork/py.typed"}
    for folder, _, names in os.walk(ROOT / "turnfork"):  # its own modules (links not followed)
        expected |= {f"turnfork/{(Path(folder) / n).relative_to(ROOT / 'turnfork').as_posix()}"
                     for n in names if n.endswith(".py") and "__pycache__" not in folder}
    for part in ("core", "shell"):
        expected |= {f"turnfork/{part}/{p.relative_to(ROOT / part).as_posix()}"
                     for p in (ROOT / part).rglob("*.py") if "__pycache__" not in p.parts}
    assert package == expected


def test_site_packages_gets_only_turnfork_and_its_dist_info(wheel_install: WheelInstall,
                                                            ) -> None:
    """Installing the wheel adds exactly `turnfork/` and its dist-info to site-packages."""
    dist_info = f"turnfork-{repo_version()}.dist-info"
    added = wheel_install.after - wheel_install.before
    assert added == {"turnfork", dist_info}, sorted(wheel_install.after)
    site = wheel_install.venv.site_packages
    recorded = {path.split("/", 1)[0] for path, _ in record_entries(site, "turnfork")}
    # The one file outside site-packages is the `turnfork` script in the environment's bin/.
    assert recorded == {"turnfork", dist_info, ".."}, recorded
    assert {p for p, _ in record_entries(site, "turnfork") if p.startswith("..")} == {
        "../../../bin/turnfork"}


def test_a_user_imports_turnfork_its_core_and_its_shell(wheel_install: WheelInstall) -> None:
    """`import turnfork`, `turnfork.core`, `turnfork.shell` load from site-packages and work."""
    venv = wheel_install.venv
    version, package, core, shell = venv.py(USER_SCRIPT).stdout.split()
    site = venv.site_packages.resolve()
    assert version == repo_version()
    assert (Path(package), Path(core), Path(shell)) == (
        site / "turnfork", site / "turnfork" / "core", site / "turnfork" / "shell")


@pytest.mark.parametrize("name", ["core", "shell"])
def test_no_top_level_core_or_shell_is_installed(wheel_install: WheelInstall, name: str) -> None:
    """`import core` / `import shell` find nothing: turnfork claims no such names."""
    done = wheel_install.venv.py(f"import {name}", check=False)
    assert done.returncode == 1
    assert f"ModuleNotFoundError: No module named '{name}'" in done.stderr


def test_python_dash_m_turnfork_is_the_turnfork_command(wheel_install: WheelInstall) -> None:
    """`python -m turnfork` and the `turnfork` script print the same version and check alike."""
    venv = wheel_install.venv
    module = run([venv.python, "-I", "-m", "turnfork", "--version"], cwd=venv.scratch)
    script = run([venv.script("turnfork"), "--version"], cwd=venv.scratch)
    assert module.stdout == script.stdout == f"turnfork {repo_version()}\n"
    checked = [run([*command, "check", CLOSED_LOG], cwd=venv.scratch)
               for command in ([venv.python, "-I", "-m", "turnfork"], [venv.script("turnfork")])]
    assert checked[0].stdout == checked[1].stdout
    assert "valid and closed: 259 events" in checked[0].stdout
