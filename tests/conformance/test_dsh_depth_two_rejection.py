"""DSH's ACP snapshot ``subagent-depth-two-rejection`` (examples/acp-agent/tests/snapshots/
subagent-depth-two-rejection with its replay.override.json, config depth-two.cordis.yml:
``subagent`` with ``maxDepth: 2``; spec packages/subagent/subagent-in-process-driver/tests/
subagent-in-process-driver.spec.ts "rejects invalid and exceeded depth before publication"):
the root delegates, its child delegates again, and the grandchild's own delegation is refused
with ``Error: subagent depth 3 exceeds maxDepth 2``."""

from __future__ import annotations

from _replay import acp_recorded, assert_replays, run_acp

RECORDING = acp_recorded("subagent-depth-two-rejection", children=2)
PROMPTS = ("Delegate through two child generations. The depth-two child must attempt one more "
           "subagent call and report the rejection.",)


def test_depth_two_rejection_logs_equal_dsh() -> None:
    """Our root, depth-1 and depth-2 logs equal DSH's: headers with ``delegationDepth`` 1 and 2
    (the grandchild's ``parentSession`` is the child), the refusal as an error result without
    an ``error`` key, and each generation's answer passed up."""
    assert_replays(run_acp(RECORDING, PROMPTS, subagent_max_depth=2), RECORDING)
