"""What ``pip install -e .`` runs at interpreter start: ``turnfork`` found in this checkout.

The wheel holds one package, ``turnfork``, with the checkout's top-level ``core/`` and ``shell/``
mapped into it by the build backend (hatchling's ``sources``). An editable install cannot map
folders that way (hatchling's dev mode only adds folders to ``sys.path``, and putting the
checkout's root there would make ``core``, ``shell``, ``tests`` and ``benchmarks`` importable as
top-level names of their own). So the editable install adds this folder, which holds only this
module, to ``sys.path``, and a ``.pth`` line imports it; it puts a finder first on
``sys.meta_path`` that answers for three names and nothing else:

* ``turnfork`` -> ``turnfork/``
* ``turnfork.core`` -> ``core/``
* ``turnfork.shell`` -> ``shell/``

Every module below them is found by Python's own path finder in those folders, so edits take
effect without reinstalling and ``__file__`` is the real source file. Static checkers do not run
import hooks: see DEVELOPERS.md for how ``mypy`` checks the package.
"""

from __future__ import annotations

import os
import sys

#: Read by static checkers only: importing anything more here would slow every interpreter start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Each package the finder answers for, and its folder in the checkout.
PACKAGES = {"turnfork": "turnfork", "turnfork.core": "core", "turnfork.shell": "shell"}


class CheckoutFinder:
    """Finds ``turnfork``, ``turnfork.core`` and ``turnfork.shell`` in the checkout."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        folder = PACKAGES.get(fullname)
        if folder is None:
            return None
        from importlib.util import spec_from_file_location  # noqa: PLC0415 - see TYPE_CHECKING

        location = os.path.join(CHECKOUT, folder)
        init = os.path.join(location, "__init__.py")
        if not os.path.isfile(init):
            raise ImportError(
                f"{fullname} is installed in editable mode from {CHECKOUT}, which no longer "
                f"has {init}: reinstall turnfork (pip install -e <checkout>)", name=fullname)
        return spec_from_file_location(fullname, init, submodule_search_locations=[location])


def install() -> None:
    """Put one finder first on ``sys.meta_path`` (a second call changes nothing)."""
    if not any(isinstance(finder, CheckoutFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, CheckoutFinder())


install()
