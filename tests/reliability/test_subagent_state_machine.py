"""Cancellation and disposal, model-based (issue 8, item 2): a hypothesis state machine starts
fork and spawn children whose models answer, hang, fail, hit max-tokens, call a tool or wait
for a gate; aborts them before and after publication; cancels, delegates from and disposes the
parent; disposes runs once, twice or concurrently; in any order. After every step and at the
end every log traces clean (closed when its agent is idle), disposed children are gone from
``host.agents``, settled results carry the stop reason the model predicts, siblings are
unaffected by each other, and teardown leaves no asyncio task behind.

A second machine does the same for continuable children (issue 16.7): started, followed up
(queued in a resident child, or cold-resumed from its JSONL log), interrupted and disposed, each
caller cancelled at any point; every log stays balanced and nothing is left behind.

Budget: ``CI_EXAMPLES`` machines of up to ``CI_STEPS`` steps; ``TURNFORK_STATEFUL_EXAMPLES=N``
(and optionally ``TURNFORK_STATEFUL_STEPS=M``) runs a longer search.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Literal, TypeVar

import pytest
from _budget import examples
from _runtime_helpers import (
    CountingTool,
    assert_balanced,
    assert_traces_clean,
    make_host,
    request,
    result_text,
    scripted_parent,
    text_of,
    tool_results,
    wait_for,
)
from hypothesis import HealthCheck, settings
from hypothesis import event as statistic
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from turnfork.core import (
    STOP_REASONS,
    AgentOptions,
    AssistantChunkEvent,
    CancelDisposed,
    CancelParent,
    CancelUser,
    SubagentResult,
    TextBlock,
    TurnAborted,
    TurnCompleted,
    TurnEndEvent,
)
from turnfork.core.continuation import ContinuableStart
from turnfork.shell import (
    AbortController,
    Agent,
    CountingIds,
    ForkProvider,
    Host,
    JsonlSessionStore,
    ManualClock,
    ModelRequest,
    Reply,
    ScriptedModel,
    SpawnProvider,
    SubagentRun,
    SubagentRuntime,
    SubagentTool,
)
from turnfork.shell.models.scripted import ScriptEntry
from turnfork.shell.subagents import (
    AncestorAuthority,
    SubagentAbortedError,
    SubagentEnd,
    SubagentEvent,
    SubagentStart,
)

T = TypeVar("T")

EXAMPLES_ENV = "TURNFORK_STATEFUL_EXAMPLES"
STEPS_ENV = "TURNFORK_STATEFUL_STEPS"
CI_EXAMPLES = 500
CI_STEPS = 30
#: A safety bound per step (a hang fails the example instead of the suite): not a speed target.
STEP_SECONDS = 10.0

Script = Literal["answer", "hang", "fail", "max-tokens", "tool-then-answer", "gated"]
SCRIPTS: tuple[Script, ...] = ("answer", "hang", "fail", "max-tokens", "tool-then-answer",
                               "gated")
#: The stop reason a child reaches when nothing interferes (``None``: it never settles alone).
NATURAL: dict[Script, str | None] = {
    "answer": "completed", "hang": None, "fail": "error", "max-tokens": "max-tokens",
    "tool-then-answer": "completed", "gated": "completed"}
KINDS = st.sampled_from(("fork", "spawn"))
PICK = st.integers(0, 10_000)


@dataclass
class Child:
    """A child started directly through ``host.subagents.start`` and what the model expects."""

    number: int
    script: Script
    run: SubagentRun
    controller: AbortController | None
    gate: asyncio.Event | None
    #: The stop reason its result must have, when known.
    expected: str | None
    #: Aborted or disposed before it settled.
    cancelled: bool = False
    disposed: bool = False

    @property
    def answer(self) -> str:
        return f"answer {self.number}"


def _child_script(script: Script, number: int, gate: asyncio.Event | None,
                  ) -> list[ScriptEntry]:
    answer = f"answer {number}"
    if script == "answer":
        return [Reply.text(answer)]
    if script == "hang":
        return [Reply.hang(f"partial {number}")]
    if script == "fail":
        return [Reply.error("OVERLOADED", f"model {number} failed", text=f"so far {number}")]
    if script == "max-tokens":
        return [Reply.max_tokens(f"cut {number}")]
    if script == "tool-then-answer":
        return [Reply.tool_call("echo", {"text": str(number)}), Reply.text(answer)]
    assert gate is not None

    async def after_gate(_: ModelRequest) -> Reply:
        await gate.wait()
        return Reply.text(answer)

    return [after_gate]


def _settled(run: SubagentRun) -> SubagentResult:
    """The result of a settled run (it must not have failed: no infrastructure faults here)."""
    assert run.done, f"{run} has not settled"
    result = run.result.result()
    assert isinstance(result, SubagentResult), result
    assert result.stop_reason in STOP_REASONS, result.stop_reason
    return result


def _completed_turn(run: SubagentRun) -> bool:
    return any(isinstance(event, TurnEndEvent) and isinstance(event.data.reason, TurnCompleted)
               for event in run.own_events())


def _last_turn_end(agent: Agent) -> object:
    ends = [event for event in agent.session.events if isinstance(event, TurnEndEvent)]
    return ends[-1].data.reason if ends else None


def _examples() -> int:
    return int(os.environ.get(EXAMPLES_ENV) or examples(CI_EXAMPLES))


def _steps() -> int:
    return int(os.environ.get(STEPS_ENV) or CI_STEPS)


@settings(max_examples=_examples(), stateful_step_count=_steps(), deadline=None,
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
class SubagentLifecycle(RuleBasedStateMachine):
    """One host, one parent agent, and children started, aborted and disposed at will."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.host = make_host()
        self.parent, self.parent_model = scripted_parent(self.host)
        self.echo = CountingTool("echo", pauses=2)
        self.host.tools.register(self.echo.tool)
        self.tool_model = ScriptedModel()
        self.host.models.register("tool-child", self.tool_model)
        SubagentTool(provider="fork", agent_options=AgentOptions(provider="tool-child")
                     ).install(self.host)
        self.children: list[Child] = []
        #: Every run published (direct, observer-aborted, and the parent tool's children).
        self.published: list[SubagentRun] = []
        self.parent_live = True
        #: What the parent's open turn is doing: None (idle), "hang" or "delegate-hang".
        self.parent_mode: str | None = None
        self.numbers = 0
        self._abort_on_start: AbortController | None = None
        self.host.subagents.subscribe(self._observe)

    # ------------------------------------------------------------------ plumbing

    def _run(self, awaitable: Awaitable[T], seconds: float = STEP_SECONDS) -> T:
        """Run one step on this machine's loop, bounded in time."""

        async def step() -> T:
            async with asyncio.timeout(seconds):
                return await awaitable

        return self.loop.run_until_complete(step())

    def _observe(self, event: SubagentEvent) -> None:
        if isinstance(event, SubagentStart):
            self.published.append(event.run)
            if self._abort_on_start is not None:
                controller, self._abort_on_start = self._abort_on_start, None
                controller.abort("aborted by an observer")

    def _next_number(self) -> int:
        self.numbers += 1
        return self.numbers

    def _tool_runs(self) -> list[SubagentRun]:
        direct = {id(child.run) for child in self.children}
        return [run for run in self.published if id(run) not in direct]

    def _prepare(self, script: Script) -> tuple[int, str, asyncio.Event | None]:
        number = self._next_number()
        gate = asyncio.Event() if script == "gated" else None
        provider = f"child-{number}"
        self.host.models.register(provider, ScriptedModel(_child_script(script, number, gate)))
        return number, provider, gate

    def _expect_cancelled(self, child: Child) -> None:
        """An abort or dispose now: a run still settling reports ``aborted`` unless its turn
        already completed; a settled run keeps its result."""
        if child.run.done:
            return
        child.cancelled = True
        child.expected = "completed" if _completed_turn(child.run) else "aborted"

    def _check_fork_seed(self, run: SubagentRun, kind: str) -> None:
        parent_events = self.parent.session.events
        child_events = run.local_agent.session.events
        if kind == "spawn":
            assert run.seed_length == 0
            return
        cut = max((event.seq + 1 for event in parent_events
                   if isinstance(event, TurnEndEvent)), default=0)
        assert run.seed_length == cut
        assert all(child_events[i] is parent_events[i] for i in range(cut))

    # ------------------------------------------------------------------ rules

    @initialize(completed=st.integers(0, 2))
    def parent_history(self, completed: int) -> None:
        """The parent starts with 0, 1 or 2 completed turns."""
        for _ in range(completed):
            self._run(self._parent_answers())

    async def _parent_answers(self) -> None:
        self.parent_model.add(Reply.text(f"parent answer {self._next_number()}"))
        self.parent.followup("a parent task")
        await self.parent.when_idle()
        assert _last_turn_end(self.parent) == TurnCompleted()

    @precondition(lambda self: self.parent_live)
    @rule(kind=KINDS, script=st.sampled_from(SCRIPTS), with_signal=st.booleans())
    def start_child(self, kind: str, script: Script, with_signal: bool) -> None:
        """Start a fork or spawn child, with or without an abort signal."""
        self._run(self._start_child(kind, script, with_signal))

    async def _start_child(self, kind: str, script: Script, with_signal: bool) -> None:
        number, provider, gate = self._prepare(script)
        controller = AbortController() if with_signal else None
        run = await self.host.subagents.start(
            kind, request(f"task {number}", agent_options=AgentOptions(provider=provider)),
            parent=self.parent, signal=None if controller is None else controller.signal)
        assert run.id in self.host.agents and run in self.host.subagents.runs()
        self._check_fork_seed(run, kind)
        self.children.append(Child(number=number, script=script, run=run,
                                   controller=controller, gate=gate,
                                   expected=NATURAL[script]))

    @precondition(lambda self: self.parent_live)
    @rule(kind=KINDS, script=st.sampled_from(SCRIPTS),
          how=st.sampled_from(("already-aborted", "aborted-in-setup", "start-task-cancelled")))
    def abort_before_publication(self, kind: str, script: Script, how: str) -> None:
        """Abort before the child is published: start fails and leaves nothing anywhere."""
        self._run(self._abort_before_publication(kind, script, how))

    async def _abort_before_publication(self, kind: str, script: Script, how: str) -> None:
        number, provider, _ = self._prepare(script)
        model = self.host.models.get(provider)
        assert isinstance(model, ScriptedModel)
        agents, sessions = set(self.host.agents.list()), self.host.sessions.list()
        runs, published = self.host.subagents.runs(), len(self.published)
        controller = AbortController()
        if how == "already-aborted":
            controller.abort("before start")
        start = asyncio.ensure_future(self.host.subagents.start(
            kind, request(f"task {number}", agent_options=AgentOptions(provider=provider)),
            parent=self.parent, signal=controller.signal))
        await asyncio.sleep(0)  # the start task runs into its unpublished setup window
        if how == "already-aborted":
            with pytest.raises(SubagentAbortedError):
                await start
        else:
            assert not start.done()
            assert len(self.host.sessions.list()) == len(sessions) + 1  # the unpublished child
            if how == "aborted-in-setup":
                controller.abort("during setup")
                with pytest.raises(SubagentAbortedError):
                    await start
            else:
                start.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await start
        assert set(self.host.agents.list()) == agents
        assert self.host.sessions.list() == sessions
        assert self.host.subagents.runs() == runs and len(self.published) == published
        assert model.calls == 0

    @precondition(lambda self: self.parent_live)
    @rule(kind=KINDS, script=st.sampled_from(SCRIPTS))
    def abort_from_start_observer(self, kind: str, script: Script) -> None:
        """A SubagentStart observer aborts the signal: the published child never runs its
        prompt and its result is aborted."""
        self._run(self._abort_from_start_observer(kind, script))

    async def _abort_from_start_observer(self, kind: str, script: Script) -> None:
        number, provider, gate = self._prepare(script)
        controller = AbortController()
        self._abort_on_start = controller
        run = await self.host.subagents.start(
            kind, request(f"task {number}", agent_options=AgentOptions(provider=provider)),
            parent=self.parent, signal=controller.signal)
        assert self._abort_on_start is None and controller.signal.aborted and run.cancelled
        self._check_fork_seed(run, kind)
        self.children.append(Child(number=number, script=script, run=run,
                                   controller=controller, gate=gate, expected="aborted",
                                   cancelled=True))
        await run.result
        model = self.host.models.get(provider)
        assert isinstance(model, ScriptedModel) and model.calls == 0

    @precondition(lambda self: self.children)
    @rule(pick=PICK)
    def abort_child(self, pick: int) -> None:
        """Abort a published child (its signal, or ``run.abort`` when it has none)."""
        self._run(self._abort(self.children[pick % len(self.children)]))

    async def _abort(self, child: Child) -> None:
        # The prediction and the abort happen in one synchronous stretch: nothing runs between.
        self._expect_cancelled(child)
        if child.controller is not None:
            child.controller.abort("the owner aborted")
        else:
            child.run.abort("the owner aborted")

    @precondition(lambda self: self.children)
    @rule(pick=PICK, mode=st.sampled_from(("once", "twice", "concurrently")))
    def dispose_child(self, pick: int, mode: str) -> None:
        """Dispose a child once, twice in a row, or twice at the same time."""
        child = self.children[pick % len(self.children)]
        self._run(self._dispose(child, mode))
        child.disposed = True

    async def _dispose(self, child: Child, mode: str) -> None:
        run = child.run

        async def predicted_dispose() -> None:
            # The prediction and dispose()'s synchronous start run in one stretch.
            self._expect_cancelled(child)
            await run.dispose()

        if mode == "concurrently":
            await asyncio.gather(predicted_dispose(), run.dispose())
        else:
            await predicted_dispose()
            if mode == "twice":
                await run.dispose()
        assert run.done and run.local_agent.disposed
        assert run.id not in self.host.agents and run not in self.host.subagents.runs()

    @precondition(lambda self: any(not c.run.done and (c.script != "hang" or c.cancelled)
                                   for c in self.children))
    @rule(pick=PICK)
    def let_a_child_finish(self, pick: int) -> None:
        """Open a gated child's gate (if it has one) and wait for a settling child's result."""
        pending = [c for c in self.children
                   if not c.run.done and (c.script != "hang" or c.cancelled)]
        self._run(self._finish(pending[pick % len(pending)]))

    async def _finish(self, child: Child) -> None:
        if child.gate is not None:
            child.gate.set()
        await child.run.result
        self._check_result(child)

    @rule(ticks=st.integers(1, 40))
    def let_time_pass(self, ticks: int) -> None:
        """Let every task run for a few loop iterations."""
        self._run(self._ticks(ticks))

    @staticmethod
    async def _ticks(ticks: int) -> None:
        for _ in range(ticks):
            await asyncio.sleep(0)

    @precondition(lambda self: self.parent_live and not self.parent.running)
    @rule(kind=st.sampled_from(("answer", "hang", "delegate-answer", "delegate-hang")))
    def parent_turn(self, kind: str) -> None:
        """The idle parent runs a turn: it answers, hangs, or delegates through its subagent
        tool to a fork child that answers (the parent then completes) or hangs."""
        self._run(self._parent_turn(kind))

    async def _parent_turn(self, kind: str) -> None:
        parent, model = self.parent, self.parent_model
        if kind == "answer":
            await self._parent_answers()
            return
        number = self._next_number()
        if kind == "hang":
            model.add(Reply.hang(f"parent partial {number}"))
            calls = model.calls + 1
            parent.followup("a parent task")
            await wait_for(lambda: model.calls == calls
                           and isinstance(parent.session.events[-1], AssistantChunkEvent))
            self.parent_mode = "hang"
            return
        child_answer = f"tool child answer {number}"
        self.tool_model.add(Reply.text(child_answer) if kind == "delegate-answer"
                            else Reply.hang(f"tool child partial {number}"))
        model.add(Reply.tool_call("subagent", {"description": "delegated",
                                               "prompt": f"tool task {number}"}))
        published = len(self.published)
        if kind == "delegate-answer":
            model.add(Reply.text(f"parent after child {number}"))
            parent.followup("delegate a task")
            await parent.when_idle()
            assert _last_turn_end(parent) == TurnCompleted()
            assert result_text(tool_results(parent.session.events)[-1]) == child_answer
            (run,) = self.published[published:]
            assert _settled(run).stop_reason == "completed"
            assert run.local_agent.disposed and run.id not in self.host.agents
            return
        calls = self.tool_model.calls + 1
        parent.followup("delegate a task")
        await wait_for(lambda: self.tool_model.calls == calls)
        self.parent_mode = "delegate-hang"

    @precondition(lambda self: self.parent_live)
    @rule()
    def cancel_parent(self) -> None:
        """Cancel the parent's turn (a no-op when it is idle); children it delegated to through
        its tool are aborted with cause parent and disposed; directly started ones go on."""
        self._run(self._stop_parent(dispose=False))

    @precondition(lambda self: self.parent_live)
    @rule()
    def dispose_parent(self) -> None:
        """Dispose the parent: every child it started goes with it, however it was started
        (a run still working ends aborted, or as its script ends if it settled meanwhile: its
        log's commit may still be under way when the parent's disposal starts)."""
        live = [child for child in self.children if not child.disposed]
        working = {child.number for child in live if not child.run.done}
        self._run(self._stop_parent(dispose=True))
        self.parent_live = False
        for child in live:
            assert child.run.done and child.run.local_agent.disposed
            assert child.run.id not in self.host.agents
            if child.number in working:
                child.cancelled = True
                stop = _settled(child.run).stop_reason
                assert stop in ("completed", "aborted", NATURAL[child.script]), (child, stop)
                child.expected = stop
            child.disposed = True

    async def _stop_parent(self, *, dispose: bool) -> None:
        parent, mode = self.parent, self.parent_mode
        before = len(parent.session.events)
        tool_run = self._tool_runs()[-1] if mode == "delegate-hang" else None
        if dispose:
            await parent.dispose()
            assert parent.id not in self.host.agents
        else:
            parent.cancel()
            await parent.when_idle()
        self.parent_mode = None
        if mode is None:
            assert len(parent.session.events) == before
            return
        cause = CancelDisposed() if dispose else CancelUser()
        assert _last_turn_end(parent) == TurnAborted(reason=cause)
        if tool_run is not None:
            assert _settled(tool_run).stop_reason == "aborted"
            assert _last_turn_end(tool_run.local_agent) == TurnAborted(reason=CancelParent())
            assert tool_run.local_agent.disposed and tool_run.id not in self.host.agents

    # ------------------------------------------------------------------ invariants

    def _check_result(self, child: Child) -> None:
        result = _settled(child.run)
        if child.expected is not None:
            assert result.stop_reason == child.expected, (child, result)
        if child.expected == "completed":
            assert text_of(result.output) == child.answer, (child, result)

    @invariant()
    def logs_trace_clean(self) -> None:
        """Every log in the store (and every child's, even released) obeys the balance rules;
        the log of an agent with no running loop is closed."""
        sessions = [self.host.sessions.get(sid) for sid in self.host.sessions.list()]
        for session in sessions:
            assert session is not None
            assert_traces_clean(session.events, session.id)
        for agent in (self.parent, *(run.local_agent for run in self.published)):
            if agent.running:
                assert_traces_clean(agent.session.events, agent.id)
            else:
                assert_balanced(agent.session.events, agent.id)

    @invariant()
    def registries_hold_exactly_the_live_agents(self) -> None:
        """Disposed children are gone from host.agents and the runtime; live ones are there."""
        known = {run.local_agent.id: run for run in self.published}
        for agent in self.host.agents.list():
            assert agent is self.parent or agent.id in known
            assert not agent.disposed
        for run in self.published:
            assert (run.id in self.host.agents) == (not run.local_agent.disposed)
            assert (run in self.host.subagents.runs()) == (not run.local_agent.disposed)
        for child in self.children:
            assert child.disposed == child.run.local_agent.disposed
        assert (self.parent.id in self.host.agents) == self.parent_live

    @invariant()
    def settled_results_are_as_predicted(self) -> None:
        """Every settled result is a SubagentResult with a valid stop reason: the one the
        child's script predicts, or aborted after an abort/dispose of a running child."""
        for child in self.children:
            if child.run.done:
                self._check_result(child)
        for run in self._tool_runs():
            if run.done:
                _settled(run)

    # ------------------------------------------------------------------ the end

    def teardown(self) -> None:
        try:
            self._run(self._close(), seconds=3 * STEP_SECONDS)
        finally:
            self.loop.close()

    async def _close(self) -> None:
        # Siblings are unaffected: whatever happened to the others, a child left alone
        # settles with its own script's result.
        for child in self.children:
            if child.gate is not None:
                child.gate.set()
        for child in self.children:
            if not child.run.done and (child.script != "hang" or child.cancelled):
                await child.run.result
                self._check_result(child)
        for child in self.children:  # one at a time: each prediction right before its dispose
            self._expect_cancelled(child)
            await child.run.dispose()
        await self.parent.dispose()
        await self.host.subagents.aclose()
        await self.host.aclose()
        for child in self.children:
            self._check_result(child)
            cancelled = " after an abort/dispose" if child.cancelled else ""
            statistic(f"{child.script} child: {_settled(child.run).stop_reason}{cancelled}")
        for run in self._tool_runs():
            statistic(f"tool child: {_settled(run).stop_reason}")
        for run in self.published:
            _settled(run)
            assert_balanced(run.local_agent.session.events, run.id)
        assert_balanced(self.parent.session.events, self.parent.id)
        assert len(self.host.agents) == 0 and self.host.subagents.runs() == ()
        assert self.host.sessions.list() == ()
        leftover = asyncio.all_tasks() - {asyncio.current_task()}
        assert not leftover, f"tasks left behind: {leftover}"


TestSubagentLifecycle = SubagentLifecycle.TestCase


# --------------------------------------------------------------------------- continuable children

#: The continuable machine's CI budget (its own: each step touches a JSONL store).
CONTINUABLE_CI_EXAMPLES = 120
ChildPlan = Literal["answer", "hang", "fail", "max-tokens", "tool-then-answer", "gated"]
CHILD_PLANS: tuple[ChildPlan, ...] = ("answer", "hang", "fail", "max-tokens",
                                      "tool-then-answer", "gated")
CANCEL_AFTER = st.sampled_from((None, 0, 1, 3))


class TurnModel:
    """A child's model: each turn's first call follows the next plan queued for it (a plain
    answer when none is); a tool step is followed by an answer."""

    def __init__(self, gate: asyncio.Event) -> None:
        self.plans: list[ChildPlan] = []
        self.gate = gate
        self.calls = 0
        self._after_tool = False

    def stream(self, request: ModelRequest) -> object:
        self.calls += 1
        if self._after_tool:
            self._after_tool = False
            return ScriptedModel([Reply.text(f"after tool {self.calls}")]).stream(request)
        plan = self.plans.pop(0) if self.plans else "answer"
        if plan == "tool-then-answer":
            self._after_tool = True
            return ScriptedModel([Reply.tool_call("echo", {"text": str(self.calls)},
                                                  call_id=f"call-{self.calls}")]).stream(request)
        entry: ScriptEntry
        if plan == "gated":
            gate = self.gate

            async def entry(_: ModelRequest) -> Reply:
                await gate.wait()
                return Reply.text(f"gated {self.calls}")
        else:
            entry = {"answer": Reply.text(f"answer {self.calls}"),
                     "hang": Reply.hang(f"partial {self.calls}"),
                     "fail": Reply.error("OVERLOADED", "model failed"),
                     "max-tokens": Reply.max_tokens(f"cut {self.calls}")}[plan]
        return ScriptedModel([entry]).stream(request)


@dataclass
class Continued:
    """A continuable child the machine started (its id, model, gate)."""

    id: str
    model: TurnModel
    gate: asyncio.Event


def _store_root() -> str:
    """A scratch directory for the machine's JSONL store (tmpfs when there is one: the machine
    tests the runtime's bookkeeping, not the disk)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix="turnfork-continuable-", dir=base)


@settings(max_examples=int(os.environ.get(EXAMPLES_ENV) or examples(CONTINUABLE_CI_EXAMPLES)),
          stateful_step_count=_steps(), deadline=None,
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
class ContinuableLifecycle(RuleBasedStateMachine):
    """One host with a JSONL store, one parent, and continuable fork and spawn children started,
    followed up (resident or resumed from their logs), interrupted and disposed at will, each
    operation's caller cancelled at any point. After every step every live log traces clean
    and is balanced once its agent is idle, every resident child is a live agent; at the end
    every log (persisted ones included) is balanced and nothing is left: no agent, no
    Activation, no run, no live session, no task, and every epoch's start has its end."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.root = _store_root()
        self.host = Host(store=JsonlSessionStore(self.root), clock=ManualClock(1_000, step=1),
                         ids=CountingIds("id-"), approval_default="never")
        runtime = SubagentRuntime(self.host)
        runtime.register_provider(ForkProvider())
        runtime.register_provider(SpawnProvider())
        self.host.tools.register(CountingTool("echo", pauses=1).tool)
        self.manager = runtime.continuation
        self.events: list[SubagentEvent] = []
        runtime.subscribe(self.events.append)
        # the parent answers every notice and prompt it gets
        self.parent_model = ScriptedModel()
        self.host.models.register("parent", self.parent_model)
        self.parent = self.host.create_agent(provider="parent", model="test-model",
                                             approval=True)
        self.children: list[Continued] = []
        self.numbers = 0

    def _run(self, awaitable: Awaitable[T], seconds: float = STEP_SECONDS) -> T:
        async def step() -> T:
            async with asyncio.timeout(seconds):
                return await awaitable

        return self.loop.run_until_complete(step())

    def _feed_parent(self) -> None:
        # enough replies for every notice turn the parent may get
        while len(self.parent_model.script) - self.parent_model.calls < 4:
            self.parent_model.add(Reply.text("parent noted"))

    @staticmethod
    async def _cancel_after(operation: Awaitable[T], ticks: int | None) -> T | None:
        task = asyncio.ensure_future(operation)
        if ticks is not None:
            for _ in range(ticks):
                if task.done():
                    break
                await asyncio.sleep(0)
            task.cancel()
        try:
            return await task
        except asyncio.CancelledError:
            statistic("an operation's caller was cancelled")
            return None

    @rule(kind=KINDS, plan=st.sampled_from(CHILD_PLANS), cancel=CANCEL_AFTER)
    def start(self, kind: str, plan: ChildPlan, cancel: int | None) -> None:
        """Start a continuable child (its caller cancelled after a few ticks, or never)."""
        self._feed_parent()
        self._run(self._start(kind, plan, cancel))

    async def _start(self, kind: str, plan: ChildPlan, cancel: int | None) -> None:
        self.numbers += 1
        provider = f"child-{self.numbers}"
        gate = asyncio.Event()
        model = TurnModel(gate)
        model.plans.append(plan)
        self.host.models.register(provider, model)  # type: ignore[arg-type]
        before = set(self.host.agents.list())
        started = await self._cancel_after(self.manager.start_continuable(
            kind, ContinuableStart(prompt=(TextBlock(text=f"task {self.numbers}"),),
                                   label=f"task {self.numbers}",
                                   agent_options=AgentOptions(provider=provider)),
            parent=self.parent), cancel)
        if started is None:
            # rolled back: nothing was published (other children may have settled meanwhile)
            assert not set(self.host.agents.list()) - before
            return
        self.children.append(Continued(id=started.child_id, model=model, gate=gate))

    @precondition(lambda self: self.children)
    @rule(pick=PICK, plan=st.sampled_from(CHILD_PLANS), cancel=CANCEL_AFTER)
    def send(self, pick: int, plan: ChildPlan, cancel: int | None) -> None:
        """Send a follow-up: queued in a resident child, or resuming a settled one."""
        self._feed_parent()
        child = self.children[pick % len(self.children)]
        child.model.plans.append(plan)
        resident = any(a.child_id == child.id for a in self.manager.activations())
        statistic("follow-up into a resident child" if resident
                  else "follow-up resuming a settled child")
        self._run(self._cancel_after(self.manager.followup(
            self.parent, child.id, f"follow-up {self.numbers}"), cancel))

    @precondition(lambda self: self.children)
    @rule(pick=PICK)
    def interrupt(self, pick: int) -> None:
        """Interrupt a child's current turn (a no-op for a settled one)."""
        child = self.children[pick % len(self.children)]
        self.manager.interrupt(child.id, AncestorAuthority(self.parent))

    @precondition(lambda self: self.children)
    @rule(pick=PICK, cancel=CANCEL_AFTER)
    def dispose(self, pick: int, cancel: int | None) -> None:
        """Dispose a resident child (its caller cancelled at any point: teardown goes on)."""
        self._feed_parent()
        child = self.children[pick % len(self.children)]
        async def drain() -> None:  # begun inside the loop: it cancels the child at once
            await self.manager.drain_children(self.parent, [child.id])

        self._run(self._cancel_after(drain(), cancel))

    @precondition(lambda self: self.children)
    @rule(pick=PICK)
    def open_a_gate(self, pick: int) -> None:
        """Let a gated child answer."""
        self.children[pick % len(self.children)].gate.set()

    @rule(ticks=st.integers(1, 40))
    def let_time_pass(self, ticks: int) -> None:
        """Let every task run a while (the store's committer too)."""
        self._feed_parent()

        async def wait() -> None:
            for _ in range(ticks):
                await asyncio.sleep(0)
            await asyncio.sleep(0.001)

        self._run(wait())

    @rule()
    def cancel_parent(self) -> None:
        """Cancel the parent's turn (a notice turn, or nothing)."""
        self.parent.cancel()
        self._run(self.parent.when_idle())

    @invariant()
    def live_logs_are_valid(self) -> None:
        """Every live log traces clean; an idle agent's is balanced; every resident child is a
        live agent."""
        for session_id in self.host.sessions.list():
            session = self.host.sessions.get(session_id)
            if session is None:
                continue
            assert_traces_clean(session.events, session_id)
            agent = self.host.agents.get(session_id)
            if agent is not None and not agent.running:
                assert_balanced(session.events, session_id)
        for activation in self.manager.activations():
            assert self.host.agents.get(activation.child_id) is activation.agent

    def teardown(self) -> None:
        try:
            self._run(self._close(), seconds=3 * STEP_SECONDS)
        finally:
            self.loop.close()
            shutil.rmtree(self.root, ignore_errors=True)

    async def _close(self) -> None:
        for child in self.children:
            child.gate.set()
        await self.host.subagents.aclose()
        await self.host.aclose()
        assert len(self.host.agents) == 0 and self.manager.activations() == ()
        assert self.host.subagents.runs() == ()
        store = self.host.sessions
        assert all(store.get(session_id) is None for session_id in store.list())
        assert isinstance(store, JsonlSessionStore)
        for child in self.children:
            assert_balanced(store.inspect(child.id).events, child.id)
        if self.parent.session.events:
            assert_balanced(store.inspect(self.parent.id).events, self.parent.id)
        starts = [e.run_id for e in self.events if isinstance(e, SubagentStart)]
        ends = [e.run_id for e in self.events if isinstance(e, SubagentEnd)]
        assert sorted(starts) == sorted(ends), "an epoch without its end"
        for end in self.events:
            if isinstance(end, SubagentEnd):
                assert end.stop_reason in STOP_REASONS
                statistic(f"epoch: {end.stop_reason}")
        statistic(f"epochs: {len(starts)}")
        leftover = asyncio.all_tasks() - {asyncio.current_task()}
        assert not leftover, f"tasks left behind: {leftover}"


TestContinuableLifecycle = ContinuableLifecycle.TestCase
