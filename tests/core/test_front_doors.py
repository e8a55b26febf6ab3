"""The core's front doors are its contract: each door's ``__all__`` is what the door binds,
a tier's door lists what its modules offer, ``turnfork.core`` is the union of the tiers' doors,
the earlier module paths re-export their modules, and the shell imports core names only
through a front door."""

from __future__ import annotations

import ast
import importlib
import types
from pathlib import Path

import pytest

from turnfork import core

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "core"
#: The tiers whose doors ``turnfork.core`` joins (the formats stay a door of their own).
TIERS = ("log", "delegation", "machine")
#: Every front door: the core's, the tiers' (the wire seed is a one-module tier), and the
#: hypothesis strategies that the doors never import.
DOORS = ("turnfork.core", "turnfork.core.log", "turnfork.core.delegation",
         "turnfork.core.machine", "turnfork.core.formats", "turnfork.core.wire_seed",
         "turnfork.core.log.strategies", "turnfork.core.formats.strategies")
#: ``turnfork.core``'s namespaces: the tiers and the earlier namespaces of its door.
NAMESPACES = ("log", "delegation", "machine", "events", "grammar", "loop")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return "turnfork." + ".".join(parts).removesuffix(".__init__")


def _is_submodule(door: types.ModuleType, value: object) -> bool:
    return isinstance(value, types.ModuleType) and value.__name__.startswith(door.__name__ + ".")


#: The doors that are packages (a module door, the wire seed or a strategies module, also binds
#: what it imports: its contract is its ``__all__``, which the shell check reads).
PACKAGE_DOORS = tuple(name for name in DOORS if not name.endswith(("wire_seed", "strategies")))


@pytest.mark.parametrize("name", PACKAGE_DOORS)
def test_a_door_binds_exactly_its_all(name: str) -> None:
    """The public names of a front door, its submodules aside, are its ``__all__``: each once,
    each bound; a submodule it lists is one."""
    door = importlib.import_module(name)
    listed = door.__all__
    assert len(listed) == len(set(listed)), sorted(n for n in listed if listed.count(n) > 1)
    # (pytest rewrites the asserts of its plugins' packages, turnfork's too: "@py_builtins")
    public = {n for n in vars(door) if not n.startswith("_") and n.isidentifier()}
    submodules = {n for n in public if _is_submodule(door, getattr(door, n))}
    assert public - submodules == set(listed) - submodules, (
        sorted(public - submodules - set(listed)), sorted(set(listed) - public))
    for listed_name in listed:
        value = getattr(door, listed_name)
        assert not isinstance(value, types.ModuleType) or _is_submodule(door, value), listed_name


def _from_other_tiers(path: Path) -> set[str]:
    """The names a tier module imports from another tier (``from ..log import Event``)."""
    return {alias.asname or alias.name for node in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module in TIERS
            for alias in node.names}


@pytest.mark.parametrize("tier", TIERS)
def test_a_tier_door_lists_what_its_modules_offer(tier: str) -> None:
    """A tier's door lists every name its modules' ``__all__`` give (one a module takes from
    another tier is that tier's), the same objects."""
    door = importlib.import_module(f"turnfork.core.{tier}")
    offered: dict[str, object] = {}
    for path in sorted((CORE / tier).glob("*.py")):
        if path.name in ("__init__.py", "strategies.py"):
            continue
        module = importlib.import_module(_module_name(path))
        foreign = _from_other_tiers(path)
        offered.update((name, getattr(module, name)) for name in module.__all__
                       if name not in foreign)
    assert set(door.__all__) == set(offered), (sorted(set(offered) - set(door.__all__)),
                                                 sorted(set(door.__all__) - set(offered)))
    assert all(getattr(door, name) is value for name, value in offered.items())


def test_the_core_door_is_the_union_of_the_tiers_doors() -> None:
    """``turnfork.core`` lists its namespaces and then each tier's door, in order, once."""
    union: list[str] = list(NAMESPACES)
    for tier in TIERS:
        union.extend(name for name in importlib.import_module(f"turnfork.core.{tier}").__all__
                     if name not in union)
    assert core.__all__ == union
    for tier in TIERS:
        door = importlib.import_module(f"turnfork.core.{tier}")
        assert all(getattr(core, name) is getattr(door, name) for name in door.__all__)


def _shims() -> list[Path]:
    """The earlier module paths at the top of core/: modules that only re-export."""
    return sorted(path for path in CORE.glob("*.py")
                  if not path.name.startswith("_") and path.name != "wire_seed.py")


def test_the_earlier_module_paths_re_export_their_modules() -> None:
    """``turnfork.core.trace`` and the like: the names of their module in a tier, the same
    objects, and nothing else (a name the module does not list is an ``AttributeError`` that
    names the earlier path)."""
    shims = _shims()
    assert {path.stem for path in shims} >= {"events", "codec", "trace", "seed", "grammar",
                                             "closers", "loop", "retry", "continuation",
                                             "strategies"}
    for path in shims:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        sources = {f"{node.module}.{alias.name}" for node in tree.body
                   if isinstance(node, ast.ImportFrom) and node.module != "_earlier"
                   for alias in node.names}
        assert len(sources) == 1, (path.name, sources)
        shim = importlib.import_module(f"turnfork.core.{path.stem}")
        home = importlib.import_module(f"turnfork.core.{sources.pop()}")
        assert shim.__all__ == home.__all__, path.name
        assert dir(shim) == sorted(home.__all__), path.name
        assert all(getattr(shim, name) is getattr(home, name) for name in home.__all__)
        unlisted = next(name for name in vars(home) if not name.startswith("__")
                        and name not in home.__all__ and name not in vars(shim))
        earlier = f"'turnfork.core.{path.stem}' has no attribute"
        with pytest.raises(AttributeError, match=earlier):
            getattr(shim, unlisted)


def _core_imports(paths: list[Path]) -> list[tuple[str, int, str, str]]:
    """Every core name imported by ``paths`` (relative or absolute, ``TYPE_CHECKING`` blocks
    and functions included): (file, line, module, name)."""
    found = []
    for path in paths:
        package = _module_name(path).split(".")
        if path.name != "__init__.py":
            package = package[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.extend((str(path.relative_to(ROOT)), node.lineno, alias.name, "")
                             for alias in node.names if alias.name.startswith("turnfork.core"))
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module == "turnfork.core" or module.startswith("turnfork.core."):
                found.extend((str(path.relative_to(ROOT)), node.lineno, module, alias.name)
                             for alias in node.names)
    return found


def unlisted_core_imports(paths: list[Path]) -> list[str]:
    """The core names ``paths`` import other than through a front door's ``__all__``."""
    doors = {name: set(importlib.import_module(name).__all__) for name in DOORS}
    return [f"{file}:{line}: {module} {name}".rstrip()
            for file, line, module, name in _core_imports(paths)
            if module not in doors or (name and name not in doors[module])]


def test_the_shell_imports_core_names_only_through_a_front_door() -> None:
    """Every core name the shell (and the optional ``turnfork`` modules) imports is listed by
    the front door it is imported from."""
    paths = sorted([*(ROOT / "shell").rglob("*.py"), *(ROOT / "turnfork").rglob("*.py")])
    assert len(_core_imports(paths)) > 300, "the shell's imports were not read"
    assert unlisted_core_imports(paths) == []


def test_the_shell_import_check_sees_a_module_path(tmp_path: Path) -> None:
    """The check itself: a name from a module path, and a door's unlisted name, are named."""
    module = ROOT / "shell" / "_probe_for_the_test.py"
    source = ("from ..core.log.trace import trace_log\n"
              "from ..core import trace_log as fine\n"
              "from ..core.log import _checking\n")
    try:
        module.write_text(source, encoding="utf-8")
        assert unlisted_core_imports([module]) == [
            "shell/_probe_for_the_test.py:1: turnfork.core.log.trace trace_log",
            "shell/_probe_for_the_test.py:3: turnfork.core.log _checking"]
    finally:
        module.unlink()


#: The shell's package doors that bind their names at import. ``turnfork.shell`` itself loads
#: its names on first use (its ``__getattr__`` also answers the names of its modules); the
#: Ray door, which needs the ``ray`` extra, is checked by tests/ray/test_ray_front_door.py.
SHELL_DOORS = ("turnfork.shell.subagents", "turnfork.shell.models", "turnfork.shell.cli")


@pytest.mark.parametrize("name", SHELL_DOORS)
def test_a_shell_door_binds_exactly_its_all(name: str) -> None:
    """The shell's package doors too: their public names, submodules aside, are their
    ``__all__`` (a door without one binds no public name)."""
    door = importlib.import_module(name)
    listed = list(getattr(door, "__all__", ()))
    public = {n for n in vars(door) if not n.startswith("_") and n.isidentifier()}
    submodules = {n for n in public if _is_submodule(door, getattr(door, n))}
    assert public - submodules == set(listed) - submodules, (
        sorted(public - submodules - set(listed)), sorted(set(listed) - public))


def test_no_front_door_star_imports() -> None:
    """No ``from … import *`` in any package door of the core or the shell."""
    doors = sorted([*CORE.rglob("__init__.py"), *(ROOT / "shell").rglob("__init__.py")])
    assert len(doors) >= 9
    starred = [f"{path.relative_to(ROOT)}:{node.lineno}"
               for path in doors for node in ast.walk(ast.parse(path.read_text("utf-8")))
               if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)]
    assert starred == []
