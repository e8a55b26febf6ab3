"""The parent's delegation tool (DSH's ``dsh-tool-subagent``, packages/subagent/tool-subagent).

* An instance is bound to one provider and offered to models only while that is registered;
  a call that still reaches a hidden instance is refused ``NO_PROVIDER``.
* A foreground call starts a one-shot run, waits for it, ALWAYS disposes it and returns the
  core's rendering. In the background, by ``background_mode``: a continuable child through the
  continuation manager, or a job of kind ``subagent`` settled as DSH's ``settleRun`` maps the
  run (:func:`turnfork.core.jobs.run_outcome`), the run disposed first.
* Cancelling the parent's turn aborts a foreground child (cause ``parent``), still disposed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UnsetType
from returns.result import Failure

from ...core import (
    BACKGROUND_JOBS_UNAVAILABLE,
    KILLED_REASON,
    SUBAGENT_TOOL_NAME,
    AgentOptions,
    BackgroundMode,
    BackgroundValue,
    CancelCause,
    ContinuableStart,
    ContinuableValue,
    ForegroundValue,
    JobOutcome,
    StartRequest,
    TextBlock,
    ToolOutcome,
    ToolRestriction,
    continuable_tool_section,
    render_infrastructure_failure,
    render_job_started,
    render_result_and_dispose_failure,
    render_start_error,
    render_started,
    render_tool_result,
    run_outcome,
    start_failure_outcome,
    subagent_tool_schema,
    validate_max_depth,
    with_dispose_failure,
)
from ..abort import AbortController
from ..agent import Agent
from ..tools import Tool, ToolContext, _schema_tool
from .jobs import BackgroundJobs, JobHooks
from .registry import (
    SubagentError,
    SubagentHost,
    SubagentProvider,
    SubagentRunHandle,
    SubagentRuntime,
    SubagentStartError,
)

__all__ = ["SubagentTool", "DEFAULT_MAX_DEPTH", "NO_CALLING_AGENT", "BACKGROUND_DISABLED",
           "js_error_string"]

#: DSH's default recursion budget of the tool.
DEFAULT_MAX_DEPTH = 3
#: The refusal of a call made outside an agent (DSH's text).
NO_CALLING_AGENT = "Error: subagent tool requires a calling agent (exec.agent was undefined)"
#: The refusal of ``run_in_background`` on an instance that disables it (DSH's text).
BACKGROUND_DISABLED = ("Error: run_in_background is disabled for this tool instance "
                       "(enableRunInBackground: false)")


def js_error_string(error: BaseException) -> str:
    """An error as JavaScript's ``String(error)`` renders it in DSH (an exception group is an
    ``AggregateError``; only DSH's typed errors keep their class name)."""
    if isinstance(error, BaseExceptionGroup):
        return f"AggregateError: {error.message}"
    name = "SubagentError" if isinstance(error, SubagentError) and \
        isinstance(error.error.name, str) else "Error"
    return f"{name}: {str(error) or type(error).__name__}"


def _message(error: BaseException) -> str:
    return str(error) or type(error).__name__


class SubagentTool:
    """A model-facing ``subagent`` tool bound to one provider; ``ValueError`` (DSH's texts) for
    a malformed ``max_depth`` or a ``tool_filter`` naming neither list."""

    def __init__(self, *, provider: SubagentProvider | str, tool_name: str = SUBAGENT_TOOL_NAME,
                 max_depth: int | None = DEFAULT_MAX_DEPTH, persona: str | None = None,
                 tool_filter: ToolRestriction | None = None,
                 agent_options: AgentOptions | None = None,
                 enable_run_in_background: bool | None = None,
                 background_mode: BackgroundMode = "one-shot",
                 jobs: BackgroundJobs | None = None) -> None:
        if isinstance(validate_max_depth(max_depth), Failure):
            raise ValueError("subagent maxDepth must be a non-negative safe integer")
        if tool_filter is not None and isinstance(tool_filter.allow, UnsetType) \
                and isinstance(tool_filter.deny, UnsetType):
            raise ValueError("tool-subagent: `toolFilter` is configured but names neither "
                             "`allow` nor `deny` — remove the key or fill the filter")
        self.provider_name = provider if isinstance(provider, str) else provider.provider_name
        self._bound: SubagentProvider | None = None if isinstance(provider, str) else provider
        self.tool_name = tool_name
        # Validated above whatever its type (configuration is often untyped); an integral
        # float such as 2.0 is DSH's number 2 and is kept as the int.
        self.max_depth = None if max_depth is None else int(max_depth)
        self.persona = persona
        self.tool_filter = tool_filter
        self.agent_options = agent_options
        self.background_mode: BackgroundMode = background_mode
        self.enable_run_in_background = (True if enable_run_in_background is None
                                         else enable_run_in_background)
        self.jobs = jobs
        self._runtime: SubagentRuntime | None = None
        self._host: SubagentHost | None = None
        self._tool: Tool | None = None
        self._unwatch: Callable[[], None] | None = None

    # ------------------------------------------------------------------ visibility

    def provider(self) -> SubagentProvider | None:
        """The provider this instance delegates to, if it is registered now."""
        if self._runtime is None:
            return None
        registered = self._runtime.get_provider(self.provider_name)
        if registered is None or (self._bound is not None and registered is not self._bound):
            return None
        return registered

    @property
    def visible(self) -> bool:  # in the host's global registry now
        return self._tool is not None

    def install(self, host: SubagentHost, runtime: SubagentRuntime | None = None) -> None:
        """Offer the tool on ``host`` whenever its provider is registered there; ``ValueError``
        when installed already or the provider cannot serve this configuration."""
        if self._host is not None:
            raise ValueError(f'the subagent tool "{self.tool_name}" is already installed')
        self._host = host
        self._runtime = runtime if runtime is not None else SubagentRuntime.of(host)
        self._unwatch = self._runtime.watch_providers(self._sync)
        try:
            self._sync()
        except BaseException:
            self.uninstall()
            raise

    def uninstall(self) -> None:
        """Withdraw the tool and stop following the provider's registration."""
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        self._hide()
        self._host = self._runtime = None

    def _sync(self) -> None:
        provider = self.provider()
        if provider is None:
            self._hide()
            return
        if self.max_depth is not None and not provider.capabilities.depth_limit:
            self._hide()
            raise ValueError(
                f'tool-subagent: provider "{provider.provider_name}" cannot enforce maxDepth '
                "(no depthLimit capability) — set maxDepth: 'provider-managed' to leave the "
                "recursion budget to the provider")
        if self.background_mode == "continuable" \
                and not callable(getattr(provider, "prepare_continuable", None)):
            self._hide()
            raise ValueError(f'tool-subagent: provider "{provider.provider_name}" does not '
                             "support `backgroundMode: continuable`")
        if self._tool is None:
            assert self._host is not None
            schema = subagent_tool_schema(
                provider.inherits_parent_context, self.tool_name,
                self.background_mode if self.enable_run_in_background else None)
            tool = _schema_tool(schema, self._call, concurrency_safe=True)
            self._host.tools.register(tool)
            self._tool = tool
            if self._guided:
                self._host.prompt_sections.add(continuable_tool_section(self.tool_name))

    @property
    def _guided(self) -> bool:
        return self.background_mode == "continuable" and self.enable_run_in_background

    def _hide(self) -> None:
        tool, self._tool = self._tool, None
        if tool is not None and self._host is not None \
                and self._host.tools.get(tool.name) is tool:
            self._host.tools.unregister(tool.name)
            if self._guided:
                self._host.prompt_sections.remove(continuable_tool_section(self.tool_name).name)

    # ------------------------------------------------------------------ a call

    def request(self, description: str, prompt: str) -> StartRequest:
        """One call's start request: the prompt verbatim, the description as label."""
        return StartRequest(prompt=(TextBlock(text=prompt),), label=description,
                            agent_options=self.agent_options, max_depth=self.max_depth,
                            tool_filter=self.tool_filter, persona=self.persona)

    async def _call(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        parent = ctx.agent
        if not isinstance(parent, Agent):
            return ToolOutcome(NO_CALLING_AGENT, is_error=True)
        asked = args.get("run_in_background")
        if asked is True and not self.enable_run_in_background:
            return ToolOutcome(BACKGROUND_DISABLED, is_error=True)
        runtime = self._runtime
        if runtime is None or self.provider() is None:
            return render_start_error(SubagentStartError.no_provider(self.provider_name).error)
        if self.enable_run_in_background and (
                asked if isinstance(asked, bool) else self.background_mode == "continuable"):
            if self.background_mode == "continuable":
                return await self._start_continuable(runtime, args, parent)
            return self._start_job(runtime, args, parent)
        controller = AbortController()  # the turn's cancellation aborts the child
        try:
            run = await ctx.run(
                runtime.start(self.provider_name, self.request(args["description"],
                                                               args["prompt"]),
                              parent=parent, signal=controller.signal),
                on_cancel=controller.abort)
        except SubagentError as refused:
            return render_start_error(refused.error)
        except Exception as failure:  # the runtime itself failed
            return render_infrastructure_failure(_message(failure))
        return await self._finish(run, ctx, controller.abort)

    async def _start_continuable(self, runtime: SubagentRuntime, args: dict[str, Any],
                                 parent: Agent) -> ToolOutcome:
        # Returns at the prompt's acceptance: the child owns its turns from there. Cancelling
        # this call before then rolls the child back; after it, nothing of it is this call's.
        request = ContinuableStart(prompt=(TextBlock(text=args["prompt"]),),
                                   label=args["description"], agent_options=self.agent_options,
                                   max_depth=self.max_depth, tool_filter=self.tool_filter,
                                   persona=self.persona)
        try:
            started = await runtime.continuation.start_continuable(
                self.provider_name, request, parent=parent)
        except SubagentError as refused:
            return render_start_error(refused.error)
        return ToolOutcome(render_started(started.child_id),
                           value=ContinuableValue(subagent_id=started.child_id))

    def _start_job(self, runtime: SubagentRuntime, args: dict[str, Any],
                   parent: Agent) -> ToolOutcome:
        jobs = self.jobs
        if jobs is None:
            return ToolOutcome(f"Error: {BACKGROUND_JOBS_UNAVAILABLE}", is_error=True)
        request = self.request(args["description"], args["prompt"])

        def run() -> JobHooks:
            controller = AbortController()
            start = asyncio.ensure_future(runtime.start(self.provider_name, request,
                                                        parent=parent,
                                                        signal=controller.signal))

            def cancel(reason: str | None) -> None:
                controller.abort(reason or KILLED_REASON)

            return JobHooks(cancel=cancel, done=_settle_job(start, controller))

        try:
            job = jobs.start("subagent", args["description"], parent, run)
        except RuntimeError as refused:
            return ToolOutcome(f"Error: {refused}", is_error=True)
        return ToolOutcome(render_job_started(job), value=BackgroundValue(job_id=job))

    async def _finish(self, run: SubagentRunHandle, ctx: ToolContext,
                      abort: Callable[[CancelCause], None]) -> ToolOutcome:
        rendered: ToolOutcome | None = None
        try:
            result = await ctx.run(run.result, on_cancel=abort)
            rendered = render_tool_result(result)
        except asyncio.CancelledError:
            await run.dispose()  # the child was aborted (cause parent); wait for it to stop
            raise
        except Exception as failure:
            result_error = failure
        try:
            await run.dispose()
        except Exception as dispose_error:
            if rendered is not None and not rendered.is_error:
                return render_infrastructure_failure(_message(dispose_error))
            # DSH throws an error rendering as a plain Error, then joins the two
            return render_result_and_dispose_failure(
                js_error_string(result_error) if rendered is None else rendered.text,
                js_error_string(dispose_error))
        if rendered is None:
            return render_infrastructure_failure(_message(result_error))
        if rendered.is_error:
            return rendered
        return msgspec.structs.replace(rendered, value=ForegroundValue(run_id=run.id,
                                                                       output=result.output))

    def __repr__(self) -> str:
        return f"SubagentTool(provider={self.provider_name!r}, tool_name={self.tool_name!r})"


async def _settle_job(start: asyncio.Future[SubagentRunHandle],
                      controller: AbortController) -> JobOutcome:
    """A one-shot background run's job outcome (DSH ``settleStart`` and ``settleRun``): the run
    is always disposed before the outcome is known."""
    try:
        run = await start
    except Exception as error:
        return start_failure_outcome(js_error_string(error), aborted=controller.signal.aborted,
                                     aggregate=isinstance(error, BaseExceptionGroup))
    outcome: JobOutcome
    try:
        outcome = run_outcome(await run.result)
    except Exception as error:
        outcome = JobOutcome(status="failed", detail=js_error_string(error))
    try:
        await run.dispose()
    except Exception as error:
        return with_dispose_failure(outcome, js_error_string(error))
    return outcome
