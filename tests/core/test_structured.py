"""Structured output (wire-format §7.7): strings, the schema subset, argument validation."""

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
    CompiledSchema,
    ToolErrorInfo,
    already_recorded_message,
    render_already_recorded,
    render_invalid_arguments,
    render_structured_recorded,
    structured_output_contract,
    validate_output_schema,
    validate_structured_arguments,
)


def compiled(schema: bytes) -> CompiledSchema:
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
    assert rendered.text == ("Error: invalid arguments: Object missing required field `a`; "
                             "Object missing required field `b`")
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
    """Ensures all violations of a schema come back at once, each with its path."""
    schema = (b'{"type":"object","required":["z"],"additionalProperties":1,"properties":{'
              b'"a":{"type":"any"},"b":{"type":["string","null"]},"c":{"type":"string",'
              b'"pattern":"x"},"d":{"type":"integer","minLength":1},"e":{"minimum":0},'
              b'"f":{"type":"integer","minimum":3,"maximum":2},"g":{"type":"string",'
              b'"enum":["x"],"minLength":2},"h":{"type":"boolean","enum":[1]},'
              b'"i":{"type":"array","items":{"type":"object","properties":{"j":{"oneOf":[]}}}},'
              b'"k":{"type":"string","description":5},"l":{"type":"array","minItems":-1}}}')
    assert schema_violations(schema) == [
        "schema.properties.a.type must be one of object/array/string/number/integer/boolean/null",
        "schema.properties.b.type must be a single type string (type arrays are not supported)",
        "schema.properties.c.pattern is not a supported keyword (subset: type/properties/"
        "required/additionalProperties/items/enum/const/minimum/maximum/exclusiveMinimum/"
        "exclusiveMaximum/minLength/maxLength/minItems/maxItems + description)",
        'schema.properties.d.minLength is not supported on type "integer"',
        "schema.properties.e.minimum requires type",
        "schema.properties.f admits no value (its bounds exclude each other)",
        "schema.properties.g admits no value (enum/const and bounds exclude each other)",
        "schema.properties.h.enum must be a non-empty array of boolean values",
        "schema.properties.i.items.properties.j.oneOf is not a supported keyword (subset: "
        "type/properties/required/additionalProperties/items/enum/const/minimum/maximum/"
        "exclusiveMinimum/exclusiveMaximum/minLength/maxLength/minItems/maxItems + description)",
        "schema.properties.k.description must be a string",
        "schema.properties.l.minItems must be a non-negative integer",
        'schema.required names "z" which is not in properties',
        "schema.additionalProperties must be a boolean",
    ]


@pytest.mark.parametrize(("node", "violation"), [
    (b'{"type":"number","enum":[1.5]}', "enum must be a non-empty array of integer values"),
    (b'{"type":"string","const":3}', "const must be a string value"),
    (b'{"type":"integer","maximum":1e300}', "maximum must be a finite number in the "
                                            "safe-integer range"),
    (b'{"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2}',
     "admits no value (its bounds exclude each other)"),
    (b'{"type":"string","enum":[]}', "enum must be a non-empty array of string values"),
    (b'{"type":"string","const":"a","enum":["b"]}',
     "admits no value (enum/const and bounds exclude each other)"),
])
def test_scalar_schema_violations(node: bytes, violation: str) -> None:
    """Ensures enum, const and bounds are checked for type and consistency."""
    schema = b'{"type":"object","properties":{"p":' + node + b"}}"
    assert schema_violations(schema) == [f"schema.properties.p.{violation}".replace(
        "p.admits", "p admits")]


def test_invalid_json_schema_is_refused() -> None:
    """Ensures schema text that is not JSON is refused as a start error, not raised."""
    error = validate_output_schema(Raw(b'{"type":')).failure()
    assert error.message.startswith("unsupported JSON schema: schema is not valid JSON")
    assert (error.code, error.name) == ("UNSUPPORTED_SCHEMA", "JsonSchemaError")


def test_overly_deep_schema_is_refused() -> None:
    """Ensures runaway nesting is refused rather than recursing without bound."""
    schema = b'{"type":"object","properties":{"x":' + b'{"type":"array","items":' * 70 + \
        b"{}" + b"}" * 70 + b"}}"
    assert any("nests deeper than 64 levels" in v for v in schema_violations(schema))


PERSON = compiled(
    b'{"type":"object","required":["name","age"],"additionalProperties":false,"properties":{'
    b'"name":{"type":"string","minLength":1,"description":"who"},'
    b'"age":{"type":"integer","minimum":0,"exclusiveMaximum":150},'
    b'"score":{"type":"number","exclusiveMinimum":0,"maximum":1},'
    b'"role":{"type":"string","enum":["dev","ops"]},"ok":{"type":"boolean","const":true},'
    b'"none":{"type":"null"},"anything":{},'
    b'"tags":{"type":"array","items":{"type":"string"},"maxItems":2},'
    b'"pets":{"type":"array","items":{"type":"object","required":["kind"],'
    b'"properties":{"kind":{"type":"string"}}}},'
    b'"meta":{"type":"object"}}}')


def test_valid_arguments_are_returned_verbatim() -> None:
    """Ensures a valid call yields its exact JSON text as the captured value."""
    text = ('{"name":"Ada","age":36,"score":0.5,"role":"dev","ok":true,"none":null,'
            '"anything":[1,{"x":2}],"tags":["a"],"pets":[{"kind":"cat","extra":1}],'
            '"meta":{"k":"v"}}')
    assert validate_structured_arguments(PERSON, text).unwrap() == Raw(text.encode())


def test_every_argument_violation_is_reported() -> None:
    """Ensures each bad property, missing field and unknown field is listed, nested ones too."""
    text = ('{"name":"","age":150,"score":0,"role":"qa","ok":false,"none":1,'
            '"tags":["a",2,"c"],"pets":[{},{"kind":3}],"meta":[],"extra":true}')
    assert validate_structured_arguments(PERSON, text).failure().violations == (
        "Object contains unknown field `extra`",
        "Expected `str` of length >= 1 - at `$.name`",
        "Expected `int` <= 149 - at `$.age`",
        "Expected `float` > 0.0 - at `$.score`",
        "Invalid enum value 'qa' - at `$.role`",
        "Invalid enum value False - at `$.ok`",
        "Expected `null`, got `int` - at `$.none`",
        "Expected `array` of length <= 2 - at `$.tags`",
        "Expected `str`, got `int` - at `$.tags[1]`",
        "Object missing required field `kind` - at `$.pets[0]`",
        "Expected `str`, got `int` - at `$.pets[1].kind`",
        "Expected `object`, got `array` - at `$.meta`",
    )


def test_empty_arguments_mean_an_empty_object() -> None:
    """Ensures "" is read as {} (then the required fields are missing)."""
    assert validate_structured_arguments(PERSON, "").failure().violations == (
        "Object missing required field `name`", "Object missing required field `age`")
    assert validate_structured_arguments(compiled(b'{"type":"object"}'), "").unwrap() == \
        Raw(b"{}")


@pytest.mark.parametrize("text", ['{"name":', '{"name":1, "age":', "not json", '"text"'])
def test_malformed_or_non_object_arguments(text: str) -> None:
    """Ensures malformed JSON and non-object arguments are violations, never exceptions."""
    violations = validate_structured_arguments(PERSON, text).failure().violations
    assert len(violations) == 1
    assert violations[0].startswith(("arguments are not valid JSON", "Expected `object`"))


def test_integer_rejects_fractional_and_boolean_values() -> None:
    """Ensures integer properties accept neither 1.5 nor true."""
    for value in ("1.5", "true"):
        text = '{"name":"a","age":' + value + "}"
        assert validate_structured_arguments(PERSON, text).failure().violations[0].endswith(
            "- at `$.age`")


def test_property_names_that_are_not_identifiers() -> None:
    """Ensures keys such as `class` or `my key` work (they are renamed struct fields)."""
    schema = compiled(b'{"type":"object","required":["class"],"additionalProperties":false,'
                      b'"properties":{"class":{"type":"string"},"my key":{"type":"integer"}}}')
    assert validate_structured_arguments(schema, '{"class":"a","my key":1}').unwrap()
    assert validate_structured_arguments(schema, '{"my key":"x"}').failure().violations == (
        "Object missing required field `class`", "Expected `int`, got `str` - at `$.my key`")


def test_redundant_bounds_keep_the_tighter_one() -> None:
    """Ensures minimum 1 with exclusiveMinimum 0 and maximum 1 admits exactly 1."""
    schema = compiled(b'{"type":"object","properties":{"x":{"type":"number","minimum":1,'
                      b'"exclusiveMinimum":0,"maximum":1}}}')
    assert validate_structured_arguments(schema, '{"x":1}').unwrap() == Raw(b'{"x":1}')
    assert validate_structured_arguments(schema, '{"x":0.5}').failure().violations == (
        "Expected `float` >= 1.0 - at `$.x`",)
