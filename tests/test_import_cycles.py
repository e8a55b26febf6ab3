"""The core's and the shell's modules import each other without a cycle, counting every import
the AST holds: module level, inside functions and under ``if TYPE_CHECKING:`` (a type-level
cycle ties the modules together as much as a runtime one: neither can be read, vendored or
type-checked without the other)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "shell")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path
           for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def _resolved(module: str, base: str, names: list[str], modules: dict[str, Path]) -> set[str]:
    """Each ``base.name`` that is a module (``from . import jobs``), and ``base`` itself unless
    every name is one of its submodules."""
    found = {f"{base}.{name}" for name in names if f"{base}.{name}" in modules}
    if base in modules and (not names or len(found) < len(names)):
        found.add(base)
    return found - {module}


def imports_of(module: str, source: str, modules: dict[str, Path]) -> set[str]:
    """Every module of ``modules`` that ``module`` (parsed from ``source``) imports anywhere."""
    package = module.split(".")
    if modules[module].name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names]
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = (node.module or "").removeprefix("turnfork.")
            found |= _resolved(module, target, names, modules)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found |= _resolved(module, alias.name.removeprefix("turnfork."), [], modules)
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    return {module: imports_of(module, path.read_text(encoding="utf-8"), modules)
            for module, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.get(module, ())):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_core_and_shell_modules_import_each_other_without_a_cycle() -> None:
    found = cycles(import_graph(MODULES))
    assert not found, "import cycles (TYPE_CHECKING imports included):\n" + "\n".join(
        " <-> ".join(component) for component in found)


def test_the_graph_counts_type_checking_and_function_level_imports() -> None:
    modules = {name: Path(f"{name.replace('.', '/')}.py")
               for name in ("shell.a", "shell.b", "shell.c", "shell.d")}
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from .b import B\n"
              "def f():\n    from . import c\n"
              "import turnfork.shell.d\n")
    assert imports_of("shell.a", source, modules) == {"shell.b", "shell.c", "shell.d"}
    package = {"shell.p": Path("shell/p/__init__.py"), "shell.p.a": Path("shell/p/a.py"),
               "shell.p.b": Path("shell/p/b.py")}
    assert imports_of("shell.p.a", "from . import b\n", package) == {"shell.p.b"}
    assert imports_of("shell.p.a", "from . import b, X\n", package) == {"shell.p", "shell.p.b"}


def test_the_cycle_check_sees_every_cycle_whole() -> None:
    assert cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}, "e": {"a"}}) == [
        ["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b"], ["c", "d"]]
