"""Tool arguments: one bad call is one bad result, never an exception (issue 14, item 6)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from turnfork.core import MAX_SAFE_INTEGER
from turnfork.core.arguments import parse_tool_arguments
from turnfork.core.codec import MAX_JSON_DEPTH


def _refusal(text: str) -> str:
    result = parse_tool_arguments(text)
    assert isinstance(result, Failure), result
    problem: str = result.failure()
    return problem


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_arguments_are_an_empty_object(text: str) -> None:
    """A call with no arguments text has no arguments."""
    assert parse_tool_arguments(text) == Success({})


@pytest.mark.parametrize(("text", "kind"), [
    ("[1]", "array"), ('"x"', "string"), ("3", "number"), ("2.5", "number"), ("true", "boolean"),
    ("null", "null"),
])
def test_a_value_other_than_an_object_is_refused_by_kind(text: str, kind: str) -> None:
    """The model is told what it sent instead of an object (today's message)."""
    assert _refusal(text) == f"arguments must be a JSON object, got {kind}"


@pytest.mark.parametrize("text", ['{"a": 1', "{'a': 1}", '{"a": 1} x', "{,}"])
def test_malformed_json_names_the_problem_and_position(text: str) -> None:
    """Malformed text keeps today's message: the parser's reason and its character offset."""
    problem = _refusal(text)
    assert problem.startswith("arguments are not valid JSON (") and " at char " in problem


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(constant: str) -> None:
    """As JSON.parse refuses them, so do we."""
    assert _refusal('{"x": [1, ' + constant + "]}") == (
        f"arguments are not valid JSON ({constant} is not a JSON value)")


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH, 5_000, 100_000])
def test_arguments_nested_beyond_the_limit_are_refused(depth: int) -> None:
    """Thousands deep is an invalid-arguments result, never a RecursionError, on every Python."""
    assert _refusal('{"a":' + "[" * depth + "]" * depth + "}") == (
        f"arguments are nested deeper than {MAX_JSON_DEPTH} levels")
    assert _refusal('{"a":' * (depth + 1) + "1" + "}" * (depth + 1)) == (
        f"arguments are nested deeper than {MAX_JSON_DEPTH} levels")


def test_arguments_nested_up_to_the_limit_are_read() -> None:
    """The object itself is one level: 511 arrays inside it make 512."""
    inner = MAX_JSON_DEPTH - 1
    value = parse_tool_arguments('{"a":' + "[" * inner + "]" * inner + "}").unwrap()
    assert isinstance(value["a"], list)


@pytest.mark.parametrize("number", [str(MAX_SAFE_INTEGER + 1), str(-(2**64)), "1" * 5_000,
                                    "9" * 1_000_000])
def test_integers_beyond_the_safe_range_are_refused(number: str) -> None:
    """A huge integer is refused at its digits: no slow conversion, whatever the process's
    int-digits limit."""
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # no limit: a conversion of a million digits would be slow
    try:
        problem = _refusal('{"n": ' + number + "}")
    finally:
        sys.set_int_max_str_digits(previous)
    assert problem.startswith("arguments hold the integer ")
    assert problem.endswith(f"beyond the safe-integer range ±{MAX_SAFE_INTEGER}")
    assert len(problem) < 150


@pytest.mark.parametrize("number", ["1e400", "-2E+308", "1" * 400 + ".5"])
def test_numbers_beyond_the_double_range_are_refused(number: str) -> None:
    """JSON.parse would read Infinity: refused."""
    assert _refusal('{"x": ' + number + "}").startswith("arguments hold the number ")


def test_largest_safe_integers_and_finite_floats_are_read() -> None:
    """The bounds themselves are fine, as are ordinary floats and -0."""
    text = f'{{"a": {MAX_SAFE_INTEGER}, "b": -{MAX_SAFE_INTEGER}, "c": 1.5e300, "d": -0}}'
    assert parse_tool_arguments(text).unwrap() == {"a": MAX_SAFE_INTEGER, "b": -MAX_SAFE_INTEGER,
                                                   "c": 1.5e300, "d": 0}


def test_a_lone_surrogate_escape_is_read_as_javascript_reads_it() -> None:
    """JSON.parse accepts "\\ud800": the argument holds that lone surrogate."""
    assert parse_tool_arguments('{"t": "a\\ud800"}').unwrap() == {"t": "a\ud800"}


_safe_json = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=20)


@settings(max_examples=examples(200), deadline=None)
@given(st.dictionaries(st.text(max_size=6), _safe_json, max_size=5))
def test_any_object_within_the_bounds_reads_as_json_loads_reads_it(value: dict[str, Any]) -> None:
    """Within the bounds the result is the standard library's reading of the text."""
    text = json.dumps(value)
    assert parse_tool_arguments(text) == Success(json.loads(text))


@settings(max_examples=examples(400), deadline=None)
@given(st.one_of(st.text(max_size=40),
                 st.text(alphabet='[]{}":,0123456789.eE+-aNInfinity \\u', max_size=60)))
def test_any_text_gives_an_object_or_a_reason(text: str) -> None:
    """No input raises: an object, or a one-line reason for the model."""
    result = parse_tool_arguments(text)
    if isinstance(result, Success):
        assert isinstance(result.unwrap(), dict)
    else:
        assert isinstance(result.failure(), str) and result.failure()
