"""Kept importable: the names of :mod:`turnfork.core.log.closers`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .log.closers import (
    ABORTED_BEFORE_DISPATCH_TEXT,
    ABORTED_TEXT,
    TOOL_NOT_STARTED_TEXT,
    TOOL_OUTCOME_UNKNOWN_TEXT,
    close_open_turn,
    closing_events,
    repair_closers,
    tool_result_event,
)

__all__ = [
    "TOOL_NOT_STARTED_TEXT", "TOOL_OUTCOME_UNKNOWN_TEXT", "ABORTED_TEXT",
    "ABORTED_BEFORE_DISPATCH_TEXT", "close_open_turn", "closing_events", "repair_closers",
    "tool_result_event",
]
