"""Kept importable: the names of :mod:`turnfork.core.log.trace`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .log.trace import (
    EMPTY_TRACE,
    TOOL_NOT_STARTED,
    CallPairing,
    ContextSnapshot,
    PendingCall,
    SurfaceNode,
    Trace,
    Violation,
    advance,
    check_balance,
    trace_log,
)

__all__ = [
    "ContextSnapshot", "PendingCall", "CallPairing", "SurfaceNode", "Trace", "Violation",
    "EMPTY_TRACE", "advance",
    "trace_log", "check_balance", "TOOL_NOT_STARTED",
]
