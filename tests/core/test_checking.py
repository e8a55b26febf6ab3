"""The core's run-time checking helpers: the plain forms a module binds for its own calls."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
from beartype.roar import BeartypeCallHintViolation

from turnfork.core._checking import checked, plain, plain_forms, unchecked

CORE = Path(__file__).resolve().parents[2] / "core"


@checked
def _double(value: int) -> int:
    return value * 2


@checked
def _name_of(value: str) -> str:
    return value


@unchecked
def _hot(value: int) -> int:
    return value


def test_plain_forms_are_the_functions_as_written_in_order() -> None:
    double, name_of, hot = plain_forms(_double, _name_of, _hot)
    assert (double, name_of, hot) == (plain(_double), plain(_name_of), _hot)
    assert double is not _double and name_of is not _name_of
    assert double("ab") == "abab"  # type: ignore[arg-type]  # no run-time check
    with pytest.raises(BeartypeCallHintViolation):
        _double("ab")  # type: ignore[arg-type]
    assert plain_forms() == ()


def _modules() -> list[object]:
    names = []
    for path in sorted(CORE.rglob("*.py")):
        parts = path.relative_to(CORE).with_suffix("").parts
        if parts[-1] == "strategies":
            continue
        names.append(".".join(("turnfork", "core", *parts)).removesuffix(".__init__"))
    return [importlib.import_module(name) for name in names]


def test_a_module_binds_its_calls_to_the_plain_forms() -> None:
    """Wherever a core module binds a core function under a private name of its own (for its
    calls), it binds the function without its check, and ``_name`` beside a checked ``name``
    is that function's plain form, not another's: the module's calls are checked once, at the
    entry point they came in by."""
    aliases = 0
    for module in _modules():
        namespace = vars(module)
        for name, value in namespace.items():
            if not name.startswith("_") or not inspect.isfunction(value) \
                    or not value.__module__.startswith("turnfork.core") \
                    or value.__name__ == name:
                continue
            where = f"{module.__name__}.{name}"  # type: ignore[attr-defined]
            assert not getattr(value, "__turnfork_checked__", False), where
            public = namespace.get(name[1:])
            if getattr(public, "__turnfork_checked__", False):
                assert value is plain(public), where
            aliases += 1
    assert aliases >= 60
