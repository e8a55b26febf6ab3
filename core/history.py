"""Kept importable: the names of :mod:`turnfork.core.log.history`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .log.history import (
    EMPTY_HISTORY,
    HistorySnapshot,
    HistoryView,
    Message,
    history_snapshot,
    model_history,
)

__all__ = [
    "Message", "HistoryView", "HistorySnapshot", "EMPTY_HISTORY", "history_snapshot",
    "model_history",
]
