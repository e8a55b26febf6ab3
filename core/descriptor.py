"""The earlier path of :mod:`turnfork.core.log.descriptor`: its names (in no tier)."""

from typing import Any

from .log import descriptor as _home

__all__ = _home.__all__


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(_home, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return list(__all__)
