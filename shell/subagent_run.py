"""A published subagent run, what it reports to observers, and why a start can fail.

Rules:

* A :class:`SubagentRun` owns one published child agent. Its result is read once the child is
  idle, with :func:`core.read_result`, from the child's own events only (past its seed). Child
  failures become stop reasons; only a failing agent loop (an infrastructure fault) fails the
  result.
* Aborting a run (its start signal) before it settles cancels the child's turn with cause
  ``parent``; :meth:`SubagentRun.dispose` cancels with ``disposed``; either way a stop reason
  other than ``completed`` becomes ``aborted``. A completed turn stays completed.
* Awaiting ``run.result`` never cancels the run, even when the awaiting task is cancelled.
* A child asked for structured output has the ``structured_output`` tool, a guard and the
  prompt section in its own scope; after the first valid call every later call is denied, and
  all three are removed once the run has settled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec
from msgspec import Raw
from returns.result import Failure, Result, Success

from ..core import (
    CancelParent,
    ContentBlock,
    Event,
    StartError,
    StructuredOutputContract,
    SubagentResult,
    already_recorded_message,
    final_assistant_output,
    read_result,
    render_invalid_arguments,
    render_structured_recorded,
    validate_structured_arguments,
)
from .abort import AbortSignal
from .agent import Agent
from .tools import Tool, ToolContext, ToolOutcome

if TYPE_CHECKING:
    from .subagents import SubagentRuntime

__all__ = [
    "NO_PROVIDER",
    "ABORTED",
    "SubagentStartError",
    "SubagentAbortedError",
    "raise_on_failure",
    "SubagentStart",
    "SubagentEnd",
    "SubagentEvent",
    "SubagentListener",
    "StructuredCapture",
    "SubagentRun",
]

#: ``StartError.code`` of a start naming no registered provider (DSH ``SubagentError``).
NO_PROVIDER = "NO_PROVIDER"
#: ``StartError.code`` of a start aborted before its child was published.
ABORTED = "ABORTED"


class SubagentStartError(Exception):
    """A start refused or abandoned before any child was published; ``error`` says why."""

    def __init__(self, error: StartError) -> None:
        super().__init__(error.message)
        self.error = error

    @classmethod
    def no_provider(cls, name: str) -> SubagentStartError:
        """No provider is registered under ``name`` (DSH's ``SubagentError`` text)."""
        return cls(StartError(code=NO_PROVIDER, name="SubagentError",
                              message=f'no subagent provider registered for "{name}"'))


class SubagentAbortedError(SubagentStartError):
    """The start was aborted before its child was published: nothing was left behind."""

    def __init__(self) -> None:
        super().__init__(StartError(code=ABORTED, name="AbortError",
                                    message="subagent start was aborted before the child was "
                                            "published"))


def raise_on_failure(result: Result[object, StartError]) -> None:
    """Raise :class:`SubagentStartError` for a core refusal; do nothing on success."""
    match result:
        case Failure(error):
            raise SubagentStartError(error)


# ---------------------------------------------------------------------------- observers


@dataclass(frozen=True, slots=True)
class SubagentStart:
    """A child was published (``subagent/start``)."""

    run: SubagentRun
    run_id: str
    provider: str
    parent_id: str
    child_id: str
    label: str | None
    seed_length: int


@dataclass(frozen=True, slots=True)
class SubagentEnd:
    """A run settled (``subagent/end``). ``failure`` is set for an infrastructure fault (then
    ``stop_reason`` is ``error``)."""

    run: SubagentRun
    run_id: str
    provider: str
    parent_id: str
    child_id: str
    stop_reason: str
    #: The child's final assistant output (wire-format §7.4) from its own events, if any.
    last_assistant_message: tuple[ContentBlock, ...] | None
    failure: BaseException | None = None


SubagentEvent: TypeAlias = SubagentStart | SubagentEnd
SubagentListener: TypeAlias = Callable[[SubagentEvent], None]


# ---------------------------------------------------------------------------- runs


class StructuredCapture:
    """A child's ``structured_output`` runtime: its tool, its guard, and what it captured."""

    def __init__(self, contract: StructuredOutputContract) -> None:
        self.contract = contract
        self.value: Raw | None = None
        self._installed = False
        parameters = msgspec.json.decode(contract.tool.parameters)
        # The core validates the raw arguments; the shell's own schema check is bypassed.
        self.tool = Tool(contract.tool.name, contract.tool.description, parameters,
                         self._call, validate=lambda args: ())

    async def _call(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        match validate_structured_arguments(self.contract.compiled, ctx.arguments):
            case Failure(invalid):
                rendered = render_invalid_arguments(invalid)
                return ToolOutcome(content=rendered.content(), is_error=True,
                                   error=rendered.error)
            case Success(value):
                self.value = value
        return ToolOutcome(content=render_structured_recorded().content(), conclude_turn=True)

    def guard(self, ctx: ToolContext) -> str | None:
        """After the capture, every call (of any tool) is denied."""
        return None if self.value is None else already_recorded_message(ctx.tool_name)

    def install(self, agent: Agent) -> None:
        """Add the tool and the guard to the child's own scope (its section is in the plan)."""
        agent.tools.add(self.tool)
        agent.tools.guards.append(self.guard)
        self._installed = True

    def uninstall(self, agent: Agent) -> None:
        """Remove the tool, the guard and the section again (once the run has settled)."""
        if self._installed:
            self._installed = False
            agent.tools.guards.remove(self.guard)
            agent.tools.remove(self.tool.name)
            agent.prompt_sections.remove(self.contract.section.name)


class SubagentRun:
    """One published child run. Made by :meth:`SubagentRuntime.start`.

    ``id`` is the child's session id; ``local_agent`` the child agent; ``result`` an awaitable
    :class:`core.SubagentResult`. Always :meth:`dispose` a run.
    """

    def __init__(self, runtime: SubagentRuntime, *, provider: str, label: str | None,
                 parent: Agent, agent: Agent, seed_length: int,
                 capture: StructuredCapture | None, signal: AbortSignal | None) -> None:
        self.runtime = runtime
        self.provider = provider
        self.label = label
        self.parent = parent
        self.local_agent = agent
        self.seed_length = seed_length
        self._capture = capture
        self._signal = signal
        self._cancelled = False
        self._disposing = False
        self._task: asyncio.Task[SubagentResult] | None = None

    @property
    def id(self) -> str:
        return self.local_agent.id

    @property
    def cancelled(self) -> bool:
        """Whether the run was aborted or disposed before it settled."""
        return self._cancelled

    @property
    def done(self) -> bool:
        """Whether the result is settled."""
        return self._task is not None and self._task.done()

    @property
    def result(self) -> asyncio.Future[SubagentResult]:
        """The run's result; awaiting it never cancels the run, even if the awaiter is."""
        assert self._task is not None, "the run has not begun"
        return asyncio.shield(self._task)

    def own_events(self) -> Sequence[Event]:
        """The child's events past its seed (what the result is read from)."""
        return self.local_agent.session.events[self.seed_length:]

    def abort(self, reason: object = None) -> None:
        """Cancel the child's running turn with cause ``parent`` (the parent's signal)."""
        if self.done:
            return
        self._cancelled = True
        self.local_agent.cancel(CancelParent())

    async def dispose(self) -> None:
        """Cancel what remains (cause ``disposed``), wait for the result and the child's
        quiescence, and remove the child from ``host.agents``. Idempotent; safe to call
        concurrently; never raises the result's failure."""
        if not self._disposing:
            self._disposing = True
            if not self.done:
                self._cancelled = True
            self._detach()
            self.runtime._runs.pop(self.id, None)
        await self.local_agent.dispose()
        task = self._task
        if task is not None:
            await asyncio.wait([task])
            if not task.cancelled():
                task.exception()  # the failure stays readable through ``result``

    # ------------------------------------------------------------------ driver side

    def _begin(self, prompt: tuple[ContentBlock, ...]) -> None:
        if self._signal is not None:
            self._signal.add_listener(self.abort)
        self.runtime._runs[self.id] = self
        self.runtime._emit(SubagentStart(
            run=self, run_id=self.id, provider=self.provider, parent_id=self.parent.id,
            child_id=self.id, label=self.label, seed_length=self.seed_length))
        if not self._cancelled:  # an observer may have aborted it already
            self.local_agent.followup(prompt)
        self._task = asyncio.get_running_loop().create_task(self._watch(),
                                                            name=f"subagent:{self.id}")

    def _detach(self) -> None:
        if self._signal is not None:
            self._signal.remove_listener(self.abort)

    async def _watch(self) -> SubagentResult:
        failure: BaseException | None = None
        try:
            await self.local_agent.when_idle()
        except Exception as error:  # the loop itself failed: an infrastructure fault
            failure = error
        finally:
            self._detach()
            if self._capture is not None:
                self._capture.uninstall(self.local_agent)
        own = self.own_events()
        result = None if failure is not None else read_result(
            own, self._cancelled, None if self._capture is None else self._capture.value,
            structured_requested=self._capture is not None)
        self.runtime._emit(SubagentEnd(
            run=self, run_id=self.id, provider=self.provider, parent_id=self.parent.id,
            child_id=self.id, stop_reason="error" if result is None else result.stop_reason,
            last_assistant_message=final_assistant_output(own), failure=failure))
        if failure is not None:
            raise failure
        assert result is not None
        return result

    def __repr__(self) -> str:
        return f"SubagentRun(id={self.id!r}, provider={self.provider!r})"
