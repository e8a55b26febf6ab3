"""Optional OpenTelemetry spans for turns, steps, model calls and child runs (the spans and
their attributes: docs/api-shell-runtime.md). Without the ``otel`` extra nothing is imported
and an agent holds ``None`` instead of its spans."""

from __future__ import annotations

import contextlib
import functools
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec

from msgspec import UnsetType

from ..core import (
    FinishAborted,
    FinishChunk,
    FinishError,
    FinishReason,
    LlmCallConfig,
    LlmFailure,
    StepStartEvent,
    TokenUsage,
    TurnEndEvent,
    TurnError,
    TurnStartEvent,
    UsageChunk,
    stop_reason_for,
)
from ._inert import inert

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

__all__ = ["Telemetry", "AgentSpans", "ModelCallSpan", "RunSpan", "log_safely",
           "observer_failed"]

P = ParamSpec("P")


def observer_failed(error: Exception, observer: str) -> None:
    """Say that ``observer`` (a log handler, a tracer) raised: a RuntimeWarning, itself never
    raised (under ``-W error`` the failure goes unreported rather than into the run)."""
    with contextlib.suppress(Exception):
        warnings.warn(f"turnfork: {observer} raised {type(error).__name__}: {error}; the run "
                      "goes on without it", RuntimeWarning, stacklevel=3)


def log_safely(logger: logging.Logger, level: int, message: str, *args: object,
               **options: Any) -> None:
    """``logger.log(...)`` with the text of ``args`` (a provider's error message, say) made
    inert, as a handler may write to a terminal; a handler that raises (logging's contract is
    that it does not) is reported by :func:`observer_failed` and changes nothing of the run."""
    shown = tuple(inert(str(arg)) if isinstance(arg, str | BaseException) else arg
                  for arg in args)
    try:
        logger.log(level, message, *shown, stacklevel=2, **options)  # where it was called
    except Exception as error:
        observer_failed(error, f"a handler of the {logger.name} logger")


def _observing(method: Callable[P, None]) -> Callable[P, None]:
    """``method``, which only reports to the tracer: what the tracer raises is reported, not
    raised into the run."""

    @functools.wraps(method)
    def observing(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            method(*args, **kwargs)
        except Exception as error:
            observer_failed(error, "the tracer")

    return observing


@functools.cache
def _api() -> Any:
    """The API, imported on first use: ``(trace, context)``, or ``False`` when it is absent."""
    try:
        from opentelemetry import context, trace  # noqa: PLC0415 - the optional extra
    except ImportError:
        return False
    return trace, context


def _usage_attributes(usage: TokenUsage) -> dict[str, int]:
    attributes = {"gen_ai.usage.input_tokens": usage.input_tokens,
                  "gen_ai.usage.output_tokens": usage.output_tokens}
    for name, count in (("cache_read", usage.cache_read_tokens),
                        ("cache_creation", usage.cache_write_tokens)):
        if not isinstance(count, UnsetType):
            attributes[f"gen_ai.usage.{name}.input_tokens"] = count
            # DSH counts cached input apart; the conventions' input count includes it.
            attributes["gen_ai.usage.input_tokens"] += count
    return attributes


def _end(span: Span, code: str | None = None, error: BaseException | None = None) -> None:
    """End ``span``, failed by a DSH failure ``code``, else by the ``error`` raised."""
    description = code
    if code is None and error is not None:
        span.record_exception(error)
        code, description = type(error).__qualname__, str(error) or type(error).__name__
    if code is not None:
        trace, _ = _api()
        span.set_attribute("error.type", code)
        span.set_status(trace.Status(trace.StatusCode.ERROR, description))
    span.end()


def _start(tracer: Tracer, name: str, **options: Any) -> Span:
    """A span started by ``tracer``; one that does nothing when the tracer raises."""
    try:
        span: Span = tracer.start_span(name, **options)
    except Exception as error:
        observer_failed(error, "the tracer")
        span = _api()[0].INVALID_SPAN
    return span


def _current(span: Span | None) -> contextlib.AbstractContextManager[None]:
    if span is None:
        return contextlib.nullcontext()
    used: contextlib.AbstractContextManager[None] = _api()[0].use_span(
        span, record_exception=False, set_status_on_exception=False)
    return used


class Telemetry:
    """Where spans go: ``tracer_provider``, else the global one."""

    def __init__(self, tracer_provider: Any | None = None) -> None:
        self.tracer_provider = tracer_provider

    @functools.cached_property
    def tracer(self) -> Tracer | None:
        """The tracer (``None`` without the ``otel`` extra)."""
        api = _api()
        if not api:
            return None
        from .. import __version__  # noqa: PLC0415 - the package's, only once

        tracer: Tracer = api[0].get_tracer("turnfork", __version__,
                                           tracer_provider=self.tracer_provider)
        return tracer

    @property
    def recording(self) -> Tracer | None:
        """The tracer, when a span made now could be recorded (not while OpenTelemetry's proxy
        provider stands in for an unset global one)."""
        tracer = self.tracer
        if tracer is None or self.tracer_provider is not None:
            return tracer
        trace, _ = _api()
        return None if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider) \
            else tracer

    def agent_spans(self, agent_id: str) -> AgentSpans | None:
        """The spans of one agent's turns, started turn by turn (a provider set later records
        the turns after it)."""
        tracer = self.tracer
        return None if tracer is None else AgentSpans(tracer, agent_id)

    def run_span(self, child_id: str, parent_id: str, provider: str) -> RunSpan | None:
        """The span of one child run, started now (``None`` when nothing would record it)."""
        tracer = self.recording
        return None if tracer is None else RunSpan(tracer, child_id, parent_id, provider)


@dataclass(eq=False, repr=False)
class ModelCallSpan:
    """One model call's span: fed the call's chunks, ended once."""

    span: Span
    owner: AgentSpans
    usage: TokenUsage | None = field(default=None, init=False)
    _finish: FinishReason | None = field(default=None, init=False)

    @_observing
    def chunk(self, chunk: object) -> None:
        if isinstance(chunk, UsageChunk):
            self.usage = chunk.usage
        elif isinstance(chunk, FinishChunk):
            self._finish = chunk.reason

    @_observing
    def end(self, error: BaseException | None = None) -> None:
        self.owner.model_call_ended(self)
        span, finish = self.span, self._finish
        if self.usage is not None:
            span.set_attributes(_usage_attributes(self.usage))
        if finish is None:
            _end(span, error=error)
            return
        span.set_attribute("gen_ai.response.finish_reasons",
                           (str(type(finish).__struct_config__.tag),))
        _end(span, finish.failure.code if isinstance(finish, FinishError | FinishAborted) else None)


@dataclass(eq=False, repr=False)
class AgentSpans:
    """One agent's spans: its turn and step follow the events it appends (:meth:`observe`)."""

    tracer: Tracer
    agent_id: str
    _parent: Context | None = field(default=None, init=False)
    _turn: Span | None = field(default=None, init=False)
    _step: Span | None = field(default=None, init=False)
    #: The open turn's usage attributes, summed over its model calls.
    _usage: dict[str, int] = field(default_factory=dict, init=False)

    @_observing
    def woken(self) -> None:
        """The agent's task starts here: its next turns nest under the span current now."""
        self._parent = _api()[1].get_current()

    @_observing
    def observe(self, event: object) -> None:
        trace = _api()[0]
        if isinstance(event, TurnStartEvent):
            self._close_step()
            self._close_turn(None)
            self._turn = _start(self.tracer, "invoke_agent", context=self._parent,
                                 attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.id": self.agent_id,
                "gen_ai.conversation.id": self.agent_id,
                "turnfork.turn": event.data.turn})
        elif isinstance(event, StepStartEvent):
            self._close_step()
            context = None if self._turn is None else trace.set_span_in_context(self._turn)
            self._step = _start(self.tracer, "step", context=context, attributes={
                "turnfork.turn": event.data.turn, "turnfork.step": event.data.step})
        elif isinstance(event, TurnEndEvent):
            self._close_step()
            self._close_turn(event)

    def model_call(self, config: LlmCallConfig) -> ModelCallSpan:
        trace = _api()[0]
        parent = self._step or self._turn
        attributes: dict[str, str | int] = {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": config.provider,
            "gen_ai.request.model": config.model, "gen_ai.conversation.id": self.agent_id}
        if not isinstance(config.max_tokens, UnsetType):
            attributes["gen_ai.request.max_tokens"] = config.max_tokens
        span = _start(
            self.tracer, f"chat {config.model}", kind=trace.SpanKind.CLIENT, attributes=attributes,
            context=None if parent is None else trace.set_span_in_context(parent))
        return ModelCallSpan(span, self)

    @_observing
    def model_call_ended(self, call: ModelCallSpan) -> None:
        if call.usage is not None:
            for name, count in _usage_attributes(call.usage).items():
                self._usage[name] = self._usage.get(name, 0) + count

    def tools(self) -> contextlib.AbstractContextManager[None]:
        """Run tools with the step's span current (a child run they start nests under it)."""
        return _current(self._step or self._turn)

    @_observing
    def close(self) -> None:
        """End whatever is still open (a disposed agent's log left open)."""
        self._close_step()
        self._close_turn(None)

    def _close_step(self) -> None:
        step, self._step = self._step, None
        if step is not None:
            step.end()

    def _close_turn(self, end: TurnEndEvent | None) -> None:
        turn, self._turn = self._turn, None
        if turn is None:
            return
        usage, self._usage = self._usage, {}
        if usage:
            turn.set_attributes(usage)
        reason = None if end is None else end.data.reason
        if reason is not None:
            turn.set_attribute("turnfork.stop_reason", stop_reason_for(reason))
        _end(turn, reason.error.code if isinstance(reason, TurnError) else None)


class RunSpan:
    """One child run's span, current while the run delivers its prompt."""

    def __init__(self, tracer: Tracer, child_id: str, parent_id: str, provider: str) -> None:
        self.span = _start(tracer, f"subagent {provider}", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": child_id,
            "gen_ai.conversation.id": child_id, "turnfork.parent.id": parent_id,
            "turnfork.subagent.provider": provider})

    def current(self) -> contextlib.AbstractContextManager[None]:
        return _current(self.span)

    @_observing
    def end(self, stop_reason: str | None, failure: LlmFailure | None = None,
            error: BaseException | None = None) -> None:
        if stop_reason is not None:
            self.span.set_attribute("turnfork.stop_reason", stop_reason)
        _end(self.span, None if failure is None else failure.code, error)
