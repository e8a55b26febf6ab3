"""The earlier path of :mod:`turnfork.core.machine.loop`: its names (in no tier)."""

from ._earlier import forwarding
from .machine import loop as _home

__all__, __getattr__, __dir__ = forwarding(_home, __name__)
