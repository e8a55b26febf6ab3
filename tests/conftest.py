"""Suite-wide settings: the hypothesis profiles and the budget every property test scales by.

Profiles (pick one with ``--hypothesis-profile``):

* ``dev`` (default): a quarter of each test's CI budget, so the README's test command stays
  quick on a laptop. Still random: every run explores new examples.
* ``ci``: each test's full budget; ``.ci/run`` uses it for the slow families.

A test states its CI budget once, ``@settings(max_examples=examples(400))``; ``examples`` scales
it by the loaded profile (see ``_budget.py``). The crash, fuzz and load families are marked
``slow``: the default run leaves them out and ``.ci/run`` runs them after the README command.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("dev", max_examples=25, deadline=None, print_blob=True)
settings.register_profile("ci", max_examples=100, deadline=None, print_blob=True)
settings.load_profile("dev")
