"""Fresh copies, builds and environments shared by the packaging tests: each is made once per
test run, from a ``core.symlinks=false`` clone of the working tree (see ``_packaging``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _packaging import (
    BUILD_PATHS,
    Built,
    Installed,
    Venv,
    WheelInstall,
    build_wheel,
    make_venv,
    python_m_build,
    rival_wheels,
    snapshot_clone,
    wheel_requirements,
)


@pytest.fixture(scope="session")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``git -c core.symlinks=false clone`` of a commit of the working tree as it is."""
    return snapshot_clone(tmp_path_factory.mktemp("snapshot"))


@pytest.fixture(scope="session")
def built(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """``python -m build`` run on the clone: an sdist, then a wheel built from that sdist."""
    sdist, wheel = python_m_build(checkout, tmp_path_factory.mktemp("python-m-build"))
    return Built(sdist=sdist, wheel=wheel)


@pytest.fixture(scope="session")
def wheel(checkout: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """turnfork's wheel, built by ``pip wheel .`` in the clone."""
    return build_wheel(checkout, tmp_path_factory.mktemp("pip-wheel"))


@pytest.fixture(scope="session", params=["python -m build", "pip wheel ."])
def any_wheel(request: pytest.FixtureRequest) -> Path:
    """Each wheel a user can build: ``python -m build``'s (from its sdist) and ``pip wheel``'s."""
    if request.param == "python -m build":
        built: Built = request.getfixturevalue("built")
        return built.wheel
    wheel: Path = request.getfixturevalue("wheel")
    return wheel


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


@pytest.fixture(scope="session", params=BUILD_PATHS)
def installed(request: pytest.FixtureRequest, checkout: Path,
              tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """turnfork built and installed each way a user can, each in a fresh environment."""
    how: str = request.param
    if how == "pip wheel .":
        venv = request.getfixturevalue("wheel_install").venv
        return Installed(how=how, venv=venv, checkout=checkout)
    venv = make_venv(tmp_path_factory.mktemp("installed") / "venv")
    if how == "python -m build: the wheel built from the sdist":
        venv.pip(request.getfixturevalue("built").wheel)
    elif how == "pip install the sdist":
        venv.pip(request.getfixturevalue("built").sdist)
    elif how == "pip install .":
        venv.pip(".", cwd=checkout)
    else:
        assert how == "pip install -e .", how
        venv.pip("-e", ".", cwd=checkout)
    return Installed(how=how, venv=venv, checkout=checkout)


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
