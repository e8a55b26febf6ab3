"""The earlier path of :mod:`turnfork.core.delegation.schema_subset`: its names (in no tier)."""

from ._earlier import forwarding
from .delegation import schema_subset as _home

__all__, __getattr__, __dir__ = forwarding(_home, __name__)
