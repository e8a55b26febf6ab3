"""The cache-preserving fork (``ForkProvider(cache_preserving=True)``, ours, not DSH's): a
child's first request, rendered as a provider renders a prompt (system, tools, messages; the
OpenAI chat body ``OpenAIChatModel`` sends), repeats its parent's last request byte for byte
through the end of the inherited messages, whatever persona, tool filter, output schema or
report tool the child has; what a filter forbids stays listed and is refused in DSH's words;
an output schema is answered in the closing message; DSH's mode is unchanged and stays the
default."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import prompt_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import Raw

from turnfork.core import (
    CLOSING_REPORT_SECTION,
    PERSONA_CONTEXT_NAME,
    AgentOptions,
    StartRequest,
    SubagentResult,
    TextBlock,
    ToolErrorInfo,
    ToolRestriction,
    ToolResultBlock,
    ToolResultEvent,
    render_tool_result,
)
from turnfork.shell import (
    ForkProvider,
    Host,
    JsonlSessionStore,
    ModelRequest,
    ScriptedModel,
    SubagentRuntime,
    SubagentTool,
    Tool,
    ToolContext,
)
from turnfork.shell import Reply as ScriptReply
from turnfork.shell.models.openai_chat import chat_request_body
from turnfork.shell.subagents import ReportTool

PARENT_PERSONA = "You are a careful engineer. Use `echo` to repeat text back."
TOOL_NAMES = ("echo", "grep")
_TEXT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
SCHEMAS = (
    '{"type":"object","required":["words"],"properties":{"words":{"type":"array",'
    '"items":{"type":"string"}}}}',
    '{"type":"object","properties":{"n":{"type":"integer"}}}',
)


def rendered(request: ModelRequest, upto: int | None = None) -> bytes:
    """The request as a provider renders it; ``upto``: only its first ``upto`` non-system
    chat messages."""
    body = chat_request_body(request, "m")
    if upto is not None:
        system = [m for m in body["messages"] if m["role"] == "system"]
        rest = [m for m in body["messages"] if m["role"] != "system"]
        body = {**body, "messages": [*system, *rest[:upto]]}
    return prompt_bytes(body)


def chat_messages(request: ModelRequest) -> int:
    return sum(m["role"] != "system" for m in chat_request_body(request, "m")["messages"])


@dataclass
class Forked:
    parent: ModelRequest  # the parent's request answered with the delegating call
    child: ModelRequest  # the child's first request
    seed_messages: int  # chat messages the child inherited
    result: str  # what the delegating tool returned to the parent
    calls: list[str]  # the global tools' handlers that ran in the child, by name


async def _fork(*, cache_preserving: bool, persona: str | None,
                tool_filter: ToolRestriction | None, schema: str | None,
                child_script: list[ScriptReply], turns: int = 3) -> Forked:
    host = Host()
    calls: list[str] = []

    def handler(name: str) -> Any:
        async def run(args: dict[str, Any], ctx: ToolContext) -> str:
            if ctx.agent is not None and ctx.agent.id != parent.id:
                calls.append(name)
            return str(args.get("text", ""))
        return run

    for name in TOOL_NAMES:
        host.tools.register(Tool(name, f"The {name} tool.", _TEXT, handler(name)))
    runtime = SubagentRuntime(host)
    runtime.register_provider(ForkProvider(cache_preserving=cache_preserving))

    async def delegate(args: dict[str, Any], ctx: ToolContext) -> str:
        run = await runtime.start("fork", StartRequest(
            prompt=(TextBlock(text=args["text"]),), label="t", persona=persona,
            tool_filter=tool_filter, agent_options=AgentOptions(provider="child"),
            output_schema=None if schema is None else Raw(schema.encode())),
            parent=ctx.agent)  # type: ignore[arg-type]
        result: SubagentResult = await run.result
        await run.dispose()
        return render_tool_result(result).text

    host.tools.register(Tool("delegate", "Delegate a task.", _TEXT, delegate))
    script: list[ScriptReply] = []
    for turn in range(1, turns + 1):
        script += [ScriptReply.tool_call("echo", {"text": f"w{turn}"}, call_id=f"c{turn}"),
                   ScriptReply.text("ok")]
    script += [ScriptReply.tool_call("delegate", {"text": "List the words."}, call_id="d"),
               ScriptReply.text("Done.")]
    parent_model, child_model = ScriptedModel(script), ScriptedModel(child_script)
    host.models.register("scripted", parent_model)
    host.models.register("child", child_model)
    parent = host.create_agent(provider="scripted", model="m", system=PARENT_PERSONA)
    for turn in range(1, turns + 1):
        parent.followup(f"Turn {turn}.")
        await parent.when_idle()
    seed = chat_messages(parent_model.requests[-1]) + 1  # + the last turn's reply
    parent.followup("Delegate.")
    await parent.when_idle()
    results = [e for e in parent.session.events if isinstance(e, ToolResultEvent)]
    await host.aclose()
    block = results[-1].data.message.content[0]
    assert isinstance(block, ToolResultBlock) and isinstance(block.content[0], TextBlock)
    return Forked(parent=parent_model.requests[2 * turns], child=child_model.requests[0],
                  seed_messages=seed, result=block.content[0].text, calls=calls)


def fork(**options: Any) -> Forked:
    return asyncio.run(_fork(**options))


def keeps_prefix(forked: Forked) -> bool:
    """The child's request renders exactly as the parent's through the inherited messages."""
    inherited = rendered(forked.parent, forked.seed_messages)
    return rendered(forked.child, forked.seed_messages) == inherited \
        and rendered(forked.child).startswith(inherited + b"\n")


filters = st.one_of(
    st.none(),
    st.builds(lambda names: ToolRestriction(allow=tuple(names)),
              st.lists(st.sampled_from(TOOL_NAMES), unique=True)),
    st.builds(lambda names: ToolRestriction(deny=tuple(names)),
              st.lists(st.sampled_from(TOOL_NAMES), min_size=1, unique=True)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(persona=st.one_of(st.none(), st.text(min_size=1, max_size=40)),
       tool_filter=filters, schema=st.one_of(st.none(), st.sampled_from(SCHEMAS)),
       turns=st.integers(min_value=1, max_value=4))
def test_a_cache_preserving_child_repeats_its_parents_request(
        persona: str | None, tool_filter: ToolRestriction | None, schema: str | None,
        turns: int) -> None:
    """Ensures that whatever persona, tool filter and output schema the child has, its first
    request repeats the parent's rendered request byte for byte through the inherited
    messages, and everything of its own comes after them."""
    forked = fork(cache_preserving=True, persona=persona, tool_filter=tool_filter,
                  schema=schema, child_script=[ScriptReply.text('{"words": []}')], turns=turns)
    assert keeps_prefix(forked)
    assert forked.child.system == forked.parent.system
    assert forked.child.tools == forked.parent.tools
    own = rendered(forked.child)[len(rendered(forked.child, forked.seed_messages)):]
    if persona is not None:
        assert json.dumps(persona, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass") \
            in own


def test_dsh_mode_stays_the_default_and_differs_for_such_a_child() -> None:
    """Ensures that the default fork still composes DSH's child: a persona in the system
    prompt, a filtered tool list, the ``structured_output`` tool, so the prefix is lost."""
    assert ForkProvider().cache_preserving is False
    forked = fork(cache_preserving=False, persona="You review.",
                  tool_filter=ToolRestriction(deny=("grep",)), schema=SCHEMAS[1],
                  child_script=[ScriptReply.tool_call("structured_output", {"n": 1}),
                                ScriptReply.text("done")])
    assert not keeps_prefix(forked)
    assert forked.child.system is not None and forked.child.system.startswith("You review.")
    names = [tool.name for tool in forked.child.tools]
    assert "grep" not in names and "structured_output" in names


def test_a_plain_cache_preserving_child_is_a_plain_fork() -> None:
    """Ensures that without options both modes send the same child request."""
    script = [ScriptReply.text("w1")]
    cached = fork(cache_preserving=True, persona=None, tool_filter=None, schema=None,
                  child_script=list(script))
    plain = fork(cache_preserving=False, persona=None, tool_filter=None, schema=None,
                 child_script=list(script))
    assert rendered(cached.child) == rendered(plain.child)


def test_a_forbidden_tool_stays_listed_and_is_refused_in_dshs_words() -> None:
    """Ensures that a tool the filter forbids is in the child's list, that calling it gets
    DSH's refusal for a tool the scope does not have (``unknown tool "<name>"``,
    ``ToolNotFoundError``/``UNKNOWN_TOOL``) without running it, and that a permitted one
    runs."""
    forked = fork(cache_preserving=True, persona=None,
                  tool_filter=ToolRestriction(deny=("grep",)), schema=None,
                  child_script=[ScriptReply.tool_calls([("grep", {"text": "x"}, "g1"),
                                                        ("echo", {"text": "y"}, "e1")]),
                                ScriptReply.text("finished")])
    assert [tool.name for tool in forked.child.tools] == \
        [tool.name for tool in forked.parent.tools]
    assert forked.calls == ["echo"]


def _child_results(tool_filter: ToolRestriction, script: list[ScriptReply]) -> list[Any]:
    async def go() -> list[Any]:
        host = Host()
        for name in TOOL_NAMES:
            async def run(args: dict[str, Any], ctx: ToolContext) -> str:
                return "ran"
            host.tools.register(Tool(name, f"The {name} tool.", _TEXT, run))
        runtime = SubagentRuntime(host)
        runtime.register_provider(ForkProvider(cache_preserving=True))
        model = ScriptedModel([ScriptReply.text("ok"), *script])
        host.models.register("scripted", model)
        parent = host.create_agent(provider="scripted", model="m")
        parent.followup("hello")
        await parent.when_idle()
        run = await runtime.start("fork", StartRequest(prompt=(TextBlock(text="go"),),
                                                       tool_filter=tool_filter), parent=parent)
        await run.result
        events = [e for e in run.own_events() if isinstance(e, ToolResultEvent)]
        await run.dispose()
        await host.aclose()
        return events
    return asyncio.run(go())


@pytest.mark.parametrize("tool_filter", [ToolRestriction(deny=("grep",)),
                                         ToolRestriction(allow=("echo",)),
                                         ToolRestriction(allow=())])
def test_the_refusal_is_dshs_unknown_tool(tool_filter: ToolRestriction) -> None:
    """Ensures that each filter's forbidden ``grep`` is refused with DSH's text and error key,
    and that ``echo`` runs unless forbidden too."""
    results = _child_results(tool_filter, [
        ScriptReply.tool_calls([("grep", {"text": "x"}, "g1"), ("echo", {"text": "y"}, "e1")]),
        ScriptReply.text("finished")])
    by_call = {}
    for event in results:
        for block in event.data.message.content:
            assert isinstance(block, ToolResultBlock)
            by_call[block.tool_call_id] = (block, event.data.error)
    grep, error = by_call["g1"]
    assert grep.is_error is True
    assert grep.content == (TextBlock(text='Error: unknown tool "grep"'),)
    assert isinstance(error, ToolErrorInfo)
    assert (error.name, error.code) == ("ToolNotFoundError", "UNKNOWN_TOOL")
    echo, _ = by_call["e1"]
    if tool_filter.allow == ():
        assert echo.is_error is True
        assert echo.content == (TextBlock(text='Error: unknown tool "echo"'),)
    else:
        assert echo.is_error is not True and echo.content == (TextBlock(text="ran"),)


def test_the_structured_value_is_read_from_the_closing_message() -> None:
    """Ensures that a cache-preserving child asked for a schema has no ``structured_output``
    tool, is told to answer with JSON in its runtime context, and that its closing message,
    validated against the schema, is the run's structured value; a closing message that does
    not match ends the run as one that captured no value (an error)."""
    forked = fork(cache_preserving=True, persona=None, tool_filter=None, schema=SCHEMAS[0],
                  child_script=[ScriptReply.text('{"words": ["w1", "w2"]}')])
    assert "structured_output" not in [tool.name for tool in forked.child.tools]
    assert b"one JSON object matching the schema" in rendered(forked.child)
    assert forked.result == '{"words": ["w1", "w2"]}'
    wrong = fork(cache_preserving=True, persona=None, tool_filter=None, schema=SCHEMAS[0],
                 child_script=[ScriptReply.text("w1, w2")])
    assert wrong.result.startswith("Error:")


# ------------------------------------------------------------------------ continuable children


async def _continuable(root: Path, *, report: str, cache_preserving: bool,
                       persona: str | None, tool_filter: ToolRestriction | None,
                       child_script: list[ScriptReply]) -> tuple[ModelRequest, ModelRequest,
                                                                  int, Host]:
    host = Host(store=JsonlSessionStore(root))
    for name in TOOL_NAMES:
        async def run(args: dict[str, Any], ctx: ToolContext) -> str:
            return "ran"
        host.tools.register(Tool(name, f"The {name} tool.", _TEXT, run))
    runtime = SubagentRuntime(host)
    runtime.register_provider(ForkProvider(cache_preserving=cache_preserving))
    SubagentTool(provider="fork", background_mode="continuable", persona=persona,
                 tool_filter=tool_filter, agent_options=AgentOptions(provider="child")
                 ).install(host)
    if report != "none":
        ReportTool(scope=report).install(host)  # type: ignore[arg-type]
    parent_model = ScriptedModel([
        ScriptReply.text("ok"),
        ScriptReply.tool_call("subagent", {"description": "d", "prompt": "p"}, call_id="s"),
        ScriptReply.text("Started."), ScriptReply.text("Noted."), ScriptReply.text("Noted.")])
    child_model = ScriptedModel(child_script)
    host.models.register("scripted", parent_model)
    host.models.register("child", child_model)
    parent = host.create_agent(provider="scripted", model="m", system=PARENT_PERSONA)
    parent.followup("Turn 1.")
    await parent.when_idle()
    seed = chat_messages(parent_model.requests[-1]) + 1
    parent.followup("Start a background fork.")
    async with asyncio.timeout(10):
        while not child_model.requests or host.subagents.continuation.activations() \
                or parent.running:
            await asyncio.sleep(0.002)
    await host.subagents.aclose()
    await host.aclose()
    return parent_model.requests[1], child_model.requests[0], seed, host


@pytest.mark.parametrize("report", ["none", "child", "global"])
def test_a_continuable_cache_preserving_child_keeps_the_prefix_with_any_report_tool(
        tmp_path: Path, report: str) -> None:
    """Ensures that a continuable child with a persona and a filter repeats its parent's
    request through the inherited messages whatever the report tool's placement: with
    ``scope="child"`` it gets no report tool but the closing-report guidance in its runtime
    context; with ``scope="global"`` the tool its parent lists, its guidance in the runtime
    context."""
    parent, child, seed, _ = asyncio.run(_continuable(
        tmp_path, report=report, cache_preserving=True, persona="You review.",
        tool_filter=ToolRestriction(deny=("grep",)), child_script=[ScriptReply.text("done")]))
    inherited = rendered(parent, seed)
    assert rendered(child, seed) == inherited
    assert rendered(child).startswith(inherited + b"\n")
    tail = rendered(child)[len(inherited):]
    names = [tool.name for tool in child.tools]
    assert ("report" in names) == (report == "global")
    assert (CLOSING_REPORT_SECTION.text.encode() in tail) == (report == "child")
    assert PERSONA_CONTEXT_NAME and b"You review." in tail


def test_a_continuable_dsh_child_with_a_child_only_report_tool_loses_the_prefix(
        tmp_path: Path) -> None:
    """Ensures the default mode keeps DSH's placement: the report tool and its guidance in
    the child's request head."""
    parent, child, seed, _ = asyncio.run(_continuable(
        tmp_path, report="child", cache_preserving=False, persona=None, tool_filter=None,
        child_script=[ScriptReply.text("done")]))
    assert rendered(child, seed) != rendered(parent, seed)
    assert "report" in [tool.name for tool in child.tools]
