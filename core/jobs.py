"""Kept importable: the names of :mod:`turnfork.core.machine.jobs`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .machine.jobs import (
    BACKGROUND_JOBS_UNAVAILABLE,
    JOB_KILL,
    JOB_LIST,
    JOB_OUTPUT,
    JOBS_SECTION,
    KILLED_REASON,
    NO_JOB_CONTROLLER,
    JobOutcome,
    JobStatus,
    JobView,
    completion_notice,
    job_id,
    job_kill_schema,
    job_limit_reached,
    job_list_schema,
    job_output_schema,
    render_job_kill,
    render_job_list,
    render_job_output,
    render_job_started,
    run_outcome,
    start_failure_outcome,
    status_line,
    with_dispose_failure,
)

__all__ = [
    "JobStatus", "JobOutcome", "JobView", "JOB_OUTPUT", "JOB_LIST", "JOB_KILL", "JOBS_SECTION",
    "BACKGROUND_JOBS_UNAVAILABLE", "NO_JOB_CONTROLLER", "KILLED_REASON", "job_id", "run_outcome",
    "start_failure_outcome", "with_dispose_failure", "status_line", "render_job_started",
    "render_job_output", "render_job_list", "render_job_kill", "job_limit_reached",
    "completion_notice", "job_output_schema", "job_list_schema", "job_kill_schema",
]
