"""DSH's ACP snapshot ``subagent-mixed`` (examples/acp-agent/tests/snapshots/subagent-mixed,
run by examples/acp-agent/tests/acp.snapshot.ts; spec
packages/subagent/subagent-fork-in-process/tests/multi-subagent.spec.ts "the same parent drives
a spawn child AND a fork child, then keeps working"): turn 1 tells the parent a codeword; turn 2
delegates to a spawn child (``ALPHA``), then to a fork child that recalls the codeword."""

from __future__ import annotations

from _replay import acp_recorded, assert_replays, run_acp

RECORDING = acp_recorded("subagent-mixed", children=2)
PROMPTS = (
    "Remember this fact for later: the project codeword is SAFFRON. Reply with the single word "
    "OK and stop. Do not use any tools.",
    "Do these two delegations, once at a time. First, use the subagent tool (fresh child) "
    "exactly once: 'Reply with exactly the word ALPHA and nothing else.' Then, after it "
    "returns, use the subagent_fork tool (forked child that inherits this conversation) exactly "
    "once: 'What is the project codeword mentioned earlier in this conversation? Reply with "
    "exactly that one word and nothing else.' After both subagents return, reply with the "
    "single word PARENT_DONE and stop. Do not use the bash tool.",
)


def test_subagent_mixed_logs_equal_dsh() -> None:
    """Our parent's log and both children's equal DSH's: the spawn child starts empty, the fork
    child is seeded with turn 1 only (36 events), not the spawn delegation of turn 2."""
    assert_replays(run_acp(RECORDING, PROMPTS), RECORDING)
