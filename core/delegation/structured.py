"""Structured output: the ``structured_output`` tool of a child asked for a schema (§7.7).

Rules of this module:

* A requested schema is JSON text. It is read as DSH's ``JSON.parse`` reads it (``1e999`` is
  Infinity, ``-0`` is negative zero, both then refused where they appear), nested at most
  :data:`~turnfork.core.codec.MAX_JSON_DEPTH` levels, and checked against the subset of
  :mod:`core.schema_subset` with an object root, before any child exists; every violation is
  reported in one ``JsonSchemaError`` ``UNSUPPORTED_SCHEMA`` start error.
* The child gets a ``structured_output`` tool whose parameters are the schema itself, and a
  prompt section (order 190) telling it that only that call counts as its result.
* A call's arguments are read as every tool call's are (:func:`~turnfork.core.arguments.
  parse_tool_arguments`) and validated by the subset's validator with the root named
  ``value`` (DSH's texts: ``missing required property "value.answer"``). An invalid call is an
  ``INVALID_ARGS`` error listing every violation; the model may retry in the same turn. A valid
  call is acknowledged and its arguments, as their exact JSON text, are the captured value (once
  the call's final result is not an error, the shell's call).
* Once a value is captured, every later tool call is denied without running.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
from msgspec import Raw
from returns.result import Failure, Result, Success

from .._checking import checked, plain_forms
from .._json import MAX_JSON_DEPTH, exceeds_depth
from ..log import ToolErrorInfo, ToolSchema
from .arguments import parse_tool_arguments
from .outcome import ToolOutcome
from .request import UNSUPPORTED_SCHEMA, PromptSection, StartError
from .schema_subset import SupportedSchema, check_object_schema, value_violations

# Calls into sibling modules get values this module's checked entry points took in: plain.
(_check_object_schema, _parse_tool_arguments, _value_violations) = plain_forms(
    check_object_schema, parse_tool_arguments, value_violations)

__all__ = [
    "STRUCTURED_OUTPUT_TOOL_NAME",
    "STRUCTURED_OUTPUT_DESCRIPTION",
    "STRUCTURED_OUTPUT_INSTRUCTION",
    "STRUCTURED_OUTPUT_SECTION",
    "STRUCTURED_OUTPUT_RECORDED",
    "INVALID_ARGS_ERROR",
    "OutputSchema",
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


class OutputSchema(msgspec.Struct, frozen=True, kw_only=True, eq=False):
    """A requested output schema that passed the subset check."""

    #: The schema's exact JSON text: the ``structured_output`` tool's parameters.
    schema: Raw
    #: The same schema, decoded and checked: what arguments are validated against.
    checked: SupportedSchema


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
    checked schema its arguments are validated against."""

    tool: ToolSchema
    section: PromptSection
    output_schema: OutputSchema


def _schema_error(message: str) -> StartError:
    return StartError(code=UNSUPPORTED_SCHEMA, name="JsonSchemaError", message=message)


class _NotJson(ValueError):
    """A constant JSON.parse refuses (raised from inside the parser to stop it)."""


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON value")


def _integer(digits: str) -> int | float:
    # JSON.parse reads -0 as negative zero, which the subset then refuses where it matters.
    return -0.0 if digits == "-0" else int(digits)


def _decode_schema(schema: Raw) -> Result[Any, str]:
    """The schema text as ``JSON.parse`` reads it, or why it cannot be read."""
    if not isinstance(schema, (Raw, bytes)):  # a Python value where JSON text belongs
        return Failure(f"schema must be JSON text (msgspec.Raw), not {type(schema).__name__}")
    data = bytes(schema)
    if exceeds_depth(data):
        return Failure(f"schema is nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return Success(json.loads(data.decode("utf-8"), parse_constant=_refuse_constant,
                                  parse_int=_integer))
    except UnicodeDecodeError as error:
        return Failure(f"schema is not valid JSON (not UTF-8 at byte {error.start})")
    except json.JSONDecodeError as error:
        return Failure(f"schema is not valid JSON ({error.msg} at char {error.pos})")
    except _NotJson as error:
        return Failure(f"schema is not valid JSON ({error})")
    except RecursionError:  # the caller's own stack was already deep
        return Failure(f"schema is nested deeper than this call's stack allows "
                       f"(at most {MAX_JSON_DEPTH} levels are ever read)")


@checked
def validate_output_schema(schema: Raw) -> Result[OutputSchema, StartError]:
    """Check a requested output schema (JSON text): the subset, with an object root.

    Returns:
        The checked schema, or a ``JsonSchemaError`` ``UNSUPPORTED_SCHEMA`` start error
        listing every violation (``unsupported JSON schema: <v>; <v>``).

    >>> validate_output_schema(Raw(b'{"type":"object"}')).unwrap().checked.schema
    {'type': 'object'}
    >>> validate_output_schema(Raw(b'{"type":"array"}')).failure().message
    'unsupported JSON schema: schema.type must be "object" (structured output is object-rooted)'
    """
    decoded = _decode_schema(schema)
    if isinstance(decoded, Failure):
        return Failure(_schema_error(f"unsupported JSON schema: {decoded.failure()}"))
    checked = _check_object_schema(decoded.unwrap())
    if isinstance(checked, Failure):
        return Failure(_schema_error(checked.failure().message))
    return Success(OutputSchema(schema=schema, checked=checked.unwrap()))


@checked
def validate_structured_arguments(output_schema: OutputSchema,
                                  arguments_json: str) -> Result[Raw, InvalidArguments]:
    """Validate a ``structured_output`` call's raw arguments.

    Empty arguments mean ``{}`` (as the agent loop reads them).

    Returns:
        The arguments' exact JSON text, or every violation.

    >>> output_schema = validate_output_schema(Raw(b'{"type":"object","required":["a"],'
    ...     b'"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}')).unwrap()
    >>> validate_structured_arguments(output_schema, '{"b":"x"}').failure().message
    'invalid arguments: missing required property "value.a"; "value.b" must be an integer'
    """
    parsed = _parse_tool_arguments(arguments_json)
    if isinstance(parsed, Failure):
        return Failure(InvalidArguments(violations=(parsed.failure(),)))
    violations = _value_violations(output_schema.checked, parsed.unwrap())
    if violations:
        return Failure(InvalidArguments(violations=tuple(violations)))
    if not arguments_json.strip():
        return Success(Raw(b"{}"))
    # A lone surrogate can only sit inside a string literal here: written as its escape, it
    # reads back as the same character.
    return Success(Raw(arguments_json.encode("utf-8", "backslashreplace")))


@checked
def structured_output_contract(output_schema: OutputSchema) -> StructuredOutputContract:
    """The tool and prompt section a child asked for ``output_schema`` gets."""
    tool = ToolSchema(name=STRUCTURED_OUTPUT_TOOL_NAME, description=STRUCTURED_OUTPUT_DESCRIPTION,
                      parameters=output_schema.schema)
    return StructuredOutputContract(tool=tool, section=STRUCTURED_OUTPUT_SECTION,
                                    output_schema=output_schema)


@checked
def already_recorded_message(tool_name: str) -> str:
    """Why a tool call after the capture is not executed (a plain error: no ``error`` key).

    >>> already_recorded_message("read")
    'structured output already recorded: the run is complete, so `read` is not executed'
    """
    return (f"structured output already recorded: the run is complete, so `{tool_name}` is not "
            f"executed")


@checked
def render_structured_recorded() -> ToolOutcome:
    """The ``structured_output`` result of a valid call."""
    return ToolOutcome(STRUCTURED_OUTPUT_RECORDED, conclude_turn=True)


@checked
def render_already_recorded(tool_name: str) -> ToolOutcome:
    """The result of a tool call denied because a value was already captured."""
    return ToolOutcome(f"Error: {already_recorded_message(tool_name)}", is_error=True)


@checked
def render_invalid_arguments(error: InvalidArguments) -> ToolOutcome:
    """The ``structured_output`` result of an invalid call (``INVALID_ARGS``)."""
    return ToolOutcome(f"Error: {error.message}", is_error=True, error=INVALID_ARGS_ERROR)
