"""Fresh environments shared by the packaging tests: each is built once per test run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from _packaging import Venv, build_wheel, make_venv, rival_wheels, wheel_requirements


@dataclass(frozen=True)
class WheelInstall:
    """turnfork's wheel installed (not editable) into a fresh environment."""

    wheel: Path
    venv: Venv
    #: site-packages' top level before and after the wheel itself went in (its
    #: dependencies were installed first, so the difference is what turnfork put there).
    before: frozenset[str]
    after: frozenset[str]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """turnfork's wheel, freshly built from this checkout."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def rivals(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Wheels of two other projects that ship top-level ``core`` and ``shell``."""
    return rival_wheels(tmp_path_factory.mktemp("rivals"))


@pytest.fixture(scope="session")
def wheel_install(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> WheelInstall:
    """A fresh environment with the dependencies, then turnfork's wheel (non-editable)."""
    venv = make_venv(tmp_path_factory.mktemp("wheel-install") / "venv")
    venv.pip(*wheel_requirements(wheel))
    before = frozenset(venv.top_level())
    venv.pip("--no-deps", wheel)
    return WheelInstall(wheel=wheel, venv=venv, before=before, after=frozenset(venv.top_level()))


@pytest.fixture(scope="session")
def wheel_then_rivals(wheel: Path, rivals: list[Path],
                      tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh environment: turnfork's wheel first, then the rivals' ``core`` and ``shell``."""
    venv = make_venv(tmp_path_factory.mktemp("wheel-rivals") / "venv")
    venv.pip(wheel)
    venv.pip(*rivals)
    return venv


@pytest.fixture(scope="session")
def rivals_then_editable(rivals: list[Path],
                         tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh environment: the rivals' ``core`` and ``shell`` first, then turnfork editable
    from this checkout (``pip install -e``, as the README's commands do)."""
    from _packaging import ROOT

    venv = make_venv(tmp_path_factory.mktemp("editable-rivals") / "venv")
    venv.pip(*rivals)
    venv.pip("-e", ROOT)
    return venv
