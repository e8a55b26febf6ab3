"""Run-time type checking of the core's public functions, paid for on first call, not at import.

Rules:

* :func:`check_public` wraps every function a module lists in ``__all__`` so that its calls are
  checked by beartype. The beartype wrapper is built on the function's first call: importing
  the core decorates nothing, and a function never called costs nothing.
* Only what a caller reaches through a module's or the package's names is checked; calls inside
  the core bind the plain functions (statically checked by mypy --strict), so the per-event
  loops of the decoder and the trace pay nothing. That holds within a module too: its
  functions are rebound to a namespace of their own in which its public names are the plain
  functions, so a checked entry point that calls another public function of its module is
  checked once, not at every level (methods of its classes still see the checked names).
* The wrapper keeps the function's module, name, signature and docstring
  (``functools.wraps``), so doctest and ``inspect`` still see the original.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from typing import Any, TypeVar

from beartype import BeartypeConf, beartype

__all__ = ["check_public", "unchecked"]

_CONF = BeartypeConf(warning_cls_on_decorator_exception=None)
_T = TypeVar("_T")


_UNCHECKED = "__turnfork_unchecked__"


def unchecked(target: _T) -> _T:
    """Mark a hot helper that is never type-checked at run time: it sits behind checked entry
    points, or checks its argument by hand. :func:`check_public` leaves it as it is."""
    if isinstance(target, types.FunctionType):
        setattr(target, _UNCHECKED, True)
    return target


def _lazily_checked(function: types.FunctionType) -> Callable[..., Any]:
    decorate = beartype(conf=_CONF)
    decorated: Callable[..., Any] | None = None

    def call(*args: Any, **kwargs: Any) -> Any:
        nonlocal decorated
        if decorated is None:
            decorated = decorate(function)
        return decorated(*args, **kwargs)

    return functools.update_wrapper(call, function)


def check_public(namespace: dict[str, Any]) -> None:
    """Have every public function of a module (its ``__all__``) type-checked when called.

    ``namespace`` is the module's ``vars()`` (or, from the module itself, its ``globals()``).
    Functions it only re-exports are left to their own module.
    """
    public = set(namespace.get("__all__", ()))
    plain = dict(namespace)  # what the module's own functions see: nothing checked
    for name, value in namespace.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is namespace:
            plain[name] = _rebound(value, plain)
    for name, value in plain.items():
        if not (isinstance(value, types.FunctionType) and value.__globals__ is plain):
            continue
        if name in public and not getattr(value, _UNCHECKED, False):
            namespace[name] = _lazily_checked(value)
        else:
            namespace[name] = value


def _rebound(function: types.FunctionType, namespace: dict[str, Any]) -> types.FunctionType:
    """``function`` with ``namespace`` as its globals (everything else kept)."""
    copy = types.FunctionType(function.__code__, namespace, function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__annotations__ = function.__annotations__
    copy.__dict__.update(function.__dict__)
    copy.__qualname__ = function.__qualname__
    copy.__doc__ = function.__doc__
    copy.__module__ = function.__module__
    return copy
