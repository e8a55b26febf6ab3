"""The earlier path of :mod:`turnfork.core.log.seed`: its names (in no tier)."""

from ._earlier import forwarding
from .log import seed as _home

__all__, __getattr__, __dir__ = forwarding(_home, __name__)
