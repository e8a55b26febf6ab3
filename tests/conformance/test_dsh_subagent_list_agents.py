"""DSH's ACP snapshot ``subagent-list-agents`` (examples/acp-agent/tests/snapshots/
subagent-list-agents, default config with the settlement marker fixture; spec
packages/subagent/subagent/tests/list-children.spec.ts "lists a persisted continuable child as
inactive with its durable label"): a background child settles, then the parent lists its
agents (``<id> [ready] — Reply with CHILD_OK``) and interrupts the settled child (a no-op)."""

from __future__ import annotations

from _replay import acp_recorded, assert_replays, run_acp

#: The child the authored scenario names (DSH's projection writes its live child so).
CHILD_ID = "33333333-3333-4333-8333-333333333333"
RECORDING = acp_recorded("subagent-list-agents", children=1)
PROMPTS = (
    "Call the subagent tool once with run_in_background set to true, description 'Reply with "
    "CHILD_OK', and prompt 'Reply with exactly the word CHILD_OK and nothing else.'. Then reply "
    "with the single word STARTED. Do not call any other tool.",
    "Call list_agents once with scope set to descendants and observe the subagent you started. "
    "Then call interrupt_agent once with agent_id set to 33333333-3333-4333-8333-333333333333. "
    "Then reply with the single word DONE. Do not call any other tool.",
)


def test_subagent_list_agents_logs_equal_dsh() -> None:
    """Our parent's three turns (start, the settlement notice, ``list_agents`` and
    ``interrupt_agent``) and the settled child equal DSH's logs."""
    assert_replays(run_acp(RECORDING, PROMPTS, child_ids=[CHILD_ID]), RECORDING)
