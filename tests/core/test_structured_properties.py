"""Properties of structured-output validation: msgspec's verdict and the violation list agree."""

from __future__ import annotations

from typing import Any

import msgspec
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import Raw
from returns.result import Failure, Success

from turnfork.core import (
    check_schema,
    validate_output_schema,
    validate_structured_arguments,
    value_violations,
)

keys = st.sampled_from(["a", "b", "c", "my key", "class"])
small_ints = st.integers(-50, 50)


@st.composite
def integer_nodes(draw: st.DrawFn) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "integer"}
    low, high = sorted((draw(small_ints), draw(small_ints)))
    if draw(st.booleans()):
        node["minimum"] = low
    if draw(st.booleans()):
        node["maximum"] = high
    if draw(st.booleans()):
        node["enum"] = draw(st.lists(st.integers(low, high), min_size=1, max_size=3))
    return node


@st.composite
def number_nodes(draw: st.DrawFn) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "number"}
    low, high = sorted((draw(small_ints), draw(small_ints)))
    if draw(st.booleans()):
        node["exclusiveMinimum" if low < high and draw(st.booleans()) else "minimum"] = low
    if draw(st.booleans()):
        node["maximum"] = high + 0.5
    return node


@st.composite
def string_nodes(draw: st.DrawFn) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    low, high = sorted((draw(st.integers(0, 4)), draw(st.integers(0, 4))))
    if draw(st.booleans()):
        node["minLength"] = low
    if draw(st.booleans()):
        node["maxLength"] = high
    if draw(st.booleans()):
        node["enum"] = draw(st.lists(st.text(min_size=low, max_size=high), min_size=1,
                                     max_size=3))
    return node


scalar_nodes = st.one_of(
    integer_nodes(), number_nodes(), string_nodes(),
    st.just({"type": "boolean"}), st.just({"type": "boolean", "const": True}),
    st.just({"type": "null"}), st.just({}), st.just({"description": "anything"}))


def _containers(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def arrays(draw: st.DrawFn) -> dict[str, Any]:
        node: dict[str, Any] = {"type": "array"}
        if draw(st.booleans()):
            node["items"] = draw(children)
        if draw(st.booleans()):
            node["maxItems"] = draw(st.integers(0, 3))
        return node

    return st.one_of(arrays(), objects(children))


@st.composite
def objects(draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    properties = draw(st.dictionaries(keys, children, max_size=4))
    node: dict[str, Any] = {"type": "object", "properties": properties}
    names = sorted(properties)
    wants_required: bool = draw(st.booleans())
    if names and wants_required:
        node["required"] = draw(st.lists(st.sampled_from(names), unique=True))
    if draw(st.booleans()):
        node["additionalProperties"] = draw(st.booleans())
    return node


schemas = objects(st.recursive(scalar_nodes, _containers, max_leaves=6))
json_values = st.recursive(
    st.none() | st.booleans() | small_ints | st.floats(-60, 60) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=10)


def instances(node: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid for ``node`` by construction."""
    kind = node.get("type")
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "const" in node:
        return st.just(node["const"])
    if kind == "integer":
        return st.integers(node.get("minimum", -100), node.get("maximum", 100))
    if kind == "number":
        low = node.get("minimum", node.get("exclusiveMinimum", -100))
        return st.floats(low, node.get("maximum", 100), exclude_min="exclusiveMinimum" in node)
    if kind == "string":
        return st.text(min_size=node.get("minLength", 0), max_size=node.get("maxLength", 6))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = instances(node["items"]) if "items" in node else json_values
        return st.lists(items, max_size=node.get("maxItems", 3))
    if kind == "object":
        properties = node.get("properties", {})
        required = set(node.get("required", ()))
        return st.fixed_dictionaries(
            {key: instances(child) for key, child in properties.items() if key in required},
            optional={key: instances(child) for key, child in properties.items()
                      if key not in required})
    return json_values


@settings(max_examples=examples(100))
@given(schema=schemas, data=st.data())
def test_values_built_from_the_schema_are_accepted(schema: dict[str, Any],
                                                   data: st.DataObject) -> None:
    """Ensures every value valid by construction passes, returned as its exact JSON text."""
    assert check_schema(schema) == []
    compiled = validate_output_schema(Raw(msgspec.json.encode(schema))).unwrap()
    text = msgspec.json.encode(data.draw(instances(schema))).decode()
    assert validate_structured_arguments(compiled, text) == Success(Raw(text.encode()))


@settings(max_examples=examples(100))
@given(schema=schemas, value=json_values)
def test_msgspec_verdict_and_violation_list_agree(schema: dict[str, Any], value: Any) -> None:
    """Ensures arbitrary JSON is refused iff the walk finds violations, and never raises."""
    compiled = validate_output_schema(Raw(msgspec.json.encode(schema))).unwrap()
    text = msgspec.json.encode(value)
    try:
        compiled.decoder.decode(text)
        accepted = True
    except msgspec.ValidationError:
        accepted = False
    # The walk itself must agree (the validator's fallback message must never be needed).
    assert (value_violations(compiled.root, value) == []) is accepted
    match validate_structured_arguments(compiled, text.decode()):
        case Success(raw):
            assert accepted and bytes(raw) == text
        case Failure(error):
            assert not accepted
            assert error.violations
            assert error.message.startswith("invalid arguments: ")
