"""DSH's ACP snapshot ``subagent-parallel`` (examples/acp-agent/tests/snapshots/
subagent-parallel, run by examples/acp-agent/tests/acp.snapshot.ts; spec
packages/subagent/tool-subagent/tests/tool-subagent.spec.ts "overlaps sibling foreground
delegations dispatched concurrently"): one assistant message with two ``subagent`` calls; both
children run together and answer ``ALPHA``."""

from __future__ import annotations

from _replay import acp_recorded, assert_replays, run_acp

RECORDING = acp_recorded("subagent-parallel", children=2)
PROMPTS = ("Use the subagent tool TWICE in the SAME assistant message (two parallel tool calls "
           "in one response), each delegating the identical subtask: 'Reply with exactly the word "
           "ALPHA and nothing else.' Give both calls the description 'Say the word ALPHA'. After "
           "both subagents return, reply with the single word PARENT_DONE and stop. Do not use "
           "the bash tool.",)


def test_subagent_parallel_logs_equal_dsh() -> None:
    """Our parent writes DSH's ``tool/call A, tool/call B, tool/result A, tool/result B`` and
    both children's logs equal DSH's (DSH keeps the two identical, since which live child binds
    to which recording is not determined)."""
    assert_replays(run_acp(RECORDING, PROMPTS), RECORDING)
