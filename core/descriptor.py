"""Kept importable: the names of :mod:`turnfork.core.log.descriptor`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .log.descriptor import (
    DESCRIPTOR_EVENT_TYPE,
    DescriptorAt,
    DescriptorError,
    fold_subagent_descriptor,
    identity_descriptor,
    is_descriptor_event,
    parse_subagent_descriptor,
)

__all__ = [
    "DESCRIPTOR_EVENT_TYPE", "DescriptorError", "DescriptorAt", "parse_subagent_descriptor",
    "is_descriptor_event", "fold_subagent_descriptor", "identity_descriptor",
]
