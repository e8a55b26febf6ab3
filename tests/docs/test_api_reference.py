"""The API pages (docs/api*.md) document every public name with its real signature, and
name nothing that does not exist.

Public names are each module's ``__all__`` in ``core/`` and ``shell/`` (the front doors
included; private modules and the CLI, documented in docs/cli.md, left out). The Ray modules
are documented in docs/ray.md and need the ``ray`` extra to import: their names are read from
the source and looked for there. A name is documented when a code span of a page holds it. A
documented call, ``name(a, b=None, *, c)``, must name the parameters the object really takes
(some of them, in an example; all of them at least once for a function, and for a class whose
call is shown); a class may instead be shown with its bases, ``SessionNotFoundError(LookupError)``.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
API_PAGES = tuple(sorted((ROOT / "docs").glob("api*.md")))
RAY_PAGE = ROOT / "docs" / "ray.md"
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
#: Names a page may call that are not turnfork's: the Result API, Python's and msgspec's types,
#: and DSH's own functions quoted for comparison.
FOREIGN_CALLS = frozenset({
    "Success", "Failure", "Raw", "Struct", "Literal", "String", "JSON", "Error", "Promise",
})


@dataclass(frozen=True)
class PublicName:
    module: str
    name: str
    #: The object, or None when its module cannot be imported here.
    value: Any


def _module_names() -> Iterator[tuple[str, Path]]:
    for package in ("core", "shell"):
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if any(part.startswith("_") for part in parts) or parts[:2] == ["shell", "cli"]:
                continue
            yield "turnfork." + ".".join(parts), path


def _static_all(path: Path) -> list[str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets):
            assert isinstance(node.value, ast.List), f"{path}: __all__ is not a literal list"
            return [ast.literal_eval(element) for element in node.value.elts]
    return []


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        if ".ray" in name:  # the ray extra is not installed
            return None
        raise


@cache
def public_names() -> tuple[PublicName, ...]:
    found: list[PublicName] = []
    for module_name, path in _module_names():
        module = _import(module_name)
        names = list(getattr(module, "__all__", ())) if module else _static_all(path)
        found.extend(PublicName(module_name, name, getattr(module, name) if module else None)
                     for name in names)
    return tuple(found)


def _code_spans(paragraph: str) -> Iterator[str]:
    """CommonMark's code spans: a run of n backticks opens one, the next run of n closes it."""
    runs = list(re.finditer(r"`+", paragraph))
    index = 0
    while index < len(runs):
        opening = runs[index]
        closing = next((later for later in range(index + 1, len(runs))
                        if len(runs[later].group()) == len(opening.group())), None)
        if closing is None:
            index += 1
            continue
        yield paragraph[opening.end():runs[closing].start()].replace("\n", " ").strip()
        index = closing + 1


@cache
def spans_of(pages: tuple[Path, ...]) -> tuple[str, ...]:
    spans: list[str] = []
    for page in pages:
        prose = FENCE.sub("", page.read_text(encoding="utf-8"))
        for paragraph in re.split(r"\n\s*\n", prose):
            spans.extend(_code_spans(paragraph))
    return tuple(spans)


def _pages_for(module: str) -> tuple[Path, ...]:
    return (RAY_PAGE,) if module.startswith("turnfork.shell.ray") else API_PAGES


def _arguments(text: str) -> list[str]:
    """The parameter names of a documented call's argument text (literals are left out)."""
    parts: list[str] = []
    depth, current = 0, ""
    for char in text:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    names = []
    for part in (p.strip().lstrip("*") for p in parts):
        match = IDENTIFIER.match(part)
        if match and (part[match.end():].lstrip()[:1] in ("", ":", "=", "?")):
            names.append(match.group())
        elif part and part not in ("/", "…", "..."):
            names.append(f"<{part}>")  # a value in an example, not a parameter name
    return names


@cache
def _module_words() -> frozenset[str]:
    """What may qualify a call to a public function: the packages and modules."""
    words = {"turnfork"}
    for module_name, _ in _module_names():
        words.update(module_name.split("."))
    return frozenset(words)


@cache
def documented_calls(pages: tuple[Path, ...] = API_PAGES) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Every call ``pages`` show of a function or class (``name(...)`` or
    ``module.name(...)``, not a method ``obj.name(...)``), by name: its argument names."""
    calls: dict[str, list[tuple[str, ...]]] = {}
    for span in spans_of(pages):
        for match in re.finditer(r"(?<![\w.])((?:\w+\.)*)(\w+)\(", span):
            if any(part not in _module_words() for part in match.group(1).split(".")[:-1]):
                continue
            depth, index = 1, match.end()
            while index < len(span) and depth:
                depth += span[index] in "([{"
                depth -= span[index] in ")]}"
                index += 1
            if depth == 0:
                calls.setdefault(match.group(2), []).append(
                    tuple(_arguments(span[match.end():index - 1])))
    return {name: tuple(found) for name, found in calls.items()}


def _parameters(value: Any) -> tuple[str, ...] | None:
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return None
    return tuple(name for name in signature.parameters if name != "self")


def _has_signature(value: Any) -> bool:
    return inspect.isfunction(value) or inspect.ismethod(value) or inspect.isclass(value)


def _bases(value: Any) -> set[str]:
    return {base.__name__ for base in inspect.getmro(value)} if inspect.isclass(value) else set()


def test_every_public_name_is_documented() -> None:
    """A name in a module's __all__ that no code span of its page holds is undocumented."""
    mentioned: dict[tuple[Path, ...], set[str]] = {}
    missing = []
    for public in public_names():
        pages = _pages_for(public.module)
        if pages not in mentioned:
            mentioned[pages] = {word for span in spans_of(pages)
                                for word in IDENTIFIER.findall(span)}
        if public.name not in mentioned[pages]:
            missing.append(f"{public.module}.{public.name}")
    assert not missing, "undocumented public names:\n" + "\n".join(missing)


def test_documented_calls_name_real_parameters() -> None:
    """Each documented call of a public name names only parameters it takes, and each function
    (and each class whose call is shown) is shown once with all of them."""
    by_name: dict[tuple[tuple[Path, ...], str], list[PublicName]] = {}
    for public in public_names():
        if _has_signature(public.value):
            by_name.setdefault((_pages_for(public.module), public.name), []).append(public)
    wrong = []
    for (pages, name), publics in sorted(by_name.items(), key=lambda item: item[0][1]):
        calls = documented_calls(pages)
        real = {params for p in publics if (params := _parameters(p.value)) is not None}
        bases = set().union(*(_bases(p.value) for p in publics))
        shown = [call for call in calls.get(name, ()) if not (call and set(call) <= bases)]
        for call in shown:
            named = {argument for argument in call if not argument.startswith("<")}
            if not any(named <= set(params) for params in real):
                wrong.append(f"{name}({', '.join(call)}): takes "
                             + " or ".join(f"({', '.join(p)})" for p in sorted(real)))
        for public in publics:
            params = _parameters(public.value)
            if params is None or (inspect.isclass(public.value) and not shown):
                continue
            if not any(set(call) == set(params) for call in shown):
                wrong.append(f"{public.module}.{name}: no page shows its call with all of "
                             f"({', '.join(params)})")
    assert not wrong, "documented calls that do not match the code:\n" + "\n".join(
        dict.fromkeys(wrong))


def _known_words() -> set[str]:
    """Everything a page may call: public names, their members and parameters, and builtins."""
    known = set(dir(builtins)) | FOREIGN_CALLS
    for public in public_names():
        known.add(public.name)
        value = public.value
        if value is None:
            continue
        if inspect.isclass(value) or inspect.ismodule(value):
            for member_name in dir(value):
                known.add(member_name)
                member = getattr(value, member_name, None)
                if inspect.isfunction(member):
                    known.update(_parameters(member) or ())
        if _has_signature(value):
            known.update(_parameters(value) or ())
    return known


def _table_names() -> Iterator[tuple[str, str]]:
    """The names that open the code spans of the first column of each ``| name | what |``
    table (methods, ``.x``, left out), with their page."""
    for page in API_PAGES:
        header: list[str] = []
        for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
            if not line.startswith("|"):
                header = []
                continue
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
            if not header:
                header = cells
                continue
            if header[0] != "name" or set(cells[0]) <= set("-: "):
                continue
            for span in _code_spans(cells[0]):
                match = re.match(r"(?:\w+\.)*([A-Za-z_]\w*)", span.removeprefix("await "))
                if match:
                    yield page.name, match.group(1)


def test_documented_names_exist() -> None:
    """A call a page shows, and a name a ``name`` column lists, is a public name, one of its
    members, or a foreign function it quotes: a name that left the code leaves the page too."""
    known = _known_words()
    unknown = sorted({f"{name}(…)" for name in documented_calls() if name not in known}
                     | {f"{page}: {name}" for page, name in _table_names() if name not in known})
    assert not unknown, f"the API pages name what the code does not have: {unknown}"
