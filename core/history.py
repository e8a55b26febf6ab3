"""The earlier path of :mod:`turnfork.core.log.history`: its names (in no tier)."""

from ._earlier import forwarding
from .log import history as _home

__all__, __getattr__, __dir__ = forwarding(_home, __name__)
