"""The parent's delegation tool (DSH's ``dsh-tool-subagent``, packages/subagent/tool-subagent).

Rules:

* One instance is bound to one provider, by name (or to one provider object), and is offered to
  models only while that provider is registered: :meth:`SubagentTool.install` keeps the tool in
  the host's global registry exactly then. A call that still reaches a hidden instance is
  refused with ``NO_PROVIDER``.
* Configuration is checked in DSH's words when the tool is built (a malformed ``max_depth``, a
  ``tool_filter`` naming neither list) and when it is mounted on a provider (a ``max_depth`` the
  provider cannot enforce).
* The wording is the core's, derived from the provider's ``inherits_parent_context``.
* A call refuses, in DSH's order, a calling context without an agent, and ``run_in_background``
  on an instance that disables it. Otherwise it starts a foreground run with the calling agent
  as parent, waits for its result, ALWAYS disposes it, and returns the core's rendering: the
  child's final text only on success, DSH's error texts otherwise. The result and the disposal
  fail on separate channels and are reported together when both fail.
* The tool is concurrency-safe: sibling delegations in one assistant message run in parallel.
  Cancelling the parent's turn aborts the child (cause ``parent``) and still disposes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UnsetType
from returns.result import Failure

from ...core import (
    SUBAGENT_TOOL_NAME,
    AgentOptions,
    CancelCause,
    StartRequest,
    SubagentResult,
    TextBlock,
    ToolOutcome,
    ToolRestriction,
    render_infrastructure_failure,
    render_result_and_dispose_failure,
    render_start_error,
    render_tool_result,
    subagent_tool_schema,
    validate_max_depth,
)
from ..abort import AbortController
from ..agent import Agent
from ..tools import Tool, ToolContext
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
    """An error as JavaScript's ``String(error)`` renders it in DSH: ``<name>: <message>``,
    where DSH's typed errors keep their class name and anything else is a plain ``Error``."""
    name = "SubagentError" if isinstance(error, SubagentError) and \
        isinstance(error.error.name, str) else "Error"
    return f"{name}: {str(error) or type(error).__name__}"


def _message(error: BaseException) -> str:
    return str(error) or type(error).__name__


class SubagentTool:
    """A model-facing ``subagent`` tool bound to one provider.

    Args:
        provider: the provider's registered name, or the provider itself (then the tool is
            visible only while that very object is registered).
        tool_name: the name the model calls it by (several instances need different names).
        max_depth: the absolute depth cap of the children it starts; ``None``: no cap.
        persona: the children's persona (their ``deployment:persona`` section).
        tool_filter: the children's ``{allow?, deny?}`` over the global tools.
        agent_options: the children's model route overrides (default: the parent's).
        enable_run_in_background: whether the model may ask for a background run (no
            ``run_in_background`` parameter otherwise, and a forced one is refused).

    Raises:
        ValueError: ``max_depth`` is not a non-negative safe integer, or ``tool_filter`` names
            neither ``allow`` nor ``deny`` (DSH's texts).
    """

    def __init__(self, *, provider: SubagentProvider | str, tool_name: str = SUBAGENT_TOOL_NAME,
                 max_depth: int | None = DEFAULT_MAX_DEPTH, persona: str | None = None,
                 tool_filter: ToolRestriction | None = None,
                 agent_options: AgentOptions | None = None,
                 enable_run_in_background: bool = False) -> None:
        if isinstance(validate_max_depth(max_depth), Failure):
            raise ValueError("subagent maxDepth must be a non-negative safe integer")
        if tool_filter is not None and isinstance(tool_filter.allow, UnsetType) \
                and isinstance(tool_filter.deny, UnsetType):
            raise ValueError("tool-subagent: `toolFilter` is configured but names neither "
                             "`allow` nor `deny` — remove the key or fill the filter")
        self.provider_name = provider if isinstance(provider, str) else provider.provider_name
        self._bound: SubagentProvider | None = None if isinstance(provider, str) else provider
        self.tool_name = tool_name
        self.max_depth = max_depth
        self.persona = persona
        self.tool_filter = tool_filter
        self.agent_options = agent_options
        self.enable_run_in_background = enable_run_in_background
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
    def visible(self) -> bool:
        """Whether the tool is in the host's global registry right now."""
        return self._tool is not None

    def install(self, host: SubagentHost, runtime: SubagentRuntime | None = None) -> None:
        """Offer the tool on ``host`` whenever its provider is registered there.

        ``runtime`` defaults to ``host.subagents``.

        Raises:
            ValueError: the instance is installed already, or its provider cannot enforce the
                configured ``max_depth`` (checked now and whenever the provider appears).
        """
        if self._host is not None:
            raise ValueError(f'the subagent tool "{self.tool_name}" is already installed')
        self._host = host
        self._runtime = runtime if runtime is not None else host.subagents
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
        if self._tool is None:
            assert self._host is not None
            schema = subagent_tool_schema(provider.inherits_parent_context, self.tool_name,
                                          "one-shot" if self.enable_run_in_background else None)
            tool = Tool(schema.name, schema.description, msgspec.json.decode(schema.parameters),
                        self._call, concurrency_safe=True)
            self._host.tools.register(tool)
            self._tool = tool

    def _hide(self) -> None:
        tool, self._tool = self._tool, None
        if tool is not None and self._host is not None \
                and self._host.tools.get(tool.name) is tool:
            self._host.tools.unregister(tool.name)

    # ------------------------------------------------------------------ a call

    def request(self, description: str, prompt: str) -> StartRequest:
        """The start request for one call: the prompt verbatim, the description as label."""
        return StartRequest(prompt=(TextBlock(text=prompt),), label=description,
                            agent_options=self.agent_options, max_depth=self.max_depth,
                            tool_filter=self.tool_filter, persona=self.persona)

    async def _call(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        parent = ctx.agent
        if not isinstance(parent, Agent):
            return ToolOutcome(NO_CALLING_AGENT, is_error=True)
        if args.get("run_in_background") is True and not self.enable_run_in_background:
            return ToolOutcome(BACKGROUND_DISABLED, is_error=True)
        runtime = self._runtime
        if runtime is None or self.provider() is None:
            return render_start_error(SubagentStartError.no_provider(self.provider_name).error)
        controller = AbortController()

        def abort(cause: CancelCause) -> None:
            controller.abort(cause)

        try:
            run = await ctx.run(
                runtime.start(self.provider_name, self.request(args["description"],
                                                               args["prompt"]),
                              parent=parent, signal=controller.signal),
                on_cancel=abort)
        except SubagentError as refused:
            return render_start_error(refused.error)
        except Exception as failure:  # the runtime itself failed
            return render_infrastructure_failure(_message(failure))
        return await self._finish(run, ctx, abort)

    async def _finish(self, run: SubagentRunHandle, ctx: ToolContext,
                      abort: Callable[[CancelCause], None]) -> ToolOutcome:
        result: SubagentResult | None = None
        result_error: Exception | None = None
        try:
            result = await ctx.run(run.result, on_cancel=abort)
        except asyncio.CancelledError:
            await run.dispose()  # the child was aborted (cause parent); wait for it to stop
            raise
        except Exception as failure:
            result_error = failure
        try:
            await run.dispose()
        except Exception as dispose_error:
            if result_error is not None:
                return render_result_and_dispose_failure(js_error_string(result_error),
                                                         js_error_string(dispose_error))
            assert result is not None
            rendered = render_tool_result(result)
            if rendered.is_error:  # DSH throws the rendering as a plain Error, then joins
                return render_result_and_dispose_failure(rendered.text,
                                                         js_error_string(dispose_error))
            return render_infrastructure_failure(_message(dispose_error))
        if result_error is not None:
            return render_infrastructure_failure(_message(result_error))
        assert result is not None
        return render_tool_result(result)

    def __repr__(self) -> str:
        return f"SubagentTool(provider={self.provider_name!r}, tool_name={self.tool_name!r})"
