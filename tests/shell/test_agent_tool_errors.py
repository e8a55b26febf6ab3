"""Tool failures become DSH's error results; the turn goes on."""

from __future__ import annotations

from typing import Any

from _shell_helpers import ECHO_SCHEMA, echo_tool, make_host, of_type, run, scripted, types
from msgspec import UNSET

from turnfork.core import (
    ImageAttachment,
    ImageBlock,
    TextBlock,
    ToolErrorInfo,
    ToolRestriction,
    ToolResultBlock,
    ToolResultEvent,
)
from turnfork.shell import Reply, Tool, ToolContext, ToolError, ToolOutcome
from turnfork.shell.tools import ToolScope


def _results(script: list[Reply], *tools: Tool, scope_restriction: ToolRestriction | None = None,
             ) -> tuple[list[ToolResultEvent], Any]:
    async def main() -> tuple[list[ToolResultEvent], Any]:
        host = make_host()
        for tool in tools:
            host.tools.register(tool)
        scope = None if scope_restriction is None else ToolScope(host.tools,
                                                                 restriction=scope_restriction)
        agent, model = scripted(host, [*script, Reply.text("after")], tools_scope=scope)
        agent.followup("go")
        await agent.when_idle()
        assert types(agent.session.events)[-1] == "turn/end"
        return of_type(agent.session.events, ToolResultEvent), model

    return run(main)


def _text(result: ToolResultEvent) -> str:
    block = result.data.message.content[0]
    assert isinstance(block, ToolResultBlock) and block.is_error is not UNSET
    inner = block.content[0]
    assert isinstance(inner, TextBlock)
    return inner.text


def _is_error(result: ToolResultEvent) -> bool:
    block = result.data.message.content[0]
    assert isinstance(block, ToolResultBlock)
    return block.is_error is True


def test_unknown_tool() -> None:
    """A call to no tool gets an error result with ToolNotFoundError/UNKNOWN_TOOL."""
    results, model = _results([Reply.tool_call("nope", {})])
    assert _text(results[0]) == 'Error: unknown tool "nope"'
    assert _is_error(results[0])
    assert results[0].data.error == ToolErrorInfo(name="ToolNotFoundError", code="UNKNOWN_TOOL")
    assert model.calls == 2  # the model got the error and answered again


def test_restricted_tool_is_hidden_and_refused() -> None:
    """A denied global tool is absent from the request and refuses to run if called."""
    ran: list[str] = []

    async def secret(args: dict[str, Any], ctx: ToolContext) -> str:
        ran.append("secret")
        return "leaked"

    results, model = _results(
        [Reply.tool_call("secret", {})], echo_tool(),
        Tool("secret", "", {"type": "object"}, secret),
        scope_restriction=ToolRestriction(deny=("secret",)))
    assert [t.name for t in model.requests[0].tools] == ["echo"]
    assert _text(results[0]) == 'Error: unknown tool "secret"'
    assert results[0].data.error == ToolErrorInfo(name="ToolNotFoundError", code="UNKNOWN_TOOL")
    assert ran == []


def test_invalid_arguments() -> None:
    """Bad JSON, a non-object and schema violations are INVALID_ARGS errors; the violations in
    DSH's words (dsh-tools tests/tools.spec.ts "defineTool validation", "validateArgs")."""
    results, _ = _results([
        Reply.tool_calls([("echo", "{oops"), ("echo", "[1, 2]"), ("echo", {"text": 3}),
                          ("echo", {})])], echo_tool())
    texts = [_text(r) for r in results]
    assert texts[0].startswith("Error: invalid arguments: arguments are not valid JSON")
    assert texts[1] == "Error: invalid arguments: arguments must be a JSON object, got array"
    assert texts[2] == 'Error: invalid arguments: "text" must be a string'
    assert texts[3] == 'Error: invalid arguments: missing required property "text"'
    assert all(r.data.error == ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS")
               for r in results)


def test_pathological_arguments_fail_only_their_own_call() -> None:
    """Arguments nested 100,000 deep, an integer of 5,000 digits and NaN each give that call the
    invalid-arguments result; the sibling calls of the same step run, and the turn goes on."""
    deep = '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"
    huge = '{"text": ' + "9" * 5_000 + "}"
    results, model = _results([
        Reply.tool_calls([("echo", {"text": "first"}), ("echo", deep), ("echo", huge),
                          ("echo", '{"text": NaN}'), ("echo", {"text": "last"})])], echo_tool())
    texts = [_text(r) for r in results]
    assert [_is_error(r) for r in results] == [False, True, True, True, False]
    assert texts[0] == "echo:first" and texts[4] == "echo:last"
    assert texts[1] == "Error: invalid arguments: arguments are nested deeper than 512 levels"
    assert texts[2].startswith("Error: invalid arguments: ") and "integer" in texts[2]
    assert texts[3].startswith("Error: invalid arguments: arguments are not valid JSON")
    assert len(model.requests) == 2, "the turn did not go on to the next step"


def test_empty_arguments_mean_an_empty_object() -> None:
    """An empty arguments string is {} (DSH maps "" to {})."""
    seen: list[dict[str, Any]] = []

    async def handler(args: dict[str, Any], ctx: ToolContext) -> str:
        seen.append(args)
        return "fine"

    results, _ = _results([Reply.tool_call("t", "")], Tool("t", "", {"type": "object"}, handler))
    assert seen == [{}] and _text(results[0]) == "fine"


def test_handler_errors() -> None:
    """A plain exception is Error: <message> without error info; ToolError carries its info."""

    async def plain(args: dict[str, Any], ctx: ToolContext) -> str:
        raise ValueError("disk is on fire")

    async def structured(args: dict[str, Any], ctx: ToolContext) -> str:
        raise ToolError("subagent \"x\" is unavailable", name="SubagentError",
                        code="NOT_RESUMABLE")

    async def wrong_type(args: dict[str, Any], ctx: ToolContext) -> Any:
        return 42

    results, _ = _results(
        [Reply.tool_calls([("plain", {}), ("structured", {}), ("wrong", {})])],
        Tool("plain", "", {}, plain), Tool("structured", "", {}, structured),
        Tool("wrong", "", {}, wrong_type))
    assert _text(results[0]) == "Error: disk is on fire"
    assert results[0].data.error is UNSET and _is_error(results[0])
    assert _text(results[1]) == 'Error: subagent "x" is unavailable'
    assert results[1].data.error == ToolErrorInfo(name="SubagentError", code="NOT_RESUMABLE")
    assert _text(results[2]).startswith("Error: a tool returned int")


def test_handler_results_blocks_and_outcomes() -> None:
    """Content blocks pass through; a ToolOutcome sets is_error and error info."""
    image = ImageBlock(attachment=ImageAttachment(attachment_id="a", media_type="image/png",
                                                  bytes=1, width=1, height=1))

    async def blocks(args: dict[str, Any], ctx: ToolContext) -> Any:
        return (TextBlock(text="see"), image)

    async def failed(args: dict[str, Any], ctx: ToolContext) -> Any:
        return ToolOutcome("Error: nope", is_error=True,
                           error=ToolErrorInfo(name="X", code="Y"))

    results, _ = _results([Reply.tool_calls([("blocks", {}), ("failed", {})])],
                          Tool("blocks", "", {}, blocks), Tool("failed", "", {}, failed))
    first = results[0].data.message.content[0]
    assert isinstance(first, ToolResultBlock)
    assert first.content == (TextBlock(text="see"), image) and first.is_error is False
    assert _is_error(results[1])
    assert results[1].data.error == ToolErrorInfo(name="X", code="Y")


def test_conclude_turn_ends_the_turn_after_the_batch() -> None:
    """A ToolOutcome with conclude_turn completes the turn without another model call."""

    async def conclude(args: dict[str, Any], ctx: ToolContext) -> Any:
        return ToolOutcome("Structured output recorded.", conclude_turn=True)

    async def main() -> None:
        host = make_host()
        host.tools.register(Tool("finish", "", ECHO_SCHEMA | {"required": []}, conclude,
                                 concurrency_safe=True))
        host.tools.register(echo_tool())
        agent, model = scripted(host, [Reply.tool_calls([("finish", {}), ("echo",
                                                                           {"text": "x"})])])
        agent.followup("go")
        await agent.when_idle()
        assert model.calls == 1
        tail = types(agent.session.events)[-6:]
        assert tail == ["tool/call", "tool/call", "tool/result", "tool/result", "step/end",
                        "turn/end"]

    run(main)
