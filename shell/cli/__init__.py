"""The ``turnfork`` command line: ``check``, ``seed`` and ``show`` a session log; ``demo``.

The package, one module per idea: :mod:`.app` (the commands' words and options, the parser,
:func:`main`), :mod:`.terminal` (inert text, errors, JSON, the pager, the progress bar),
:mod:`.inputs` (a path or stdin, and telling whether a file is the input), :mod:`.outputs`
(where a command writes, never half-written), :mod:`.assess` (judging a log as it streams),
:mod:`.reports` (the JSON pieces the commands share), one module per command (:mod:`.check`,
:mod:`.seed`, :mod:`.show`, :mod:`.demo_command`), :mod:`.outline` and :mod:`.render` (a log as
data, then drawn), :mod:`.demo` and :mod:`.demo_render` (the fork scenario and its picture).

No runtime module imports this package. A command's module is imported only when it runs, so
``turnfork --help`` imports neither the core nor ``rich``, and only ``demo`` imports the
asyncio runtime.
"""

from .app import (
    COMMANDS,
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_NOT_AS_INTENDED,
    EXIT_OK,
    EXIT_OPEN,
    EXIT_UNREADABLE,
    Command,
    build_parser,
    main,
)

#: The package's door, sorted (the names are :mod:`.app`'s, the same objects).
__all__ = [
    "COMMANDS",
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_NOT_AS_INTENDED",
    "EXIT_OK",
    "EXIT_OPEN",
    "EXIT_UNREADABLE",
    "Command",
    "build_parser",
    "main",
]
