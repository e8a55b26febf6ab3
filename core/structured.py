"""Structured output: the ``structured_output`` tool of a child asked for a schema (§7.7).

Rules of this module:

* A requested schema is validated against the supported subset (:mod:`core.schema_subset`)
  before any child exists; every violation is reported in one ``JsonSchemaError``.
* The child gets a ``structured_output`` tool whose parameters are the schema itself, and a
  prompt section (order 190) telling it that only that call counts as its result.
* Arguments are valid exactly when msgspec, decoding them into the compiled types, accepts
  them. An invalid call is an ``INVALID_ARGS`` error listing every violation; the model may
  retry in the same turn. A valid call is acknowledged and its arguments, as their exact JSON
  text, are the captured value (once the call's final result is not an error, the shell's call).
* Once a value is captured, every later tool call is denied without running.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import Raw
from returns.result import Failure, Result, Success

from .delegation import UNSUPPORTED_SCHEMA, PromptSection, StartError
from .events import ToolErrorInfo, ToolSchema
from .outcome import ToolOutcome
from .schema_subset import SchemaNode, check_schema, compile_schema, value_violations

__all__ = [
    "STRUCTURED_OUTPUT_TOOL_NAME",
    "STRUCTURED_OUTPUT_DESCRIPTION",
    "STRUCTURED_OUTPUT_INSTRUCTION",
    "STRUCTURED_OUTPUT_SECTION",
    "STRUCTURED_OUTPUT_RECORDED",
    "INVALID_ARGS_ERROR",
    "CompiledSchema",
    "InvalidArguments",
    "StructuredOutputContract",
    "validate_output_schema",
    "validate_structured_arguments",
    "structured_output_contract",
    "already_recorded_message",
    "render_structured_recorded",
    "render_already_recorded",
    "render_invalid_arguments",
]

STRUCTURED_OUTPUT_TOOL_NAME = "structured_output"
STRUCTURED_OUTPUT_DESCRIPTION = (
    "Report your final structured result. Call this exactly once, when your answer is complete; "
    "the arguments must match this tool's parameter schema exactly.")
STRUCTURED_OUTPUT_INSTRUCTION = (
    "When you have your final answer, you MUST report it by calling the `structured_output` tool "
    "with arguments matching its parameter schema exactly. Do not finish with a plain text "
    "answer: only the tool call counts as your result.")
#: The child's prompt section carrying the instruction.
STRUCTURED_OUTPUT_SECTION = PromptSection(name=f"tool:{STRUCTURED_OUTPUT_TOOL_NAME}", order=190,
                                          text=STRUCTURED_OUTPUT_INSTRUCTION)
#: The tool's rendered success result.
STRUCTURED_OUTPUT_RECORDED = "Structured output recorded."
#: The ``error`` key of an invalid-arguments result.
INVALID_ARGS_ERROR = ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS")


class CompiledSchema(msgspec.Struct, frozen=True, kw_only=True, eq=False):
    """A requested output schema that passed the subset check, compiled to msgspec types."""

    #: The schema's exact JSON text: the ``structured_output`` tool's parameters.
    schema: Raw
    root: SchemaNode
    decoder: msgspec.json.Decoder[Any]


class InvalidArguments(msgspec.Struct, frozen=True, kw_only=True):
    """``structured_output`` arguments that do not match the schema: every violation."""

    violations: tuple[str, ...]

    @property
    def message(self) -> str:
        """``invalid arguments: <violation>; <violation>…`` (DSH's ``ToolArgsError`` text)."""
        return "invalid arguments: " + "; ".join(self.violations)

    def __str__(self) -> str:
        return self.message


class StructuredOutputContract(msgspec.Struct, frozen=True, kw_only=True, eq=False):
    """What a child asked for structured output gets: the tool, its prompt section, and the
    compiled schema its arguments are validated against."""

    tool: ToolSchema
    section: PromptSection
    compiled: CompiledSchema


def _schema_error(violations: list[str]) -> StartError:
    return StartError(code=UNSUPPORTED_SCHEMA, name="JsonSchemaError",
                      message="unsupported JSON schema: " + "; ".join(violations))


def validate_output_schema(schema: Raw) -> Result[CompiledSchema, StartError]:
    """Check a requested output schema (JSON text) and compile it.

    Returns:
        The compiled schema, or a ``JsonSchemaError`` ``UNSUPPORTED_SCHEMA`` start error
        listing every violation (``unsupported JSON schema: <v>; <v>``).

    >>> validate_output_schema(Raw(b'{"type":"object"}')).unwrap().root.kind
    'object'
    >>> validate_output_schema(Raw(b'{"type":"array"}')).failure().message
    'unsupported JSON schema: schema.type must be "object" (structured output is object-rooted)'
    """
    try:
        decoded = msgspec.json.decode(schema)
    except msgspec.DecodeError as error:
        return Failure(_schema_error([f"schema is not valid JSON ({error})"]))
    violations = check_schema(decoded)
    if violations:
        return Failure(_schema_error(violations))
    root = compile_schema(decoded)
    try:
        decoder = msgspec.json.Decoder(root.type)
    except (TypeError, ValueError, NotImplementedError) as error:
        # A limit of msgspec the subset check did not foresee: refuse rather than crash.
        return Failure(_schema_error([f"schema cannot be compiled ({error})"]))
    return Success(CompiledSchema(schema=schema, root=root, decoder=decoder))


def validate_structured_arguments(compiled: CompiledSchema,
                                  arguments_json: str) -> Result[Raw, InvalidArguments]:
    """Validate a ``structured_output`` call's raw arguments.

    Empty arguments mean ``{}`` (as the agent loop reads them).

    Returns:
        The arguments' exact JSON text, or every violation.

    >>> compiled = validate_output_schema(Raw(b'{"type":"object","required":["a"],'
    ...     b'"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}')).unwrap()
    >>> validate_structured_arguments(compiled, '{"b":"x"}').failure().message
    'invalid arguments: Object missing required field `a`; Expected `int`, got `str` - at `$.b`'
    """
    data = (arguments_json or "{}").encode()
    try:
        compiled.decoder.decode(data)
    except msgspec.ValidationError as error:
        # The typed decode may stop at a bad value before reaching malformed JSON further on.
        try:
            value = msgspec.json.decode(data)
        except msgspec.DecodeError as malformed:
            return Failure(_not_json(malformed))
        violations = value_violations(compiled.root, value)
        # msgspec's own message stands in if the walk ever disagrees with the decoder.
        return Failure(InvalidArguments(violations=tuple(violations) or (str(error),)))
    except msgspec.DecodeError as malformed:
        return Failure(_not_json(malformed))
    return Success(Raw(data))


def _not_json(error: msgspec.DecodeError) -> InvalidArguments:
    return InvalidArguments(violations=(f"arguments are not valid JSON ({error})",))


def structured_output_contract(compiled: CompiledSchema) -> StructuredOutputContract:
    """The tool and prompt section a child asked for ``compiled``'s schema gets."""
    tool = ToolSchema(name=STRUCTURED_OUTPUT_TOOL_NAME, description=STRUCTURED_OUTPUT_DESCRIPTION,
                      parameters=compiled.schema)
    return StructuredOutputContract(tool=tool, section=STRUCTURED_OUTPUT_SECTION,
                                    compiled=compiled)


def already_recorded_message(tool_name: str) -> str:
    """Why a tool call after the capture is not executed (a plain error: no ``error`` key).

    >>> already_recorded_message("read")
    'structured output already recorded: the run is complete, so `read` is not executed'
    """
    return (f"structured output already recorded: the run is complete, so `{tool_name}` is not "
            f"executed")


def render_structured_recorded() -> ToolOutcome:
    """The ``structured_output`` result of a valid call."""
    return ToolOutcome(STRUCTURED_OUTPUT_RECORDED, conclude_turn=True)


def render_already_recorded(tool_name: str) -> ToolOutcome:
    """The result of a tool call denied because a value was already captured."""
    return ToolOutcome(f"Error: {already_recorded_message(tool_name)}", is_error=True)


def render_invalid_arguments(error: InvalidArguments) -> ToolOutcome:
    """The ``structured_output`` result of an invalid call (``INVALID_ARGS``)."""
    return ToolOutcome(f"Error: {error.message}", is_error=True, error=INVALID_ARGS_ERROR)
