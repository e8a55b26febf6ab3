"""A fork or spawn child's failure reaches its parent: the parent's model reads it in the tool
result's ``Diagnostic:`` line (DSH tool-subagent's ``withDiagnosticAndPartialText``), the
Python caller as ``SubagentResult.failure``; a diagnostic is bounded as DSH bounds one
(run-settlement.spec.ts:87). DSH's in-process providers give no diagnostic (the parent reads only
``Error: subagent run failed``); ours describe the child's failure, a documented difference."""

from __future__ import annotations

import pytest
from _shell_helpers import run
from _subagent_helpers import finish, request, result_texts, subagent_host
from msgspec import UNSET

from turnfork.core import (
    DIAGNOSTIC_TRUNCATED,
    MAX_DIAGNOSTIC_BYTES,
    AgentOptions,
    FinishError,
    LlmFailure,
    bound_diagnostic,
)
from turnfork.shell import Reply, ScriptedModel, SubagentTool

UNAVAILABLE = LlmFailure(message="the upstream is overloaded", code="UNAVAILABLE", status=503,
                         request_id="req-9")


def _failing(failure: LlmFailure = UNAVAILABLE, text: str | None = None) -> Reply:
    reply = Reply.error(failure.code, failure.message, text=text)
    return Reply(blocks=reply.blocks, finish=FinishError(failure=failure))


def _call(prompt: str) -> Reply:
    return Reply.tool_call("subagent", {"description": "look it up", "prompt": prompt})


@pytest.mark.parametrize("provider", ["fork", "spawn"])
def test_the_parents_model_reads_the_childs_failure(provider: str) -> None:
    async def main() -> None:
        host, parent, _, recorder = subagent_host([_call("find it"), Reply.text("noted")])
        host.models.register("child", ScriptedModel([_failing(text="I was about to")]))
        SubagentTool(provider=provider,
                     agent_options=AgentOptions(provider="child")).install(host)
        answer = await parent.run("delegate")
        assert answer.output == "noted"
        assert result_texts(parent.session.events) == [
            "Error: subagent run failed\n"
            "Diagnostic: UNAVAILABLE (HTTP 503): the upstream is overloaded\n"
            "Partial output before the run ended:\nI was about to"]
        await finish(parent, recorder)

    run(main)


def test_the_caller_gets_the_failure_typed() -> None:
    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("first")])
        host.models.register("child", ScriptedModel([_failing()]))
        await parent.run("remember")
        started = await host.subagents.start(
            "fork", request("go", agent_options=AgentOptions(provider="child")), parent=parent)
        result = await started.result
        await started.dispose()
        assert result.stop_reason == "error"
        assert result.failure == UNAVAILABLE
        assert result.diagnostic == "UNAVAILABLE (HTTP 503): the upstream is overloaded"
        await finish(parent, recorder)

    run(main)


def test_a_completed_child_has_no_failure_and_no_diagnostic() -> None:
    async def main() -> None:
        host, parent, _, recorder = subagent_host([Reply.text("first"), Reply.text("child")])
        await parent.run("remember")
        started = await host.subagents.start("fork", request("go"), parent=parent)
        result = await started.result
        await started.dispose()
        assert (result.stop_reason, result.failure, result.diagnostic) == (
            "completed", UNSET, UNSET)
        await finish(parent, recorder)

    run(main)


def test_a_long_failure_is_cut_to_the_diagnostic_bound() -> None:
    """A failure message far over 4,096 bytes of multi-byte text: the parent reads at most
    4,096 UTF-8 bytes of diagnostic, cut on a character boundary and marked."""

    async def main() -> None:
        host, parent, _, recorder = subagent_host([_call("go"), Reply.text("noted")])
        huge = LlmFailure(message="权限" * MAX_DIAGNOSTIC_BYTES, code="UNKNOWN")
        host.models.register("child", ScriptedModel([_failing(huge)]))
        SubagentTool(provider="spawn", agent_options=AgentOptions(provider="child")).install(host)
        await parent.run("delegate")
        (text,) = result_texts(parent.session.events)
        headline, diagnostic = text.split("\nDiagnostic: ", 1)
        assert headline == "Error: subagent run failed"
        assert len(diagnostic.encode()) <= MAX_DIAGNOSTIC_BYTES
        assert diagnostic.endswith(DIAGNOSTIC_TRUNCATED) and "\ufffd" not in diagnostic
        assert diagnostic.startswith("UNKNOWN: 权限权限")
        await finish(parent, recorder)

    run(main)


# --- DSH run-settlement.spec.ts:87 "bounds multibyte diagnostics and marks truncation"


def test_a_diagnostic_of_exactly_the_bound_is_kept_whole() -> None:
    exact = "x" * MAX_DIAGNOSTIC_BYTES
    assert bound_diagnostic(exact) is exact


def test_an_oversized_multibyte_diagnostic_is_cut_on_a_character_and_marked() -> None:
    """DSH run-settlement.spec.ts:87 — a diagnostic over 4,096 UTF-8 bytes is cut on a
    character boundary (no replacement character) and ends ``[diagnostic truncated]``."""
    oversized = "权限" * MAX_DIAGNOSTIC_BYTES
    limited = bound_diagnostic(oversized)
    assert len(limited.encode("utf-8")) <= MAX_DIAGNOSTIC_BYTES
    assert limited.endswith("[diagnostic truncated]")
    assert "\ufffd" not in limited
    assert limited == oversized[:len(limited) - len(DIAGNOSTIC_TRUNCATED)] + DIAGNOSTIC_TRUNCATED


def test_one_byte_over_the_bound_is_cut() -> None:
    limited = bound_diagnostic("y" * (MAX_DIAGNOSTIC_BYTES + 1))
    assert len(limited.encode()) == MAX_DIAGNOSTIC_BYTES
    assert limited == "y" * (MAX_DIAGNOSTIC_BYTES - len(DIAGNOSTIC_TRUNCATED)) \
        + DIAGNOSTIC_TRUNCATED


def test_a_lone_surrogate_is_counted_not_refused() -> None:
    """Text from a model is untrusted: a lone surrogate neither raises nor splits."""
    limited = bound_diagnostic("\ud800" * MAX_DIAGNOSTIC_BYTES)
    assert len(limited.encode("utf-8", "surrogatepass")) <= MAX_DIAGNOSTIC_BYTES
    assert limited.endswith(DIAGNOSTIC_TRUNCATED)
