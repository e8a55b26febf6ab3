"""The earlier path of :mod:`turnfork.core.delegation.structured`: its names (in no tier)."""

from ._earlier import forwarding
from .delegation import structured as _home

__all__, __getattr__, __dir__ = forwarding(_home, __name__)
