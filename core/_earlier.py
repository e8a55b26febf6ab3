"""What an earlier module path at the top of ``core/`` is: its tier module's names, forwarded.

Private; copied by no tier (only the earlier paths import it).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any


def forwarding(home: ModuleType, path: str) -> tuple[list[str], Callable[[str], Any],
                                                    Callable[[], list[str]]]:
    """The ``__all__``, ``__getattr__`` and ``__dir__`` of the earlier path ``path`` of
    ``home``: the names ``home`` lists, the same objects, and any other name an
    ``AttributeError`` that names ``path``."""
    names = list(home.__all__)

    def attribute(name: str) -> Any:
        if name in names:
            return getattr(home, name)
        raise AttributeError(f"module {path!r} has no attribute {name!r}")

    return names, attribute, lambda: list(names)
