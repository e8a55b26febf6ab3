"""Delegation depth (wire-format §7.6): exact texts and the monotonicity properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from turnfork.core import (
    MAX_SAFE_INTEGER,
    DepthError,
    child_depth,
    parent_depth,
    resolve_child_depth,
    validate_max_depth,
)

depths = st.integers(min_value=0, max_value=MAX_SAFE_INTEGER - 1)
optional_depths = st.none() | depths


def test_depth_exceeded_text_matches_dsh() -> None:
    """Ensures the exceeded text is DSH's, e.g. the depth-two-rejection fixture's."""
    assert child_depth(2, 2) == Failure(DepthError(
        problem="exceeded", message="subagent depth 3 exceeds maxDepth 2"))


def test_default_cap_refuses_a_depth_three_agent() -> None:
    """Ensures a depth-3 agent cannot delegate under the default cap 3."""
    assert resolve_child_depth(3, None, 3).failure().message == \
        "subagent depth 4 exceeds maxDepth 3"


def test_max_depth_zero_forbids_top_level_delegation() -> None:
    """Ensures maxDepth 0 refuses delegation from the top level."""
    assert resolve_child_depth(None, None, 0).failure().message == \
        "subagent depth 1 exceeds maxDepth 0"


@pytest.mark.parametrize("bad", [-1, MAX_SAFE_INTEGER + 1, True])
def test_bad_max_depth_text(bad: int) -> None:
    """Ensures a malformed cap gets DSH's TypeError text."""
    error = validate_max_depth(bad).failure()
    assert error.message == "subagent maxDepth must be a non-negative safe integer"
    assert error.problem == "invalid-max-depth"


@pytest.mark.parametrize("bad", [-1, MAX_SAFE_INTEGER + 1, False])
def test_bad_runtime_depth_text(bad: int) -> None:
    """Ensures a malformed runtime subagent_depth gets DSH's TypeError text."""
    assert parent_depth(0, bad).failure().message == \
        "agent subagentDepth must be a non-negative safe integer"


def test_bad_header_depth_is_refused() -> None:
    """Ensures a negative header depth built in memory is refused, not used."""
    assert parent_depth(-2, None).failure().problem == "invalid-header-depth"


def test_overflow_text() -> None:
    """Ensures a child past the safe-integer range gets DSH's RangeError text."""
    assert child_depth(MAX_SAFE_INTEGER, None).failure().message == \
        "subagent child depth exceeds the safe-integer range"


def test_cap_shape_is_checked_before_the_parent_depth() -> None:
    """Ensures the cap is validated first, as DSH does before the provider runs."""
    assert resolve_child_depth(None, -1, -1).failure().problem == "invalid-max-depth"


def test_depth_error_prints_as_its_message() -> None:
    """Ensures str() of a depth error is the model-facing text."""
    assert str(child_depth(0, 0).failure()) == "subagent depth 1 exceeds maxDepth 0"


@given(header=optional_depths, runtime=optional_depths)
def test_child_depth_is_parent_plus_one_and_never_below_the_header(
        header: int | None, runtime: int | None) -> None:
    """Ensures a child is exactly one deeper than its parent and never shallower than its header."""
    parent = parent_depth(header, runtime).unwrap()
    assert parent >= (header or 0)
    assert parent >= (runtime or 0)
    assert parent in {header or 0, runtime or 0}
    child = child_depth(parent, None).unwrap()
    assert child == parent + 1
    assert child > (header or 0)


@given(header=optional_depths, runtime=optional_depths, cap=optional_depths)
def test_a_cap_admits_exactly_the_children_within_it(
        header: int | None, runtime: int | None, cap: int | None) -> None:
    """Ensures the cap refuses a child iff its depth exceeds the cap, with the exact text."""
    expected = max(header or 0, runtime or 0) + 1
    match resolve_child_depth(header, runtime, cap):
        case Success(depth):
            assert depth == expected
            assert cap is None or depth <= cap
        case Failure(error):
            assert cap is not None and expected > cap
            assert error.message == f"subagent depth {expected} exceeds maxDepth {cap}"


@given(start=st.integers(min_value=0, max_value=50), hops=st.integers(min_value=1, max_value=20))
def test_depth_grows_by_one_per_generation(start: int, hops: int) -> None:
    """Ensures a chain of delegations (each child's header feeding the next) counts every hop."""
    depth = start
    for _ in range(hops):
        # a resumed child: fresh runtime options, only its header carries the depth
        depth = resolve_child_depth(depth, None, None).unwrap()
    assert depth == start + hops


@given(header=st.one_of(st.none(), st.integers(min_value=-2, max_value=2**53 + 1)),
       runtime=st.one_of(st.none(), st.integers(min_value=-2, max_value=2**53 + 1)),
       cap=st.one_of(st.none(), st.integers(min_value=-2, max_value=2**53 + 1)))
def test_resolve_child_depth_is_its_steps(header: int | None, runtime: int | None,
                                          cap: int | None) -> None:
    """Ensures that resolve_child_depth (which computes the common case directly) answers as
    its steps do: the cap's shape, then parent_depth, then child_depth."""
    shape = validate_max_depth(cap)
    steps = shape if isinstance(shape, Failure) else \
        parent_depth(header, runtime).bind(lambda depth: child_depth(depth, cap))
    resolved = resolve_child_depth(header, runtime, cap)
    assert type(resolved) is type(steps)
    if isinstance(steps, Failure):
        assert resolved.failure() == steps.failure()
    else:
        assert resolved.unwrap() == steps.unwrap()
