"""Background jobs: one-shot work that outlives the tool call that started it, and the tools a
model collects it with (DSH's ``dsh-jobs-local`` registry and ``dsh-tool-jobs``). A job
(``<kind>-<n>``) belongs to the agent that started it; one that settles before its owner read,
waited for or killed it is announced to the owner (an idle owner is woken, at most
``max_wakes`` turns in a row, refilled by its next human message).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

import msgspec

from ...core import (
    JOBS_SECTION,
    NO_JOB_CONTROLLER,
    Event,
    JobOutcome,
    JobStatus,
    JobView,
    ToolOutcome,
    UserMessageEvent,
    completion_notice,
    job_id,
    job_kill_schema,
    job_limit_reached,
    job_list_schema,
    job_output_schema,
    render_job_kill,
    render_job_list,
    render_job_output,
)
from ..agent import Agent
from ..tools import Tool, ToolContext, _schema_tool
from .contract import SubagentHost, _call_each, _listen

__all__ = ["BackgroundJobs", "JobHooks", "JobTools", "DEFAULT_MAX_JOBS_PER_OWNER"]

#: DSH's default limit of running jobs per owner.
DEFAULT_MAX_JOBS_PER_OWNER = 10
#: DSH's job_output wait defaults: 30 s when no timeout is given, 10 minutes at most.
DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000


@dataclass(frozen=True, slots=True)
class JobHooks:
    """What a producer hands the registry for one job: how to stop it, and its outcome."""

    cancel: Callable[[str | None], None]
    done: Awaitable[JobOutcome]
    read_output: Callable[[], str] | None = None


@dataclass(eq=False)
class _Job:
    id: str
    kind: str
    label: str
    owner: Agent | None
    hooks: JobHooks
    status: JobStatus = "running"
    detail: str | None = None
    output: str | None = None
    reported: bool = False
    waiters: int = 0
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def view(self) -> JobView:
        return JobView(id=self.id, kind=self.kind, label=self.label, status=self.status,
                       detail=self.detail)

    @property
    def terminal(self) -> bool:
        return self.status in ("completed", "killed", "failed")


JobListener = Callable[[JobView, Agent | None, bool], None]


class BackgroundJobs:
    """The host's background jobs (DSH's ``ctx.jobs``); closed with ``host.subagents``."""

    def __init__(self, host: SubagentHost, *,
                 max_per_owner: int = DEFAULT_MAX_JOBS_PER_OWNER) -> None:
        if max_per_owner < 1:
            raise ValueError("max_per_owner must be at least 1")
        self.host = host
        self.max_per_owner = max_per_owner
        self._jobs: dict[str, _Job] = {}
        self._counters: dict[str, int] = {}
        self._listeners: list[JobListener] = []
        self.controllers = 0
        self._closed = False
        host.subagents.on_close(self.aclose)
        host.subagents.on_release(self.kill_owned, owns=self._owns_running)

    # -- starting

    def start(self, kind: str, label: str, owner: Agent | None,
              run: Callable[[], JobHooks]) -> str:
        """Start a job, calling ``run()`` once it is admitted; ``RuntimeError`` (DSH's texts)
        when no job tools serve the registry or the owner's limit is reached."""
        if self.controllers == 0 or self._closed:
            raise RuntimeError(NO_JOB_CONTROLLER)
        active = sum(1 for job in self._jobs.values()
                     if job.owner is owner and job.status in ("running", "stopping"))
        if active >= self.max_per_owner:
            raise RuntimeError(job_limit_reached(self.max_per_owner))
        hooks = run()
        count = self._counters.get(kind, 0) + 1
        self._counters[kind] = count
        job = _Job(id=job_id(kind, count), kind=kind, label=label, owner=owner, hooks=hooks)
        self._jobs[job.id] = job
        job.task = asyncio.get_running_loop().create_task(self._follow(job),
                                                          name=f"job:{job.id}")
        return job.id

    async def _follow(self, job: _Job) -> None:
        try:
            outcome = await job.hooks.done
        except Exception as error:  # a producer that broke its contract
            outcome = JobOutcome(status="failed", detail=f"Error: {error}")
        job.status, job.output, job.detail = outcome.status, outcome.output, outcome.detail
        if job.waiters:
            job.reported = True
        job.settled.set()
        _call_each(self._listeners, job.view(), job.owner, job.reported,
                  failure=f"a job listener failed for {job.id}")

    def on_done(self, listener: JobListener) -> Callable[[], None]:
        """Call ``listener(job, owner, reported)`` whenever a job settles; returns the remover."""
        return _listen(self._listeners, listener)

    # -- the owner's operations

    def _job(self, job_id_: str, caller: Agent | None) -> _Job:
        if not job_id_:
            raise ValueError(f"invalid job_id: expected a non-empty string, got "
                             f"{msgspec.json.encode(job_id_).decode()}")
        job = self._jobs.get(job_id_)
        if job is None:
            raise LookupError(f"unknown job {job_id_}")
        if job.owner is not None and (caller is None or job.owner.id != caller.id):
            raise PermissionError(f"job {job_id_} belongs to another session")
        return job

    def list(self, caller: Agent | None) -> list[JobView]:
        """The caller's jobs (and unowned ones), oldest first."""
        return [job.view() for job in self._jobs.values()
                if job.owner is None or (caller is not None and job.owner.id == caller.id)]

    def get(self, job_id_: str, caller: Agent | None) -> JobView:
        return self._job(job_id_, caller).view()

    def read(self, job_id_: str, caller: Agent | None) -> tuple[str, JobView]:
        """The job's text (a final-output job's is empty until it settles) and its view."""
        job = self._job(job_id_, caller)
        if job.hooks.read_output is not None:
            text = job.hooks.read_output()
        else:
            text = (job.output or "") if job.terminal else ""
        if job.terminal:
            job.reported = True
        return text, job.view()

    def kill(self, job_id_: str, caller: Agent | None,
             reason: str | None = None) -> Literal["requested", "already-finished"]:
        """Ask the job to stop; it settles ``killed`` once its work stopped."""
        job = self._job(job_id_, caller)
        job.reported = True
        if job.terminal:
            return "already-finished"
        if job.status == "running":
            job.hooks.cancel(reason)
            job.status = "stopping"
        return "requested"

    async def wait(self, job_id_: str, timeout_ms: float, caller: Agent | None) -> JobView:
        """Wait until the job settles or ``timeout_ms`` (a positive number) passes."""
        job = self._job(job_id_, caller)
        if isinstance(timeout_ms, bool) or not math.isfinite(timeout_ms) or timeout_ms <= 0:
            raise ValueError("invalid wait timeout: expected a positive number of milliseconds, "
                             f"got {msgspec.json.encode(timeout_ms).decode()}")
        if not job.terminal:
            job.waiters += 1
            try:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout_ms / 1000):
                        await job.settled.wait()
            finally:
                job.waiters -= 1
        if job.terminal:
            job.reported = True
        return job.view()

    # -- teardown

    def _owns_running(self, owner: Agent) -> bool:
        return any(job.owner is owner and job.status == "running"
                   for job in self._jobs.values())

    async def kill_owned(self, owner: Agent, reason: str = "owner disposed") -> None:
        """Kill every running job of ``owner`` and wait until each settled."""
        owned = [job for job in self._jobs.values() if job.owner is owner]
        await self._stop(owned, reason)

    async def _stop(self, jobs: Sequence[_Job], reason: str) -> None:
        for job in jobs:
            job.reported = True
            if job.status == "running":
                try:
                    job.hooks.cancel(reason)
                    job.status = "stopping"
                except Exception as error:
                    job.status, job.detail = "failed", (
                        f"cancel threw during teardown; work may be orphaned: {error}")
                    job.settled.set()
        tasks = [job.task for job in jobs if job.task is not None]
        if tasks:
            await asyncio.wait(tasks)

    async def aclose(self) -> None:
        """Kill every running job, wait for all of them, take no more."""
        self._closed = True
        await self._stop(list(self._jobs.values()), "jobs service disposed")

    def __repr__(self) -> str:
        return f"BackgroundJobs(jobs={len(self._jobs)})"


@dataclass(eq=False, repr=False)
class JobTools:
    """``job_output``, ``job_list`` and ``job_kill`` over a :class:`BackgroundJobs`, the
    ``tool:jobs`` guidance section, and the completion notices of unreported jobs."""

    jobs: BackgroundJobs
    _: KW_ONLY
    delivery: Literal["wakeup", "quiet"] = "wakeup"
    max_wakes: int = 3
    wait_ms: int = DEFAULT_WAIT_MS
    max_wait_ms: int = MAX_WAIT_MS
    _spent: dict[str, int] = field(default_factory=dict, init=False)
    _watched: set[str] = field(default_factory=set, init=False)
    _tools: list[Tool] = field(default_factory=list, init=False)
    _unlisten: Callable[[], None] = field(default=lambda: None, init=False)

    def __post_init__(self) -> None:
        if self.wait_ms > self.max_wait_ms:
            raise ValueError(f"tool-jobs: waitTimeoutMs ({self.wait_ms}) exceeds "
                             f"maxWaitTimeoutMs ({self.max_wait_ms})")

    def install(self) -> None:
        """Register the tools and the section on the registry's host, and serve the registry."""
        host = self.jobs.host
        if self._tools:
            raise ValueError("the job tools are already installed")
        tools = [_schema_tool(job_output_schema(), self._output),
                 _schema_tool(job_list_schema(), self._list),
                 _schema_tool(job_kill_schema(), self._kill)]
        host.tools.register_all(tools)
        self._tools = tools
        host.prompt_sections.add(JOBS_SECTION)
        self.jobs.controllers += 1
        self._unlisten = self.jobs.on_done(self._announce)

    def uninstall(self) -> None:
        host = self.jobs.host
        if self._tools:  # installed: the tools, the section, the registry served, the notices
            host.tools.withdraw(self._tools)
            self.jobs.controllers -= 1
            host.prompt_sections.remove(JOBS_SECTION.name)
            self._unlisten()
        self._tools = []

    # -- completion notices

    def _watch(self, owner: Agent) -> None:
        if owner.id in self._watched:
            return
        self._watched.add(owner.id)

        def refill(events: Sequence[Event]) -> None:
            # The owner's own human input resets the wake budget (DSH refills on a claimed
            # user-sourced message).
            if any(isinstance(e, UserMessageEvent) and e.data.source.kind == "user"
                   for e in events):
                self._spent.pop(owner.id, None)

        owner.session.listeners.append(refill)

    def _announce(self, job: JobView, owner: Agent | None, reported: bool) -> None:
        if reported or owner is None or owner.disposed \
                or self.jobs.host.agents.get(owner.id) is not owner:
            return
        self._watch(owner)
        notice = completion_notice(job, message_id=self.jobs.host.ids())
        spent = self._spent.get(owner.id, 0)
        if self.delivery == "wakeup" and not owner.running and spent < self.max_wakes:
            self._spent[owner.id] = spent + 1
            owner.followup(notice)
        else:
            owner.inject(notice)

    # -- the tools

    @staticmethod
    def _caller(ctx: ToolContext) -> Agent | None:
        return ctx.agent if isinstance(ctx.agent, Agent) else None

    async def _output(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        caller = self._caller(ctx)
        job = args["job_id"]
        if args.get("wait") is True:
            timeout = min(args.get("timeout_ms", self.wait_ms), self.max_wait_ms)
            await self.jobs.wait(job, timeout, caller)
        text, view = self.jobs.read(job, caller)
        return ToolOutcome(render_job_output(text, view))

    async def _list(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome(render_job_list(self.jobs.list(self._caller(ctx))))

    async def _kill(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        caller = self._caller(ctx)
        outcome = self.jobs.kill(args["job_id"], caller, args.get("reason"))
        view = self.jobs.get(args["job_id"], caller)
        return ToolOutcome(render_job_kill(view, already_finished=outcome == "already-finished"))
