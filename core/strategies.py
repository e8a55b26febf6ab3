"""Kept importable: the names of :mod:`turnfork.core.log.strategies`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .log.strategies import (
    broken_logs,
    closed_logs,
    events_without_turn_end,
    in_flight_logs,
    renumber,
    session_logs,
)

__all__ = [
    "session_logs", "closed_logs", "in_flight_logs", "broken_logs", "events_without_turn_end",
    "renumber",
]
