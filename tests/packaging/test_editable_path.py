"""What an editable install runs (issue 11.1, 22): `.editable/` holds only the finder and its
`.pth` line, the build configuration names them, and the finder makes exactly `turnfork`,
`turnfork.core` and `turnfork.shell` importable from the checkout's own folders, with a clear
error once the checkout is gone. Each check runs in a fresh `python -I -S` (no `.pth` file runs,
so no installed finder), with site-packages (for the dependencies) and `.editable/` put on
`sys.path` by hand, and the finder imported, as the install's `.pth` lines do."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

from _packaging import ROOT


def _prelude(editable: Path) -> str:
    return (f"import sys; sys.path += [{sysconfig.get_paths()['purelib']!r}, {str(editable)!r}]; "
            "import _turnfork_editable\n")


def _run_with_finder(editable: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-I", "-S", "-c", _prelude(editable) + code],
                          cwd=editable.parent, capture_output=True, text=True, timeout=120,
                          check=False)


def test_the_editable_folder_holds_only_the_finder_and_its_pth_line() -> None:
    """`.editable/` holds the finder and the `.pth` line importing it; pyproject names both."""
    entries = sorted(p.name for p in (ROOT / ".editable").iterdir() if p.name != "__pycache__")
    assert entries == ["_turnfork_editable.pth", "_turnfork_editable.py"]
    assert (ROOT / ".editable" / "_turnfork_editable.pth").read_text(encoding="utf-8") == (
        "import _turnfork_editable\n")
    hatch = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]
    wheel = hatch["build"]["targets"]["wheel"]
    assert wheel["dev-mode-dirs"] == [".editable"]
    assert wheel["sources"] == {"core": "turnfork/core", "shell": "turnfork/shell"}
    assert wheel["hooks"]["custom"]["path"] == "hatch_build.py"
    assert ".editable/_turnfork_editable.pth" in (ROOT / "hatch_build.py").read_text(
        encoding="utf-8")


def test_the_finder_maps_the_three_packages_to_the_checkout() -> None:
    """`turnfork`, `turnfork.core`, `turnfork.shell` and their modules load from `turnfork/`,
    `core/` and `shell/`; `python -m turnfork` works; nothing else of the checkout imports."""
    code = """
import importlib, turnfork, turnfork.core, turnfork.core.events, turnfork.shell.cli
print(turnfork.__file__, turnfork.core.__file__, turnfork.core.events.__file__,
      turnfork.shell.cli.__file__, turnfork.__version__)
for name in ("core", "shell", "tests", "turnfork.tests", "turnfork.benchmarks"):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        print("absent", name)
"""
    done = _run_with_finder(ROOT / ".editable", code)
    assert done.returncode == 0, done.stderr
    first, *absent = done.stdout.splitlines()
    files = first.split()
    assert files[:4] == [str(ROOT / "turnfork" / "__init__.py"), str(ROOT / "core" / "__init__.py"),
                         str(ROOT / "core" / "events.py"),
                         str(ROOT / "shell" / "cli" / "__init__.py")]
    assert absent == ["absent core", "absent shell", "absent tests", "absent turnfork.tests",
                      "absent turnfork.benchmarks"]
    module = _run_with_finder(ROOT / ".editable", "import runpy; sys.argv = ['turnfork', "
                              "'--version']; runpy.run_module('turnfork', run_name='__main__')")
    assert module.returncode == 0, module.stderr
    assert module.stdout == f"turnfork {files[4]}\n"


def test_a_checkout_that_is_gone_is_named(tmp_path: Path) -> None:
    """An editable install whose checkout lost its folders says where it looked and what to do,
    instead of a bare ModuleNotFoundError."""
    editable = tmp_path / "moved" / ".editable"
    editable.mkdir(parents=True)
    shutil.copy(ROOT / ".editable" / "_turnfork_editable.py", editable)
    done = _run_with_finder(editable, "import turnfork")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (f"ImportError: turnfork is installed in editable mode from {tmp_path / 'moved'}"
                    f", which no longer has {tmp_path / 'moved' / 'turnfork' / '__init__.py'}: "
                    "reinstall turnfork (pip install -e <checkout>)")
