"""The command line is its own subpackage of the shell, and no runtime module depends on it."""

from __future__ import annotations

import ast

from _cli_helpers import REPO

SHELL = REPO / "shell"


def _imported_modules(source: str, package: list[str]) -> set[str]:
    """Every module (and imported name) of ``source``, relative ones resolved inside ``shell``.

    ``package`` is the module's folder below shell/, e.g. ``["models"]``.
    """
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = package[: max(len(package) - node.level + 1, 0)] if node.level else []
            module = [*base, *(node.module or "").split(".")] if node.module else base
            names.add(".".join(part for part in module if part))
            names.update(".".join([*module, alias.name]) for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_runtime_module_imports_the_cli_package() -> None:
    """Modules of shell/ outside shell/cli/ never import shell.cli (not even lazily)."""
    runtime = [p for p in SHELL.rglob("*.py") if "cli" not in p.relative_to(SHELL).parts]
    assert len(runtime) > 10
    offenders = {str(p.relative_to(REPO)): _cli_imports(p.read_text(encoding="utf-8"),
                                                       [*p.relative_to(SHELL).parent.parts])
                 for p in runtime}
    assert {k: v for k, v in offenders.items() if v} == {}


def _cli_imports(source: str, package: list[str]) -> list[str]:
    return sorted(name for name in _imported_modules(source, package)
                  if name == "cli" or name.startswith("cli.") or "shell.cli" in name)


def test_the_layout_check_sees_every_spelling_of_a_cli_import() -> None:
    """Relative, nested and absolute imports of the cli package are all caught."""
    assert _cli_imports("from .cli import main", [])
    assert _cli_imports("from . import cli", [])
    assert _cli_imports("def f():\n    from ..cli.render import shorten", ["models"])
    assert _cli_imports("import turnfork.shell.cli", [])
    assert not _cli_imports("from .logfile import read_log\nfrom ..core import x", [])
