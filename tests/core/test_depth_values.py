"""Depth values DSH refuses and accepts, at the core's checks: NaN, fractions, -0, infinities,
unsafe integers, bools and strings get DSH's sentences, never a type-check error; an integral
float is the integer it equals (every JS number is a float).

Ports DSH's
``packages/subagent/subagent-in-process-driver/tests/subagent-in-process-driver.spec.ts``
("rejects invalid and exceeded depth before publication": runtime ``subagentDepth`` NaN, 1.5,
-1, -0, 2^53) and ``packages/subagent/tool-subagent/tests/tool-subagent.spec.ts`` ("rejects
maxDepth=$label when the plugin loads": '1', NaN, ±infinity, -1, 1.5, -0, 2^53; "validates
maxDepth when apply() is invoked directly without Schemastery").
"""

from __future__ import annotations

from typing import Any

import pytest
from returns.result import Success

from turnfork.core import (
    MAX_SAFE_INTEGER,
    parent_depth,
    resolve_child_depth,
    validate_max_depth,
)

BAD_RUNTIME_DEPTH = "agent subagentDepth must be a non-negative safe integer"
BAD_MAX_DEPTH = "subagent maxDepth must be a non-negative safe integer"

NOT_DEPTHS = [float("nan"), 1.5, -1, -0.0, MAX_SAFE_INTEGER + 1, float("inf"), float("-inf")]
NOT_DEPTH_IDS = ["NaN", "1.5", "-1", "-0", "2^53", "+infinity", "-infinity"]


@pytest.mark.parametrize("value", NOT_DEPTHS, ids=NOT_DEPTH_IDS)
def test_a_runtime_depth_that_is_not_a_safe_integer_gets_dshs_text(value: float) -> None:
    """NaN, 1.5, -1, -0, 2^53 and the infinities as the parent's runtime depth are refused
    with DSH's TypeError text, before the child's depth is computed."""
    error = parent_depth(None, value).failure()
    assert (error.problem, error.message) == ("invalid-subagent-depth", BAD_RUNTIME_DEPTH)
    assert resolve_child_depth(None, value, None).failure().message == BAD_RUNTIME_DEPTH


@pytest.mark.parametrize("value", ["1", True, b"1", [1]],
                         ids=["a string", "a bool", "bytes", "a list"])
def test_an_ill_typed_runtime_depth_gets_dshs_text(value: Any) -> None:
    """A runtime depth that is not a number at all gets the same sentence, not a type error."""
    assert parent_depth(0, value).failure().message == BAD_RUNTIME_DEPTH


@pytest.mark.parametrize("value", [*NOT_DEPTHS, "1", True, [2], object()],
                         ids=[*NOT_DEPTH_IDS, "a string", "a bool", "a list", "an object"])
def test_a_max_depth_that_is_not_a_safe_integer_gets_dshs_text(value: Any) -> None:
    """Every cap DSH's tool spec refuses, and any other object, gets DSH's sentence."""
    error = validate_max_depth(value).failure()
    assert (error.problem, error.message) == ("invalid-max-depth", BAD_MAX_DEPTH)


def test_integral_floats_are_the_integers_they_equal() -> None:
    """2.0 as a runtime depth is depth 2 (an int); 2.0 and 0.0 are valid caps."""
    assert parent_depth(None, 2.0) == Success(2)
    assert type(parent_depth(None, 2.0).unwrap()) is int
    assert validate_max_depth(2.0) == validate_max_depth(0.0) == Success(None)
    assert resolve_child_depth(None, 2.0, None) == Success(3)
