"""Kept importable: the names of :mod:`turnfork.core.log.grammar`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .log.grammar import (
    CONFINED,
    PHASE_CHANGES,
    STEP_END,
    STEP_ORDER,
    STEP_START,
    TURN_END,
    TURN_START,
    Phase,
    allowed_phases,
    closing_walk,
    phase_after,
    phase_of,
)

__all__ = [
    "Phase", "TURN_START", "TURN_END", "STEP_START", "STEP_END", "PHASE_CHANGES", "CONFINED",
    "STEP_ORDER", "phase_of", "phase_after", "allowed_phases", "closing_walk",
]
