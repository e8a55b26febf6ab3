"""Values against a supported schema: every violation, its text and its path.

Ported from DSH's dsh-tools tests/json-schema.spec.ts, "validateJsonSchemaValue".
"""

from __future__ import annotations

from typing import Any

import pytest

from turnfork.core.schema_subset import SupportedSchema, check_schema, value_violations


def checked(schema: dict[str, Any]) -> SupportedSchema:
    return check_schema(schema).unwrap()


@pytest.mark.parametrize(("schema", "value"), [
    ({"type": "string"}, "x"), ({"type": "number"}, 1.5), ({"type": "number"}, 2),
    ({"type": "integer"}, 2), ({"type": "integer"}, 2.0), ({"type": "boolean"}, True),
    ({"type": "null"}, None), ({"type": "array", "items": {"type": "string"}}, ["x"]),
    ({"type": "array", "items": {"type": "string"}}, ("x",)), ({"type": "object"}, {"x": 1}),
])
def test_scalar_array_object_and_null_roots(schema: dict[str, Any], value: object) -> None:
    """Ensures a value of the root's type is valid."""
    assert value_violations(checked(schema), value) == []


@pytest.mark.parametrize(("schema", "value", "violation"), [
    ({"type": "string"}, 1, '"value" must be a string'),
    ({"type": "number"}, "1", '"value" must be a number'),
    ({"type": "number"}, True, '"value" must be a number'),
    ({"type": "number"}, float("nan"), '"value" must be a finite JSON number'),
    ({"type": "number"}, -0.0, '"value" must be a finite JSON number'),
    ({"type": "number"}, 2**53, '"value" must be a finite JSON number'),
    ({"type": "integer"}, 1.5, '"value" must be an integer'),
    ({"type": "integer"}, False, '"value" must be an integer'),
    ({"type": "boolean"}, "true", '"value" must be a boolean'),
    ({"type": "null"}, 0, '"value" must be null'),
])
def test_wrong_scalar_types_and_lossy_numbers(schema: dict[str, Any], value: object,
                                              violation: str) -> None:
    """Ensures each scalar type's refusal text, NaN, -0 and unsafe integers included."""
    assert value_violations(checked(schema), value) == [violation]


def test_enum_and_const_together() -> None:
    """Ensures enum is checked first, then const, each written as JSON.stringify writes it."""
    schema = checked({"type": "string", "enum": ["a", "b"], "const": "a"})
    assert value_violations(schema, "a") == []
    assert value_violations(schema, "c") == ['"value" must be one of ["a","b"]']
    assert value_violations(schema, "b") == ['"value" must be "a"']
    numbers = checked({"type": "number", "enum": [1.0, 2.5, 1e21, 1e-7]})
    assert value_violations(numbers, 1) == []
    assert value_violations(numbers, 3) == ['"value" must be one of [1,2.5,1e+21,1e-7]']
    assert value_violations(checked({"type": "string", "const": 'q"\n'}), "x") == [
        '"value" must be "q\\"\\n"']


def test_required_nested_values_and_open_objects() -> None:
    """Ensures missing required properties, nested violations and closed objects, in order."""
    schema = checked({
        "type": "object",
        "properties": {
            "file": {"type": "string"},
            "nested": {"type": "object", "properties": {"line": {"type": "integer"}},
                       "required": ["line"], "additionalProperties": False},
        },
        "required": ["file"],
    })
    assert value_violations(schema, {"file": "a", "extra": [1], "nested": {"line": 2}}) == []
    assert value_violations(schema, {"nested": {"line": 1}}) == [
        'missing required property "value.file"']
    assert value_violations(schema, {"file": 1, "nested": {}}) == [
        '"value.file" must be a string', 'missing required property "value.nested.line"']
    assert value_violations(schema, {"file": "a", "nested": {"line": 1, "extra": True}}) == [
        '"value.nested.extra" is not a declared property (additionalProperties: false)']
    assert value_violations(schema, "x") == ['"value" must be an object']


def test_object_order_required_then_properties_then_undeclared() -> None:
    """Ensures an object lists its missing properties, then its properties' own violations in
    the schema's order, then its undeclared properties in the value's order."""
    schema = checked({"type": "object", "additionalProperties": False, "required": ["z", "a"],
                      "properties": {"a": {"type": "string"}, "b": {"type": "null"},
                                     "z": {"type": "integer"}}})
    assert value_violations(schema, {"y": 0, "b": 1, "x": 0}) == [
        'missing required property "value.z"', 'missing required property "value.a"',
        '"value.b" must be null', '"value.y" is not a declared property (additionalProperties: '
        'false)', '"value.x" is not a declared property (additionalProperties: false)']


def test_non_json_objects_are_lossy() -> None:
    """Ensures an object that JSON cannot hold is refused as such once nothing else is wrong."""
    schema = checked({"type": "object", "properties": {"x": {}}, "required": ["x"]})
    assert value_violations(schema, {}) == ['missing required property "value.x"']
    assert value_violations(checked({"type": "object"}), {"x": object()}) == [
        '"value" must be a lossless JSON object']
    assert value_violations(checked({"type": "object"}), {1: "x"}) == [
        '"value" must be a lossless JSON object']
    assert value_violations(checked({"type": "object"}), object()) == ['"value" must be an object']


def test_arrays_per_index_and_lossy_arrays() -> None:
    """Ensures items are checked at their index and an array JSON cannot hold is refused."""
    schema = checked({"type": "array", "items": {"type": "integer"}})
    assert value_violations(schema, [1, 2]) == []
    assert value_violations(schema, [1, 1.5]) == ['"value[1]" must be an integer']
    assert value_violations(schema, "x") == ['"value" must be an array']
    assert value_violations(checked({"type": "array"}), [1, float("inf")]) == [
        '"value" must be a dense lossless JSON array']


def test_one_of_is_exactly_one() -> None:
    """Ensures oneOf accepts a value matching one branch and counts the matches otherwise."""
    disjoint = checked({"oneOf": [{"type": "string"}, {"type": "number"}]})
    assert value_violations(disjoint, "x") == []
    assert value_violations(disjoint, None) == [
        '"value" must match exactly one oneOf branch (matched 0)']
    overlap = checked({"oneOf": [{"type": "number"}, {"type": "integer"}]})
    assert value_violations(overlap, 1) == [
        '"value" must match exactly one oneOf branch (matched 2)']
    assert value_violations(overlap, 1.5) == []


def test_deeply_nested_unions_do_not_use_the_call_stack() -> None:
    """Ensures a value is checked through 5,000 nested oneOf levels (spec: "validates deeply
    nested exact-one unions without using the JavaScript call stack")."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5_000):
        schema = {"oneOf": [schema, {"type": "null"}]}
    assert value_violations(checked(schema), "leaf") == []
    assert value_violations(checked(schema), 42) == [
        '"value" must match exactly one oneOf branch (matched 0)']


def test_deeply_nested_values_do_not_use_the_call_stack() -> None:
    """Ensures 5,000 nested arrays are checked against as many nested item schemas."""
    schema: dict[str, Any] = {"type": "integer"}
    value: Any = "x"
    for _ in range(5_000):
        schema, value = {"type": "array", "items": schema}, [value]
    assert value_violations(checked(schema), value) == ['"' + "value" + "[0]" * 5_000
                                                        + '" must be an integer']


def test_an_unconstrained_schema_accepts_only_lossless_json() -> None:
    """Ensures {} accepts any JSON value and refuses what JSON cannot hold."""
    any_json = checked({})
    for value in (None, True, 1, "x", [1], {"x": None}):
        assert value_violations(any_json, value) == []
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    for value in (object(), float("inf"), -0.0, 2**60, {1, 2}, cyclic, b"x"):
        assert value_violations(any_json, value) == ['"value" must be a lossless JSON value']


def test_declared_properties_are_own_keys() -> None:
    """Ensures requiredness and closed objects use the value's own keys only."""
    assert value_violations(checked({"type": "object", "properties": {"keys": {"type": "string"}},
                                     "required": ["keys"]}), {}) == [
        'missing required property "value.keys"']
    assert value_violations(checked({"type": "object", "additionalProperties": False}),
                            {"keys": 1}) == [
        '"value.keys" is not a declared property (additionalProperties: false)']


def test_tool_arguments_have_an_empty_root() -> None:
    """Ensures the root "" names properties bare and the root itself "arguments", as DSH's
    tools do (dsh-tools tests/tools.spec.ts "validateArgs")."""
    schema = checked({"type": "object", "required": ["path"], "properties": {
        "path": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}})
    assert value_violations(schema, {"tags": ["a", 2]}, "") == [
        'missing required property "path"', '"tags[1]" must be a string']
    assert value_violations(schema, [], "") == ['"arguments" must be an object']
