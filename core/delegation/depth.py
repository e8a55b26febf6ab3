"""Delegation depth: the recursion budget a parent passes to its children (wire-format §7.6).

Rules of this module:

* A parent's depth is ``max(header delegationDepth or 0, runtime subagent_depth or 0)``. The
  persisted header is the floor: runtime options may deepen the count, never lower it, so a
  resumed child cannot delegate as if it were top level.
* A child's depth is its parent's + 1, and is refused when a ``max_depth`` is set and the child
  would be deeper than it (``max_depth=0`` forbids delegation from the top level).
* Every depth is a JavaScript safe integer (DSH's wire range). Bad input comes back as a
  :class:`DepthError` whose ``message`` is DSH's exact text; DSH raises these as plain errors,
  so a parent's ``tool/result`` for them carries no ``error`` key.
"""

from __future__ import annotations

import math
from typing import Literal

import msgspec
from returns.result import Failure, Result, Success

from .._checking import checked
from ..log import MAX_SAFE_INTEGER

__all__ = [
    "DepthError",
    "DepthProblem",
    "parent_depth",
    "child_depth",
    "validate_max_depth",
    "resolve_child_depth",
]

#: Which depth rule was broken.
DepthProblem = Literal[
    "exceeded",  # the child would be deeper than ``max_depth``
    "invalid-max-depth",  # ``max_depth`` is not a non-negative safe integer
    "invalid-subagent-depth",  # the runtime ``subagent_depth`` is not one
    "invalid-header-depth",  # the header's ``delegationDepth`` is not one
    "overflow",  # parent + 1 leaves the safe-integer range
]


class DepthError(msgspec.Struct, frozen=True, kw_only=True):
    """A refused delegation depth: the rule broken and DSH's message for it."""

    problem: DepthProblem
    message: str

    def __str__(self) -> str:
        return self.message


_BAD_SUBAGENT_DEPTH = "agent subagentDepth must be a non-negative safe integer"


def _as_depth(value: object) -> int | None:
    # DSH's Number.isSafeInteger, plus its refusal of -0: an integral number in the safe range
    # (a float such as 2.0 counts, as every JS number is one, and is read as that int); a bool,
    # a string or any other object is not a number here. ``None``: not a depth.
    if type(value) is float:
        if math.isfinite(value) and value.is_integer() and 0 <= value <= MAX_SAFE_INTEGER \
                and math.copysign(1.0, value) > 0:
            return int(value)
        return None
    if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER:
        return value
    return None


@checked
def validate_max_depth(max_depth: object) -> Result[None, DepthError]:
    """Check a requested depth cap: absent, or a non-negative safe integer.

    Any value is accepted and judged (a cap often comes from configuration, untyped): a
    string, NaN, an infinity, a fraction, ``-0.0``, a bool or an integer outside the safe range
    gets DSH's sentence, never a type error.

    >>> validate_max_depth(2)
    <Success: None>
    >>> validate_max_depth(-1).failure().message
    'subagent maxDepth must be a non-negative safe integer'
    >>> validate_max_depth("1").failure().message
    'subagent maxDepth must be a non-negative safe integer'
    """
    if max_depth is None or _as_depth(max_depth) is not None:
        return _VALID
    return Failure(DepthError(problem="invalid-max-depth",
                              message="subagent maxDepth must be a non-negative safe integer"))


#: A result is immutable: the one valid answer is made once (a fork start asks thrice).
_VALID: Result[None, DepthError] = Success(None)


@checked
def parent_depth(header_depth: int | None, runtime_depth: object) -> Result[int, DepthError]:
    """The delegating agent's depth: the larger of its header's and its runtime option's.

    Args:
        header_depth: ``delegationDepth`` of the parent's session header (``None``: absent).
        runtime_depth: the parent's runtime ``subagent_depth`` option (``None``: absent). Any
            value is judged: one that is not a non-negative safe integer (NaN, ``1.5``,
            ``-0.0``, ``"1"``, …) gets DSH's sentence, never a type error.

    Returns:
        The depth (0 for a top-level agent), or a :class:`DepthError` for a value that is not a
        non-negative safe integer.

    >>> parent_depth(None, None)
    <Success: 0>
    >>> parent_depth(2, 1)
    <Success: 2>
    >>> parent_depth(0, -1).failure().message
    'agent subagentDepth must be a non-negative safe integer'
    >>> parent_depth(0, float("nan")).failure().message
    'agent subagentDepth must be a non-negative safe integer'
    """
    runtime = 0 if runtime_depth is None else _as_depth(runtime_depth)
    if runtime is None:
        return Failure(DepthError(problem="invalid-subagent-depth", message=_BAD_SUBAGENT_DEPTH))
    if header_depth is not None and _as_depth(header_depth) is None:
        # DSH validates headers where sessions are created or loaded; a header built in memory
        # reaches us unchecked, so it gets the same rule with its own name.
        return Failure(DepthError(problem="invalid-header-depth",
                                  message="session delegationDepth must be a non-negative "
                                          "safe integer"))
    return Success(max(header_depth or 0, runtime))


@checked
def child_depth(parent_depth: int, max_depth: int | None) -> Result[int, DepthError]:
    """The depth of a child of an agent at ``parent_depth``, checked against ``max_depth``.

    Args:
        parent_depth: the delegating agent's depth (see :func:`parent_depth`).
        max_depth: the optional absolute cap on the child's depth.

    Returns:
        ``parent_depth + 1``, or a :class:`DepthError` when ``max_depth`` is malformed, the
        result leaves the safe-integer range, or the result exceeds ``max_depth``.

    >>> child_depth(0, None)
    <Success: 1>
    >>> child_depth(2, 2).failure().message
    'subagent depth 3 exceeds maxDepth 2'
    >>> child_depth(0, 0).failure().message
    'subagent depth 1 exceeds maxDepth 0'
    """
    match validate_max_depth(max_depth):
        case Failure(error):
            return Failure(error)
    if _as_depth(parent_depth) is None:
        return Failure(DepthError(problem="invalid-subagent-depth", message=_BAD_SUBAGENT_DEPTH))
    depth = parent_depth + 1
    if depth > MAX_SAFE_INTEGER:
        return Failure(DepthError(problem="overflow",
                                  message="subagent child depth exceeds the safe-integer range"))
    if max_depth is not None and depth > max_depth:
        return Failure(DepthError(problem="exceeded",
                                  message=f"subagent depth {depth} exceeds maxDepth {max_depth}"))
    return Success(depth)


@checked
def resolve_child_depth(header_depth: int | None, runtime_depth: int | float | None,
                        max_depth: int | None) -> Result[int, DepthError]:
    """:func:`parent_depth` then :func:`child_depth`, in DSH's order of checks.

    The cap is checked for shape first (DSH does that before the provider runs), then the
    parent's depth, then the child's. A cap given as an integral float (a JS number, e.g.
    ``2.0``) counts as that integer, in the checks and in the text.

    >>> resolve_child_depth(1, None, 3)
    <Success: 2>
    >>> resolve_child_depth(3, None, 3).failure().message
    'subagent depth 4 exceeds maxDepth 3'
    """
    # Every start asks this; when every value is a plain safe integer (or absent) and the
    # child fits, the answer is the sum, without the steps' intermediate results. Anything
    # else takes the steps, which name the problem. A top-level parent with no cap (what most
    # starts are) is answered first, without the checks' calls.
    if header_depth is None and runtime_depth is None and max_depth is None:
        return _ROOT_CHILD
    if _safe(header_depth) and _safe(runtime_depth) and _safe(max_depth):
        depth = max(header_depth or 0, int(runtime_depth or 0)) + 1
        if depth <= MAX_SAFE_INTEGER and (max_depth is None or depth <= max_depth):
            return _ROOT_CHILD if depth == 1 else Success(depth)
    match validate_max_depth(max_depth):
        case Failure(error):
            return Failure(error)
    cap = None if max_depth is None else _as_depth(max_depth)
    return parent_depth(header_depth, runtime_depth).bind(
        lambda depth: child_depth(depth, cap))


_ROOT_CHILD: Result[int, DepthError] = Success(1)


def _safe(value: object) -> bool:
    return value is None or (type(value) is int and 0 <= value <= MAX_SAFE_INTEGER)
