"""Run-time type checking of the core's public functions, applied where they are defined and
paid for on first call, not at import.

Rules:

* A public function is decorated where it is defined: :func:`checked` (its calls are checked
  by beartype) or :func:`unchecked` (a hot helper that is never checked: it sits behind
  checked entry points, or checks its argument by hand). Nothing replaces a module's
  attributes afterwards, so a name re-exported anywhere is the object its module defines.
* The beartype wrapper is built on the function's first call: importing the core decorates
  nothing, and a function never called costs nothing.
* A call inside the core that must not pay for a check (a per-event path, a table built at
  import, a hypothesis draw, where beartype's sampling of containers would touch the global
  random module) calls :func:`plain` of the function: the function as written, statically
  checked by mypy --strict. A module binds the plain forms of the functions it calls once, with
  :func:`plain_forms`.
* The wrapper keeps the function's module, name, signature and docstring
  (``functools.wraps``), so doctest and ``inspect`` still see the original.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, TypeVar, TypeVarTuple, cast

from beartype import BeartypeConf, beartype

__all__ = ["checked", "unchecked", "plain", "plain_forms"]

_CONF = BeartypeConf(warning_cls_on_decorator_exception=None)
_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])
_Fs = TypeVarTuple("_Fs")

_UNCHECKED = "__turnfork_unchecked__"
_CHECKED = "__turnfork_checked__"


def unchecked(target: _T) -> _T:
    """Mark a hot helper (a function or class) that is never type-checked at run time."""
    if isinstance(target, types.FunctionType | type):
        setattr(target, _UNCHECKED, True)
    return target


def checked(function: _F) -> _F:
    """Have ``function``'s calls type-checked by beartype, the check built on its first call."""
    decorate = beartype(conf=_CONF)
    decorated: Callable[..., Any] | None = None

    def call(*args: Any, **kwargs: Any) -> Any:
        nonlocal decorated
        if decorated is None:
            decorated = decorate(function)
        return decorated(*args, **kwargs)

    wrapper = functools.update_wrapper(call, function)
    setattr(wrapper, _CHECKED, True)
    return cast(_F, wrapper)


def plain(function: _F) -> _F:
    """``function`` without its run-time check (itself when it has none)."""
    if getattr(function, _CHECKED, False):
        return cast(_F, function.__wrapped__)  # type: ignore[attr-defined]
    return function


def plain_forms(*functions: *_Fs) -> tuple[*_Fs]:
    """Each of ``functions`` without its run-time check, in order (:func:`plain` of each)."""
    return cast("tuple[*_Fs]", tuple(plain(cast(Callable[..., Any], f)) for f in functions))
