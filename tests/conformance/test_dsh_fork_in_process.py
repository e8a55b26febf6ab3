"""DSH's ACP snapshot ``subagent-fork-in-process`` (examples/acp-agent/tests/snapshots/
subagent-fork-in-process, run by examples/acp-agent/tests/acp.snapshot.ts; spec
packages/subagent/subagent-fork-in-process/tests/subagent-fork-in-process.spec.ts "seeds every
completed parent turn through the last turn/end"): turn 1 tells the parent a codeword; in turn
2 it delegates through ``subagent_fork`` and the fork child, seeded with turn 1, answers it."""

from __future__ import annotations

from _replay import acp_recorded, assert_replays, run_acp

RECORDING = acp_recorded("subagent-fork-in-process", children=1)
PROMPTS = (
    "Remember this fact for later: the project codeword is MARMALADE. Reply with the single word "
    "OK and stop. Do not use any tools.",
    "Use the subagent_fork tool exactly once to delegate this subtask to a forked child agent: "
    "'What is the project codeword mentioned earlier in this conversation? Reply with exactly "
    "that one word and nothing else.' The forked child inherits this conversation, so it can "
    "answer. After the subagent returns, reply with the single word PARENT_DONE and stop. Do not "
    "use the bash tool.",
)


def test_fork_in_process_logs_equal_dsh() -> None:
    """Our parent's two turns and the fork child's log equal DSH's: the child's seed is the
    parent's first 42 events byte for byte, then ``session/end-seed``, the policy pin, turn 2
    with the descriptor, its snapshot, a ``resume`` header and no title or request context."""
    assert_replays(run_acp(RECORDING, PROMPTS), RECORDING)
