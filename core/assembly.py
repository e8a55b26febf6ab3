"""Kept importable: the names of :mod:`turnfork.core.machine.assembly`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .machine.assembly import (
    ASSEMBLY_KINDS,
    EMPTY_ASSEMBLY,
    StreamAssembly,
    assemble_chunk,
    assembled_blocks,
    interrupted_blocks,
)

__all__ = [
    "StreamAssembly", "EMPTY_ASSEMBLY", "assemble_chunk", "assembled_blocks", "interrupted_blocks",
    "ASSEMBLY_KINDS",
]
