"""The ``turnfork`` command line: ``check``, ``seed`` and ``show`` a session log; ``demo``.

No runtime module imports this package; it imports the runtime only where the demo needs it.
"""

from __future__ import annotations

from .app import (
    COMMANDS,
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_NOT_CLOSED,
    EXIT_OK,
    EXIT_UNREADABLE,
    Command,
    build_parser,
    main,
)

__all__ = [
    "EXIT_OK",
    "EXIT_NOT_CLOSED",
    "EXIT_UNREADABLE",
    "EXIT_INTERRUPTED",
    "EXIT_BROKEN_PIPE",
    "Command",
    "COMMANDS",
    "build_parser",
    "main",
]
