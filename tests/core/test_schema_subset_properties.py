"""Properties of the JSON Schema subset: values built from a schema pass; one mutation gets
exactly one violation, at the mutated path."""

from __future__ import annotations

import copy
import json
from typing import Any

from _budget import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from msgspec import Raw
from returns.result import Success

from turnfork.core.schema_subset import check_object_schema, check_schema, value_violations
from turnfork.core.structured import validate_output_schema, validate_structured_arguments

keys = st.sampled_from(["a", "b", "my key", "class", "1", "02"])
small_ints = st.integers(-50, 50)
floats = st.floats(-1e6, 1e6, allow_nan=False).filter(lambda x: str(x) != "-0.0")
texts = st.text(max_size=4)
SCALAR_VALUES = {"string": texts, "integer": small_ints, "number": floats | small_ints,
                 "boolean": st.booleans(), "null": st.none()}


@st.composite
def scalar_nodes(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(sorted(SCALAR_VALUES)))
    node: dict[str, Any] = {"type": kind}
    if draw(st.booleans()):
        node["enum"] = draw(st.lists(SCALAR_VALUES[kind], min_size=1, max_size=3))
    if draw(st.booleans()):
        node["const"] = draw(st.sampled_from(node["enum"])) if "enum" in node \
            else draw(SCALAR_VALUES[kind])
    if draw(st.booleans()):
        node["description"] = draw(texts)
    return node


def _containers(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def arrays(draw: st.DrawFn) -> dict[str, Any]:
        node: dict[str, Any] = {"type": "array"}
        if draw(st.booleans()):
            node["items"] = draw(children)
        return node

    @st.composite
    def objects(draw: st.DrawFn) -> dict[str, Any]:
        properties = draw(st.dictionaries(keys, children, max_size=3))
        node: dict[str, Any] = {"type": "object", "properties": properties}
        if properties and draw(st.booleans()):
            node["required"] = draw(st.lists(st.sampled_from(sorted(properties)), unique=True))
        if draw(st.booleans()):
            node["additionalProperties"] = draw(st.booleans())
        return node

    @st.composite
    def one_ofs(draw: st.DrawFn) -> dict[str, Any]:
        # Branches of types no value shares, so that a value built for one matches only it.
        kinds = draw(st.lists(st.sampled_from(["string", "boolean", "null", "number", "array"]),
                              min_size=2, max_size=3, unique=True))
        return {"oneOf": [{"type": kind} for kind in kinds]}

    return st.one_of(arrays(), objects(), one_ofs())


nodes = st.recursive(scalar_nodes() | st.just({}) | st.just({"title": "any"}), _containers,
                     max_leaves=8)
json_values = st.recursive(st.none() | st.booleans() | small_ints | texts,
                           lambda inner: st.lists(inner, max_size=2)
                           | st.dictionaries(keys, inner, max_size=2), max_leaves=4)


def instances(node: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid for ``node`` by construction."""
    if "oneOf" in node:
        return st.one_of([instances(branch) for branch in node["oneOf"]])
    kind = node.get("type")
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if kind in SCALAR_VALUES:
        return SCALAR_VALUES[kind]
    if kind == "array":
        return st.lists(instances(node["items"]) if "items" in node else json_values, max_size=3)
    if kind == "object":
        properties = node["properties"]
        required = set(node.get("required", ()))
        declared = st.fixed_dictionaries(
            {key: instances(child) for key, child in properties.items() if key in required},
            optional={key: instances(child) for key, child in properties.items()
                      if key not in required})
        if node.get("additionalProperties") is False:
            return declared
        extra = st.dictionaries(st.sampled_from(["x", "y"]).filter(lambda k: k not in properties),
                                json_values, max_size=2)
        return st.tuples(declared, extra).map(lambda pair: {**pair[1], **pair[0]})
    return json_values


WRONG = {"string": (1, "must be a string"), "number": ("x", "must be a number"),
         "integer": (1.5, "must be an integer"), "boolean": (None, "must be a boolean"),
         "null": (0, "must be null"), "object": ([], "must be an object"),
         "array": ({}, "must be an array"),
         # No generated oneOf has an object branch.
         "oneOf": ({"zz": 1}, "must match exactly one oneOf branch (matched 0)")}


Place = tuple[dict[str, Any], tuple[Any, ...], str]


def locations(node: dict[str, Any], value: Any) -> list[Place]:
    """Every typed place in ``value`` (a oneOf, not what is under it): its node, its steps and
    its path."""
    found = []
    stack: list[tuple[dict[str, Any], Any, tuple[Any, ...], str]] = [(node, value, (), "value")]
    while stack:
        node, value, steps, path = stack.pop()
        if "type" not in node and "oneOf" not in node:
            continue
        found.append((node, steps, path))
        if node.get("type") == "object":
            stack.extend((child, value[key], (*steps, key), f"{path}.{key}")
                         for key, child in node["properties"].items() if key in value)
        elif node.get("type") == "array" and "items" in node:
            stack.extend((node["items"], item, (*steps, index), f"{path}[{index}]")
                         for index, item in enumerate(value))
    return found


def replaced(value: Any, steps: tuple[Any, ...], new: Any) -> Any:
    if not steps:
        return new
    copied = copy.deepcopy(value)
    target = copied
    for step in steps[:-1]:
        target = target[step]
    target[steps[-1]] = new
    return copied


@settings(max_examples=examples(200))
@given(node=nodes, data=st.data())
def test_values_built_from_a_schema_are_valid(node: dict[str, Any], data: st.DataObject) -> None:
    """Ensures every generated schema is supported and every value built from it is valid."""
    schema = check_schema(node).unwrap()
    assert value_violations(schema, data.draw(instances(node))) == []


@settings(max_examples=examples(200))
@given(node=nodes, data=st.data())
def test_a_wrong_type_is_reported_once_at_its_path(node: dict[str, Any],
                                                   data: st.DataObject) -> None:
    """Ensures a value of the wrong type put anywhere typed gets exactly that one violation."""
    value = data.draw(instances(node))
    found = locations(node, value)
    assume(found)
    place, steps, path = data.draw(st.sampled_from(found))
    wrong, phrase = WRONG[place.get("type", "oneOf")]
    mutated = replaced(value, steps, wrong)
    assert value_violations(check_schema(node).unwrap(), mutated) == [f'"{path}" {phrase}']


@settings(max_examples=examples(200))
@given(node=nodes, data=st.data())
def test_a_missing_or_undeclared_property_is_reported_at_its_path(node: dict[str, Any],
                                                                  data: st.DataObject) -> None:
    """Ensures dropping a required property, or adding one to a closed object, gets exactly
    that one violation."""
    value = data.draw(instances(node))
    objects = [(place, steps, path) for place, steps, path in locations(node, value)
               if place.get("type") == "object"
               and (place.get("required") or place.get("additionalProperties") is False)]
    if not objects:
        return
    place, steps, path = data.draw(st.sampled_from(objects))
    target = value
    for step in steps:
        target = target[step]
    if place.get("required") and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(place["required"]))
        expected = f'missing required property "{path}.{key}"'
        changed = {name: item for name, item in target.items() if name != key}
    elif place.get("additionalProperties") is False:
        expected = f'"{path}.zz" is not a declared property (additionalProperties: false)'
        changed = {**target, "zz": 1}
    else:
        return
    assert value_violations(check_schema(node).unwrap(), replaced(value, steps, changed)) == [
        expected]


@settings(max_examples=examples(100))
@given(node=nodes.filter(lambda n: n.get("type") == "object"), data=st.data())
def test_structured_output_agrees_with_the_subset(node: dict[str, Any],
                                                  data: st.DataObject) -> None:
    """Ensures an object-rooted schema sent as JSON text is the same schema, and a value built
    from it is captured as its exact JSON text."""
    assert isinstance(check_object_schema(node), Success)
    output_schema = validate_output_schema(Raw(json.dumps(node).encode())).unwrap()
    text = json.dumps(data.draw(instances(node)))
    assert validate_structured_arguments(output_schema, text) == Success(Raw(text.encode()))
