"""turnfork's wheels, as `python -m build` (from its sdist) and `pip wheel .` build them, and one
installed (not editable) into a fresh environment, as a user would (issue 11.1, 11.2, 22): one
import package holding every module of `core/` and `shell/`, its licence and `py.typed`; and
site-packages gets nothing but that package and its dist-info."""

from __future__ import annotations

import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from _packaging import ROOT, WheelInstall, record_entries, repo_version

pytestmark = pytest.mark.slow


def _members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def test_the_wheel_holds_one_package_its_licence_and_py_typed(any_wheel: Path) -> None:
    """The wheel's top level is `turnfork/` and its dist-info; LICENSE and py.typed are in it."""
    members = _members(any_wheel)
    dist_info = f"turnfork-{repo_version()}.dist-info"
    assert {m.split("/", 1)[0] for m in members} == {"turnfork", dist_info}, sorted(members)
    assert "turnfork/py.typed" in members
    with zipfile.ZipFile(any_wheel) as archive:
        licence = archive.read(f"{dist_info}/licenses/LICENSE")
        metadata = archive.read(f"{dist_info}/METADATA").decode("utf-8")
    assert licence == (ROOT / "LICENSE").read_bytes()
    assert "Apache License" in licence.decode("utf-8")
    assert "License-Expression: Apache-2.0" in metadata
    assert "Requires-Python: >=3.11" in metadata


def test_the_wheel_holds_every_module_of_core_and_shell_and_nothing_else(any_wheel: Path,
                                                                        ) -> None:
    """Every `.py` under core/ and shell/ is in the wheel under turnfork/, byte for byte, and
    only sources (no cache, no editable finder)."""
    package = {m for m in _members(any_wheel) if m.startswith("turnfork/")}
    expected = {"turnfork/py.typed": ROOT / "turnfork" / "py.typed"}
    for part in ("turnfork", "core", "shell"):  # turnfork/'s own modules, then the mapped parts
        prefix = "turnfork/" if part == "turnfork" else f"turnfork/{part}/"
        expected |= {f"{prefix}{p.relative_to(ROOT / part).as_posix()}": p
                     for p in (ROOT / part).rglob("*.py") if "__pycache__" not in p.parts}
    assert package == set(expected)
    with zipfile.ZipFile(any_wheel) as archive:
        changed = [m for m, source in expected.items() if archive.read(m) != source.read_bytes()]
    assert changed == []


def test_zstandard_is_a_dependency_and_the_zstd_extra_an_empty_alias(any_wheel: Path) -> None:
    """Reading DSH's default `.zstd` logs needs no extra; `turnfork[zstd]` still resolves."""
    with zipfile.ZipFile(any_wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(name).decode("utf-8"))
    requirements = metadata.get_all("Requires-Dist") or []
    assert "zstandard>=0.22" in requirements
    assert "zstd" in (metadata.get_all("Provides-Extra") or [])
    assert not [r for r in requirements if "extra == 'zstd'" in r or 'extra == "zstd"' in r]


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
