"""DSH's ACP snapshot ``subagent-child-question-rejection`` (examples/acp-agent/tests/snapshots/
subagent-child-question-rejection, config child-question.cordis.yml: the user-questions service
and ``ask_user_question`` tool): a spawn child's question to the human is refused because the
child is owned by another live agent; the child returns the unresolved question instead."""

from __future__ import annotations

import pytest
from _replay import acp_recorded, assert_replays, run_acp

RECORDING = acp_recorded("subagent-child-question-rejection", children=1)
PROMPTS = ("Delegate one question check. Ask the child to call ask_user_question once about the "
           "CUDA fallback and return any unresolved question in its final result.",)


@pytest.mark.xfail(strict=True, reason=(
    "no human-question tool: DSH's `ask_user_question` (packages/interaction/user-questions/"
    "src/index.ts:109-111) refuses a caller owned by another live agent with `Error: human "
    "interaction is unavailable while the calling agent is owned by another live agent; "
    "include the unresolved question or decision in the child agent's final result` and "
    "`error {UserQuestionError, DELEGATED_CALLER}`; ours answers `Error: unknown tool "
    "\"ask_user_question\"` (child seq 18); every other event of both logs already equals "
    "DSH's"))
def test_child_question_rejection_logs_equal_dsh() -> None:
    """Our parent and child logs equal DSH's (not yet: see the reason)."""
    assert_replays(run_acp(RECORDING, PROMPTS), RECORDING)
