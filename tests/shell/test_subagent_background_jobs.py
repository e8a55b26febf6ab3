"""One-shot background runs as jobs (DSH tool-subagent.spec.ts "dsh-tool-subagent background
mode" and "background preflight failure", run-settlement.spec.ts, tool-jobs): the job id at
once while the parent's turn goes on, the answer collected with job_output, kill, the
settlement mapping, the completion notice and the refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _continuation_helpers import continuable_host, eventually, finish, gated
from _shell_helpers import run
from _subagent_helpers import result_texts

from turnfork.core import AgentOptions, SubagentResult, TextBlock
from turnfork.core.jobs import JobOutcome, run_outcome, with_dispose_failure
from turnfork.shell import Reply, ScriptedModel, SubagentTool, Tool
from turnfork.shell.subagents import BackgroundJobs, JobHooks, JobTools


def _host(tmp_path: Path, child: list[Reply] | None = None, *, tools: bool = True) -> tuple:
    host, parent, model, _lifecycle = continuable_host(tmp_path)
    jobs = BackgroundJobs(host)
    if tools:
        JobTools(jobs).install()
    child_model = ScriptedModel(child or [])
    host.models.register("child", child_model)
    SubagentTool(provider="spawn", enable_run_in_background=True, jobs=jobs,
                 agent_options=AgentOptions(provider="child")).install(host)
    return host, parent, model, child_model, jobs


def _background(description: str = "d") -> Reply:
    return Reply.tool_call("subagent", {"description": description, "prompt": "p",
                                        "run_in_background": True})


def test_a_job_id_at_once_and_the_answer_through_job_output(tmp_path: Path) -> None:
    """Ensures ``started background subagent job subagent-1`` while the child still runs (the
    parent's turn goes on), then ``job_output`` with wait returning ``background answer`` and
    ``[status: completed]``, twice the same (reads are idempotent)."""

    async def main() -> None:
        gate = asyncio.Event()
        host, parent, model, child_model, jobs = _host(tmp_path)
        child_model.add(gated(Reply.text("background answer"), gate))
        seen: list[str] = []

        def next_step(request: object) -> Reply:
            # the parent's turn went on while its child was still working
            seen.append(jobs.get("subagent-1", parent).status)
            gate.set()
            return Reply.tool_call("job_output", {"job_id": "subagent-1", "wait": True})

        model.add(_background())
        model.add(next_step)
        model.add(Reply.tool_call("job_output", {"job_id": "subagent-1"}))
        model.add(Reply.tool_call("job_list", {}))
        model.add(Reply.text("done"))
        parent.followup("go")
        await parent.when_idle()
        assert seen == ["running"]
        assert result_texts(parent.session.events) == [
            "started background subagent job subagent-1",
            "background answer\n[status: completed]",
            "background answer\n[status: completed]",
            "subagent-1 [subagent] completed — d"]
        await finish(host, parent)

    run(main)


def test_a_killed_job_and_its_reason(tmp_path: Path) -> None:
    """Ensures that job_kill answers ``requested cancellation of job subagent-1``, the child's
    run is aborted and the job reads ``(no new output)`` with ``[status: killed]``; a second
    kill says it had already finished."""

    async def main() -> None:
        host, parent, model, _child_model, _jobs = _host(tmp_path, [Reply.hang("partial")])
        model.add(_background())
        model.add(lambda request: Reply.tool_call("job_kill", {"job_id": "subagent-1",
                                                               "reason": "superseded"}))
        model.add(Reply.tool_call("job_output", {"job_id": "subagent-1", "wait": True}))
        model.add(Reply.tool_call("job_kill", {"job_id": "subagent-1"}))
        model.add(Reply.text("done"))
        parent.followup("go")
        await parent.when_idle()
        assert result_texts(parent.session.events) == [
            "started background subagent job subagent-1",
            "requested cancellation of job subagent-1",
            "(no new output)\n[status: killed]",
            "job subagent-1 had already finished [status: killed]"]
        await finish(host, parent)

    run(main)


def test_a_failed_child_is_a_failed_job_and_its_owner_is_told(tmp_path: Path) -> None:
    """Ensures that a child ending max-tokens settles the job ``failed`` with detail
    ``max-tokens``, and that the idle owner, who never read it, is woken by DSH's completion
    notice."""

    async def main() -> None:
        host, parent, model, _child_model, _jobs = _host(tmp_path, [Reply.max_tokens("cut")])
        model.add(_background("scan"))
        model.add(Reply.text("started"))
        model.add(Reply.tool_call("job_output", {"job_id": "subagent-1"}))
        model.add(Reply.text("read it"))
        parent.followup("go")
        await eventually(lambda: model.calls == 4)
        await parent.when_idle()
        notices = [m for m in parent.session.history()
                   if getattr(m, "source", None) is not None and m.source.kind == "plugin"
                   and m.source.items[1] == ("plugin", "tool-jobs")]
        assert [b.text for b in notices[0].content if isinstance(b, TextBlock)] == [
            "background job subagent-1 (subagent: scan) finished [status: failed, max-tokens]. "
            "Read its output with job_output."]
        assert result_texts(parent.session.events)[-1] == ("(no new output)\n[status: failed, "
                                                           "max-tokens]")
        await finish(host, parent)

    run(main)


def test_refusals_in_dshs_words(tmp_path: Path) -> None:
    """Ensures: no job registry → ``background jobs unavailable: load …``; a registry no job
    tools serve → ``no job controller serves this agent``; the owner's limit; a forced
    background call on a foreground-only instance; no child is started by any of them."""

    async def main() -> None:
        host, parent, model, child_model, _jobs = _host(tmp_path, tools=False)
        SubagentTool(provider="spawn", tool_name="plain_subagent",
                     agent_options=AgentOptions(provider="child"),
                     enable_run_in_background=False).install(host)
        no_registry = SubagentTool(provider="spawn", tool_name="no_jobs",
                                   enable_run_in_background=True)
        no_registry.install(host)
        model.add(_background())
        model.add(Reply.tool_call("no_jobs", {"description": "d", "prompt": "p",
                                              "run_in_background": True}))
        model.add(Reply.tool_call("plain_subagent", {"description": "d", "prompt": "p",
                                                     "run_in_background": True}))
        model.add(Reply.text("done"))
        parent.followup("go")
        await parent.when_idle()
        assert result_texts(parent.session.events) == [
            "Error: background jobs unavailable: no job controller serves this agent (load "
            "@deepseek-ai/dsh-tool-jobs in its composition)",
            "Error: background jobs unavailable: load @deepseek-ai/dsh-jobs and "
            "@deepseek-ai/dsh-tool-jobs",
            "Error: run_in_background is disabled for this tool instance "
            "(enableRunInBackground: false)"]
        assert child_model.calls == 0
        limited = BackgroundJobs(host, max_per_owner=1)
        JobTools(limited)  # not installed: the controller check comes first
        limited.controllers = 1
        limited.start("subagent", "a", parent, _until_killed)
        with pytest.raises(RuntimeError, match=r"background job limit reached for this owner "
                                               r"\(limit: 1\); use job_kill"):
            limited.start("subagent", "b", parent, _until_killed)
        await finish(host, parent)

    run(main)


def test_a_failed_install_leaves_no_job_tool_behind(tmp_path: Path) -> None:
    """Ensures installing the job tools is all or nothing: with ``job_list`` already taken, the
    ``ValueError`` leaves no job tool, no section and no controller behind, and once the name is
    free again the same instance installs."""

    async def main() -> None:
        host, parent, _model, _child_model, jobs = _host(tmp_path, tools=False)
        taken = Tool("job_list", "someone else's", {"type": "object"}, _unused_handler)
        host.tools.register(taken)
        tools = JobTools(jobs)
        with pytest.raises(ValueError, match="job_list"):
            tools.install()
        assert [name for name in host.tools.names() if name.startswith("job_")] == ["job_list"]
        assert host.tools.get("job_list") is taken
        assert "tool:jobs" not in host.prompt_sections
        assert jobs.controllers == 0
        host.tools.unregister("job_list")
        tools.install()
        assert {"job_output", "job_list", "job_kill"} <= set(host.tools.names())
        tools.uninstall()
        assert not [name for name in host.tools.names() if name.startswith("job_")]
        await finish(host, parent)

    run(main)


async def _unused_handler(args: dict[str, object], ctx: object) -> str:
    raise AssertionError("never called")


def _until_killed() -> JobHooks:
    """A job whose work runs until it is killed."""
    done: asyncio.Future[JobOutcome] = asyncio.get_running_loop().create_future()
    return JobHooks(cancel=lambda reason: done.set_result(JobOutcome(status="killed")),
                    done=done)


@pytest.mark.parametrize(("stop", "expected"), [
    ("completed", JobOutcome(status="completed", output="partial")),
    ("aborted", JobOutcome(status="killed")),
    ("error", JobOutcome(status="failed", detail="error")),
    ("max-tokens", JobOutcome(status="failed", detail="max-tokens")),
    ("refusal", JobOutcome(status="failed", detail="refusal")),
    ("paused", JobOutcome(status="failed", detail="paused")),
])
def test_settle_run_maps_each_stop_reason(stop: str, expected: JobOutcome) -> None:
    """Ensures DSH's settleRun mapping of each stop reason onto the job outcome."""
    result = SubagentResult(output=(TextBlock(text="partial"),), stop_reason=stop)
    assert run_outcome(result) == expected


def test_settle_run_keeps_diagnostics_and_dispose_failures() -> None:
    """Ensures the diagnostic detail and the dispose-failure details of DSH's settleRun."""
    diagnosed = SubagentResult(output=(), stop_reason="error",
                               diagnostic="Claude Code denied a tool request")
    assert run_outcome(diagnosed).detail == "error; diagnostic: Claude Code denied a tool request"
    completed = JobOutcome(status="completed", output="x")
    assert with_dispose_failure(completed, "Error: reap failed") == JobOutcome(
        status="failed", detail="dispose failed: Error: reap failed")
    failed = JobOutcome(status="failed", detail="Error: result failed")
    assert with_dispose_failure(failed, "Error: reap failed").detail == (
        "Error: result failed; dispose failed: Error: reap failed")
