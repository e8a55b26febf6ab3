"""Mutants that cannot change behaviour, each with the reason.

Keyed by module (short name) and :attr:`Mutant.key <benchmarks.mutation.operators.Mutant.key>`
(``scope: `before` -> `after```, no line number, so the list survives edits around them; ``#n``
tells apart the same change made at the n-th place in one scope). A key listed here that a run
kills is reported as stale; one that no longer exists, too.
"""

from __future__ import annotations

__all__ = ["EQUIVALENT"]

EQUIVALENT: dict[str, dict[str, str]] = {
    "seed": {
        # `return type(self)(self._source, max(stop, 0))`, reached only with step == 1
        "SequencePrefix.__getitem__: `0` -> `-1 #2`":
            "with step 1, slice.indices clamps stop into 0..length, so max(stop, -1) is "
            "max(stop, 0): both are stop",
        # `len(other) == self._length and all(... zip(self, other, strict=True))`
        "SequencePrefix.__eq__: `True` -> `False`":
            "zip's strict check fires only on sequences of different lengths, and the "
            "length comparison before it has already returned False for those",
    },
}
