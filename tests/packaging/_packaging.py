"""Building turnfork's wheel, making fresh virtual environments and wheels of other projects.

Everything here runs as a user would: ``pip wheel`` builds the wheel from the checkout, ``python
-m venv`` makes an empty environment, ``pip install`` installs into it, and the installed
``python`` and ``turnfork`` are then run from a scratch directory in isolated mode (``-I``), so
neither the checkout's folders nor the test run's ``sys.path`` can stand in for what was
installed.
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
                        "MYPYPATH", "PYTHONSAFEPATH"}}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run(command: list[str | Path], cwd: Path, *, check: bool = True,
        ) -> subprocess.CompletedProcess[str]:
    """Run a command from ``cwd``; with ``check``, a failure shows its whole output."""
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=clean_env(),
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"{command} exited {done.returncode}\n--- stdout\n{done.stdout}"
                             f"\n--- stderr\n{done.stderr}")
    return done


def build_wheel(out: Path) -> Path:
    """Build turnfork's wheel from the checkout with pip (an isolated build, as a user's)."""
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, ROOT], cwd=out)
    wheels = sorted(out.glob("turnfork-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


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

    def pip(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return run([self.python, "-m", "pip", "install", "-q", *args], cwd=self.scratch)

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
