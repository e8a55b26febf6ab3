"""Kept importable: the names of :mod:`turnfork.core.delegation.structured`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .delegation.structured import (
    INVALID_ARGS_ERROR,
    STRUCTURED_OUTPUT_DESCRIPTION,
    STRUCTURED_OUTPUT_INSTRUCTION,
    STRUCTURED_OUTPUT_RECORDED,
    STRUCTURED_OUTPUT_SECTION,
    STRUCTURED_OUTPUT_TOOL_NAME,
    InvalidArguments,
    OutputSchema,
    StructuredOutputContract,
    already_recorded_message,
    render_already_recorded,
    render_invalid_arguments,
    render_structured_recorded,
    structured_output_contract,
    validate_output_schema,
    validate_structured_arguments,
)

__all__ = [
    "STRUCTURED_OUTPUT_TOOL_NAME", "STRUCTURED_OUTPUT_DESCRIPTION", "STRUCTURED_OUTPUT_INSTRUCTION",
    "STRUCTURED_OUTPUT_SECTION", "STRUCTURED_OUTPUT_RECORDED", "INVALID_ARGS_ERROR", "OutputSchema",
    "InvalidArguments", "StructuredOutputContract", "validate_output_schema",
    "validate_structured_arguments", "structured_output_contract", "already_recorded_message",
    "render_structured_recorded", "render_already_recorded", "render_invalid_arguments",
]
