"""core/ can be vendored: renamed copy works, pure imports, no mutable module state (item 8);
and a tier of it can be copied alone (its import closure, under another name) and works there.

A tier is listed in TIERS with the modules a runtime imports from it, the optional modules it may
copy along without counting them, its line budget and a script that exercises it in the copy.
The closure is every core module its modules import, transitively: relative imports anywhere
in a module (inside functions and ``TYPE_CHECKING`` blocks too), since a copy must hold them all.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from beartype.roar import BeartypeCallHintViolation

from turnfork import core

CORE = Path(__file__).resolve().parents[2] / "core"
#: The core's modules and those of its subpackage ``formats`` (vendored with it).
MODULES = sorted([*CORE.glob("*.py"), *(CORE / "formats").glob("*.py")])
FIXTURE = (Path(__file__).resolve().parent.parent / "fixtures" / "dsh" / "derived"
           / "fork-parent-inflight-at-subagent-call.DERIVED.jsonl")
EFFECTFUL = frozenset({
    "os", "io", "sys", "time", "asyncio", "random", "uuid", "logging", "subprocess", "socket",
    "threading", "pathlib", "datetime", "tempfile", "shutil",
})
MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "pop",
                      "popitem", "clear", "remove", "discard", "sort", "reverse"})
MUTABLE_BUILDERS = frozenset({"list", "dict", "set", "bytearray", "defaultdict", "deque",
                              "OrderedDict", "Counter"})

VENDORED_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from pathlib import Path

import vendored_tf_core as tf
from beartype.roar import BeartypeCallHintViolation

assert Path(tf.__file__).parent == Path({root!r}) / "vendored_tf_core", tf.__file__
header, events = tf.decode_session(Path({fixture!r}).read_bytes(), projected=True).unwrap()
trace = tf.trace_log(events).unwrap()
prefix = tf.completed_turn_prefix(events)
assert (len(events), trace.open_turn, len(prefix)) == (159, 2, 42), (len(events), len(prefix))
assert tf.check_balance(prefix).unwrap().is_closed
assert tf.decode_log(tf.encode_log(events)).unwrap() == events
try:
    tf.completed_turn_prefix(42)
except BeartypeCallHintViolation:
    pass
else:
    raise SystemExit("the vendored copy is not type-checked")
from vendored_tf_core.formats import openai_chat
from vendored_tf_core.wire_seed import from_dsh
chat = from_dsh(prefix, "openai-chat").unwrap()
assert openai_chat.check_balance(chat).unwrap().ends_at_completed_turn
assert "hypothesis" not in sys.modules, "importing the core imported hypothesis"
assert "vendored_tf_core.strategies" not in sys.modules
assert "vendored_tf_core.formats.strategies" not in sys.modules

from hypothesis import given, settings
from vendored_tf_core.strategies import session_logs

@settings(max_examples=10, database=None, deadline=None)
@given(session_logs())
def check(log):
    assert tf.trace_log(log).unwrap().length == len(log)

check()
leaked = sorted(m for m in sys.modules if m == "core" or m.startswith("core."))
assert not leaked, leaked
print("vendored ok")
"""


def test_core_works_when_copied_under_another_name(tmp_path: Path) -> None:
    """A renamed copy of core/ imports, decodes, traces, seeds and generates on its own."""
    shutil.copytree(CORE, tmp_path / "vendored_tf_core",
                    ignore=shutil.ignore_patterns("__pycache__"))
    script = VENDORED_SCRIPT.format(root=str(tmp_path), fixture=str(FIXTURE))
    done = subprocess.run([sys.executable, "-I", "-c", textwrap.dedent(script)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "vendored ok"


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_core_modules_are_found() -> None:
    """The checks below look at every core module."""
    names = {path.relative_to(CORE).as_posix() for path in MODULES}
    assert {"__init__.py", "events.py", "codec.py", "trace.py", "seed.py", "strategies.py",
            "formats/__init__.py", "formats/common.py", "formats/openai_chat.py",
            "formats/openai_responses.py", "formats/anthropic.py"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(CORE).as_posix())
def test_imports_are_relative_and_pure(path: Path) -> None:
    """No absolute self-import, no effectful module; hypothesis only in strategies.py."""
    for node in ast.walk(_tree(path)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            assert top != "core", f"{path.name}:{node.lineno}: absolute self-import {name}"
            assert top not in EFFECTFUL, f"{path.name}:{node.lineno}: imports {name}"
            if top == "hypothesis":
                assert path.name == "strategies.py", f"{path.name}:{node.lineno}: hypothesis"


def test_package_never_imports_strategies() -> None:
    """core/__init__.py does not import the hypothesis strategies."""
    tree = _tree(CORE / "__init__.py")
    relative = [node for node in tree.body if isinstance(node, ast.ImportFrom) and node.level]
    assert relative
    assert all(node.module != "strategies" for node in relative)
    assert all(alias.name != "strategies" for node in relative for alias in node.names)


def test_every_public_function_is_type_checked_when_called() -> None:
    """Every function a core module lists in __all__ is wrapped for beartype checking, the same
    object from its module and from the package; a wrongly typed call is refused."""
    names = [".".join(path.relative_to(CORE).with_suffix("").parts) for path in MODULES]
    modules = [importlib.import_module(f"turnfork.core.{name}") for name in names
               if not name.split(".")[-1].startswith("_")]
    checked = 0
    for module in modules:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value) and value.__module__ == module.__name__ \
                    and not getattr(value, "__turnfork_unchecked__", False):
                assert hasattr(value, "__wrapped__"), f"{module.__name__}.{name} is unchecked"
                if module.__name__.count(".") == 2:  # a module of the package itself
                    assert getattr(core, name, value) is value, name
                checked += 1
    assert checked >= 50
    with pytest.raises(BeartypeCallHintViolation):
        core.completed_turn_prefix(42)  # type: ignore[arg-type]
    with pytest.raises(BeartypeCallHintViolation):
        core.grammar.phase_after("idle", "turn/start")  # type: ignore[arg-type]


def test_a_modules_own_calls_of_its_public_functions_are_not_checked_again() -> None:
    """Ensures that a checked entry point's call of another public function of its module
    binds the plain function (checked once, at the entry point), while a caller outside the
    module still gets the checked one."""
    from turnfork.core import child_plan

    entry = child_plan.plan_child.__wrapped__  # type: ignore[attr-defined]
    inner = entry.__globals__["child_header"]
    plain = child_plan.child_header.__wrapped__  # type: ignore[attr-defined]
    assert not hasattr(inner, "__wrapped__") and inner is plain
    assert entry.__globals__["_fork_cut"].__globals__ is entry.__globals__
    with pytest.raises(BeartypeCallHintViolation):
        child_plan.child_header(42, child_id="c", created_at=0, depth=1,  # type: ignore[arg-type]
                                seed_length=0)


def test_importing_the_core_decorates_nothing() -> None:
    """Importing the core builds no beartype wrapper (checking is paid for at first call)."""
    code = ("import turnfork.core as c, sys; "
            "f = c.completed_turn_prefix; "
            "cells = dict(zip(f.__code__.co_freevars, f.__closure__)); "
            "sys.exit(0 if cells['decorated'].cell_contents is None else 1)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def _module_bindings(tree: ast.Module) -> list[tuple[str, ast.expr, int]]:
    bound: list[tuple[str, ast.expr, int]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            bound.extend((t.id, node.value, node.lineno) for t in node.targets
                         if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            bound.append((node.target.id, node.value, node.lineno))
    return bound


def _is_mutable_value(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Set | ast.Dict | ast.ListComp | ast.SetComp
                  | ast.DictComp):
        return True
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id in MUTABLE_BUILDERS)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(CORE).as_posix())
def test_no_module_level_mutable_state(path: Path) -> None:
    """No `global`; no public mutable containers; private ones are never mutated."""
    tree = _tree(path)
    mutable: set[str] = set()
    for name, value, line in _module_bindings(tree):
        if _is_mutable_value(value):
            is_public = not name.startswith("_")
            assert not is_public, f"{path.name}:{line}: public mutable module-level {name}"
            mutable.add(name)
    for node in ast.walk(tree):
        assert not isinstance(node, ast.Global), f"{path.name}:{node.lineno}: global statement"
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id in mutable
                and node.func.attr in MUTATORS):
            raise AssertionError(f"{path.name}:{node.lineno}: mutates {node.func.value.id}")
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.Delete):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            if (isinstance(target, ast.Subscript | ast.Attribute)
                    and isinstance(target.value, ast.Name) and target.value.id in mutable):
                raise AssertionError(f"{path.name}:{node.lineno}: mutates {target.value.id}")


def test_the_mutable_state_check_catches_mutation(tmp_path: Path) -> None:
    """The AST check above fails on a module that mutates a module-level container."""
    bad = tmp_path / "bad.py"
    bad.write_text("_SEEN = []\n\ndef note(x):\n    _SEEN.append(x)\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="mutates _SEEN"):
        test_no_module_level_mutable_state(bad)
    bad.write_text("CACHE = {}\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="public mutable"):
        test_no_module_level_mutable_state(bad)
    bad.write_text("import os\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="imports os"):
        test_imports_are_relative_and_pure(bad)
    bad.write_text("from core.seed import completed_turn_prefix\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="absolute self-import"):
        test_imports_are_relative_and_pure(bad)


def test_beartype_rejects_wrongly_typed_calls() -> None:
    """Calls into the core with wrong argument types raise a beartype violation."""
    with pytest.raises(BeartypeCallHintViolation):
        core.completed_turn_prefix(42)  # type: ignore[arg-type]
    with pytest.raises(BeartypeCallHintViolation):
        core.decode_log("not bytes")  # type: ignore[arg-type]
    with pytest.raises(BeartypeCallHintViolation):
        core.trace_log(42)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- tiers


def _module_file(parts: list[str]) -> Path | None:
    path = CORE.joinpath(*parts)
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return path / "__init__.py" if (path / "__init__.py").is_file() else None


def _relative_imports(path: Path) -> set[Path]:
    """The core modules ``path`` imports (relative imports, wherever they stand)."""
    package = list(path.relative_to(CORE).parent.parts)
    found: set[Path] = set()
    for node in ast.walk(_tree(path)):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        assert node.level - 1 <= len(package), f"{path}:{node.lineno}: import above the core"
        base = package[:len(package) - (node.level - 1)]
        target = [*base, *(node.module.split(".") if node.module else [])]
        module = _module_file(target)
        if module is not None and target:  # the core's own __init__ is the runtime's package
            found.add(module)
        for alias in node.names:
            child = _module_file([*target, alias.name])
            if child is not None:
                found.add(child)
    return found


def import_closure(entries: list[Path]) -> set[Path]:
    """``entries`` and every core module they import, transitively."""
    seen: set[Path] = set()
    pending = list(entries)
    while pending:
        path = pending.pop()
        if path not in seen:
            seen.add(path)
            pending.extend(_relative_imports(path))
    return seen


def _lines(paths: set[Path]) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in paths)


@dataclasses.dataclass(frozen=True)
class Tier:
    name: str
    #: What a runtime imports from the tier (paths under core/).
    entries: tuple[str, ...]
    #: Copied along when present, never counted: optional modules (hypothesis strategies).
    optional: tuple[str, ...]
    max_lines: int
    #: Run in the copy, with ``pkg`` bound to the copied package's name; prints "ok" at the end.
    script: str


FORMATS_SCRIPT = """
import importlib, sys
formats = importlib.import_module(pkg + ".formats")
chat, responses, anthropic = formats.openai_chat, formats.openai_responses, formats.anthropic
call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
messages = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": None, "tool_calls": [call]}]
history = chat.decode_history(messages)
assert chat.check_balance(history).failure().rule == "unanswered-call"
seed = chat.completed_turn_prefix(history)
assert type(seed) is list and seed == messages[:2], seed
assert chat.check_balance([{"role": "assistant", "content": None}], strict=True
                          ).failure().rule == "null-content"
assert formats.detect_format(messages).unwrap() == "openai-chat"
items = [{"role": "user", "content": "q"},
         {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]
assert responses.completed_turn_cut(items) == 0
assert formats.decode_history({"previous_response_id": "r", "input": []}).failure()
assert anthropic.check_balance([{"role": "user", "content": [{"type": "tool_result",
                                                             "tool_use_id": "x"}]}]
                               ).failure().rule == "orphan-result"
try:
    chat.decode_history(42)
except Exception as exc:
    assert type(exc).__name__ == "BeartypeCallHintParamViolation", exc
else:
    raise SystemExit("the copied tier is not type-checked")
strategies = importlib.import_module(pkg + ".formats.strategies")
from hypothesis import given, settings

@settings(max_examples=10, database=None, deadline=None)
@given(strategies.histories("anthropic"))
def cut_holds(sample):
    assert anthropic.completed_turn_cut(sample.items) == sample.cut

cut_holds()
outside = sorted(m for m in sys.modules if m.split(".")[0] in ("turnfork", "core", "shell"))
assert not outside, outside
loaded = sorted(m for m in sys.modules if m.startswith(pkg + "."))
print("ok", " ".join(loaded))
"""

TIERS = (
    Tier(name="formats",
         entries=("formats/__init__.py", "formats/common.py", "formats/detect.py",
                  "formats/openai_chat.py", "formats/openai_responses.py",
                  "formats/anthropic.py"),
         optional=("formats/strategies.py",), max_lines=2000, script=FORMATS_SCRIPT),
)


def _closure_of(tier: Tier) -> set[Path]:
    return import_closure([CORE / entry for entry in tier.entries])


@pytest.mark.parametrize("tier", TIERS, ids=lambda t: t.name)
def test_a_tier_imports_only_what_it_declares_within_its_budget(tier: Tier) -> None:
    """The closure of a tier's entries stays under its line budget; its optional modules need
    nothing outside that closure."""
    closure = _closure_of(tier)
    lines = _lines(closure)
    names = sorted(p.relative_to(CORE).as_posix() for p in closure)
    assert lines <= tier.max_lines, (lines, names)
    for optional in tier.optional:
        extra = import_closure([CORE / optional]) - closure - {CORE / optional}
        assert not extra, (optional, sorted(p.relative_to(CORE).as_posix() for p in extra))


def test_the_wire_formats_tier_holds_no_dsh_event_model() -> None:
    """The formats tier is the formats folder and the run-time checking helper: no events,
    trace, history or seed; about 1,500 lines where the whole closure used to be 4,577."""
    tier = next(t for t in TIERS if t.name == "formats")
    names = {p.relative_to(CORE).as_posix() for p in _closure_of(tier)}
    assert names == {*tier.entries, "_checking.py"}, sorted(names)


def test_the_closure_follows_every_relative_import(tmp_path: Path) -> None:
    """The closure counts imports inside functions and from a package's own names."""
    assert CORE / "events.py" in import_closure([CORE / "wire_seed.py"])
    assert CORE / "formats" / "common.py" in import_closure([CORE / "formats" / "__init__.py"])
    assert CORE / "trace.py" in _relative_imports(CORE / "wire_seed.py")


@pytest.mark.parametrize("tier", TIERS, ids=lambda t: t.name)
def test_a_tier_works_copied_alone_under_another_name(tier: Tier, tmp_path: Path) -> None:
    """Only the tier's closure (and its optional modules) copied under another package name:
    it imports, checks and cuts there, loads nothing of turnfork, stays type-checked."""
    package = tmp_path / "vendored_tier"
    files = _closure_of(tier) | {CORE / optional for optional in tier.optional}
    for path in files:
        target = package / path.relative_to(CORE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    for folder in {package, *(p.parent for p in package.rglob("*.py"))}:
        (folder / "__init__.py").touch()  # a package the tier did not bring is an empty one
    script = f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\npkg = 'vendored_tier'\n"
    done = subprocess.run([sys.executable, "-I", "-c", script + tier.script], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok "), done.stdout
    loaded = set(done.stdout.split()[1:])
    expected = {"vendored_tier." + ".".join(p.relative_to(CORE).with_suffix("").parts)
                .removesuffix(".__init__") for p in files}
    assert loaded <= expected | {"vendored_tier"}, sorted(loaded - expected)
