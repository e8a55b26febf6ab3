"""One-shot background runs as jobs: how a settled run becomes a job outcome, and what the
models see of jobs (DSH ``run-settlement.ts``, ``dsh-tool-jobs``, ``dsh-jobs-local``).

Rules of this module:

* :func:`run_outcome` is DSH's ``settleRun`` mapping: ``completed`` → ``completed`` with the
  concatenated text blocks of the output; ``aborted`` → ``killed``; any other stop reason →
  ``failed`` with the reason as detail (``<reason>; diagnostic: <text>`` with a provider
  diagnostic). A rejected result is ``failed`` with the error as JavaScript's ``String(error)``
  renders it; a failed disposal makes any outcome ``failed``, its detail appended
  (``<prior detail>; dispose failed: <error>``).
* Job ids are ``<kind>-<n>``, counted per kind from 1.
* Every ``job_output`` result ends with the status line ``[status: <status>]`` or
  ``[status: <status>, <detail>]``; an empty body reads ``(no new output)``.
* All strings are DSH's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, TypeAlias

import msgspec
from msgspec import UnsetType

from .._checking import checked, plain_forms
from ..delegation import PromptSection, SubagentResult, output_text
from ..log import MessageSource, TextBlock, ToolSchema, UserMessage
from .continuation import bound_summary
from .control import object_tool_schema

# Calls into sibling modules get values this module's checked entry points took in: plain.
_object_tool_schema, _bound_summary = plain_forms(object_tool_schema, bound_summary)

__all__ = [
    "JobStatus",
    "JobOutcome",
    "JobView",
    "JOB_OUTPUT",
    "JOB_LIST",
    "JOB_KILL",
    "JOBS_SECTION",
    "BACKGROUND_JOBS_UNAVAILABLE",
    "NO_JOB_CONTROLLER",
    "KILLED_REASON",
    "job_id",
    "run_outcome",
    "start_failure_outcome",
    "with_dispose_failure",
    "status_line",
    "render_job_started",
    "render_job_output",
    "render_job_list",
    "render_job_kill",
    "job_limit_reached",
    "completion_notice",
    "job_output_schema",
    "job_list_schema",
    "job_kill_schema",
]

JobStatus: TypeAlias = Literal["running", "stopping", "completed", "killed", "failed"]

JOB_OUTPUT = "job_output"
JOB_LIST = "job_list"
JOB_KILL = "job_kill"

#: The ``subagent`` tool's refusal of a one-shot background run without a job registry.
BACKGROUND_JOBS_UNAVAILABLE = ("background jobs unavailable: load @deepseek-ai/dsh-jobs and "
                               "@deepseek-ai/dsh-tool-jobs")
#: The registry's refusal when no job tools serve the owner.
NO_JOB_CONTROLLER = ("background jobs unavailable: no job controller serves this agent (load "
                     "@deepseek-ai/dsh-tool-jobs in its composition)")
#: The abort reason of a killed background subagent job when ``job_kill`` gave none.
KILLED_REASON = "background subagent task killed"

#: Guidance for an agent that has the job tools (DSH ``tool:jobs``, order 106).
JOBS_SECTION = PromptSection(
    name="tool:jobs", order=106,
    text="Track every background job id you start. You are notified in-session when a job "
         "finishes — do not busy-poll or sleep on one; keep working on independent steps and do "
         "not duplicate a running job's work. Before giving a final answer, collect every "
         "still-relevant job with job_output (set wait: true only when you are genuinely "
         "blocked on it), and job_kill jobs that stopped mattering.")

_JOB_ID_DESCRIPTION = "Job id returned by the tool that started the background work."


class JobOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """How a job's work settled (DSH ``JobOutcome``)."""

    status: Literal["completed", "killed", "failed"]
    output: str | None = None
    detail: str | None = None


class JobView(msgspec.Struct, frozen=True, kw_only=True):
    """What the job tools render of one job."""

    id: str
    kind: str
    label: str
    status: JobStatus
    detail: str | None = None


@checked
def job_id(kind: str, count: int) -> str:
    """The ``count``-th job id of ``kind``.

    >>> job_id("subagent", 1)
    'subagent-1'
    """
    return f"{kind}-{count}"


@checked
def run_outcome(result: SubagentResult) -> JobOutcome:
    """A settled one-shot run's job outcome (DSH ``settleRun``'s mapping).

    >>> from turnfork.core import SubagentResult
    >>> run_outcome(SubagentResult(output=(), stop_reason="aborted"))
    JobOutcome(status='killed', output=None, detail=None)
    >>> run_outcome(SubagentResult(output=(), stop_reason="error", diagnostic="denied")).detail
    'error; diagnostic: denied'
    """
    if result.stop_reason == "completed":
        return JobOutcome(status="completed", output=output_text(result.output))
    if result.stop_reason == "aborted":
        return JobOutcome(status="killed")
    detail = result.stop_reason if isinstance(result.diagnostic, UnsetType) \
        else f"{result.stop_reason}; diagnostic: {result.diagnostic}"
    return JobOutcome(status="failed", detail=detail)


@checked
def start_failure_outcome(error_text: str, *, aborted: bool, aggregate: bool = False,
                          ) -> JobOutcome:
    """The outcome of a job whose child never started: ``killed`` when the job's signal was
    aborted (unless cleanup failed too, an aggregate error), else ``failed`` with the error.

    >>> start_failure_outcome("Error: setup failed", aborted=False).detail
    'Error: setup failed'
    """
    if aborted and not aggregate:
        return JobOutcome(status="killed")
    return JobOutcome(status="failed", detail=error_text)


@checked
def with_dispose_failure(outcome: JobOutcome, error_text: str) -> JobOutcome:
    """An outcome whose run then failed to dispose: ``failed``, the disposal appended.

    >>> with_dispose_failure(JobOutcome(status="completed", output="x"), "Error: reap").detail
    'dispose failed: Error: reap'
    """
    prefix = "" if outcome.detail is None else f"{outcome.detail}; "
    return JobOutcome(status="failed", detail=f"{prefix}dispose failed: {error_text}")


@checked
def status_line(status: JobStatus, detail: str | None = None) -> str:
    """``[status: <status>]`` or ``[status: <status>, <detail>]``."""
    return f"[status: {status}]" if detail is None else f"[status: {status}, {detail}]"


@checked
def render_job_started(job: str) -> str:
    """The ``subagent`` tool's result for a one-shot background start."""
    return f"started background subagent job {job}"


@checked
def render_job_output(text: str, job: JobView) -> str:
    """``job_output``'s result: the job's text (``(no new output)`` when empty), then its
    status line on a line of its own.

    >>> render_job_output("", JobView(id="subagent-1", kind="subagent", label="x",
    ...                                status="killed"))
    '(no new output)\\n[status: killed]'
    """
    body = text or "(no new output)"
    separator = "" if body.endswith("\n") else "\n"
    return f"{body}{separator}{status_line(job.status, job.detail)}"


@checked
def render_job_list(jobs: Iterable[JobView]) -> str:
    """``job_list``'s result: ``<id> [<kind>] <status> — <label>`` per job."""
    lines = [f"{job.id} [{job.kind}] {job.status} — {job.label}" for job in jobs]
    return "\n".join(lines) if lines else "(no background jobs)"


@checked
def render_job_kill(job: JobView, *, already_finished: bool) -> str:
    """``job_kill``'s result."""
    if already_finished:
        return f"job {job.id} had already finished {status_line(job.status, job.detail)}"
    return f"requested cancellation of job {job.id}"


@checked
def job_limit_reached(limit: int) -> str:
    """The registry's refusal of one more running job for an owner."""
    return (f"background job limit reached for this owner (limit: {limit}); use job_kill to "
            "stop an unneeded job, wait for it to finish, then retry")


@checked
def completion_notice(job: JobView, *, message_id: str) -> UserMessage:
    """The owner's notice of a job that settled while nobody read, waited for or killed it."""
    line = status_line(job.status, job.detail)
    return UserMessage(
        content=(TextBlock(text=f"background job {job.id} ({job.kind}: {job.label}) finished "
                                f"{line}. Read its output with job_output."),),
        source=MessageSource(kind="plugin", plugin="tool-jobs", form="notice",
                             summary=_bound_summary(f"{job.kind} {job.label} {line}")),
        id=message_id)


@checked
def job_output_schema() -> ToolSchema:
    """``job_output``: ``job_id`` (required), ``wait``, ``timeout_ms``."""
    return _object_tool_schema(JOB_OUTPUT, (
        "Read a background job. Stream jobs return only output since the previous read; "
        "final-output jobs return their result after settlement. Every response ends with "
        "`[status: ...]`. Reads are non-blocking unless `wait: true`, which waits up to the "
        "configured cap."), {
        "job_id": {"type": "string", "description": _JOB_ID_DESCRIPTION},
        "wait": {"type": "boolean",
                 "description": "Block until the job reaches a terminal status or the timeout "
                                "expires. A timed-out wait returns [status: running] and leaves "
                                "the job alive."},
        "timeout_ms": {"type": "number",
                       "description": "Max wait in milliseconds (only meaningful with wait: "
                                      "true). Defaults to the configured wait timeout; capped by "
                                      "the configured maximum."},
    }, ("job_id",))


@checked
def job_list_schema() -> ToolSchema:
    """``job_list``: no parameters."""
    return _object_tool_schema(JOB_LIST, "List your background jobs (running and finished) with "
                                        "their ids, kinds, and statuses.", {}, ())


@checked
def job_kill_schema() -> ToolSchema:
    """``job_kill``: ``job_id`` (required) and ``reason``."""
    return _object_tool_schema(JOB_KILL, (
        "Request cancellation of a running background job by job id. Returns immediately; the "
        "job settles as killed once its work actually stops."), {
        "job_id": {"type": "string", "description": _JOB_ID_DESCRIPTION},
        "reason": {"type": "string",
                   "description": "Optional short reason, recorded in the log and forwarded to "
                                  "the job."},
    }, ("job_id",))
