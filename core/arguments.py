"""The earlier path of :mod:`turnfork.core.delegation.arguments`: its names (in no tier)."""

from ._earlier import forwarding
from .delegation import arguments as _home

__all__, __getattr__, __dir__ = forwarding(_home, __name__)
