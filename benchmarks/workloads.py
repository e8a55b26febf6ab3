"""Reproducible benchmark workloads: parent logs of DSH's shape, built with the core's constructors.

A parent turn is exactly what DSH's own fork measurement wrote (the fixture
``tests/fixtures/dsh/generated/K10-parent.events.jsonl``): the user's message spliced into the
inbox, ``turn/start``, the inbox claim, step 1 (the user message on the surface, one ``echo``
tool call streamed as block-start/block-end/usage/finish, its ``assistant/message``, the
``tool/call`` and its ``tool/result``), step 2 (the text reply ``ok`` streamed one character
per ``text-delta``), and ``turn/end``: 23 events, plus ``request/header`` and
``request/context`` in the first turn. After ``K`` completed turns one more turn is in flight
(7 events: splice, ``turn/start``, claim, ``step/start``, ``user/message`` and two chunks).

Everything is seeded: message ids are UUID-shaped strings from ``random.Random(seed)`` and the
clock advances by seeded 0/1 ms steps from a fixed epoch, so a workload is the same bytes on
every run.

:func:`repeated_log` builds the very large logs of the prefix benchmark quickly: it builds one
turn with the constructors and renumbers copies of it with ``msgspec.structs.replace`` (nested
payloads that carry no turn number or seq are shared between turns).

:func:`shell_parent` builds the same kind of parent *with the shell*: a real :class:`shell.Agent`
driven by a :class:`shell.ScriptedModel` through ``followup``/``when_idle`` with an ``echo`` tool,
left really mid-turn (its model hangs in turn K+1), ready to fork. :class:`ChildScript` is the
fork child's script (one ``echo`` call, then the text ``ok``), played by a
:class:`shell.ScriptedModel` for any number of children.
:class:`ShellWorkbench` keeps such parents on one private event loop, built once per process.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import random
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import msgspec
from msgspec.structs import replace
from returns.result import Failure

from turnfork import core

__all__ = [
    "CHILD_CALLS",
    "CHILD_OWN_EVENTS",
    "CHILD_PROVIDER",
    "EPOCH_MS",
    "EVENTS_PER_TURN",
    "FIRST_TURN_EXTRA",
    "IN_FLIGHT_EVENTS",
    "PARENT_PROVIDER",
    "SHELL_EVENTS_PER_TURN",
    "ChildScript",
    "SHELL_FIRST_TURN_EXTRA",
    "ParentLog",
    "ShellParent",
    "ShellSession",
    "ShellWorkbench",
    "child_request",
    "parent_events",
    "parent_log",
    "install_child_model",
    "repeated_log",
    "shell_parent",
    "shell_session",
    "shell_workbench",
]

#: The clock of every workload starts here (the createdAt of DSH's K10 parent, plus 3 ms).
EPOCH_MS = 1796009248935
EVENTS_PER_TURN = 23
#: ``request/header`` and ``request/context`` open the first step of the first turn.
FIRST_TURN_EXTRA = 2
IN_FLIGHT_EVENTS = 7

_SYSTEM = "You are an AI agent powered by DeepSeek Harness."
_ECHO_SCHEMA = core.ToolSchema(
    name="echo", description="echo the given text",
    parameters=msgspec.Raw(b'{"type":"object","properties":{"text":{"type":"string"}},'
                           b'"required":["text"]}'))
_MODEL = core.MessageSource(kind="model", provider="mock", model="mock")
_USER = core.MessageSource(kind="user")
_CALL_USAGE = core.TokenUsage(input_tokens=10, output_tokens=5)
_TEXT_USAGE = core.TokenUsage(input_tokens=10, output_tokens=2)
_REPLY = "ok"


class _Writer:
    """Appends events with contiguous seqs and a seeded clock."""

    def __init__(self, seed: int) -> None:
        self.events: list[core.Event] = []
        self._rng = random.Random(seed)
        self._time = EPOCH_MS

    def uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def emit(self, build: Callable[[int, int], core.Event]) -> int:
        """Append ``build(seq, time)``; returns the seq."""
        seq = len(self.events)
        self.events.append(build(seq, self._time))
        self._time += self._rng.choice((0, 0, 1))
        return seq

    def chunk(self, turn: int, step: int, chunk: core.StreamChunk) -> int:
        data = core.AssistantChunkData(turn=turn, step=step, chunk=chunk)
        return self.emit(lambda seq, time: core.AssistantChunkEvent(seq=seq, time=time, data=data))


def _open_turn(out: _Writer, turn: int, text: str) -> None:
    """Inbox splice, ``turn/start``, claim, ``step/start`` and the user message."""
    message = core.UserMessage(content=(core.TextBlock(text=text),), source=_USER, id=out.uuid())
    queued = core.InboxSplicedData(target="next-turn", start=0, inserted=(message,))
    claimed = core.InboxSplicedData(target="next-turn", start=0, removed_count=1, inserted=())
    out.emit(lambda seq, time: core.InboxSplicedEvent(seq=seq, time=time, data=queued))
    out.emit(lambda seq, time: core.TurnStartEvent(seq=seq, time=time,
                                                   data=core.TurnStartData(turn=turn)))
    out.emit(lambda seq, time: core.InboxSplicedEvent(seq=seq, time=time, data=claimed))
    out.emit(lambda seq, time: core.StepStartEvent(seq=seq, time=time,
                                                   data=core.StepData(turn=turn, step=1)))
    out.emit(lambda seq, time: core.UserMessageEvent(seq=seq, time=time, data=message,
                                                     surface_op="append"))


def _request_events(out: _Writer) -> None:
    header = core.RequestHeaderData(
        header=core.EpochHeader(config=core.LlmCallConfig(provider="mock", model="mock"),
                                system=_SYSTEM, tools=(_ECHO_SCHEMA,)),
        reason="initial")
    out.emit(lambda seq, time: core.RequestHeaderEvent(seq=seq, time=time, data=header))
    out.emit(lambda seq, time: core.OpaqueEvent(
        type="request/context", seq=seq, time=time,
        data=msgspec.Raw(b'{"provider":"mock","model":"mock"}')))


def _assistant(out: _Writer, *, turn: int, step: int, block: core.TextBlock | core.ToolCallBlock,
               usage: core.TokenUsage, cited: tuple[int, ...]) -> None:
    message = core.AssistantMessage(content=(block,), source=_MODEL, id=out.uuid())
    data = core.AssistantMessageData(turn=turn, step=step, message=message, usage=usage)
    out.emit(lambda seq, time: core.AssistantMessageEvent(
        seq=seq, time=time, data=data, source_event_seqs=cited, surface_op="append"))


def _step_end(out: _Writer, turn: int, step: int) -> None:
    out.emit(lambda seq, time: core.StepEndEvent(seq=seq, time=time,
                                                 data=core.StepData(turn=turn, step=step)))


def _completed_turn(out: _Writer, turn: int) -> None:
    index = turn - 1
    _open_turn(out, turn, f"user turn {index}")
    if turn == 1:
        _request_events(out)

    call_id = f"call-{index}"
    arguments = f'{{"text":"payload-{index}"}}'
    call = core.ToolCallBlock(id=call_id, name="echo", arguments=arguments)
    chunks = (out.chunk(turn, 1, core.BlockStart(index=0, block_type="tool-call")),
              out.chunk(turn, 1, core.BlockEnd(index=0, block=call)),
              out.chunk(turn, 1, core.UsageChunk(usage=_CALL_USAGE)),
              out.chunk(turn, 1, core.FinishChunk(reason=core.FinishToolCalls())))
    _assistant(out, turn=turn, step=1, block=call, usage=_CALL_USAGE, cited=chunks)
    call_data = core.ToolCallData(turn=turn, step=1, call_id=call_id, name="echo",
                                  arguments=arguments)
    call_seq = out.emit(lambda seq, time: core.ToolCallEvent(seq=seq, time=time, data=call_data))
    result = core.ToolResultMessage(
        source=core.MessageSource(kind="tool", call_id=call_id),
        content=(core.ToolResultBlock(tool_call_id=call_id,
                                      content=(core.TextBlock(text=f"echo:payload-{index}"),),
                                      is_error=False),),
        id=out.uuid())
    result_data = core.ToolResultData(turn=turn, step=1, message=result)
    out.emit(lambda seq, time: core.ToolResultEvent(seq=seq, time=time, data=result_data,
                                                    source_event_seqs=(call_seq,),
                                                    surface_op="append"))
    _step_end(out, turn, 1)

    out.emit(lambda seq, time: core.StepStartEvent(seq=seq, time=time,
                                                   data=core.StepData(turn=turn, step=2)))
    text = [out.chunk(turn, 2, core.BlockStart(index=0, block_type="text"))]
    text.extend(out.chunk(turn, 2, core.TextDelta(index=0, text=char)) for char in _REPLY)
    text.append(out.chunk(turn, 2, core.BlockEnd(index=0, block=core.TextBlock(text=_REPLY))))
    text.append(out.chunk(turn, 2, core.UsageChunk(usage=_TEXT_USAGE)))
    text.append(out.chunk(turn, 2, core.FinishChunk(reason=core.FinishStop())))
    _assistant(out, turn=turn, step=2, block=core.TextBlock(text=_REPLY), usage=_TEXT_USAGE,
               cited=tuple(text))
    _step_end(out, turn, 2)
    end = core.TurnEndData(turn=turn, reason=core.TurnCompleted())
    out.emit(lambda seq, time: core.TurnEndEvent(seq=seq, time=time, data=end))


def _in_flight_turn(out: _Writer, turn: int) -> None:
    _open_turn(out, turn, "in-flight parent turn")
    out.chunk(turn, 1, core.BlockStart(index=0, block_type="text"))
    out.chunk(turn, 1, core.TextDelta(index=0, text="partial"))


def parent_events(completed_turns: int, *, in_flight: bool = True, seed: int = 0,
                  ) -> tuple[core.Event, ...]:
    """A parent log: ``completed_turns`` turns of DSH's shape, then (optionally) one in flight.

    >>> len(parent_events(10))
    239
    """
    if completed_turns < 0:
        raise ValueError("completed_turns must be >= 0")
    out = _Writer(seed)
    for turn in range(1, completed_turns + 1):
        _completed_turn(out, turn)
    if in_flight:
        _in_flight_turn(out, completed_turns + 1)
    return tuple(out.events)


@dataclass(frozen=True)
class ParentLog:
    """A checked parent workload: its events, its JSONL bytes and where its seed ends."""

    completed_turns: int
    events: tuple[core.Event, ...]
    jsonl: bytes
    #: Length of the completed-turn prefix (index just past the last ``turn/end``).
    cut: int


def parent_log(completed_turns: int, *, seed: int = 0) -> ParentLog:
    """Build, check and encode the K-turn parent with one turn in flight.

    Raises ``AssertionError`` if the completed prefix is not balanced or the bytes do not decode
    back to the same events: a workload that is not what it claims must not be measured.
    """
    events = parent_events(completed_turns, seed=seed)
    cut = len(events) - IN_FLIGHT_EVENTS
    balance = core.check_balance(events[:cut])
    assert not isinstance(balance, Failure), balance.failure()
    assert balance.unwrap().completed_prefix_length == cut
    jsonl = core.encode_log(events)
    assert core.decode_log(jsonl).unwrap() == events
    return ParentLog(completed_turns=completed_turns, events=events, jsonl=jsonl, cut=cut)


def _renumbered(event: core.Event, seq: int, time: int, turn_shift: int, seq_shift: int,
                ) -> core.Event:
    if isinstance(event, core.OpaqueEvent | core.InboxSplicedEvent):
        return replace(event, seq=seq, time=time)
    data = event.data
    changes: dict[str, object] = {"seq": seq, "time": time}
    turn = getattr(data, "turn", None)
    if isinstance(turn, int):
        changes["data"] = replace(data, turn=turn + turn_shift)
    cited = getattr(event, "source_event_seqs", None)
    if isinstance(cited, tuple):
        changes["source_event_seqs"] = tuple(s + seq_shift for s in cited)
    return replace(event, **changes)


def repeated_log(min_events: int, *, seed: int = 0) -> tuple[core.Event, ...]:
    """A long parent log of at least ``min_events`` events, ending with a turn in flight.

    Turn 2 of :func:`parent_events` is the template for every later turn; each copy gets its
    own seqs, turn number, times and ``sourceEventSeqs``, and shares the rest (messages, chunks,
    call ids) with the template, which keeps a million-event log affordable. The result is
    balanced (the smoke test checks it).
    """
    turns = max(2, -(-(min_events - IN_FLIGHT_EVENTS - FIRST_TURN_EXTRA) // EVENTS_PER_TURN))
    base = parent_events(2, in_flight=False, seed=seed)
    head = list(base)
    template = base[-EVENTS_PER_TURN:]
    first_seq = template[0].seq
    events = head
    time = head[-1].time
    for turn in range(3, turns + 1):
        seq_shift = len(events) - first_seq
        time += 1
        events.extend(_renumbered(event, first_seq + k + seq_shift, time, turn - 2, seq_shift)
                      for k, event in enumerate(template))
    tail = parent_events(1, seed=seed + 1)[-IN_FLIGHT_EVENTS:]
    seq_shift = len(events) - tail[0].seq
    # The tail is turn 2 of a one-turn parent; here it is turn ``turns + 1``.
    events.extend(_renumbered(event, event.seq + seq_shift, time, turns - 1, seq_shift)
                  for event in tail)
    return tuple(events)


# --------------------------------------------------------------------------- shell-built parents

#: Events of one completed turn written by the shell's agent loop: DSH's 23, plus the one
#: ``tool-call-delta`` chunk the scripted model streams for the call's arguments (DSH's mock
#: adapter streamed none). The first turn adds ``request/header`` and ``request/context``; the
#: host writes no ``session/title``, as DSH's K10 run had no title plugin: a K-turn prefix has
#: ``24 K + 2`` events.
SHELL_EVENTS_PER_TURN = EVENTS_PER_TURN + 1
#: What the shell's first turn writes beyond the others (the header and the request context).
SHELL_FIRST_TURN_EXTRA = 2
#: Provider names of the parent's scripted model and of the children's model on every host.
PARENT_PROVIDER = "parent"
CHILD_PROVIDER = "child"
#: A fork child's own events after its script ran: ``session/end-seed``, then one turn of the
#: parent turn's shape (24 events) with ``subagent/descriptor`` before its first step, and in
#: its first step the runtime-context snapshot after the task, ``request/header`` (the child's
#: first model call) and ``request/context`` (its route is not its parent's). DSH's K10 child,
#: on its parent's route, has 28.
CHILD_OWN_EVENTS = 29
_IN_FLIGHT_TEXT = "partial"
_ECHO_PARAMETERS = {"type": "object", "properties": {"text": {"type": "string"}},
                    "required": ["text"]}


async def _echo(args: dict[str, Any], ctx: Any) -> str:
    return f"echo:{args['text']}"


def _text_reply(text: str, usage: tuple[int, int]) -> Any:
    """A text reply streamed one character per ``text-delta``, as DSH's mock adapter does."""
    from turnfork.shell import Reply

    return Reply(blocks=(core.TextBlock(text=text),), chunk_size=1,
                 usage=core.TokenUsage(input_tokens=usage[0], output_tokens=usage[1]))


def _call_reply(text: str, call_id: str) -> Any:
    """One ``echo`` call whose arguments stream as a single ``tool-call-delta``."""
    from turnfork.shell import Reply

    reply = Reply.tool_call("echo", {"text": text}, call_id=call_id, usage=(10, 5))
    return dataclasses.replace(reply, chunk_size=8)  # argument pieces of 32 characters


class ChildScript:
    """The fork child's script, as one :class:`shell.ScriptedModel` entry for any child.

    It answers from the request: a tool call of ``echo`` while the last message is not a tool
    result, else the text ``ok`` (one character per chunk), with the parent turn's usage
    figures. ``gate``, when set, holds every call before its first chunk until it is opened.
    """

    def __init__(self) -> None:
        self.gate: asyncio.Event | None = None
        #: Calls held at the gate right now.
        self.waiting = 0
        self._call = _call_reply("child", "child-call")
        self._text = _text_reply(_REPLY, (10, 2))

    async def __call__(self, request: Any) -> Any:
        if self.gate is not None:
            self.waiting += 1
            try:
                await self.gate.wait()
            finally:
                self.waiting -= 1
        return (self._text if isinstance(request.messages[-1], core.ToolResultMessage)
                else self._call)


#: Model calls a child makes running :class:`ChildScript`: the tool call, then the text.
CHILD_CALLS = 2


def child_request(label: str | None = None) -> core.StartRequest:
    """The fork request of every benchmark: a one-line prompt, the child model's provider."""
    return core.StartRequest(prompt=(core.TextBlock(text="child task"),), label=label,
                             agent_options=core.AgentOptions(provider=CHILD_PROVIDER))


def install_child_model(host: Any, script: ChildScript, children: int, *,
                        record_requests: bool = True) -> Any:
    """Register (or replace) the children's model on ``host``: a :class:`shell.ScriptedModel`
    playing ``script`` for ``children`` runs; returns it."""
    from turnfork.shell import ScriptedModel

    model = ScriptedModel([script] * (CHILD_CALLS * children), record_requests=record_requests)
    if CHILD_PROVIDER in host.models:
        host.models.unregister(CHILD_PROVIDER)
    host.models.register(CHILD_PROVIDER, model)
    return model


def _shell_host(clock_start: int, store: Any = None) -> Any:
    """A host with a deterministic clock (1 ms per reading) and counting ids (reproducible
    logs), the ``echo`` tool and a :class:`shell.ForkProvider` registered as ``fork``; no
    session titles, as in DSH's K10 composition. ``store``: its session store (default: the
    memory store)."""
    from turnfork.shell import CountingIds, ForkProvider, Host, ManualClock, Tool

    host = Host(clock=ManualClock(clock_start, step=1), ids=CountingIds("id-"),
                session_titles=False, store=store)
    host.tools.register(Tool("echo", "echo the given text", _ECHO_PARAMETERS, _echo,
                             concurrency_safe=True))
    host.subagents.register_provider(ForkProvider())
    return host


@dataclass
class ShellSession:
    """An agent built by the shell that runs whole turns of the parent's shape on demand."""

    host: Any  # shell.Host
    agent: Any  # shell.Agent
    #: The agent's :class:`shell.ScriptedModel` (made by default: it records every request).
    model: Any
    #: The children's script, for forks of this agent.
    child_script: ChildScript
    completed_turns: int = 0

    async def turn(self) -> None:
        """Run one more turn: ``user turn i``, the ``echo`` call and its result, ``ok``.

        Raises:
            AssertionError: the turn did not write the 24 events of its shape.
        """
        index = self.completed_turns
        before = len(self.agent.session)
        self.model.add(_call_reply(f"payload-{index}", f"call-{index}"),
                       _text_reply(_REPLY, (10, 2)))
        self.agent.followup(f"user turn {index}")
        await self.agent.when_idle()
        self.completed_turns += 1
        written = len(self.agent.session) - before
        assert written == SHELL_EVENTS_PER_TURN + SHELL_FIRST_TURN_EXTRA * (index == 0), written

    def use_child_model(self, children: int, *, record_requests: bool = True) -> Any:
        """:func:`install_child_model` on this session's host."""
        return install_child_model(self.host, self.child_script, children,
                                   record_requests=record_requests)


async def shell_session(*, clock_start: int = EPOCH_MS, store: Any = None) -> ShellSession:
    """A fresh idle agent on a fresh host (see :func:`_shell_host`); its model is registered
    as ``parent``. Must run on the event loop the agent will live on."""
    from turnfork.shell import ScriptedModel

    host = _shell_host(clock_start, store)
    model = ScriptedModel()
    host.models.register(PARENT_PROVIDER, model)
    agent = host.create_agent(provider=PARENT_PROVIDER, model="mock", system=_SYSTEM)
    return ShellSession(host=host, agent=agent, model=model, child_script=ChildScript())


@dataclass(frozen=True)
class ShellParent:
    """A parent agent built by the shell, mid-turn: K completed turns, turn K+1 in flight."""

    completed_turns: int
    host: Any  # shell.Host (the shell is imported lazily: the core benchmarks do not need it)
    agent: Any  # shell.Agent
    #: The children's script (its gate holds their model calls).
    child_script: ChildScript
    #: Wall time the K turns took to run through the agent loop.
    build_seconds: float

    @property
    def cut(self) -> int:
        """Length of the completed-turn prefix (what a fork child is seeded with)."""
        return int(self.agent.session.trace.completed_prefix_length)

    @property
    def events(self) -> int:
        return len(self.agent.session)

    @property
    def child_model(self) -> Any:
        """The :class:`shell.ScriptedModel` the children call now."""
        return self.host.models.get(CHILD_PROVIDER)

    def use_child_model(self, children: int, *, record_requests: bool = True) -> Any:
        """Give the children a fresh :class:`shell.ScriptedModel` with a script for
        ``children`` runs of :class:`ChildScript`; returns it. ``record_requests`` as in
        ``ScriptedModel`` (on: it keeps every request, by reference)."""
        return install_child_model(self.host, self.child_script, children,
                                   record_requests=record_requests)


async def shell_parent(completed_turns: int, *, clock_start: int = EPOCH_MS,
                       child_runs: int = 100, store: Any = None) -> ShellParent:
    """Build a parent with the shell: ``completed_turns`` turns of DSH's shape, one in flight.

    Each turn: the user message ``user turn i``, the model calls ``echo`` (id ``call-i``,
    usage 10/5), the tool answers ``echo:payload-i``, the model replies ``ok`` one character
    per chunk (usage 10/2) (:meth:`ShellSession.turn`). Then turn K+1 starts and its model
    hangs after streaming part of a text block, so the parent is really mid-turn. The host is
    :func:`_shell_host`'s, with the parent's :class:`shell.ScriptedModel` as ``parent`` and a
    :class:`shell.ScriptedModel` playing :class:`ChildScript` for ``child_runs`` children as
    ``child`` (:meth:`ShellParent.use_child_model` renews it); ``store``: the host's session
    store (default: the memory store). Must run on the event loop the parent will live on.

    Raises:
        AssertionError: the parent is not what it claims (shape, or not mid-turn).
    """
    from turnfork.shell import Reply

    if completed_turns < 1:
        raise ValueError("completed_turns must be >= 1")
    session = await shell_session(clock_start=clock_start, store=store)
    agent, model = session.agent, session.model
    started = time.perf_counter()
    for _ in range(completed_turns):
        await session.turn()
    build_seconds = time.perf_counter() - started
    cut = len(agent.session)
    assert cut == SHELL_EVENTS_PER_TURN * completed_turns + SHELL_FIRST_TURN_EXTRA, cut
    # The turn in flight: a text block opened and one delta streamed, then the model hangs.
    model.add(dataclasses.replace(Reply.hang(_IN_FLIGHT_TEXT), chunk_size=16))
    agent.followup("in-flight parent turn")
    for _ in range(1000):  # until the hanging model has streamed its partial block
        if len(agent.session) == cut + IN_FLIGHT_EVENTS:
            break
        await asyncio.sleep(0)
    trace = agent.session.trace
    assert len(agent.session) == cut + IN_FLIGHT_EVENTS, len(agent.session)
    assert trace.open_turn == completed_turns + 1 and trace.completed_prefix_length == cut
    assert agent.running and model.calls == 2 * completed_turns + 1
    parent = ShellParent(completed_turns=completed_turns, host=session.host, agent=agent,
                         child_script=session.child_script, build_seconds=build_seconds)
    parent.use_child_model(child_runs)
    return parent


T = TypeVar("T")


class ShellWorkbench:
    """Shell-built parents on one private event loop, each built once and reused.

    The parents stay mid-turn for as long as the workbench lives: benchmarks run their
    coroutines with :meth:`run` on the same loop. :meth:`close` disposes everything.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._parents: dict[int, ShellParent] = {}

    def parent(self, completed_turns: int) -> ShellParent:
        """The K-turn parent, built on first use."""
        if completed_turns not in self._parents:
            self._parents[completed_turns] = self.run(shell_parent(completed_turns))
        return self._parents[completed_turns]

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        """Dispose every parent (and anything left on its host), then close the loop."""
        if self.loop.is_closed():
            return
        for parent in self._parents.values():
            self.run(parent.host.aclose())
        self._parents.clear()
        self.loop.close()


_WORKBENCH: list[ShellWorkbench] = []


def shell_workbench() -> ShellWorkbench:
    """The process's workbench (made on first use, closed at exit)."""
    if not _WORKBENCH:
        _WORKBENCH.append(ShellWorkbench())
        atexit.register(_WORKBENCH[0].close)
    return _WORKBENCH[0]
