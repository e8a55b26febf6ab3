"""Mutants that cannot change behaviour, each with the reason.

Keyed by module (short name) and :attr:`Mutant.key <benchmarks.mutation.operators.Mutant.key>`
(``scope: `before` -> `after```, no line number, so the list survives edits around them). A
key listed here that a run kills is reported as stale; one that no longer exists, too.
"""

from __future__ import annotations

__all__ = ["EQUIVALENT"]

EQUIVALENT: dict[str, dict[str, str]] = {
}
