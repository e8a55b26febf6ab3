"""Kept importable: the names of :mod:`turnfork.core.log.seed`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .log.seed import (
    PrefixView,
    SeededLog,
    SequencePrefix,
    completed_turn_cut,
    completed_turn_prefix,
)

__all__ = [
    "SequencePrefix", "PrefixView", "SeededLog", "completed_turn_prefix", "completed_turn_cut",
]
