"""The parent's delegation tool (DSH's ``dsh-tool-subagent``, foreground one-shot; §7.5).

Rules:

* One instance is bound to one provider, by name (or to one provider object), and is offered to
  models only while that provider is registered: :meth:`SubagentTool.install` keeps the tool in
  the host's global registry exactly then. A call that still reaches a hidden instance is
  refused with ``NO_PROVIDER``.
* A call starts a run with the calling agent as parent, waits for its result, ALWAYS disposes
  it, and returns the core's rendering: the child's final text only on success, DSH's error
  texts otherwise (depth errors without an ``error`` key, provider and capability errors with
  ``SubagentError``).
* The tool is concurrency-safe: sibling delegations in one assistant message run in parallel.
  Cancelling the parent's turn aborts the child (cause ``parent``) and still disposes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import msgspec

from ..core import (
    SUBAGENT_TOOL_NAME,
    AgentOptions,
    CancelCause,
    RenderedResult,
    StartRequest,
    SubagentResult,
    TextBlock,
    ToolRestriction,
    render_infrastructure_failure,
    render_result_and_dispose_failure,
    render_start_error,
    render_tool_result,
    subagent_tool_schema,
)
from .abort import AbortController
from .host import Host
from .subagent_run import SubagentRun, SubagentStartError
from .subagents import SubagentProvider, SubagentRuntime
from .tools import Tool, ToolContext, ToolOutcome

__all__ = ["SubagentTool", "DEFAULT_MAX_DEPTH"]

#: DSH's default recursion budget of the tool.
DEFAULT_MAX_DEPTH = 3


def _outcome(rendered: RenderedResult) -> ToolOutcome:
    return ToolOutcome(content=rendered.content(), is_error=rendered.is_error,
                       error=rendered.error)


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
    """

    def __init__(self, *, provider: SubagentProvider | str, tool_name: str = SUBAGENT_TOOL_NAME,
                 max_depth: int | None = DEFAULT_MAX_DEPTH, persona: str | None = None,
                 tool_filter: ToolRestriction | None = None,
                 agent_options: AgentOptions | None = None) -> None:
        self.provider_name = provider if isinstance(provider, str) else provider.provider_name
        self._bound: SubagentProvider | None = None if isinstance(provider, str) else provider
        self.tool_name = tool_name
        self.max_depth = max_depth
        self.persona = persona
        self.tool_filter = tool_filter
        self.agent_options = agent_options
        self._runtime: SubagentRuntime | None = None
        self._host: Host | None = None
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

    def install(self, host: Host) -> None:
        """Offer the tool on ``host`` whenever its provider is registered there."""
        if self._host is not None:
            raise ValueError(f'the subagent tool "{self.tool_name}" is already installed')
        self._host = host
        self._runtime = SubagentRuntime.of(host)
        self._unwatch = self._runtime.watch_providers(self._sync)
        self._sync()

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
        elif self._tool is None:
            assert self._host is not None
            schema = subagent_tool_schema(provider.inherits_parent_context, self.tool_name)
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
        runtime = self._runtime
        if runtime is None or self.provider() is None:
            error = SubagentStartError.no_provider(self.provider_name)
            return _outcome(render_start_error(error.error))
        controller = AbortController()

        def abort(cause: CancelCause) -> None:
            controller.abort(cause)

        try:
            run = await ctx.run(
                runtime.start(self.provider_name, self.request(args["description"],
                                                               args["prompt"]),
                              parent=ctx.agent, signal=controller.signal),
                on_cancel=abort)
        except SubagentStartError as refused:
            return _outcome(render_start_error(refused.error))
        except Exception as failure:  # the runtime itself failed
            return _outcome(render_infrastructure_failure(_message(failure)))
        return await self._finish(run, ctx, abort)

    async def _finish(self, run: SubagentRun, ctx: ToolContext,
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
                return _outcome(render_result_and_dispose_failure(_message(result_error),
                                                                  _message(dispose_error)))
            return _outcome(render_infrastructure_failure(_message(dispose_error)))
        if result_error is not None:
            return _outcome(render_infrastructure_failure(_message(result_error)))
        assert result is not None
        return _outcome(render_tool_result(result))

    def __repr__(self) -> str:
        return f"SubagentTool(provider={self.provider_name!r}, tool_name={self.tool_name!r})"

