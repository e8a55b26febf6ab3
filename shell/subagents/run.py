"""A published in-process subagent run, and the structured-output capture a child may carry
(DSH's in-process driver, packages/subagent/subagent-in-process-driver/src).

* The result is read once the child is idle (:func:`turnfork.core.read_result`), from its own
  events past its seed; an abnormal end gets a diagnostic bounded to 4,096 UTF-8 bytes. A
  failure of the loop itself, or of delivering the prompt, rejects the result.
* Aborting (cause ``parent``) or disposing (cause ``disposed``) before it settles makes a stop
  reason other than ``completed`` ``aborted``. Awaiting ``result`` never cancels the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass, field
from typing import Any, Protocol

import msgspec
from msgspec import Raw
from returns.result import Failure, Success

from ...core import (
    CancelCause,
    CancelParent,
    ContentBlock,
    Event,
    StructuredOutputContract,
    SubagentResult,
    ToolOutcome,
    already_recorded_message,
    bound_diagnostic,
    describe_failure,
    final_assistant_output,
    read_result,
    render_invalid_arguments,
    render_structured_recorded,
    structured_answer,
    validate_structured_arguments,
)
from ..abort import AbortSignal
from ..agent import Agent, Prompt
from ..session import Session
from ..telemetry import RunSpan, log_safely
from ..tools import CallingAgent, Tool, ToolContext, ToolGuard, _schema_tool

__all__ = ["StructuredCapture", "SubagentChild", "SubagentRun"]

logger = logging.getLogger(__name__)


class SubagentChild(Protocol):
    """What a run drives: a child agent, or a stand-in whose events land in ``session``."""

    @property
    def id(self) -> str: ...

    @property
    def session(self) -> Session: ...

    def followup(self, prompt: Prompt) -> object: ...

    async def when_idle(self) -> object: ...

    def cancel(self, cause: CancelCause | None = None) -> None: ...

    async def dispose(self) -> None: ...


class StructuredCapture:
    """A child's ``structured_output`` runtime; ``in_answer`` (the cache-preserving fork's
    form): no tool, guard or section, the value read from the closing message."""

    def __init__(self, contract: StructuredOutputContract, *, in_answer: bool = False) -> None:
        self.contract = contract
        self.in_answer = in_answer
        self.value: Raw | None = None
        self._installed_on: CallingAgent | None = None
        # The core validates the raw arguments; the generic argument check is bypassed.
        self.tool = _schema_tool(contract.tool, self._call, validate=lambda args: ())

    async def _call(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        match validate_structured_arguments(self.contract.output_schema, ctx.arguments):
            case Failure(invalid):
                return render_invalid_arguments(invalid)
            case Success(value):
                self.value = value
        return render_structured_recorded()

    def guard(self, ctx: ToolContext) -> str | None:
        return None if self.value is None else already_recorded_message(ctx.tool_name)

    def read_answer(self, events: Sequence[Event]) -> None:
        if self.in_answer and self.value is None:
            self.value = structured_answer(self.contract, final_assistant_output(events))

    @property
    def tools(self) -> tuple[Tool, ...]:
        return () if self.in_answer else (self.tool,)

    @property
    def guards(self) -> tuple[ToolGuard, ...]:
        return () if self.in_answer else (self.guard,)

    def installed(self, agent: Agent) -> None:
        """``agent`` was built with :attr:`tools` and :attr:`guards` in its own scope."""
        if not self.in_answer:
            self._installed_on = agent

    def install(self, agent: Agent) -> None:
        """Add :attr:`tools` and :attr:`guards` to an agent built without them."""
        if self.in_answer:
            return
        agent.tools.add(self.tool)
        agent.tools.guards.append(self.guard)
        self._installed_on = agent

    def uninstall(self, agent: object) -> None:
        """Remove the tool, guard and section (a no-op unless installed on ``agent``)."""
        if isinstance(agent, Agent) and self._installed_on is agent:
            self._installed_on = None
            agent.tools.guards.remove(self.guard)
            agent.tools.remove(self.tool.name)
            agent.prompt_sections.remove(self.contract.section.name)


@dataclass(kw_only=True, eq=False, repr=False, slots=True, weakref_slot=True)
class SubagentRun:
    """One published child run, made by a provider; always :meth:`dispose` it. ``diagnostic``,
    called once the child is idle, may explain an abnormal end."""

    provider: str
    label: str | None
    parent: Agent
    child: SubagentChild
    seed_length: int
    prompt: InitVar[tuple[ContentBlock, ...]]
    capture: StructuredCapture | None
    signal: AbortSignal | None
    diagnostic: Callable[[], str | None] | None = None
    local_agent: Agent | None = field(init=False)
    _cancelled: bool = field(default=False, init=False)
    _disposing: bool = field(default=False, init=False)
    _disposed: bool = field(default=False, init=False)
    _on_disposed: list[Callable[[], None]] = field(default_factory=list, init=False)
    _span: RunSpan | None = field(default=None, init=False)
    _task: asyncio.Task[SubagentResult] = field(init=False)

    def __post_init__(self, prompt: tuple[ContentBlock, ...]) -> None:
        child = self.child
        self.local_agent = child if isinstance(child, Agent) else None
        if self.signal is not None:
            self.signal.add_listener(self.abort)
        if logger.isEnabledFor(logging.DEBUG):
            log_safely(logger, logging.DEBUG,
                       "subagent %s started by %s (provider %s, seed of %d events)",
                       child.id, self.parent.id, self.provider, self.seed_length)
        self._task = asyncio.get_running_loop().create_task(
            self._settle(prompt), name=f"subagent:{child.id}")

    @property
    def id(self) -> str:
        return self.child.id

    @property
    def cancelled(self) -> bool:  # aborted or disposed before it settled
        return self._cancelled

    @property
    def done(self) -> bool:
        return self._task.done()

    @property
    def disposed(self) -> bool:  # dispose() was called
        return self._disposing

    @property
    def result(self) -> asyncio.Future[SubagentResult]:
        return asyncio.shield(self._task)

    def own_events(self) -> Sequence[Event]:  # past its seed
        return self.child.session.events[self.seed_length:]

    def abort(self, reason: object = None) -> None:
        """Cancel the child's running turn with cause ``parent``."""
        if self.done:
            return
        self._cancelled = True
        self.child.cancel(CancelParent())

    async def dispose(self) -> None:
        """Cancel what remains (cause ``disposed``) and wait for the result and the child
        (idempotent; never raises the result's failure). A failure of the child's own disposal
        is raised once the result settled and the run is released all the same (DSH's)."""
        if not self._disposing:
            self._disposing = True
            if not self.done:
                self._cancelled = True
            self._detach()
        try:
            await self.child.dispose()
        except Exception:
            await self._released()
            raise
        await self._released()

    async def _released(self) -> None:
        await asyncio.wait([self._task])
        if not self._task.cancelled():
            self._task.exception()  # the failure stays readable through ``result``
        if self.capture is not None:
            self.capture.uninstall(self.child)
        self._disposed = True
        callbacks, self._on_disposed = self._on_disposed, []
        for callback in callbacks:
            callback()

    def watched(self, settled: Callable[[asyncio.Future[SubagentResult]], None],
                disposed: Callable[[], None]) -> None:
        """How the runtime watches a run without a shield of its own."""
        self._task.add_done_callback(settled)
        self.on_disposed(disposed)

    def on_disposed(self, callback: Callable[[], None]) -> None:
        if self._disposed:
            callback()
        else:
            self._on_disposed.append(callback)

    def _detach(self) -> None:
        if self.signal is not None:
            self.signal.remove_listener(self.abort)

    async def _settle(self, prompt: tuple[ContentBlock, ...]) -> SubagentResult:
        # The span starts with the run's task, in the context the run was started in (the
        # task's copy of it: the same parent span), not in the start: asking OpenTelemetry
        # whether anything records is work the publication need not wait for.
        self._span = self.parent.host.telemetry.run_span(self.id, self.parent.id, self.provider)
        try:
            result = await self._deliver(prompt)
        except BaseException as error:
            if not isinstance(error, asyncio.CancelledError):
                log_safely(logger, logging.WARNING, "subagent %s failed: %s", self.id, error)
            if self._span is not None:
                self._span.end(None, error=error)
            raise
        failure = None if isinstance(result.failure, msgspec.UnsetType) else result.failure
        log_safely(logger, logging.INFO, "subagent %s ended: %s%s", self.id, result.stop_reason,
                   "" if isinstance(result.diagnostic, msgspec.UnsetType)
                   else f" ({result.diagnostic})")
        if self._span is not None:
            self._span.end(result.stop_reason, failure)
        return result

    async def _deliver(self, prompt: tuple[ContentBlock, ...]) -> SubagentResult:
        try:
            # The child's turns nest under the run's span.
            with contextlib.nullcontext() if self._span is None else self._span.current():
                if not self._cancelled:  # an observer or the signal may have aborted it already
                    self.child.followup(prompt)
            await self.child.when_idle()
        finally:
            self._detach()
        if self.capture is not None:
            self.capture.read_answer(self.own_events())
        result = read_result(self.own_events(), self._cancelled,
                             None if self.capture is None else self.capture.value,
                             structured_requested=self.capture is not None)
        if result.stop_reason == "completed":
            return result
        detail = None if self.diagnostic is None else self.diagnostic()
        if not detail and not isinstance(result.failure, msgspec.UnsetType):
            detail = describe_failure(result.failure)
        if detail:
            result = msgspec.structs.replace(result, diagnostic=bound_diagnostic(detail))
        return result

    def __repr__(self) -> str:
        return f"SubagentRun(id={self.id!r}, provider={self.provider!r})"
