"""core/ can be vendored: a renamed copy works, pure imports, no mutable module state (item 8);
and each tier of it can be copied alone, with only the tiers it declares, and works there.

A tier is listed in TIERS with its folder (or module), the modules a runtime imports from it,
the optional modules it may copy along without counting them, the tiers it declares, its line
budget and a script that exercises it in the copy. The closure is every core module its modules
import, transitively: relative imports anywhere in a module (inside functions and
``TYPE_CHECKING`` blocks too), since a copy must hold them all. A closure that reaches a tier
the tier does not declare fails, naming the import.
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
#: Every module of the core, its tiers' included.
MODULES = sorted(CORE.rglob("*.py"))
FIXTURE = (Path(__file__).resolve().parent.parent / "fixtures" / "dsh" / "derived"
           / "fork-parent-inflight-at-subagent-call.DERIVED.jsonl")
#: The fork child DSH ran from that parent.
CHILD_FIXTURE = FIXTURE.parents[1] / (
    "examples__acp-agent__tests__snapshots__subagent-fork-in-process__session.1.jsonl")
EFFECTFUL = frozenset({
    "os", "io", "sys", "time", "asyncio", "random", "uuid", "logging", "subprocess", "socket",
    "threading", "pathlib", "datetime", "tempfile", "shutil",
})
MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "pop",
                      "popitem", "clear", "remove", "discard", "sort", "reverse"})
MUTABLE_BUILDERS = frozenset({"list", "dict", "set", "bytearray", "defaultdict", "deque",
                              "OrderedDict", "Counter"})
#: The private helpers at the top of core/ that every tier may import (copied along).
BASE = ("_checking.py", "_json.py")

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
assert "vendored_tf_core.log.strategies" not in sys.modules
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


def _module_name(path: Path) -> str:
    parts = path.relative_to(CORE).with_suffix("").parts
    return ".".join(("turnfork", "core", *parts)).removesuffix(".__init__")


def test_core_modules_are_found() -> None:
    """The checks below look at every core module, the tiers' included."""
    names = {path.relative_to(CORE).as_posix() for path in MODULES}
    assert {"__init__.py", "log/__init__.py", "log/events.py", "log/codec.py", "log/trace.py",
            "log/seed.py", "log/strategies.py", "delegation/__init__.py",
            "delegation/child_plan.py", "machine/__init__.py", "machine/loop.py",
            "formats/__init__.py", "formats/common.py", "formats/openai_chat.py",
            "formats/openai_responses.py", "formats/anthropic.py"} <= names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(CORE).as_posix())
def test_imports_are_relative_and_pure(path: Path) -> None:
    """No absolute self-import, no effectful module, no star-import; hypothesis only in
    strategies.py."""
    for node in ast.walk(_tree(path)):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            raise AssertionError(f"{path.name}:{node.lineno}: star-import")
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


def test_no_front_door_imports_strategies() -> None:
    """Neither core/__init__.py nor a tier's front door imports the hypothesis strategies."""
    for door in (CORE / "__init__.py", *CORE.glob("*/__init__.py")):
        relative = [node for node in _tree(door).body
                    if isinstance(node, ast.ImportFrom) and node.level]
        assert relative, door
        assert all(node.module != "strategies" for node in relative), door
        assert all(alias.name != "strategies" for node in relative for alias in node.names), door


def _core_modules() -> list[object]:
    """Every importable public core module (the strategies need hypothesis: installed here)."""
    return [importlib.import_module(_module_name(path)) for path in MODULES
            if not any(part.startswith("_") and part != "__init__.py"
                       for part in path.relative_to(CORE).parts)]


def test_every_public_function_is_checked_where_it_is_defined() -> None:
    """Every function a core module lists in __all__ and defines is decorated where it is
    defined: checked by beartype on call (a lazily built wrapper) or marked unchecked; a
    wrongly typed call is refused."""
    checked = 0
    for module in _core_modules():
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if not inspect.isfunction(value) or value.__module__ != module.__name__:
                continue
            if getattr(value, "__turnfork_unchecked__", False):
                continue
            assert getattr(value, "__turnfork_checked__", False), f"{module.__name__}.{name}"
            assert inspect.unwrap(value).__name__ == name
            checked += 1
    assert checked >= 150
    with pytest.raises(BeartypeCallHintViolation):
        core.completed_turn_prefix(42)  # type: ignore[arg-type]
    with pytest.raises(BeartypeCallHintViolation):
        core.grammar.phase_after("idle", "turn/start")  # type: ignore[arg-type]


def test_one_object_per_name() -> None:
    """Wherever a core function or class is reachable (a front door, an earlier module path, a
    module that imports it), it is the object its defining module holds: nothing replaces a
    module's attributes."""
    seen = 0
    for module in _core_modules():
        for name, value in vars(module).items():
            home = getattr(value, "__module__", None)
            if name.startswith("_") or not isinstance(home, str) \
                    or not home.startswith("turnfork.core") \
                    or not (inspect.isfunction(value) or inspect.isclass(value)):
                continue
            defined = getattr(sys.modules[home], value.__name__, None)
            assert defined is value, f"{module.__name__}.{name} is not {home}.{value.__name__}"
            seen += 1
    assert seen >= 1000
    from turnfork.core.log import trace
    from turnfork.core.machine import loop
    assert trace.trace_log is loop.trace_log is core.trace_log is core.trace.trace_log
    assert core.output_text is core.delegation.results.output_text


CHECKED_AT_IMPORT = """
import sys
import turnfork.core, turnfork.core.formats, turnfork.core.wire_seed
built = []
for name, module in list(sys.modules.items()):
    if name.startswith("turnfork.core"):
        for attribute, value in vars(module).items():
            if getattr(value, "__turnfork_checked__", False):
                cells = dict(zip(value.__code__.co_freevars, value.__closure__))
                if cells["decorated"].cell_contents is not None:
                    built.append(name + "." + attribute)
print(len(built), built)
"""


def test_importing_the_core_decorates_nothing() -> None:
    """Importing the core, its tiers and the formats builds no beartype wrapper (checking is
    paid for at first call)."""
    done = subprocess.run([sys.executable, "-c", CHECKED_AT_IMPORT], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0 []"


CHECKED_BY_A_START = """
import sys
from pathlib import Path
import turnfork.core as core
def built():
    found = set()
    for name, module in list(sys.modules.items()):
        if name.startswith("turnfork.core"):
            for value in vars(module).values():
                if getattr(value, "__turnfork_checked__", False):
                    cells = dict(zip(value.__code__.co_freevars, value.__closure__))
                    if cells["decorated"].cell_contents is not None:
                        found.add(value.__module__ + "." + value.__qualname__)
    return found
header, events = core.decode_session(Path(sys.argv[1]).read_bytes(), projected=True).unwrap()
before = built()
plan = core.plan_child(core.ParentView(header=header, events=events, approval_in_use=True),
                       core.StartRequest(prompt=(), label="x"), "fork", provider_name="fork",
                       child_id="c", created_at=0).unwrap()
assert plan.seed is not None and plan.policy
print(sorted(built() - before))
"""


def test_a_start_is_checked_once_at_its_entry_point() -> None:
    """Ensures that ``plan_child``'s calls of its module's other public functions (the request
    check, the header, the options, the policy, the descriptor, the seed) bind the plain
    functions: one start builds one beartype check, ``plan_child``'s own; a caller outside the
    module still gets the checked ones."""
    done = subprocess.run([sys.executable, "-c", CHECKED_BY_A_START, str(FIXTURE)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['turnfork.core.delegation.child_plan.plan_child']"
    with pytest.raises(BeartypeCallHintViolation):
        core.child_header(42, child_id="c", created_at=0, depth=1,  # type: ignore[arg-type]
                          seed_length=0)
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
    bad.write_text("from .seed import *\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="star-import"):
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


def _module_file(root: Path, parts: list[str]) -> Path | None:
    path = root.joinpath(*parts)
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return path / "__init__.py" if (path / "__init__.py").is_file() else None


def _relative_imports(path: Path, root: Path = CORE) -> dict[Path, int]:
    """The core modules ``path`` imports (relative imports, wherever they stand), each with the
    line of its first import."""
    package = list(path.relative_to(root).parent.parts)
    found: dict[Path, int] = {}
    for node in ast.walk(_tree(path)):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        assert node.level - 1 <= len(package), f"{path}:{node.lineno}: import above the core"
        base = package[:len(package) - (node.level - 1)]
        target = [*base, *(node.module.split(".") if node.module else [])]
        module = _module_file(root, target)
        if module is not None and target:  # the core's own __init__ is the runtime's package
            found.setdefault(module, node.lineno)
        for alias in node.names:
            child = _module_file(root, [*target, alias.name])
            if child is not None:
                found.setdefault(child, node.lineno)
    return found


def import_closure(entries: list[Path], root: Path = CORE) -> set[Path]:
    """``entries`` and every core module they import, transitively."""
    seen: set[Path] = set()
    pending = list(entries)
    while pending:
        path = pending.pop()
        if path not in seen:
            seen.add(path)
            pending.extend(_relative_imports(path, root))
    return seen


def _lines(paths: set[Path]) -> int:
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in paths)


@dataclasses.dataclass(frozen=True)
class Tier:
    name: str
    #: The tier's own files: a folder under core/ (its modules) or one module.
    home: str
    #: What a runtime imports from the tier (paths under core/).
    entries: tuple[str, ...]
    #: Copied along when present, never counted: optional modules (hypothesis strategies).
    optional: tuple[str, ...]
    #: The tiers it may import, through their front doors (the base helpers are always allowed).
    requires: tuple[str, ...]
    #: Lines of what a runtime copies: the closure of the entries (declared tiers included).
    max_lines: int
    #: Run in the copy, with ``pkg``, ``FIXTURE`` and ``CHILD`` bound; prints "ok" at the end.
    script: str


def own_files(tier: Tier, root: Path = CORE) -> set[Path]:
    home = root / tier.home
    return set(home.rglob("*.py")) if home.is_dir() else {home}


def declared_files(tier: Tier, tiers: dict[str, Tier], root: Path = CORE) -> set[Path]:
    """The tier's own files, those of the tiers it declares (transitively), the base helpers."""
    files = own_files(tier, root) | {root / name for name in BASE}
    for required in tier.requires:
        files |= declared_files(tiers[required], tiers, root)
    return files


def undeclared_imports(tier: Tier, tiers: dict[str, Tier], root: Path = CORE) -> list[str]:
    """Each import by which the tier's closure leaves what it declares (``module:line ->
    module``)."""
    allowed = declared_files(tier, tiers, root)
    found = []
    for path in sorted(import_closure([root / e for e in (*tier.entries, *tier.optional)], root)
                       & allowed):
        for imported, line in sorted(_relative_imports(path, root).items()):
            if imported not in allowed:
                found.append(f"{path.relative_to(root).as_posix()}:{line} -> "
                             f"{imported.relative_to(root).as_posix()}")
    return found


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
try:
    chat.from_dsh
except AttributeError as exc:  # an earlier name of the bridge, which this copy does not hold
    assert "moved to wire_seed" in str(exc), exc
else:
    raise SystemExit("the formats copied alone reached the bridge")
strategies = importlib.import_module(pkg + ".formats.strategies")
from hypothesis import given, settings

@settings(max_examples=10, database=None, deadline=None)
@given(strategies.histories("anthropic"))
def cut_holds(sample):
    assert anthropic.completed_turn_cut(sample.items) == sample.cut

cut_holds()
"""

LOG_SCRIPT = """
import importlib, sys
from pathlib import Path
log = importlib.import_module(pkg + ".log")
header, events = log.decode_session(Path(FIXTURE).read_bytes(), projected=True).unwrap()
trace = log.trace_log(events).unwrap()
assert (len(events), trace.open_turn, trace.completed_prefix_length) == (159, 2, 42)
prefix = log.completed_turn_prefix(events)
assert len(prefix) == 42 and log.check_balance(prefix).unwrap().is_closed
assert log.decode_log(log.encode_log(events)).unwrap() == events
closers = log.close_open_turn(trace, events, log.TurnInterrupted())
assert log.check_balance((*events, *closers)).unwrap().is_closed
assert log.check_balance((*events, *log.repair_closers(events))).unwrap().is_closed
assert log.model_history(log.trace_log(prefix).unwrap())
assert log.check_retries(events).unwrap() is None
try:
    log.trace_log(42)
except Exception as exc:
    assert type(exc).__name__ == "BeartypeCallHintParamViolation", exc
else:
    raise SystemExit("the copied tier is not type-checked")
assert "hypothesis" not in sys.modules
strategies = importlib.import_module(pkg + ".log.strategies")
from hypothesis import given, settings

@settings(max_examples=10, database=None, deadline=None)
@given(strategies.session_logs())
def traces(sample):
    assert log.trace_log(sample).unwrap().length == len(sample)

traces()
"""

DELEGATION_SCRIPT = """
import importlib, sys
from pathlib import Path
log = importlib.import_module(pkg + ".log")
delegation = importlib.import_module(pkg + ".delegation")
header, events = log.decode_session(Path(FIXTURE).read_bytes(), projected=True).unwrap()
request = delegation.StartRequest(prompt=(log.TextBlock(text="What is the project codeword?"),),
                                  label="Recall project codeword")
plan = delegation.plan_child(delegation.ParentView(header=header, events=events,
                                                   approval_in_use=True),
                             request, "fork", provider_name="fork", child_id="child-1",
                             created_at=0).unwrap()
assert (len(plan.seed), plan.depth, plan.header.seed_length) == (42, 1, 42)
_, child = log.decode_session(Path(CHILD).read_bytes(), projected=True).unwrap()
result = delegation.read_result(child[len(plan.seed):], cancelled=False)
assert delegation.render_tool_result(result).content == "MARMALADE"
schema = b'{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}'
import msgspec
checked = delegation.check_request("fork", None, delegation.StartRequest(
    prompt=(), output_schema=msgspec.Raw(schema))).unwrap()
assert checked.structured is not None
answer = delegation.structured_answer(checked.structured, (log.TextBlock(text=' {"n": 1} '),))
assert bytes(answer) == b'{"n": 1}', answer
assert delegation.parse_tool_arguments('{"n": 1}').unwrap() == {"n": 1}
try:
    delegation.check_request(42, None, request)
except Exception as exc:
    assert type(exc).__name__ == "BeartypeCallHintParamViolation", exc
else:
    raise SystemExit("the copied tier is not type-checked")
"""

MACHINE_SCRIPT = """
import importlib, sys
log = importlib.import_module(pkg + ".log")
machine = importlib.import_module(pkg + ".machine")
hello = log.UserMessage(content=(log.TextBlock(text="hi"),), source=log.MessageSource(kind="user"),
                        id="m1")
header = log.EpochHeader(config=log.LlmCallConfig(provider="p", model="m"))
events, trace, state = (), log.EMPTY_TRACE, machine.initial_loop_state()
commands = []
for given in (machine.Followup(message=hello), machine.Begin(),
              machine.StepPrepared(header=header),
              machine.CancelRequested(cause=log.CancelUser()), machine.Cancelled(message_id="a1")):
    step = machine.feed(state, trace, given, time=len(events))
    state, events = step.state, (*events, *step.events)
    trace = log.trace_log(step.events, trace).unwrap()
    commands.append(type(step.command).__name__)
assert commands == ["Wake", "PrepareStep", "CallModel", "NoneType", "Stop"], commands
assert log.check_balance(events).unwrap().is_closed
ends = [e for e in events if isinstance(e, log.TurnEndEvent)]
assert len(ends) == 1 and isinstance(ends[0].data.reason, log.TurnAborted), ends
assert machine.send_message_schema().name == "send_message"
assert len(machine.bound_summary("x" * 10_000)) <= machine.SUMMARY_MAX_CHARS + 1
try:
    machine.feed(42, trace, machine.Begin(), time=0)
except Exception as exc:
    assert type(exc).__name__ == "BeartypeCallHintParamViolation", exc
else:
    raise SystemExit("the copied tier is not type-checked")
"""

WIRE_SEED_SCRIPT = """
import importlib, sys
from pathlib import Path
log = importlib.import_module(pkg + ".log")
wire_seed = importlib.import_module(pkg + ".wire_seed")
formats = importlib.import_module(pkg + ".formats")
_, events = log.decode_session(Path(FIXTURE).read_bytes(), projected=True).unwrap()
seed = log.completed_turn_prefix(events)
chat = wire_seed.from_dsh(seed, "openai-chat").unwrap()
assert formats.openai_chat.check_balance(chat).unwrap().ends_at_completed_turn
assert wire_seed.from_dsh(events, "anthropic").unwrap()
assert formats.openai_chat.from_dsh(seed).unwrap() == chat  # an earlier path, the bridge's
"""

#: Appended to every tier's script: it loaded nothing of turnfork and nothing it did not copy.
CLOSING_SCRIPT = """
outside = sorted(m for m in sys.modules if m.split(".")[0] in ("turnfork", "core", "shell"))
assert not outside, outside
loaded = sorted(m for m in sys.modules if m.startswith(pkg + "."))
print("ok", " ".join(loaded))
"""

TIERS = (
    Tier(name="formats", home="formats",
         entries=("formats/__init__.py", "formats/common.py", "formats/detect.py",
                  "formats/openai_chat.py", "formats/openai_responses.py",
                  "formats/anthropic.py"),
         optional=("formats/strategies.py",), requires=(), max_lines=2000,
         script=FORMATS_SCRIPT),
    Tier(name="log", home="log", entries=("log/__init__.py",), optional=("log/strategies.py",),
         requires=(), max_lines=6300, script=LOG_SCRIPT),
    Tier(name="delegation", home="delegation", entries=("delegation/__init__.py",), optional=(),
         requires=("log",), max_lines=8800, script=DELEGATION_SCRIPT),
    Tier(name="machine", home="machine", entries=("machine/__init__.py",), optional=(),
         requires=("log", "delegation"), max_lines=12500, script=MACHINE_SCRIPT),
    Tier(name="wire-seed", home="wire_seed.py", entries=("wire_seed.py",), optional=(),
         requires=("log", "formats"), max_lines=8000, script=WIRE_SEED_SCRIPT),
)
TIERS_BY_NAME = {tier.name: tier for tier in TIERS}


def _closure_of(tier: Tier) -> set[Path]:
    return import_closure([CORE / entry for entry in tier.entries])


@pytest.mark.parametrize("tier", TIERS, ids=lambda t: t.name)
def test_a_tier_imports_only_the_tiers_it_declares_within_its_budget(tier: Tier) -> None:
    """The closure of a tier's entries (and of its optional modules) stays inside the tier, the
    tiers it declares and the base helpers, and under its line budget."""
    assert not undeclared_imports(tier, TIERS_BY_NAME)
    closure = _closure_of(tier)
    names = sorted(p.relative_to(CORE).as_posix() for p in closure)
    assert _lines(closure) <= tier.max_lines, (_lines(closure), names)
    for optional in tier.optional:
        extra = import_closure([CORE / optional]) - closure - {CORE / optional}
        assert not extra, (optional, sorted(p.relative_to(CORE).as_posix() for p in extra))


def test_a_tier_importing_an_undeclared_tier_is_caught(tmp_path: Path) -> None:
    """The check itself: a kernel module that imports the turn machine's tier is named, with
    its line; declaring that tier makes it pass."""
    for folder, source in (("log", "from .trace import x\n"),
                           ("log/trace.py", "import msgspec\n\nfrom ..machine import feed\n"),
                           ("machine", "from .loop import feed\n"),
                           ("machine/loop.py", "def feed(): ...\n")):
        path = tmp_path / folder
        if path.suffix != ".py":
            path.mkdir()
            path = path / "__init__.py"
        path.write_text(source, encoding="utf-8")
    log = Tier(name="log", home="log", entries=("log/__init__.py",), optional=(), requires=(),
               max_lines=100, script="")
    machine = Tier(name="machine", home="machine", entries=("machine/__init__.py",),
                   optional=(), requires=(), max_lines=100, script="")
    tiers = {"log": log, "machine": machine}
    assert undeclared_imports(log, tiers, tmp_path) == ["log/trace.py:3 -> machine/__init__.py"]
    declared = dataclasses.replace(log, requires=("machine",))
    assert undeclared_imports(declared, {**tiers, "log": declared}, tmp_path) == []


def test_the_wire_formats_tier_holds_no_dsh_event_model() -> None:
    """The formats tier is the formats folder and the run-time checking helper: no events,
    trace, history or seed; about 1,500 lines where the whole closure used to be 4,577."""
    names = {p.relative_to(CORE).as_posix() for p in _closure_of(TIERS_BY_NAME["formats"])}
    assert names == {*TIERS_BY_NAME["formats"].entries, "_checking.py"}, sorted(names)


def test_the_kernel_holds_no_loop_continuation_or_jobs() -> None:
    """The log tier's closure is its own folder and the base helpers: nothing of delegation or
    the turn machine."""
    names = {p.relative_to(CORE).as_posix() for p in _closure_of(TIERS_BY_NAME["log"])}
    assert all(name.startswith("log/") or name in BASE for name in names), sorted(names)
    assert "log/trace.py" in names and "log/codec.py" in names and "log/closers.py" in names


def test_the_closure_follows_every_relative_import() -> None:
    """The closure counts imports inside functions and from a package's own names."""
    assert CORE / "log" / "events.py" in import_closure([CORE / "wire_seed.py"])
    assert CORE / "formats" / "common.py" in import_closure([CORE / "formats" / "__init__.py"])
    assert CORE / "log" / "__init__.py" in _relative_imports(CORE / "wire_seed.py")


def test_a_tier_reads_another_only_through_its_front_door() -> None:
    """A module of one tier imports a module of another tier only as that tier's package."""
    tier_of = {path: tier.name for tier in TIERS for path in own_files(tier)}
    found = []
    for path, tier in tier_of.items():
        for imported, line in _relative_imports(path).items():
            other = tier_of.get(imported)
            if other is not None and other != tier and imported.name != "__init__.py" \
                    and own_files(TIERS_BY_NAME[other]) != {imported}:
                found.append(f"{path.relative_to(CORE)}:{line} -> {imported.relative_to(CORE)}")
    assert not found


def _copy_tier(tier: Tier, target: Path) -> set[Path]:
    """Copy what the architecture's table says to copy for ``tier``: its files, the files of
    the tiers it declares, and the base helpers its closure imports."""
    closure = _closure_of(tier)
    files = (declared_files(tier, TIERS_BY_NAME) - {CORE / name for name in BASE}) \
        | (closure & {CORE / name for name in BASE})
    for path in files:
        destination = target / path.relative_to(CORE)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    (target / "__init__.py").touch()  # the runtime's own package
    return files


@pytest.mark.parametrize("tier", TIERS, ids=lambda t: t.name)
def test_a_tier_works_copied_alone_under_another_name(tier: Tier, tmp_path: Path) -> None:
    """Only the tier and the tiers it declares, copied under another package name: it imports,
    checks and cuts there, loads nothing of turnfork, stays type-checked."""
    files = _copy_tier(tier, tmp_path / "vendored_tier")
    prelude = (f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\npkg = 'vendored_tier'\n"
               f"FIXTURE = {str(FIXTURE)!r}\nCHILD = {str(CHILD_FIXTURE)!r}\n")
    done = subprocess.run([sys.executable, "-I", "-c", prelude + tier.script + CLOSING_SCRIPT],
                          cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok "), done.stdout
    loaded = set(done.stdout.split()[1:])
    copied = {"vendored_tier." + ".".join(p.relative_to(CORE).with_suffix("").parts)
              .removesuffix(".__init__") for p in files}
    assert loaded <= copied | {"vendored_tier"}, sorted(loaded - copied)
    own = {"vendored_tier." + ".".join(p.relative_to(CORE).with_suffix("").parts)
           .removesuffix(".__init__") for p in own_files(tier)}
    assert loaded & own, "the script did not load the tier"


ARCHITECTURE = CORE.parent / "docs" / "architecture.md"
#: The table's first column, by tier name.
TABLE_NAMES = {"`formats/`": "formats", "`log/`": "log", "`delegation/`": "delegation",
               "`machine/`": "machine", "`wire_seed.py`": "wire-seed"}


def _documented_sizes() -> dict[str, tuple[int | None, ...]]:
    """The rows of docs/architecture.md's *Tier sizes* table: own, copy, budget, strategies."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("### Tier sizes\n", 1)[1].split("\n#", 1)[0]
    rows: dict[str, tuple[int | None, ...]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] in TABLE_NAMES:
            rows[TABLE_NAMES[cells[0]]] = tuple(
                None if cell == "—" else int(cell.replace(",", "")) for cell in cells[1:])
    return rows


def _close(documented: int | None, measured: int) -> bool:
    return documented is not None and abs(documented - measured) <= max(50, measured * 3 // 100)


def test_the_architecture_table_gives_the_measured_sizes() -> None:
    """docs/architecture.md's tier sizes are what this file measures (within 3% or 50 lines),
    and its budgets are the ones checked above."""
    rows = _documented_sizes()
    assert set(rows) == set(TIERS_BY_NAME), rows
    for tier in TIERS:
        own, copy, budget, strategies = rows[tier.name]
        optional = {CORE / path for path in tier.optional}
        assert _close(own, _lines(own_files(tier) - optional)), (tier.name, "own", own)
        assert _close(copy, _lines(_closure_of(tier))), (tier.name, "copy", copy)
        assert budget == tier.max_lines, (tier.name, "budget", budget)
        if optional:
            assert _close(strategies, _lines(optional)), (tier.name, "strategies", strategies)
        else:
            assert strategies is None, tier.name
    assert not _close(1_000, 1_509) and _close(1_443, 1_480)
