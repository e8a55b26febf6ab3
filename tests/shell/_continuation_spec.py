"""Shared by the ports of DSH's continuation specs (``continuation.spec.ts``,
``continuation-inheritance.spec.ts``, ``list-children.spec.ts``, the control tools' specs): the
composition DSH's ``setupWith`` boots (a JSONL store, the ``spawn`` and ``fork`` providers, one
scripted model ``mock`` serving every agent, a parent agent ``parent``), and the probes those
specs read (user texts, settlement notices, cancellations, the manager's warnings)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _continuation_helpers import Lifecycle, eventually, gated, texts, user_texts
from _shell_helpers import make_host, of_type

from turnfork.core import (
    CancelCause,
    Event,
    TextBlock,
    UserMessage,
    UserMessageEvent,
)
from turnfork.core.continuation import ContinuableStart
from turnfork.shell import (
    Agent,
    ForkProvider,
    Host,
    JsonlSessionStore,
    Reply,
    ScriptedModel,
    SpawnProvider,
    SubagentRuntime,
)
from turnfork.shell.models.scripted import ScriptEntry
from turnfork.shell.subagents import ContinuableStarted, ContinuationManager

__all__ = [
    "Spec",
    "spec_host",
    "park",
    "request",
    "start",
    "no_activation",
    "persisted",
    "has_user_text",
    "notices",
    "Notice",
    "observe_cancel",
    "Warnings",
    "gate",
    "user_texts",
    "eventually",
]

CONTINUATION_LOGGER = "turnfork.shell.subagents.continuation"


@dataclass
class Spec:
    """One booted composition."""

    host: Host
    parent: Agent
    model: ScriptedModel
    lifecycle: Lifecycle

    @property
    def manager(self) -> ContinuationManager:
        return self.host.subagents.continuation


def spec_host(root: Path | None, script: Sequence[ScriptEntry] = (), *,
              parent_id: str = "parent", **host_options: Any) -> Spec:
    """DSH's ``setupWith``: persistence under ``root`` (``None``: none), both providers, one
    model ``mock`` for every agent (children inherit the parent's route), parent ``parent``."""
    host = make_host(None if root is None else JsonlSessionStore(root))
    for name, value in host_options.items():
        setattr(host, name, value)
    runtime = SubagentRuntime(host)
    runtime.register_provider(SpawnProvider())
    runtime.register_provider(ForkProvider())
    lifecycle = Lifecycle(runtime)
    model = ScriptedModel(script)
    host.models.register("mock", model)
    parent = host.create_agent(parent_id, provider="mock", model="mock")
    return Spec(host=host, parent=parent, model=model, lifecycle=lifecycle)


def park(agent: Agent) -> None:
    """DSH's ``parkParent``: every step of ``agent`` is refused before its model call, so a
    script sized for the children is not spent on the parent's turns."""
    agent.pre_step_hooks.append(lambda *_: False)


def request(prompt: str = "child task", *, label: str = "child task",
            **fields: Any) -> ContinuableStart:
    """DSH's ``startSpec``: label ``child task``, the prompt as one text block."""
    return ContinuableStart(prompt=(TextBlock(text=prompt),), label=label, **fields)


async def start(spec: Spec, parent: Agent | None = None, provider: str = "spawn",
                **options: Any) -> ContinuableStarted:
    fields = {key: options.pop(key) for key in ("signal", "child_id") if key in options}
    return await spec.manager.start_continuable(
        provider, request(**options), parent=parent or spec.parent, **fields)


async def no_activation(host: Host, child_id: str, seconds: float = 5.0) -> None:
    """DSH's ``waitNoActivation``: the child's agent has left the registry and its
    Activation is gone."""
    manager = host.subagents.continuation
    await eventually(lambda: host.agents.get(child_id) is None
                     and all(a.child_id != child_id for a in manager.activations()), seconds)


def persisted(host: Host, child_id: str) -> Sequence[Event]:
    """The child's log as its file holds it (read without taking it)."""
    store = host.sessions
    assert isinstance(store, JsonlSessionStore)
    return store.inspect(child_id).events


def has_user_text(events: Sequence[Event], text: str) -> bool:
    return any(text in texts(event.data.content) for event in of_type(events, UserMessageEvent))


@dataclass(frozen=True)
class Notice:
    sender: str
    text: str
    summary: str


def notices(agent: Agent) -> list[Notice]:
    """Every settlement notice ``agent`` received, logged or still queued, as DSH's
    ``settlementNotices`` reads them."""
    messages: list[UserMessage] = [event.data for event in
                                   of_type(agent.session.events, UserMessageEvent)]
    messages.extend(agent.pending)
    found = []
    for message in messages:
        source = message.source
        if source.kind != "subagent-settled":
            continue
        found.append(Notice(sender=str(source.get("senderSessionId")),
                            summary=str(source.get("summary")),
                            text="\n".join(texts(message.content))))
    return found


def observe_cancel(agent: Agent, callback: Callable[[CancelCause | None, bool], None], *,
                   every: bool = False) -> None:
    """DSH's ``observeCancel``: ``callback(cause, keep_queued)`` at the first ``agent.cancel``
    (``every``: at each one, as a spy records them)."""
    cancel = agent.cancel
    seen: list[bool] = []

    def observed(cause: CancelCause | None = None, *, keep_queued: bool = False) -> None:
        if every or not seen:
            seen.append(True)
            callback(cause, keep_queued)
        cancel(cause, keep_queued=keep_queued)

    agent.cancel = observed  # type: ignore[method-assign]


class Warnings(logging.Handler):
    """The manager's warnings (DSH's ``ctx.logger.warn``), collected while installed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def __enter__(self) -> Warnings:
        logging.getLogger(CONTINUATION_LOGGER).addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger(CONTINUATION_LOGGER).removeHandler(self)


def gate(reply: Reply) -> tuple[ScriptEntry, asyncio.Event]:
    """A script entry held until its event is set (DSH's ``GatedAdapter`` entry)."""
    event = asyncio.Event()
    return gated(reply, event), event
