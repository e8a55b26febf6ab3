"""DSH's ACP snapshot ``subagent-child-question-rejection`` (examples/acp-agent/tests/snapshots/
subagent-child-question-rejection, config child-question.cordis.yml: the user-questions service,
the ``ask_user_question`` tool and a tripwire provider): a spawn child's question to the human is
refused because the child is owned by another live agent; the child returns the unresolved
question instead, and the tripwire is never reached."""

from __future__ import annotations

from _replay import acp_recorded, assert_replays, run_acp

from turnfork.shell import Host, SubagentRuntime
from turnfork.shell.questions import Answers, QuestionRequest, UserQuestions

RECORDING = acp_recorded("subagent-child-question-rejection", children=1)
PROMPTS = ("Delegate one question check. Ask the child to call ask_user_question once about the "
           "CUDA fallback and return any unresolved question in its final result.",)


def test_child_question_rejection_logs_equal_dsh() -> None:
    """Our parent and child logs equal DSH's, with the child's question refused in DSH's
    words and error key, and the answerer (DSH's tripwire provider) never asked."""
    asked: list[QuestionRequest] = []

    async def tripwire(request: QuestionRequest) -> Answers:
        asked.append(request)
        raise RuntimeError("snapshot tripwire: delegated question reached the UI provider")

    def compose(host: Host, runtime: SubagentRuntime) -> None:
        UserQuestions(tripwire).install(host)

    assert_replays(run_acp(RECORDING, PROMPTS, prepare=compose), RECORDING)
    assert asked == []
