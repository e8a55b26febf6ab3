"""DSH's ACP snapshot ``subagent-spawn-in-process`` (examples/acp-agent/tests/snapshots/
subagent-spawn-in-process, run by examples/acp-agent/tests/acp.snapshot.ts): one foreground
``subagent`` delegation to a spawn child that answers ``CHILD_OK``; then ``PARENT_DONE``."""

from __future__ import annotations

from _replay import acp_recorded, assert_replays, run_acp

RECORDING = acp_recorded("subagent-spawn-in-process", children=1)
PROMPTS = ("Use the subagent tool exactly once to delegate this subtask to a child agent: "
           "'Reply with exactly the word CHILD_OK and nothing else.' After the subagent returns, "
           "reply with the single word PARENT_DONE and stop. Do not use the bash tool.",)


def test_spawn_in_process_logs_equal_dsh() -> None:
    """Replaying DSH's model output, our parent and spawn-child logs equal DSH's event for
    event: the root's snapshot, title and request context, the child's policy pin,
    descriptor, snapshot of three sections, title, ``initial`` header and its result."""
    assert_replays(run_acp(RECORDING, PROMPTS), RECORDING)
