"""DSH's ACP snapshot ``subagent-multi`` (examples/acp-agent/tests/snapshots/subagent-multi,
run by examples/acp-agent/tests/acp.snapshot.ts): two foreground ``subagent`` delegations one
after the other, to spawn children answering ``ALPHA`` and ``BETA``."""

from __future__ import annotations

from _replay import acp_recorded, assert_replays, run_acp

RECORDING = acp_recorded("subagent-multi", children=2)
PROMPTS = ("Use the subagent tool TWICE, once at a time, to delegate two subtasks to child "
           "agents. First subtask: 'Reply with exactly the word ALPHA and nothing else.' Second "
           "subtask (after the first returns): 'Reply with exactly the word BETA and nothing "
           "else.' After both subagents return, reply with the single word PARENT_DONE and stop. "
           "Do not use the bash tool.",)


def test_subagent_multi_logs_equal_dsh() -> None:
    """Our parent's three steps and both children's logs equal DSH's; the parent's snapshot is
    written once (its context never changes), each child has its own."""
    assert_replays(run_acp(RECORDING, PROMPTS), RECORDING)
