"""Kept importable: the names of :mod:`turnfork.core.delegation.arguments`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .delegation.arguments import (
    parse_tool_arguments,
)

__all__ = [
    "parse_tool_arguments",
]
