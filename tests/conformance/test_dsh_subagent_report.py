"""DSH's ACP snapshot ``subagent-report`` (examples/acp-agent/tests/snapshots/subagent-report,
config subagent-report.cordis.yml; spec packages/subagent/subagent/tests/continuation.spec.ts
"wakes an idle parent for a next-step report"): a background child calls ``report``; the
parent's next turn claims the ``subagent-report`` relay and the settlement notice, and a later
turn repeats the report."""

from __future__ import annotations

import pytest
from _replay import acp_recorded, assert_replays, run_acp

#: The child the authored scenario names (DSH's projection writes its live child so).
CHILD_ID = "33333333-3333-4333-8333-333333333333"
RECORDING = acp_recorded("subagent-report", children=1)
PROMPTS = (
    "Follow these steps exactly, then stop. 1. Call the subagent tool once with "
    "run_in_background set to true, description 'Report a finding', and prompt 'Call the report "
    "tool once with output exactly CHILD_REPORT_OK, then stop.'. 2. Reply with the single word "
    "STARTED. Do not use the bash tool.",
    "Repeat back, verbatim, the exact output the background subagent reported to you. Reply "
    "with only that text. Do not use any tools.",
)


@pytest.mark.xfail(strict=True, reason=(
    "no way to hold an idle agent: the scenario's fence (examples/acp-agent/tests/fixtures/"
    "subagent-report-fence.ts) keeps the parent in `runMaintenance` (packages/core/agent-loop/"
    "src/agent.ts:143) from its turn-1 end until the settlement notice is queued, so DSH's turn "
    "2 claims the report (next-step, parent seq 27/30) and the notice (next-turn, 28/31) "
    "together; ours has no maintenance phase, so the waking report starts turn 2 alone and the "
    "notice gets a turn 3 of its own (our parent seq 28..40), and the replay runs out of parent "
    "model calls. Also: DSH's child is told `report accepted … as message 87627538-…` (child "
    "seq 19) while the relay its parent logged has id ec024a7a-… (parent seq 27): ours names "
    "the logged relay (likely an artifact of DSH's fixture refresh, not checked)"))
def test_subagent_report_logs_equal_dsh() -> None:
    """Our parent's three turns and the reporting child equal DSH's logs (not yet: see the
    reason)."""
    assert_replays(run_acp(RECORDING, PROMPTS, child_ids=[CHILD_ID]), RECORDING)
