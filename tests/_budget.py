"""How many examples a property test runs under the loaded hypothesis profile."""

from __future__ import annotations

from hypothesis import settings

#: The ``max_examples`` of the ``ci`` profile: a test's stated budget is its count under it.
_CI_MAX_EXAMPLES = 100


def examples(ci_budget: int) -> int:
    """``ci_budget`` scaled by the loaded profile (all of it under ``ci``), at least 10.

    Read when the test module is imported, which is after ``--hypothesis-profile`` applied.
    """
    return max(10, ci_budget * settings.default.max_examples // _CI_MAX_EXAMPLES)
