"""Kept importable: the names of :mod:`turnfork.core.delegation.schema_subset`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .delegation.schema_subset import (
    ANNOTATION_KEYWORDS,
    CONSTRAINT_KEYWORDS,
    SCHEMA_TYPES,
    JsonSchemaError,
    SupportedSchema,
    check_object_schema,
    check_schema,
    value_violations,
)

__all__ = [
    "SCHEMA_TYPES", "CONSTRAINT_KEYWORDS", "ANNOTATION_KEYWORDS", "JsonSchemaError",
    "SupportedSchema", "check_schema", "check_object_schema", "value_violations",
]
