"""Every way a user builds and installs turnfork gives a working `turnfork` (issue 22): `python -m
build` (the sdist, then the wheel built from that sdist), `pip install` of the sdist, `pip install
.`, `pip install -e .` and `pip wheel .`, each from a `git -c core.symlinks=false clone` of the
working tree and into a fresh environment: the package imports from where it was installed,
`turnfork demo` runs, `python -m turnfork` is the command, a `.zstd` log reads with no extra, and
no top-level `core` or `shell` appears."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from _packaging import (
    CLOSED_LOG,
    ROOT,
    USER_SCRIPT,
    Built,
    Installed,
    repo_version,
    run,
    tracked_symlinks,
)

pytestmark = pytest.mark.slow

#: Compresses a closed log with zstandard (a base dependency, so the fresh environment has it)
#: into the scratch directory, for `turnfork check` to read.
WRITE_ZSTD_LOG = f"""
import pathlib, zstandard
data = pathlib.Path({str(CLOSED_LOG)!r}).read_bytes()
pathlib.Path("K10.events.jsonl.zstd").write_bytes(zstandard.ZstdCompressor().compress(data))
"""


def test_the_clone_holds_no_symbolic_link(checkout: Path) -> None:
    """The working tree stores no link (a checkout without symlink support would get a text
    file instead), and the clone has none on disk."""
    assert tracked_symlinks(checkout) == []
    on_disk = [p for p in checkout.rglob("*") if p.is_symlink()]
    assert on_disk == []


def test_the_sdist_keeps_the_repository_layout(built: Built) -> None:
    """The sdist holds `core/`, `shell/` and `turnfork/` as in the repository (every module), the
    editable finder and the build hook, and no link and no `turnfork/core` copy."""
    top = f"turnfork-{repo_version()}"
    with tarfile.open(built.sdist) as archive:
        members = archive.getmembers()
    names = {m.name for m in members}
    assert not [m.name for m in members if m.issym() or m.islnk()]
    expected = {f"{top}/{p.relative_to(ROOT).as_posix()}"
                for part in ("core", "shell", "turnfork", ".editable")
                for p in (ROOT / part).rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}
    assert expected <= names, sorted(expected - names)
    assert {f"{top}/pyproject.toml", f"{top}/hatch_build.py", f"{top}/LICENSE"} <= names
    assert not [n for n in names if n.startswith((f"{top}/turnfork/core", f"{top}/turnfork/shell",
                                                  f"{top}/.editable/turnfork"))]


def test_turnfork_imports_from_where_it_was_installed(installed: Installed) -> None:
    """`import turnfork, turnfork.core, turnfork.shell` works and a fork seed is computed; an
    install loads from site-packages, an editable one from the clone's own folders."""
    version, package, core, shell = installed.venv.py(USER_SCRIPT).stdout.split()
    assert version == repo_version()
    assert (Path(package), Path(core), Path(shell)) == installed.package_folders()


def test_turnfork_demo_runs(installed: Installed) -> None:
    """`turnfork demo` exits 0 and reports that its checks passed."""
    venv = installed.venv
    demo = run([venv.script("turnfork"), "demo"], cwd=venv.scratch)
    assert "checks: " in demo.stdout and "checks failed" not in demo.stdout, demo.stdout


def test_python_dash_m_turnfork_is_the_command(installed: Installed) -> None:
    """`python -m turnfork --version` and `turnfork --version` print the checkout's version."""
    venv = installed.venv
    module = run([venv.python, "-I", "-m", "turnfork", "--version"], cwd=venv.scratch)
    script = run([venv.script("turnfork"), "--version"], cwd=venv.scratch)
    assert module.stdout == script.stdout == f"turnfork {repo_version()}\n"


def test_a_zstd_log_reads_without_an_extra(installed: Installed) -> None:
    """zstandard came in as a dependency: a `.zstd` log is read by `turnfork check`."""
    venv = installed.venv
    venv.py(WRITE_ZSTD_LOG)
    checked = run([venv.script("turnfork"), "check", "K10.events.jsonl.zstd"], cwd=venv.scratch)
    assert "valid and closed: 259 events" in checked.stdout
    assert "(zstd)" in checked.stdout


@pytest.mark.parametrize("name", ["core", "shell", "turnfork.tests", "turnfork.benchmarks"])
def test_no_other_name_becomes_importable(installed: Installed, name: str) -> None:
    """`import core` / `import shell` find nothing, and neither does any other folder of the
    checkout under `turnfork` (an editable install maps exactly three packages)."""
    done = installed.venv.py(f"import {name}", check=False)
    assert done.returncode == 1
    assert f"ModuleNotFoundError: No module named '{name}'" in done.stderr
