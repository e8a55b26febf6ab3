"""OpenAI Agents SDK histories: the completed-turn seed and the balance check of an input list
(``ctx.turn_input`` inside a tool, ``result.to_input_list()``) or of run items
(``result.new_items``), by the Responses rules the SDK speaks.

Forking inside a tool takes two lines::

    seed = completed_turn_seed(ctx.turn_input)
    result = await Runner.run(child, [*seed, {"role": "user", "content": prompt}])

Rules of the reading:

* Input items (dicts or the SDK's pydantic items) are Responses input items as they are; a run
  item stands for its ``to_input_item()``. Each maps to one item, so the cut and a violation's
  index map back one to one, and the seed is a list of the caller's own objects (run items
  stay run items: ``[item.to_input_item() for item in seed]`` makes them input).
* A ``ToolApprovalItem`` is never input (the SDK refuses to convert one): it pairs nothing, and
  a seed never ends with one, so a pending approval stays out of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.items import RunItemBase, ToolApprovalItem
from returns.result import Failure, Result, Success

from ..core.formats import FormatViolation, History, openai_responses

__all__ = ["check_balance", "completed_turn_cut", "completed_turn_seed"]


def _decoded(items: Sequence[Any], strict: bool) -> tuple[History[Any], list[int]]:
    """The pass over the items as input, and the caller's index of each input item."""
    projected: list[Any] = []
    owners: list[int] = []
    for index, item in enumerate(items):
        if isinstance(item, ToolApprovalItem):
            continue
        projected.append(item.to_input_item() if isinstance(item, RunItemBase) else item)
        owners.append(index)
    return openai_responses.decode_history(projected, strict=strict), owners


def check_balance(items: Sequence[Any], *, strict: bool = False,
                  ) -> Result[list[Any], FormatViolation]:
    """``Success(items as a list)`` when OpenAI would accept them as ``input``, else the first
    violation, its ``index`` the caller's item."""
    history, owners = _decoded(items, strict)
    problem = history.violation or history.end_violation
    if problem is None:
        return Success(list(items))
    return Failure(FormatViolation(index=owners[problem.index], rule=problem.rule,
                                   problem=problem.problem))


def completed_turn_cut(items: Sequence[Any]) -> int:
    """The number of the caller's items through the last completed turn."""
    history, owners = _decoded(items, False)
    cut = history.completed_prefix_length
    return owners[cut - 1] + 1 if cut else 0


def completed_turn_seed(items: Sequence[Any]) -> list[Any]:
    """The caller's own items through the last completed turn: a fork child's input. O(n)."""
    return list(items[:completed_turn_cut(items)])
