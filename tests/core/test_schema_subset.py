"""The JSON Schema subset: which schemas are supported, and every violation's text and path.

Ported from DSH's dsh-tools tests/json-schema.spec.ts, "the enforced raw JSON Schema subset";
JavaScript's exotic objects (proxies, forged prototypes, sparse arrays, symbol keys) become
Python's (mappings that are not dicts, non-string keys, sets, objects).
"""

from __future__ import annotations

import types
from typing import Any

import pytest
from returns.result import Success

from turnfork.core.schema_subset import (
    JsonSchemaError,
    SupportedSchema,
    check_object_schema,
    check_schema,
)

OBJECT_ROOTED = 'schema.type must be "object" (structured output is object-rooted)'
SUBSET = "type/oneOf/properties/required/additionalProperties/items/enum/const + annotations"


def violations(schema: object, object_root: bool = False) -> list[str]:
    result = (check_object_schema if object_root else check_schema)(schema)
    error = result.failure()
    assert isinstance(error, JsonSchemaError)
    return list(error.violations)


def supported(schema: object) -> bool:
    result = check_schema(schema)
    return isinstance(result, Success) and isinstance(result.unwrap(), SupportedSchema)


@pytest.mark.parametrize("schema", [
    {"type": "string"}, {"type": "number"}, {"type": "integer"}, {"type": "boolean"},
    {"type": "null"}, {"type": "array", "items": {"type": "string"}},
    {"type": "object",
     "properties": {"nested": {"type": "object", "properties": {}, "additionalProperties": False},
                    "free": {}},
     "required": ["nested"], "additionalProperties": True},
    {"oneOf": [{"type": "string"}, {"type": "number"}]},
    {"description": "any JSON", "title": "JSON", "default": None, "examples": [1, "x"]},
])
def test_every_root_and_every_supported_node(schema: dict[str, Any]) -> None:
    """Ensures each supported node is accepted at the root (spec: "accepts every JSON root")."""
    assert supported(schema)


@pytest.mark.parametrize("schema", [{}, {"type": "string"}, {"type": "array"},
                                    {"oneOf": [{"type": "string"}, {"type": "null"}]}])
def test_object_root_is_a_consumer_rule(schema: dict[str, Any]) -> None:
    """Ensures only check_object_schema requires an object root (spec: "retains an object-root
    guard only at consumers that need it")."""
    assert supported(schema)
    assert violations(schema, object_root=True) == [OBJECT_ROOTED]
    assert check_object_schema({"type": "object"}).unwrap().schema == {"type": "object"}


def test_non_schema_nodes_unknown_types_and_type_arrays() -> None:
    """Ensures what is not a schema object, an unknown type and a type array are refused."""
    for schema in (None, [], "no", {1: "x"}, types.MappingProxyType({"type": "string"})):
        assert violations(schema) == ["schema must be a schema object"]
    assert violations({"type": "tuple"}) == [
        "schema.type must be one of object/array/string/number/integer/boolean/null"]
    assert violations({"type": ["string", "null"]}) == [
        "schema.type must be a single type string (type arrays are not supported)"]


def test_one_of_vocabulary_and_branch_count() -> None:
    """Ensures oneOf needs two branches, no type beside it and no typed keywords beside it."""
    for branches in ([], [{}], "x", {"a": {}}, {frozenset()}):
        assert violations({"oneOf": branches}) == [
            "schema.oneOf must be an array of at least two schemas"]
    assert violations({"type": "string", "oneOf": [{}, {}]}) == [
        "schema cannot declare both type and oneOf"]
    assert violations({"oneOf": [{"type": "string"}, {"type": "number"}], "items": {}}) == [
        "schema.items is not supported beside oneOf"]
    assert violations({"oneOf": [{"type": "string"}, {"type": "weird"}]})[0].startswith(
        "schema.oneOf[1].type")


@pytest.mark.parametrize("keyword", ["anyOf", "allOf", "not", "pattern", "minimum", "maxLength",
                                     "$ref", "format", "minItems", "exclusiveMaximum"])
def test_unknown_keywords_are_refused(keyword: str) -> None:
    """Ensures a keyword outside the subset is refused, never accepted and then ignored."""
    assert violations({"type": "object", keyword: []}) == [
        f"schema.{keyword} is not a supported keyword (subset: {SUBSET})"]


def test_misplaced_keywords_are_refused() -> None:
    """Ensures a typed keyword on the wrong type, or without a type, is refused in DSH's order."""
    assert violations({"type": "object", "items": {}}) == [
        'schema.items is not supported on type "object"']
    assert violations({"type": "array", "properties": {}}) == [
        'schema.properties is not supported on type "array"']
    assert violations({"type": "object", "enum": ["x"]}) == [
        'schema.enum is not supported on type "object"']
    assert violations({"type": "array", "const": None}) == [
        'schema.const is not supported on type "array"']
    assert violations({"const": None, "enum": [], "items": {}, "additionalProperties": True,
                       "required": [], "properties": {}}) == [
        f"schema.{key} requires type or oneOf" for key in
        ("properties", "required", "additionalProperties", "items", "enum", "const")]


def test_every_independent_violation_is_reported() -> None:
    """Ensures one check lists every violation, each with its path, in walk order."""
    assert violations({"type": "object", "pattern": "x", "properties": {
        "a": {"type": "weird"}, "b": {"type": "string", "minimum": 1}}}) == [
        f"schema.pattern is not a supported keyword (subset: {SUBSET})",
        "schema.properties.a.type must be one of object/array/string/number/integer/boolean/null",
        f"schema.properties.b.minimum is not a supported keyword (subset: {SUBSET})",
    ]


def test_walk_order_children_before_the_checks_that_need_them() -> None:
    """Ensures a node's own keywords come first, its children next, required and
    additionalProperties last; items and oneOf branches are walked where they sit."""
    assert violations({
        "type": "object", "required": ["z"], "additionalProperties": 1, "title": 2,
        "properties": {
            "a": {"type": "array", "items": {"type": "object", "properties": {"j": {"x": 1}}}},
            "b": {"oneOf": [{"type": "string", "enum": [1]}, {"type": "null", "const": 0}]},
        }}) == [
        "schema.title must be a string",
        f"schema.properties.a.items.properties.j.x is not a supported keyword (subset: {SUBSET})",
        "schema.properties.b.oneOf[0].enum must be a non-empty array of string values",
        "schema.properties.b.oneOf[1].const must be a null value",
        'schema.required names "z" which is not in properties',
        "schema.additionalProperties must be a boolean",
    ]


def test_object_properties_required_names_and_openness() -> None:
    """Ensures properties, required and additionalProperties are checked with their texts."""
    assert violations({"type": "object", "properties": []}) == [
        "schema.properties must be an object of schemas"]
    assert violations({"type": "object", "properties": {"a": "x"}}) == [
        "schema.properties.a must be a schema object"]
    for required in ("a", [1], ["a", None]):
        assert violations({"type": "object", "properties": {"a": {}}, "required": required}) == [
            "schema.required must be an array of strings"]
    assert violations({"type": "object", "properties": {}, "required": ["missing"]}) == [
        'schema.required names "missing" which is not in properties']
    assert violations({"type": "object", "additionalProperties": "yes"}) == [
        "schema.additionalProperties must be a boolean"]
    assert violations({"type": "object", "properties": None, "required": ["missing"]}) == [
        "schema.properties must be an object of schemas",
        'schema.required names "missing" which is not in properties']
    assert violations({"type": "object", "properties": {}, "required": ["__class__"]}) == [
        'schema.required names "__class__" which is not in properties']


@pytest.mark.parametrize("schema", [
    {"type": "string", "enum": ["a"], "const": "a"},
    {"type": "number", "enum": [1.5], "const": 1.5},
    {"type": "integer", "enum": [1], "const": 1}, {"type": "integer", "enum": [2.0]},
    {"type": "boolean", "enum": [True], "const": True},
    {"type": "null", "enum": [None], "const": None},
    {"type": "number", "enum": [1], "const": 1.0},
])
def test_type_correct_enum_and_const_are_accepted(schema: dict[str, Any]) -> None:
    """Ensures scalar enum/const values of the node's type are accepted (1 and 1.0 are one
    number, as in JavaScript)."""
    assert supported(schema)


@pytest.mark.parametrize(("schema", "violation"), [
    ({"type": "string", "enum": []}, "schema.enum must be a non-empty array of string values"),
    ({"type": "number", "enum": ["1"]}, "schema.enum must be a non-empty array of number values"),
    ({"type": "integer", "enum": [1.5]},
     "schema.enum must be a non-empty array of integer values"),
    ({"type": "number", "enum": [float("nan")]},
     "schema.enum must be a non-empty array of number values"),
    ({"type": "number", "enum": [True]}, "schema.enum must be a non-empty array of number values"),
    ({"type": "integer", "enum": [2**53]},
     "schema.enum must be a non-empty array of integer values"),
    ({"type": "number", "const": -0.0}, "schema.const must be a number value"),
    ({"type": "boolean", "const": 1}, "schema.const must be a boolean value"),
    ({"type": "integer", "const": 1e999}, "schema.const must be a integer value"),
    ({"type": "string", "enum": None}, "schema.enum must be a non-empty array of string values"),
    ({"type": "string", "enum": ["a"], "const": "b"},
     "schema.const must be one of schema.enum when both are declared"),
])
def test_enum_and_const_must_match_the_type(schema: dict[str, Any], violation: str) -> None:
    """Ensures a wrong-typed, empty, non-finite or -0 enum/const is refused with DSH's text."""
    assert violations(schema) == [violation]


def test_annotations_are_strings_or_lossless_json() -> None:
    """Ensures description/title are strings and default/examples lossless JSON (no Infinity,
    no -0, no integer beyond 2^53-1, no non-JSON object, no cycle)."""
    assert violations({"description": 1}) == ["schema.description must be a string"]
    assert violations({"title": 1}) == ["schema.title must be a string"]
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    for key, value in [("default", float("inf")), ("examples", [object()]), ("default", -0.0),
                       ("default", {1: 2}), ("examples", {"a": {1, 2}}), ("default", 2**53),
                       ("default", cyclic)]:
        assert violations({key: value}) == [f"schema.{key} annotation must be lossless JSON data"]
    shared = {"x": [1, 2]}
    assert supported({"default": [shared, shared], "examples": ("a", [None, 1.5, True])})


def test_cycles_are_refused_and_shared_nodes_are_fine() -> None:
    """Ensures a schema that contains itself is refused at the repeat, while one node used
    twice is not a cycle."""
    cyclic: dict[str, Any] = {"type": "object"}
    cyclic["properties"] = {"self": cyclic}
    assert violations(cyclic) == ["schema.properties.self is circular"]
    leaf = {"type": "string"}
    assert supported({"type": "object", "properties": {"a": leaf, "b": leaf}})
    assert violations({"type": "object", "properties": {"at": object()}}) == [
        "schema.properties.at must be a schema object"]
    assert violations({"type": "object", "properties": types.MappingProxyType({})}) == [
        "schema.properties must be an object of schemas"]


def test_deeply_nested_unions_do_not_use_the_call_stack() -> None:
    """Ensures 5,000 nested oneOf levels are checked (spec: "asserts deeply nested raw unions
    without using the JavaScript call stack")."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5_000):
        schema = {"oneOf": [schema, {"type": "null"}]}
    assert supported(schema)


def test_keys_are_walked_in_javascript_order() -> None:
    """Ensures array-index keys come first, ascending, as Object.keys orders them."""
    assert violations({"type": "object", "properties": {
        "b": {"x": 1}, "10": {"x": 1}, "2": {"x": 1}, "02": {"x": 1}}}) == [
        f"schema.properties.{key}.x is not a supported keyword (subset: {SUBSET})"
        for key in ("2", "10", "b", "02")]


def test_error_message_is_dshs() -> None:
    """Ensures the error joins its violations as JsonSchemaError's message does."""
    error = check_schema({"type": "object", "properties": [], "additionalProperties": 0}).failure()
    assert (error.name, error.code) == ("JsonSchemaError", "UNSUPPORTED_SCHEMA")
    assert error.message == ("unsupported JSON schema: schema.properties must be an object of "
                             "schemas; schema.additionalProperties must be a boolean")
