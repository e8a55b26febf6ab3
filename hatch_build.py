"""Hatchling build hook: the editable wheel also ships ``.editable/_turnfork_editable.pth``.

Hatchling's dev mode (``dev-mode-dirs``) writes a ``.pth`` that adds ``.editable/`` to
``sys.path``; this hook adds a second one, which imports ``_turnfork_editable`` from there at
interpreter start (it maps ``turnfork``, ``turnfork.core`` and ``turnfork.shell`` to the
checkout: see that module). Regular wheels and sdists are left as the configuration makes them.
"""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class EditableFinderHook(BuildHookInterface):
    """Adds the finder's ``.pth`` line to editable wheels only."""

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "editable":
            build_data["force_include_editable"] = {
                ".editable/_turnfork_editable.pth": "_turnfork_editable.pth"}
