"""Fresh copies of the checkout, turnfork built from them every way a user can, fresh virtual
environments, and wheels of other projects.

Everything here runs as a user would. The copy is a ``git -c core.symlinks=false clone`` of a
commit of the working tree as it is (made in a scratch repository: the checkout's own refs, index
and objects are not touched), so what is built is what a clone without symlink support gets.
``python -m build``, ``pip wheel``, ``pip install`` build from it; ``python -m venv`` makes an
empty environment; the installed ``python`` and ``turnfork`` are then run from a scratch
directory in isolated mode (``-I``), so neither the checkout's folders nor the test run's
``sys.path`` can stand in for what was installed.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: A closed DSH-shaped log (``turnfork check`` exits 0 on it).
CLOSED_LOG = ROOT / "tests" / "fixtures" / "dsh" / "generated" / "K10-child0.events.jsonl"
#: pip and venv creation can be slow on a loaded 2-core machine; a hung step still ends.
TIMEOUT_S = 600


def repo_version() -> str:
    """``__version__`` as the checkout declares it."""
    text = (ROOT / "turnfork" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
    assert found is not None, "turnfork/__init__.py declares no __version__"
    return found.group(1)


def clean_env() -> dict[str, str]:
    """The environment without anything that would point Python at the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV",
                        "MYPYPATH", "PYTHONSAFEPATH", "GIT_DIR", "GIT_WORK_TREE",
                        "GIT_INDEX_FILE"}}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run(command: list[str | Path], cwd: Path, *, check: bool = True,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command from ``cwd`` (``env`` added to the clean environment); with ``check``, a
    failure shows its whole output."""
    done = subprocess.run([str(part) for part in command], cwd=cwd,
                          env={**clean_env(), **(env or {})}, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"{command} exited {done.returncode}\n--- stdout\n{done.stdout}"
                             f"\n--- stderr\n{done.stderr}")
    return done


def _git(*args: str | Path, cwd: Path) -> str:
    return run(["git", "-c", "user.name=turnfork tests", "-c", "user.email=tests@invalid",
                "-c", "core.autocrlf=false", *args], cwd=cwd).stdout


def snapshot_clone(out: Path) -> Path:
    """``git -c core.symlinks=false clone`` of a commit of the working tree as it is now.

    The commit holds every file of the working tree that git would add (tracked files with their
    changes, new files, less what .gitignore leaves out). It is made in a scratch repository
    whose work tree is the checkout, so the checkout's own index, refs and objects stay as they
    were.
    """
    scratch = out / "snapshot.git"
    _git("init", "-q", "--bare", scratch, cwd=out)
    tree = ["--git-dir", scratch, "--work-tree", ROOT]
    _git(*tree, "add", "-A", cwd=ROOT)
    _git(*tree, "commit", "-q", "--no-verify", "-m", "working tree snapshot", cwd=ROOT)
    clone = out / "checkout"
    _git("-c", "core.symlinks=false", "clone", "-q", scratch, clone, cwd=out)
    return clone


def tracked_symlinks(checkout: Path) -> list[str]:
    """The paths that the checkout's HEAD commit stores as symbolic links (mode 120000)."""
    listing = _git("ls-tree", "-r", "HEAD", cwd=checkout)
    return [line.split("\t", 1)[1] for line in listing.splitlines() if line.startswith("120000")]


def only(paths: list[Path]) -> Path:
    assert len(paths) == 1, paths
    return paths[0]


def python_m_build(checkout: Path, out: Path) -> tuple[Path, Path]:
    """``python -m build``: the sdist, then the wheel that ``build`` makes from that sdist."""
    run([sys.executable, "-m", "build", "--outdir", out, checkout], cwd=checkout)
    return only(sorted(out.glob("turnfork-*.tar.gz"))), only(sorted(out.glob("turnfork-*.whl")))


def build_wheel(checkout: Path, out: Path) -> Path:
    """``pip wheel .`` in the checkout (an isolated build, as a user's)."""
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, "."], cwd=checkout)
    return only(sorted(out.glob("turnfork-*.whl")))


def wheel_requirements(wheel: Path) -> list[str]:
    """The wheel's run-time requirements (``Requires-Dist`` without an extra)."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(name).decode("utf-8"))
    return [req for req in metadata.get_all("Requires-Dist") or () if "extra ==" not in req]


@dataclass(frozen=True)
class Venv:
    """A fresh virtual environment and where things are in it."""

    root: Path
    #: A scratch directory to run from: nothing of the checkout is importable from it.
    scratch: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def script(self, name: str) -> Path:
        return self.root / "bin" / name

    @property
    def site_packages(self) -> Path:
        out = self.py("import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout
        return Path(out.strip())

    def pip(self, *args: str | Path, cwd: Path | None = None,
            ) -> subprocess.CompletedProcess[str]:
        """``pip install -q ARGS`` run from ``cwd`` (the scratch directory if not given)."""
        return run([self.python, "-m", "pip", "install", "-q", *args], cwd=cwd or self.scratch)

    def py(self, code: str, *, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``python -I -c code``: isolated, so only what is installed can be imported."""
        return run([self.python, "-I", "-c", code], cwd=self.scratch, check=check)

    def top_level(self) -> set[str]:
        """The names at the top of site-packages (without caches)."""
        return {p.name for p in self.site_packages.iterdir() if p.name != "__pycache__"}


def make_venv(root: Path) -> Venv:
    """``python -m venv root`` with the interpreter running the tests."""
    run([sys.executable, "-m", "venv", root], cwd=root.parent)
    scratch = root.parent / f"{root.name}-scratch"
    scratch.mkdir()
    return Venv(root=root, scratch=scratch)


@dataclass(frozen=True)
class WheelInstall:
    """turnfork's wheel installed (not editable) into a fresh environment."""

    wheel: Path
    venv: Venv
    #: site-packages' top level before and after the wheel itself went in (its
    #: dependencies were installed first, so the difference is what turnfork put there).
    before: frozenset[str]
    after: frozenset[str]


@dataclass(frozen=True)
class Built:
    """What ``python -m build`` wrote: the sdist, and the wheel it built from that sdist."""

    sdist: Path
    wheel: Path


#: Every way a user builds and installs turnfork, each tested in a fresh environment.
BUILD_PATHS = (
    "python -m build: the wheel built from the sdist",
    "pip install the sdist",
    "pip install .",
    "pip install -e .",
    "pip wheel .",
)


@dataclass(frozen=True)
class Installed:
    """turnfork installed one of the ``BUILD_PATHS`` ways into a fresh environment."""

    how: str
    venv: Venv
    #: The clone it was built from.
    checkout: Path

    @property
    def editable(self) -> bool:
        return self.how == "pip install -e ."

    def package_folders(self) -> tuple[Path, Path, Path]:
        """Where ``turnfork``, ``turnfork.core`` and ``turnfork.shell`` must load from."""
        if self.editable:
            return (self.checkout / "turnfork", self.checkout / "core", self.checkout / "shell")
        package = self.venv.site_packages.resolve() / "turnfork"
        return package, package / "core", package / "shell"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode('ascii')}"


def write_wheel(out: Path, name: str, files: dict[str, str]) -> Path:
    """A minimal valid pure-Python wheel of distribution ``name`` 1.0 holding ``files``."""
    dist_info = f"{name}-1.0.dist-info"
    contents = {
        **files,
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{dist_info}/WHEEL": ("Wheel-Version: 1.0\nGenerator: turnfork-tests\n"
                               "Root-Is-Purelib: true\nTag: py3-none-any\n"),
    }
    path = out / f"{name}-1.0-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in contents.items():
            data = text.encode("utf-8")
            archive.writestr(member, data)
            records.append(f"{member},{_record_hash(data)},{len(data)}")
        records.append(f"{dist_info}/RECORD,,")
        archive.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return path


def rival_wheels(out: Path) -> list[Path]:
    """Two other projects' wheels that ship top-level ``core`` and ``shell`` packages."""
    return [
        write_wheel(out, "their_core", {
            "core/__init__.py": 'OWNER = "their_core"\n\n\ndef decode_log() -> str:\n'
                                '    return "their decode_log"\n',
        }),
        write_wheel(out, "their_shell", {
            "shell/__init__.py": 'OWNER = "their_shell"\n',
            "shell/cli.py": 'def main() -> str:\n    return "their shell.cli"\n',
        }),
    ]


def record_entries(site_packages: Path, distribution: str) -> list[tuple[str, str]]:
    """``(path, hash)`` of each file a distribution's RECORD lists (hash empty if none)."""
    [dist_info] = site_packages.glob(f"{distribution}-*.dist-info")
    rows = (dist_info / "RECORD").read_text(encoding="utf-8").splitlines()
    return [(row.rsplit(",", 2)[0], row.rsplit(",", 2)[1]) for row in rows if row]


def changed_files(site_packages: Path, distribution: str) -> list[str]:
    """Files of ``distribution`` whose content no longer matches its RECORD."""
    changed = []
    for path, recorded in record_entries(site_packages, distribution):
        if not recorded:
            continue
        file = site_packages / path
        if not file.is_file() or _record_hash(file.read_bytes()) != recorded:
            changed.append(path)
    return changed


#: A user's script: imports from every part of turnfork and runs a fork seed end to end.
USER_SCRIPT = f"""
import pathlib
import turnfork, turnfork.core, turnfork.shell
from turnfork.core import completed_turn_prefix, decode_log, trace_log
from turnfork.shell import Host, ScriptedModel

events = decode_log(pathlib.Path({str(CLOSED_LOG)!r}).read_bytes()).unwrap()
assert trace_log(events).unwrap().is_closed
assert len(completed_turn_prefix(events)) == len(events) == 259
assert Host and ScriptedModel
print(turnfork.__version__)
print(pathlib.Path(turnfork.__file__).resolve().parent)
print(pathlib.Path(turnfork.core.__file__).resolve().parent)
print(pathlib.Path(turnfork.shell.__file__).resolve().parent)
"""
