"""Structured output (wire-format §7.7): strings, the requested schema, argument validation.

Argument cases follow DSH's dsh-subagent-in-process-driver tests/structured.spec.ts (schema
`{answer: number, note?: string}`).
"""

from __future__ import annotations

import pytest
from msgspec import Raw

from turnfork.core import (
    INVALID_ARGS_ERROR,
    STRUCTURED_OUTPUT_DESCRIPTION,
    STRUCTURED_OUTPUT_INSTRUCTION,
    STRUCTURED_OUTPUT_RECORDED,
    STRUCTURED_OUTPUT_SECTION,
    STRUCTURED_OUTPUT_TOOL_NAME,
    OutputSchema,
    ToolErrorInfo,
    already_recorded_message,
    render_already_recorded,
    render_invalid_arguments,
    render_structured_recorded,
    structured_output_contract,
    validate_output_schema,
    validate_structured_arguments,
)


def compiled(schema: bytes) -> OutputSchema:
    return validate_output_schema(Raw(schema)).unwrap()


def schema_violations(schema: bytes) -> list[str]:
    message = validate_output_schema(Raw(schema)).failure().message
    assert message.startswith("unsupported JSON schema: ")
    return message.removeprefix("unsupported JSON schema: ").split("; ")


def test_exact_strings() -> None:
    """Ensures the tool name, description, instruction and acknowledgement are DSH's."""
    assert STRUCTURED_OUTPUT_TOOL_NAME == "structured_output"
    assert STRUCTURED_OUTPUT_DESCRIPTION == (
        "Report your final structured result. Call this exactly once, when your answer is "
        "complete; the arguments must match this tool's parameter schema exactly.")
    assert STRUCTURED_OUTPUT_INSTRUCTION == (
        "When you have your final answer, you MUST report it by calling the `structured_output` "
        "tool with arguments matching its parameter schema exactly. Do not finish with a plain "
        "text answer: only the tool call counts as your result.")
    assert (STRUCTURED_OUTPUT_SECTION.name, STRUCTURED_OUTPUT_SECTION.order) == \
        ("tool:structured_output", 190)
    assert STRUCTURED_OUTPUT_SECTION.text == STRUCTURED_OUTPUT_INSTRUCTION
    assert STRUCTURED_OUTPUT_RECORDED == "Structured output recorded."


def test_renderings() -> None:
    """Ensures success, denial and invalid-argument results are DSH's texts and error keys."""
    assert render_structured_recorded().text == "Structured output recorded."
    assert not render_structured_recorded().is_error
    denied = render_already_recorded("read")
    assert denied.text == ("Error: structured output already recorded: the run is complete, "
                           "so `read` is not executed")
    assert denied.is_error and denied.error is None
    assert already_recorded_message("x").endswith("so `x` is not executed")
    invalid = validate_structured_arguments(
        compiled(b'{"type":"object","required":["a","b"]'
                 b',"properties":{"a":{"type":"string"},"b":{"type":"string"}}}'), "{}")
    rendered = render_invalid_arguments(invalid.failure())
    assert rendered.text == ('Error: invalid arguments: missing required property "value.a"; '
                             'missing required property "value.b"')
    assert rendered.error == INVALID_ARGS_ERROR == ToolErrorInfo(name="ToolArgsError",
                                                                 code="INVALID_ARGS")


def test_contract_tool_uses_the_schema_verbatim() -> None:
    """Ensures the tool's parameters are the requested schema's exact JSON text."""
    schema = b'{"type": "object", "properties": {"x": {"type": "integer"}}}'
    contract = structured_output_contract(compiled(schema))
    assert contract.tool.name == "structured_output"
    assert contract.tool.description == STRUCTURED_OUTPUT_DESCRIPTION
    assert bytes(contract.tool.parameters) == schema
    assert contract.section == STRUCTURED_OUTPUT_SECTION


def test_root_must_be_an_object() -> None:
    """Ensures a non-object root is refused with DSH's text."""
    assert schema_violations(b'{"type":"array"}') == [
        'schema.type must be "object" (structured output is object-rooted)']
    assert schema_violations(b"[]") == ["schema must be a schema object"]


def test_every_schema_violation_is_reported() -> None:
    """Ensures every subset violation comes back at once, with its path (the checker's own
    cases are tests/core/test_schema_subset.py)."""
    assert schema_violations(
        b'{"type":"object","required":["z"],"properties":{"a":{"type":"integer","minimum":0},'
        b'"b":{"type":"string","enum":[1]}}}') == [
        "schema.properties.a.minimum is not a supported keyword (subset: type/oneOf/properties/"
        "required/additionalProperties/items/enum/const + annotations)",
        "schema.properties.b.enum must be a non-empty array of string values",
        'schema.required names "z" which is not in properties']


@pytest.mark.parametrize(("text", "violation"), [
    (b'{"type":"object","default":1e999}', "schema.default annotation must be lossless JSON data"),
    (b'{"type":"object","properties":{"n":{"type":"number","const":-0}}}',
     "schema.properties.n.const must be a number value"),
    (b'{"type":"object","properties":{"n":{"type":"integer","enum":[9007199254740992]}}}',
     "schema.properties.n.enum must be a non-empty array of integer values"),
])
def test_schema_text_is_read_as_json_parse_reads_it(text: bytes, violation: str) -> None:
    """Ensures 1e999 (Infinity) and -0 are read as JSON.parse reads them, then refused where
    they sit (structured.spec.ts "a schema carrying non-JSON values fails as JsonSchemaError");
    an integer beyond 2^53-1 is refused too (our lossless rule)."""
    assert schema_violations(text) == [violation]


@pytest.mark.parametrize(("text", "problem"), [
    (b'{"type":', "schema is not valid JSON (Expecting value at char 8)"),
    (b'{"type":"object","default":NaN}', "schema is not valid JSON (NaN is not a JSON value)"),
    (b'{"type":"object","title":"\xff"}',
     "schema is not valid JSON (not UTF-8 at byte 26)"),
    (b'{"type":"object","default":' + b"[" * 600 + b"]" * 600 + b"}",
     "schema is nested deeper than 512 levels"),
])
def test_unreadable_schema_text_is_refused(text: bytes, problem: str) -> None:
    """Ensures schema text that is not JSON, or nests too deep to read, is a start error."""
    error = validate_output_schema(Raw(text)).failure()
    assert error.message == f"unsupported JSON schema: {problem}"
    assert (error.code, error.name) == ("UNSUPPORTED_SCHEMA", "JsonSchemaError")


def test_a_lone_surrogate_in_the_schema_is_read() -> None:
    """Ensures an escape JSON.parse reads (a lone surrogate) does not make the schema unreadable."""
    checked = compiled(b'{"type":"object","properties":{"a":{"type":"string","const":"\\ud800"}}}')
    assert checked.checked.schema["properties"]["a"]["const"] == "\ud800"


ANSWER = compiled(b'{"type":"object","properties":{"answer":{"type":"number"},'
                  b'"note":{"type":"string"}},"required":["answer"]}')


def test_a_valid_call_is_captured_as_its_exact_text() -> None:
    """Ensures a valid call yields its exact JSON text (structured.spec.ts "captures a valid
    structured_output call")."""
    text = '{"answer": 42, "note": "done"}'
    assert validate_structured_arguments(ANSWER, text).unwrap() == Raw(text.encode())
    assert validate_structured_arguments(ANSWER, '{"answer":7,"extra":[1]}').unwrap() == \
        Raw(b'{"answer":7,"extra":[1]}')


def test_an_invalid_call_lists_its_violations_in_dshs_words() -> None:
    """Ensures an invalid call is INVALID_ARGS with every violation under the root "value"
    (structured.spec.ts "an invalid call gets an INVALID_ARGS isError result")."""
    invalid = validate_structured_arguments(ANSWER, '{"answer":"not-a-number","note":3}')
    assert invalid.failure().violations == ('"value.answer" must be a number',
                                            '"value.note" must be a string')
    rendered = render_invalid_arguments(invalid.failure())
    assert rendered.text == ('Error: invalid arguments: "value.answer" must be a number; '
                             '"value.note" must be a string')
    assert rendered.is_error and rendered.error == INVALID_ARGS_ERROR


def test_empty_arguments_mean_an_empty_object() -> None:
    """Ensures "" (or blanks) is read as {} (then the required fields are missing)."""
    assert validate_structured_arguments(ANSWER, "").failure().violations == (
        'missing required property "value.answer"',)
    assert validate_structured_arguments(compiled(b'{"type":"object"}'), " ").unwrap() == \
        Raw(b"{}")


@pytest.mark.parametrize(("text", "problem"), [
    ('{"answer":', "arguments are not valid JSON (Expecting value at char 10)"),
    ('"text"', "arguments must be a JSON object, got string"),
    ('{"answer": NaN}', "arguments are not valid JSON (NaN is not a JSON value)"),
    ('{"answer": 9007199254740993}',
     "arguments hold the integer 9007199254740993, beyond the safe-integer range "
     "±9007199254740991"),
])
def test_arguments_are_read_as_every_tool_calls_are(text: str, problem: str) -> None:
    """Ensures the arguments go through the one argument reader (core.arguments), so malformed,
    non-object and lossy arguments get its texts."""
    assert validate_structured_arguments(ANSWER, text).failure().violations == (problem,)


def test_negative_zero_is_not_a_json_number() -> None:
    """Ensures -0.0 is refused as DSH's JavaScript refuses -0."""
    assert validate_structured_arguments(ANSWER, '{"answer": -0.0}').failure().violations == (
        '"value.answer" must be a finite JSON number',)


def test_a_lone_surrogate_argument_is_captured_as_its_escape() -> None:
    """Ensures a lone surrogate in the arguments, escaped or not, is captured as valid JSON text
    that reads back to the same string."""
    schema = compiled(b'{"type":"object","properties":{"note":{"type":"string"}}}')
    for text in ('{"note":"a\\ud800"}', '{"note":"a\ud800"}'):
        captured = validate_structured_arguments(schema, text).unwrap()
        assert bytes(captured) == b'{"note":"a\\ud800"}'
