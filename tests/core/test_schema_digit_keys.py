"""Object keys made of digits are classified, never converted (red-team finding G01).

JavaScript orders keys that are array indices (``"0"`` … ``"4294967294"``) first; the subset's
checker and validator list violations in that order. Deciding that used to convert the key with
``int``, which raises ``ValueError`` on a key of more than 4,300 digits (CPython's limit on
integer strings), so a model's arguments ``{"1111…": 1}`` escaped every function documented to
return a ``Result`` or a list of violations.
"""

from __future__ import annotations

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import Raw
from returns.result import Failure, Success

from turnfork.core import check_schema, value_violations
from turnfork.core.structured import validate_output_schema, validate_structured_arguments

LONG = "1" * 5_000
CLOSED = {"type": "object", "properties": {"a": {"type": "string"}},
          "additionalProperties": False}


def test_a_long_digit_key_is_an_undeclared_property_not_an_exception() -> None:
    """Arguments with a 5,000-digit key to a closed object get a violation naming the key."""
    checked = check_schema(CLOSED).unwrap()
    violations = value_violations(checked, {LONG: 1, "a": "x"}, "")
    assert violations == [f'"{LONG}" is not a declared property (additionalProperties: false)']


def test_a_long_digit_key_in_a_schema_is_checked() -> None:
    """check_schema returns a Result for a schema whose properties or annotations use one."""
    declared = check_schema({"type": "object", "properties": {LONG: {"type": "string"}}})
    assert isinstance(declared, Success)
    assert value_violations(declared.unwrap(), {LONG: 3}, "") == [f'"{LONG}" must be a string']
    odd = check_schema({"type": "object", "properties": {LONG: {"type": "string", LONG: 1}}})
    assert isinstance(odd, Failure)


def test_structured_output_with_a_long_digit_key_returns_results() -> None:
    """validate_output_schema and validate_structured_arguments return, not raise."""
    schema = validate_output_schema(Raw(('{"type":"object","additionalProperties":false,'
                                         f'"properties":{{"{LONG}":{{"type":"string"}}}}}}'
                                         ).encode()))
    assert isinstance(schema, Success)
    output_schema = schema.unwrap()
    assert isinstance(validate_structured_arguments(output_schema, f'{{"{LONG}":"x"}}'), Success)
    refused = validate_structured_arguments(output_schema, f'{{"{LONG}":1,"{LONG}0":2}}')
    assert isinstance(refused, Failure)
    assert len(refused.failure().violations) == 2
    closed = validate_output_schema(Raw(b'{"type":"object","additionalProperties":false}'))
    assert isinstance(validate_structured_arguments(closed.unwrap(), f'{{"{LONG}":1}}'), Failure)


def _js_order(keys: list[str]) -> list[str]:
    """JavaScript's Object.keys order, written out from its definition (ECMA-262
    OrdinaryOwnPropertyKeys): canonical numeric strings below 2^32 - 1 ascending, then the rest
    in insertion order. The numeric test reads the digits as a number only when they are few."""

    def is_index(key: str) -> bool:
        return (key.isascii() and key.isdigit() and str(int(key[:20])) == key
                and len(key) <= 10 and int(key) < 2**32 - 1)

    indices = sorted((key for key in keys if is_index(key)), key=int)
    return [*indices, *(key for key in keys if not is_index(key))]


_DIGIT_KEYS = st.one_of(
    st.integers(0, 2**33).map(str),
    st.sampled_from(["4294967294", "4294967295", "4294967296", "0", "00", "01", "007",
                     "9" * 11, "1" * 4_301, LONG]),
    st.text("0123456789", min_size=1, max_size=12),
    st.text(min_size=0, max_size=4),
)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(_DIGIT_KEYS, min_size=1, max_size=8, unique=True))
def test_undeclared_keys_are_reported_in_javascript_order(keys: list[str]) -> None:
    """Undeclared properties of a closed object come in Object.keys order, whatever the keys."""
    checked = check_schema({"type": "object", "additionalProperties": False}).unwrap()
    violations = value_violations(checked, dict.fromkeys(keys, 1), "")
    assert len(violations) == len(keys)
    assert violations == [f'"{key}" is not a declared property (additionalProperties: false)'
                          for key in _js_order(keys)]
