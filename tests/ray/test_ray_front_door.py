"""``turnfork.shell.ray`` binds exactly its ``__all__`` (submodules aside), as the other shell
doors do (tests/core/test_front_doors.py checks those; this door imports only with the ray
extra, which CI installs for this folder alone)."""

from __future__ import annotations

import importlib
import types

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")


def test_the_ray_door_binds_exactly_its_all() -> None:
    door = importlib.import_module("turnfork.shell.ray")
    listed = set(door.__all__)
    public = {n for n in vars(door) if not n.startswith("_") and n.isidentifier()}
    submodules = {n for n in public if isinstance(getattr(door, n), types.ModuleType)
                  and getattr(door, n).__name__.startswith("turnfork.shell.ray.")}
    assert public - submodules == listed - submodules, (
        sorted(public - submodules - listed), sorted(listed - public))
