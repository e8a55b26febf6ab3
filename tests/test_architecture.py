"""The shell's structure (issue 12, points 4 and 5): its modules import each other without a
cycle, none reaches into another module's private state, and the front doors stay small."""

from __future__ import annotations

import ast
import importlib
import re
import types
from pathlib import Path

import pytest

import turnfork.core
import turnfork.shell

ROOT = Path(__file__).resolve().parents[1]
SHELL = ROOT / "shell"
#: Private names of other libraries' public APIs that shell code may use.
FOREIGN_PRIVATE = frozenset({
    "_replace",  # namedtuple's copy-with-changes
    "_Environ",  # os.environ's type
    "_fill_text",  # argparse's formatter hook, overridden
})


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in SHELL.rglob("*.py")}


def _targets(module: str, node: ast.ImportFrom) -> set[str]:
    package = module.split(".")
    if MODULES[module].name != "__init__.py":
        package = package[:-1]
    base = package[:len(package) - (node.level - 1)]
    target = ".".join([*base, *([node.module] if node.module else [])])
    found = {target} if target in MODULES else set()
    found.update(f"{target}.{alias.name}" for alias in node.names
                 if f"{target}.{alias.name}" in MODULES)
    return found


def _runtime_imports(module: str) -> set[str]:
    """The shell modules ``module`` imports when it runs: module level or inside functions,
    everything but what sits under ``if TYPE_CHECKING:``."""
    found: set[str] = set()
    pending: list[ast.AST] = [ast.parse(MODULES[module].read_text(encoding="utf-8"))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            found |= _targets(module, node)
        pending.extend(ast.iter_child_nodes(node))
    return found - {module}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, str] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                cycles.append([*path[path.index(imported):], imported])
            elif imported not in state:
                visit(imported, path)
        path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    return cycles


def test_the_shell_modules_import_each_other_without_a_cycle() -> None:
    """No chain of run-time imports among the shell's modules comes back to where it began."""
    graph = {module: _runtime_imports(module) for module in MODULES}
    assert sum(map(len, graph.values())) > 50, "the import graph was not read"
    assert not _cycles(graph)


def test_the_cycle_check_sees_a_cycle() -> None:
    """The check itself: a two-module circle and a three-module circle are found."""
    assert _cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c", "a"]]


def _defined_private_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {name for name in names if name.startswith("_")}


def _reach_ins(source: str) -> list[str]:
    tree = ast.parse(source)
    own = _defined_private_names(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                and node.attr not in own and node.attr not in FOREIGN_PRIVATE):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_shell_module_reaches_into_another_modules_private_state() -> None:
    """``x._name`` is used only for a ``_name`` its own module defines."""
    found = {str(path.relative_to(ROOT)): hits for path in MODULES.values()
             if (hits := _reach_ins(path.read_text(encoding="utf-8")))}
    assert not found


def test_the_reach_in_check_sees_one() -> None:
    """The check itself: another module's private attribute is found, the module's own is not."""
    assert _reach_ins("def f(host):\n    host.agents._add(1)\n") == ["line 2: host.agents._add"]
    assert _reach_ins("class A:\n    def _add(self): ...\ndef f(a):\n    a._add()\n") == []


def test_the_front_doors_stay_small_and_what_left_them_stays_importable() -> None:
    """The shell's front door is its ``__all__`` and nothing else: its public names, less its
    submodules, are exactly ``__all__`` and exactly what it declares to the type checker (a
    name documented as importable from ``turnfork.shell`` is in it, as the ``ModelError``
    family and the injected clock and ids are). A module's public name asked of the package
    still resolves, to the module's own object, with a ``DeprecationWarning`` naming the
    module. The core's door is the union of its tiers' doors, each the contract of a tier
    (tests/core/test_front_doors.py), so that what it binds is what it lists."""
    assert set(turnfork.core.__all__) >= {"log", "delegation", "machine", "trace_log"}
    shell = turnfork.shell
    assert len(shell.__all__) <= 40
    for name in shell.__all__:
        getattr(shell, name)
    public = {name for name in dir(shell) if not name.startswith("_")
              and not isinstance(getattr(shell, name), types.ModuleType)}
    assert public == set(shell.__all__)
    source = (ROOT / "shell" / "__init__.py").read_text(encoding="utf-8")
    declared = {alias.asname for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.If) for statement in node.body
                if isinstance(statement, ast.ImportFrom) for alias in statement.names}
    assert declared == set(shell.__all__)
    for name, module in (("SubagentStart", "turnfork.shell.subagents"),
                         ("ToolScope", "turnfork.shell.tools"),
                         ("SessionNotFoundError", "turnfork.shell.store")):
        assert name not in shell.__all__
        with pytest.warns(DeprecationWarning, match=f"import it from {module}"):
            value = getattr(shell, name)
        assert value is getattr(importlib.import_module(module), name)
    with pytest.raises(AttributeError):
        shell.no_such_name  # noqa: B018


def test_product_code_names_no_issue_or_finding_numbers() -> None:
    """Comments and docstrings in the product (core/, shell/, turnfork/) say why, never which
    ticket: no ``issue 14``, ``issues 3``, and no finding ids such as ``G03`` or ``D7``."""
    pattern = re.compile(r"\b[Ii]ssues? \d+|\b[GD]\d{1,2}\b")
    hits = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
            for folder in ("core", "shell", "turnfork")
            for path in sorted((ROOT / folder).rglob("*.py"))
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if pattern.search(line)]
    assert not hits, "\n".join(hits)
