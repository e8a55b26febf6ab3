"""The earlier path of :mod:`turnfork.core.log.retry`: its names (in no tier)."""

from ._earlier import forwarding
from .log import retry as _home

__all__, __getattr__, __dir__ = forwarding(_home, __name__)
