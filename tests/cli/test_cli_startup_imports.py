"""Fast to start (issue 11, item 7), the command line's part: each command imports only what it
needs. `--help` imports neither the core nor rich; `check` and `seed` not rich nor the asyncio
runtime; only `demo` runs the runtime.

What `import turnfork.shell` costs is the front door's business, so the probe leaves
``shell/__init__.py`` out (a bare package object stands for it) and sees only what the command
line itself pulls in."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _cli_helpers import FORK_PARENT, REPO

#: Prints the modules the command line loads, beyond a front door that imports nothing.
PROBE = """
import importlib.util, sys, types
shell = types.ModuleType("turnfork.shell")
# Where turnfork.shell is, installed or editable (found, not imported).
shell.__path__ = list(importlib.util.find_spec("turnfork.shell").submodule_search_locations)
sys.modules["turnfork.shell"] = shell
before = set(sys.modules)
from turnfork.shell.cli import main
main(sys.argv[1:])
sys.stdout.flush()
print("\\n".join(sorted(set(sys.modules) - before)), file=sys.stderr)
"""

RUNTIME = ("turnfork.shell.agent", "turnfork.shell.host", "turnfork.shell.session",
           "turnfork.shell.subagent", "turnfork.shell.models", "turnfork.shell.tools",
           "turnfork.shell.jsonl_store", "turnfork.shell.store", "turnfork.shell.cli.demo",
           "asyncio")


def _added(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False)
    return done.stderr.split()


def _from(modules: list[str], *prefixes: str) -> list[str]:
    return [name for name in modules if name.startswith(prefixes)]


@pytest.mark.parametrize("args", [["--help"], ["check", "--help"], ["show", "--help"],
                                  ["demo", "--help"], ["--version"]])
def test_help_imports_neither_the_core_nor_rich(args: list[str]) -> None:
    """The parser is built from the commands' words alone."""
    added = _added(*args)
    assert "turnfork.shell.cli.app" in added or "turnfork.shell.cli" in added
    assert _from(added, "turnfork.core", "rich", "msgspec", "returns", *RUNTIME) == []


@pytest.mark.parametrize("command", ["check", "seed"])
def test_check_and_seed_import_the_reader_only(command: str) -> None:
    """check/seed: the core and the reader; no rich, no runtime, no event loop."""
    added = _added(command, str(FORK_PARENT))
    assert "turnfork.shell.cli.assess" in added
    assert _from(added, "rich", *RUNTIME) == []


def test_show_adds_rich_but_no_runtime() -> None:
    """show draws with rich, and still needs no asyncio runtime."""
    added = _added("show", "--plain", str(FORK_PARENT))
    assert _from(added, "rich")
    assert _from(added, *RUNTIME) == []


@pytest.mark.parametrize("command", ["check", "seed", "show"])
def test_a_dsh_log_does_not_import_the_wire_formats(command: str) -> None:
    """A DSH log's command never imports core.formats or the CLI's history modules."""
    added = _added(command, "--json" if command == "show" else "--", str(FORK_PARENT))
    assert _from(added, "turnfork.core.formats", "turnfork.shell.cli.histories",
                 "turnfork.shell.cli.history_outline") == []
