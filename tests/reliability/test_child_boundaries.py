"""A child must not escape (issue 8, item 5): tests that attack the boundaries of a child run.

* A tool its filter hides is refused and its handler never runs; naming a tool the parent was
  never granted (unknown, or only in the parent's own scope) gains nothing, not even through
  the filter; the parent's restriction is not inherited, and neither is a tool it added.
* Approval asks inside a child are refused: its policy is pinned to never.
* A model that always delegates stops at ``max_depth`` with DSH's exact depth error, having
  created exactly the agents the cap allows.
* A fork child never receives the parent's in-flight turn, wherever the parent is in it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
from _budget import examples
from _runtime_helpers import (
    TEXT_SCHEMA,
    CountingTool,
    assert_balanced,
    bounded,
    make_host,
    request,
    result_text,
    scripted_parent,
    text_of,
    tool_results,
    wait_for,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import event as statistic
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn
from msgspec import UNSET, UnsetType
from returns.result import Success

from turnfork.core import (
    AgentOptions,
    ApprovalPolicyEvent,
    AssistantChunkEvent,
    AssistantMessageEvent,
    Event,
    Message,
    SessionEndSeedEvent,
    ToolErrorInfo,
    ToolRestriction,
    ToolResultEvent,
    ToolResultMessage,
    TurnCompleted,
    TurnEndEvent,
    UserMessage,
    UserMessageEvent,
    encode_log,
    event_type,
    model_history,
    trace_log,
)
from turnfork.shell import (
    Agent,
    ModelRequest,
    Reply,
    ScriptedModel,
    SubagentStartError,
    SubagentTool,
    Tool,
    ToolContext,
)
from turnfork.shell.models.scripted import reply_chunks
from turnfork.shell.subagents import SubagentStart

T = TypeVar("T")

SECONDS = 20.0
NOT_FOUND = ToolErrorInfo(name="ToolNotFoundError", code="UNKNOWN_TOOL")
GLOBAL_TOOLS = ("alpha", "beta", "gamma", "delta")
#: Names a child's model may try: the global tools, a tool only the parent's scope has, a name
#: nobody registered, and case/space variants of a real tool.
CALLABLE_NAMES = (*GLOBAL_TOOLS, "private", "nope", "Alpha", "alpha ")


def _run(main: Callable[[], Awaitable[T]]) -> T:
    """Run ``main`` on a fresh loop, bounded; no task may outlive it."""

    async def bounded_main() -> T:
        result = await bounded(main(), SECONDS)
        leftover = asyncio.all_tasks() - {asyncio.current_task()}
        assert not leftover, f"tasks left behind: {leftover}"
        return result

    return asyncio.run(bounded_main())


def _error_of(event: ToolResultEvent) -> ToolErrorInfo | None:
    error = event.data.error
    return None if isinstance(error, UnsetType) else error


def _permits(restriction: ToolRestriction, name: str) -> bool:
    """The oracle: a global tool passes ``{allow?, deny?}``."""
    allow, deny = restriction.allow, restriction.deny
    return ((isinstance(allow, UnsetType) or name in allow)
            and (isinstance(deny, UnsetType) or name not in deny))


async def _private(args: dict[str, Any], ctx: ToolContext) -> str:
    raise AssertionError("the parent's private tool ran")


# ---------------------------------------------------------------------------- tool filters


@st.composite
def _filters(draw: DrawFn) -> ToolRestriction:
    names = st.lists(st.sampled_from(GLOBAL_TOOLS), unique=True, max_size=len(GLOBAL_TOOLS))
    allow = draw(st.none() | names.map(tuple))
    deny = draw(st.none() | names.map(tuple))
    if allow is None and deny is None:
        deny = (draw(st.sampled_from(GLOBAL_TOOLS)),)
    return ToolRestriction(allow=UNSET if allow is None else allow,
                           deny=UNSET if deny is None else deny)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool_filter=_filters(),
       called=st.lists(st.sampled_from(CALLABLE_NAMES), min_size=1, max_size=6),
       kind=st.sampled_from(("fork", "spawn")))
def test_a_child_can_run_only_the_tools_its_filter_permits(
        tool_filter: ToolRestriction, called: list[str], kind: str) -> None:
    """Whatever the filter and whatever the child's model calls (hidden, unknown, the parent's
    own, look-alike names; in one parallel message): a permitted global tool runs once per call,
    anything else gets the exact error result and its handler never runs."""

    async def main() -> None:
        host = make_host()
        tools = {name: CountingTool(name, safe=name != "delta", pauses=1)
                 for name in GLOBAL_TOOLS}
        for tool in tools.values():
            host.tools.register(tool.tool)
        parent, _ = scripted_parent(host, [Reply.text("parent done")])
        parent.tools.add(Tool("private", "only the parent's", TEXT_SCHEMA, _private))
        parent.followup("a completed turn to fork from")
        await parent.when_idle()
        child_model = ScriptedModel([
            Reply.tool_calls([(name, {"text": f"#{i}"}) for i, name in enumerate(called)]),
            Reply.text("child done")])
        host.models.register("child", child_model)
        run = await host.subagents.start(kind, request(
            "try every tool", tool_filter=tool_filter,
            agent_options=AgentOptions(provider="child")), parent=parent)
        result = await run.result
        assert (result.stop_reason, text_of(result.output)) == ("completed", "child done")
        offered = [schema.name for schema in child_model.requests[0].tools]
        # DSH's canonical order: by name (system-prompt orderTools)
        assert offered == sorted(name for name in GLOBAL_TOOLS if _permits(tool_filter, name))
        results = tool_results(run.own_events())
        assert len(results) == len(called)
        for i, (name, event) in enumerate(zip(called, results, strict=True)):
            if name in GLOBAL_TOOLS and _permits(tool_filter, name):
                assert (result_text(event), _error_of(event)) == (f"{name}:#{i}", None)
            else:  # a filtered tool is hidden from lookup too: simply unknown (DSH)
                assert result_text(event) == f'Error: unknown tool "{name}"'
                assert _error_of(event) == NOT_FOUND
        for name, tool in tools.items():
            permitted_calls = called.count(name) if _permits(tool_filter, name) else 0
            assert tool.calls == permitted_calls, name
        assert [tool.name for tool in parent.tools.tools()] == sorted([*GLOBAL_TOOLS, "private"])
        assert parent.tools.restrictions == ()
        await run.dispose()
        await parent.dispose()
        assert_balanced(run.local_agent.session.events, "child")

    _run(main)


def test_naming_an_ungranted_tool_in_the_filter_gains_nothing() -> None:
    """A filter that allows the parent's private tool, an unknown tool or the reserved run_code
    is refused before any child exists; the parent's private tool is never reachable."""

    async def main() -> None:
        host = make_host()
        echo = CountingTool("echo")
        host.tools.register(echo.tool)
        parent, _ = scripted_parent(host)
        parent.tools.add(Tool("private", "only the parent's", TEXT_SCHEMA, _private))
        refusals = {
            ("private",): 'tools.restrict() names unknown global tool "private"; known global '
                          "tools: echo",
            ("private", "ghost"): 'tools.restrict() names unknown global tools "private", '
                                  '"ghost"; known global tools: echo',
            ("run_code",): 'tools.restrict() cannot name the reserved tool "run_code"'}
        for allow, message in refusals.items():
            for kind in ("fork", "spawn"):
                with pytest.raises(SubagentStartError) as refused:
                    await host.subagents.start(kind, request(
                        "x", tool_filter=ToolRestriction(allow=allow)), parent=parent)
                assert (refused.value.error.code, str(refused.value)) == (
                    "INVALID_TOOL_FILTER", message)
                assert host.agents.list() == (parent,)
                assert host.sessions.list() == (parent.id,)
        await parent.dispose()

    _run(main)


def test_the_parents_restriction_and_added_tools_are_not_inherited() -> None:
    """The parent may use only echo plus its own private tool; its child sees every global tool
    (the restriction is not inherited) and not the private one (nor is the added tool)."""

    async def main() -> None:
        host = make_host()
        echo, shout = CountingTool("echo"), CountingTool("shout")
        host.tools.register(echo.tool)
        host.tools.register(shout.tool)
        parent, parent_model = scripted_parent(host, [
            Reply.tool_calls([("shout", {"text": "p"}), ("private", {"text": "p"})]),
            Reply.text("parent done")])
        parent.tools.restrict(ToolRestriction(allow=("echo",)))
        parent.tools.add(Tool("private", "only the parent's", TEXT_SCHEMA, _private))
        child_model = ScriptedModel([
            Reply.tool_calls([("shout", {"text": "c"}), ("echo", {"text": "c"}),
                              ("private", {"text": "c"})]),
            Reply.text("child done")])
        host.models.register("child", child_model)
        run = await host.subagents.start("spawn", request(
            "x", agent_options=AgentOptions(provider="child")), parent=parent)
        await run.result
        assert [tool.name for tool in child_model.requests[0].tools] == ["echo", "shout"]
        assert [result_text(e) for e in tool_results(run.own_events())] == [
            "shout:c", "echo:c", 'Error: unknown tool "private"']
        assert (echo.calls, shout.calls) == (1, 1)
        # the parent's own scope is as it was: the restriction holds for the parent alone
        parent.followup("go")
        await parent.when_idle()
        assert [tool.name for tool in parent_model.requests[0].tools] == ["echo", "private"]
        assert [result_text(e) for e in tool_results(parent.session.events)] == [
            'Error: unknown tool "shout"',
            "Error: the parent's private tool ran"]
        assert shout.calls == 1
        await run.dispose()
        await parent.dispose()

    _run(main)


# ---------------------------------------------------------------------------- approval


@pytest.mark.parametrize("kind", ["fork", "spawn"])
@pytest.mark.parametrize("approval", [True, False])
def test_approval_asks_inside_a_child_are_refused(kind: str, approval: bool) -> None:
    """A child's tool that asks for approval is refused without consulting any approver, even
    when the parent's asks are granted; with an approval service the child's log pins
    approval/policy never (source delegation) right after its seed."""
    asks: list[str] = []
    completed: list[str] = []

    async def approver(agent: Agent, tool: str, detail: str) -> bool:
        asks.append(agent.id)
        return True

    async def deploy(args: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.request_approval(f"deploy {args['text']}")
        completed.append(ctx.agent.id)
        return "deployed"

    refusal = ("Error: deploy needs approval (deploy {}), but approval prompts are disabled in "
               "this session: the action was rejected")

    async def main() -> None:
        host = make_host()
        host.approver = approver
        host.tools.register(Tool("deploy", "needs approval", TEXT_SCHEMA, deploy,
                                 concurrency_safe=True))
        parent, _ = scripted_parent(host, [Reply.tool_call("deploy", {"text": "parent"}),
                                           Reply.text("parent done")], approval=approval)
        parent.followup("deploy it")
        await parent.when_idle()
        parent_result = result_text(tool_results(parent.session.events)[-1])
        assert parent_result == ("deployed" if approval else refusal.format("parent"))
        child_model = ScriptedModel([
            Reply.tool_calls([("deploy", {"text": "a"}), ("deploy", {"text": "b"})]),
            Reply.text("child done")])
        host.models.register("child", child_model)
        run = await host.subagents.start(kind, request(
            "deploy from the child", agent_options=AgentOptions(provider="child")),
            parent=parent)
        result = await run.result
        assert result.stop_reason == "completed"
        assert [result_text(e) for e in tool_results(run.own_events())] == [
            refusal.format("a"), refusal.format("b")]
        assert run.local_agent.approval_policy == "never"
        assert asks == completed == ([parent.id] if approval else [])
        events = run.local_agent.session.events
        policies = [e for e in run.own_events() if isinstance(e, ApprovalPolicyEvent)]
        if approval:
            (policy,) = policies
            assert (policy.data.policy, policy.data.source) == ("never", "delegation")
            if kind == "fork":
                end_seed = events[run.seed_length]
                assert isinstance(end_seed, SessionEndSeedEvent)
                assert policy.seq == end_seed.seq + 1
            else:
                assert policy.seq == 0
        else:
            assert policies == []
        await run.dispose()
        await parent.dispose()
        assert_balanced(events, "child")

    _run(main)


# ---------------------------------------------------------------------------- depth


def _always_delegate(fanout: int) -> Callable[[ModelRequest], Reply]:
    """Every agent's model: delegate again (``fanout`` calls at once); once the results are
    back, report them."""

    def entry(request_: ModelRequest) -> Reply:
        last = request_.messages[-1]
        if isinstance(last, ToolResultMessage):
            back = [m for m in request_.messages if isinstance(m, ToolResultMessage)]
            return Reply.text(" | ".join(text_of(m.content[0].content)  # type: ignore[union-attr]
                                         for m in back[-fanout:]))
        return Reply.tool_calls([("subagent", {"description": "deeper",
                                               "prompt": "delegate again"})] * fanout)

    return entry


@pytest.mark.parametrize("fanout", [1, 2])
@pytest.mark.parametrize("max_depth", [0, 1, 2, 3, 5, None])
@pytest.mark.parametrize("kind", ["fork", "spawn"])
def test_an_always_delegating_model_stops_at_max_depth(kind: str, max_depth: int | None,
                                                       fanout: int) -> None:
    """Every agent's model calls subagent again (``fanout`` times in parallel): the agents at
    depth M get ``Error: subagent depth M+1 exceeds maxDepth M`` (no error key), exactly
    1 + fanout + ... + fanout^M agents exist and every model is called exactly twice
    (``None``: the tool's default cap, 3)."""
    if max_depth == 5 and fanout == 2:
        max_depth = 4  # 31 agents: enough, and quick
    cap = 3 if max_depth is None else max_depth
    agents = sum(fanout ** depth for depth in range(cap + 1))

    async def main() -> None:
        host = make_host()
        model = ScriptedModel([_always_delegate(fanout)] * (4 * agents))
        host.models.register("parent", model)
        tool = (SubagentTool(provider=kind) if max_depth is None
                else SubagentTool(provider=kind, max_depth=max_depth))
        tool.install(host)
        parent = host.create_agent(provider="parent", model="test-model")
        started: list[Agent] = []
        host.subagents.subscribe(lambda event: started.append(event.run.local_agent)
                                 if isinstance(event, SubagentStart) else None)
        parent.followup("delegate")
        await parent.when_idle()
        depth_error = f"Error: subagent depth {cap + 1} exceeds maxDepth {cap}"
        assert 1 + len(started) == agents
        assert model.calls == 2 * agents
        depths = [agent.subagent_depth or 0 for agent in started]
        assert sorted(depths) == sorted(d for d in range(1, cap + 1)
                                        for _ in range(fanout ** d))
        for agent in (parent, *started):
            results = tool_results(agent.session.events)
            assert len(results) == fanout
            if (agent.subagent_depth or 0) == cap:
                assert [result_text(e) for e in results] == [depth_error] * fanout
                assert all(_error_of(e) is None for e in results)
            else:
                assert all(result_text(e).startswith(depth_error) for e in results)
            assert_balanced(agent.session.events, agent.id)
        assert host.agents.list() == (parent,) and host.subagents.runs() == ()
        await parent.dispose()

    _run(main)


# ---------------------------------------------------------------------------- in-flight turn

#: In-flight tools: one answers at once, one takes a few loop turns, one must run alone.
INFLIGHT_TOOLS = ("fast", "slow", "serial")


@dataclass(frozen=True)
class Inflight:
    """The parent's history and in-flight turn, and where the fork lands."""

    completed: int
    steps: tuple[tuple[str, ...], ...]
    step_texts: tuple[bool, ...]
    hang_reasoning: bool
    #: Fork through the parent's own subagent tool in this step (else a direct start).
    via_tool: int | None
    #: Where a direct start forks (at the first await point where this holds, or once the
    #: parent hangs): ``queued`` (input logged, turn not started), ``after`` (``count``
    #: in-flight events), ``between`` (before step ``step`` + 1 starts), ``streaming``
    #: (``count`` chunks into step ``step`` + 1), ``pending`` (step ``step`` + 1's calls run).
    fork_at: str
    step: int
    count: int


@st.composite
def _inflight(draw: DrawFn) -> Inflight:
    steps = draw(st.lists(st.lists(st.sampled_from(INFLIGHT_TOOLS), min_size=1, max_size=3)
                          .map(tuple), max_size=3).map(tuple))
    via_tool = draw(st.none() | st.integers(0, len(steps) - 1)) if steps else None
    fork_at = draw(st.sampled_from(("streaming", "pending", "between", "after", "queued")
                                   if steps else ("streaming", "between", "after", "queued")))
    last_step = len(steps) - 1 if fork_at == "pending" else len(steps)
    return Inflight(
        completed=draw(st.integers(0, 2)), steps=steps,
        step_texts=tuple(draw(st.lists(st.booleans(), min_size=len(steps),
                                       max_size=len(steps)))),
        hang_reasoning=draw(st.booleans()), via_tool=via_tool, fork_at=fork_at,
        step=draw(st.integers(0, last_step)), count=draw(st.integers(1, 80)))


def _fork_point(case: Inflight, parent: Agent, cut: int) -> Callable[[], bool]:
    """Whether a direct start forks now (see :class:`Inflight`)."""
    session = parent.session
    step = case.step + 1

    def reached() -> bool:
        trace = session.trace
        if case.fork_at == "queued":
            return True
        if case.fork_at == "after":
            return len(session) - cut >= case.count
        if case.fork_at == "between":
            return trace.open_turn is not None and (trace.next_step > step or (
                trace.next_step == step and trace.open_step is None))
        if case.fork_at == "pending":
            return (trace.open_step or 0) > step or (
                trace.open_step == step and bool(trace.pending_calls))
        chunks = sum(1 for event in session.events[cut:]
                     if isinstance(event, AssistantChunkEvent) and event.data.step == step)
        return chunks >= case.count or (trace.open_step or 0) > step

    return reached


def _messages(events: Sequence[Event]) -> list[Message]:
    found: list[Message] = []
    for event in events:
        if isinstance(event, UserMessageEvent):
            found.append(event.data)
        elif isinstance(event, AssistantMessageEvent | ToolResultEvent):
            found.append(event.data.message)
    return found


def _phase(parent: Agent, hung: bool) -> str:
    """Where the parent's in-flight turn stands (for the test's statistics)."""
    trace, last = parent.session.trace, parent.session.events[-1]
    if hung:
        return "hung mid-stream"
    if trace.open_turn is None:
        return "input queued, turn not started"
    if trace.pending_calls:
        return "parallel tool calls pending" if len(trace.pending_calls) > 1 \
            else "one tool call pending"
    if trace.open_step is None:
        return "between steps"
    if isinstance(last, AssistantChunkEvent):
        return "mid-stream"
    return f"after {event_type(last)}"


def _parent_script(case: Inflight) -> tuple[list[Reply], Reply]:
    script = [Reply.tool_call("fast", {"text": "history"}), Reply.text("done 1")] \
        if case.completed else []
    script += [Reply.text(f"done {n}") for n in range(2, case.completed + 1)]
    for index, (names, with_text) in enumerate(zip(case.steps, case.step_texts, strict=True)):
        calls: list[tuple[str, dict[str, str]]] = [
            (name, {"text": f"INFLIGHT {index}.{j}"}) for j, name in enumerate(names)]
        if case.via_tool == index:
            calls.insert(len(calls) // 2, ("subagent", {"description": "delegated",
                                                        "prompt": "child task"}))
        script.append(Reply.tool_calls(calls, text=f"INFLIGHT step {index}" if with_text
                                       else None))
    hang = Reply.hang("INFLIGHT partial answer",
                      reasoning="INFLIGHT thinking" if case.hang_reasoning else None)
    return script, hang


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_inflight())
def test_a_fork_child_never_receives_the_parents_inflight_turn(case: Inflight) -> None:
    """Fork at any await point of the parent's in-flight turn (before its first step,
    mid-stream, with parallel calls pending, between steps, hung) or through its own subagent
    tool: the seed ends at the parent's last turn/end, holds none of the in-flight events (by
    seq, identity or content), and the child's model sees exactly the completed history plus
    its own prompt."""

    async def pause(agent: Agent, turn: int, step: int) -> None:
        await asyncio.sleep(0)  # makes "between steps" an await point

    async def main() -> None:
        host = make_host()
        tools = {"fast": CountingTool("fast"), "slow": CountingTool("slow", pauses=3),
                 "serial": CountingTool("serial", safe=False, pauses=2)}
        for tool in tools.values():
            host.tools.register(tool.tool)
        script, hang = _parent_script(case)
        parent, parent_model = scripted_parent(host, [*script, hang])
        parent.pre_step_hooks.append(pause)
        child_model = ScriptedModel([Reply.text("child done")])
        host.models.register("child", child_model)
        SubagentTool(provider="fork", agent_options=AgentOptions(provider="child")
                     ).install(host)
        started: list[SubagentStart] = []
        host.subagents.subscribe(lambda event: started.append(event)
                                 if isinstance(event, SubagentStart) else None)
        for n in range(case.completed):
            parent.followup(f"completed task {n}")
            await parent.when_idle()
        cut = len(parent.session.events)
        assert cut == 0 or isinstance(parent.session.events[cut - 1], TurnEndEvent)
        total_calls = len(script) + 1
        hang_chunks = len(reply_chunks(hang, total_calls)[0])

        def hung() -> bool:
            return parent_model.calls == total_calls and sum(
                1 for e in parent.session.events[cut:] if isinstance(e, AssistantChunkEvent)
                and e.data.step == len(case.steps) + 1) == hang_chunks

        parent.followup("INFLIGHT task")
        if case.via_tool is None:
            reached = _fork_point(case, parent, cut)
            await wait_for(lambda: reached() or hung())
            at_fork = len(parent.session.events)
            statistic(f"fork point: {_phase(parent, hung())}")
            run = await host.subagents.start("fork", request(
                "child task", agent_options=AgentOptions(provider="child")), parent=parent)
            assert run.seed_length == max((e.seq + 1 for e in parent.session.events[:at_fork]
                                           if isinstance(e, TurnEndEvent)), default=0)
            result = await run.result
            assert (result.stop_reason, text_of(result.output)) == ("completed", "child done")
        else:
            statistic("fork point: through the parent's own subagent tool")
        await wait_for(hung)
        (start,) = started
        child = start.run.local_agent
        parent_events = parent.session.events
        child_events = child.session.events
        assert parent.session.trace.open_turn == case.completed + 1  # still in flight
        # the seed: exactly the parent's completed turns, shared, ending at its last turn/end
        assert start.seed_length == cut
        assert all(child_events[i] is parent_events[i] for i in range(cut))
        assert cut == 0 or isinstance(child_events[cut - 1], TurnEndEvent)
        # none of the in-flight events: not by seq, not by identity, not by content
        inflight = parent_events[cut:]
        assert all(event.seq >= cut for event in inflight)
        assert not {id(e) for e in child_events} & {id(e) for e in inflight}
        assert b"INFLIGHT" not in encode_log(child_events)
        inflight_messages = _messages(inflight)
        assert inflight_messages  # at least the in-flight user message
        # what the child's model was sent: the completed history, then its own prompt and its
        # runtime-context snapshot
        (sent,) = child_model.requests
        traced = trace_log(parent_events[:cut])
        assert isinstance(traced, Success)
        history = model_history(traced.unwrap())
        assert len(sent.messages) == len(history) + 2
        assert all(a is b for a, b in zip(sent.messages, history, strict=False))
        assert isinstance(sent.messages[-2], UserMessage)
        assert text_of(sent.messages[-2].content) == "child task"
        assert sent.messages[-1].source.plugin == "@deepseek-ai/dsh-system-prompt"
        assert not {id(m) for m in sent.messages} & {id(m) for m in inflight_messages}
        assert not {m.id for m in sent.messages} & {m.id for m in inflight_messages}
        assert "INFLIGHT" not in repr(sent.messages)  # every field of every message
        assert "INFLIGHT" not in (sent.system or "")
        if case.via_tool is not None:
            assert "child done" in [result_text(e) for e in tool_results(parent_events)]
        assert tools["fast"].calls >= (1 if case.completed else 0)
        await start.run.dispose()
        await parent.dispose()
        assert_balanced(child.session.events, "child")
        assert_balanced(parent.session.events, "parent")
        assert [e.data.reason for e in parent.session.events
                if isinstance(e, TurnEndEvent)][:case.completed] == [TurnCompleted()] * \
            case.completed

    _run(main)
