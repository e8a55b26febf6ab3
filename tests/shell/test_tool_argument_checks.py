"""A call whose argument check fails gets its own error result (red-team finding G01).

The check of a call's arguments (the tool's schema, or its own ``validate``) used to run
outside the guard around the handler: an exception there escaped ``execute_call``, the calls of
the same step that had already run were logged "tool call aborted" and the turn ended ``error``.
"""

from __future__ import annotations

from typing import Any

from _shell_helpers import make_host, of_type, run, scripted, types

from turnfork.core import (
    TextBlock,
    ToolErrorInfo,
    ToolResultBlock,
    ToolResultEvent,
    TurnCompleted,
    TurnEndEvent,
)
from turnfork.shell import Reply, Tool, ToolContext

_INVALID_ARGS = ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS")


async def _echo(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"echo:{args.get('text')}"


def _turn(calls: list[tuple[str, Any]], *tools: Tool) -> tuple[list[ToolResultEvent], Any, Any]:
    async def main() -> tuple[list[ToolResultEvent], Any, Any]:
        host = make_host()
        for tool in tools:
            host.tools.register(tool)
        agent, model = scripted(host, [Reply.tool_calls(calls), Reply.text("after")])
        agent.followup("go")
        await agent.when_idle()
        assert types(agent.session.events)[-1] == "turn/end"
        end = of_type(agent.session.events, TurnEndEvent)[-1]
        return of_type(agent.session.events, ToolResultEvent), model, end

    return run(main)


def _text(result: ToolResultEvent) -> tuple[str, bool]:
    block = result.data.message.content[0]
    assert isinstance(block, ToolResultBlock)
    inner = block.content[0]
    assert isinstance(inner, TextBlock)
    return inner.text, block.is_error is True


def test_a_5000_digit_key_fails_only_its_own_call() -> None:
    """``{"1111…": 1}`` to a tool with ``additionalProperties: false``: that call gets the
    invalid-arguments result naming the key, its siblings keep theirs, the turn goes on."""
    closed = Tool("closed", "", {"type": "object", "properties": {"text": {"type": "string"}},
                                 "additionalProperties": False}, _echo, concurrency_safe=True)
    long_key = "1" * 5_000
    results, model, end = _turn(
        [("closed", {"text": "first"}), ("closed", f'{{"{long_key}": 1}}'),
         ("closed", {"text": "last"})], closed)
    assert [_text(r) for r in results] == [
        ("echo:first", False),
        (f'Error: invalid arguments: "{long_key}" is not a declared property '
         "(additionalProperties: false)", True),
        ("echo:last", False)]
    assert results[1].data.error == _INVALID_ARGS
    assert len(model.requests) == 2, "the turn did not go on to the next step"
    assert isinstance(end.data.reason, TurnCompleted)


def test_a_validator_that_raises_fails_only_its_own_call() -> None:
    """A tool's own ``validate`` raising is that call's invalid-arguments result."""

    def broken(args: dict[str, Any]) -> list[str]:
        raise RuntimeError("validator fell over")

    fragile = Tool("fragile", "", {"type": "object"}, _echo, validate=broken)
    plain = Tool("plain", "", {"type": "object"}, _echo)
    results, model, end = _turn([("plain", {"text": "a"}), ("fragile", {}),
                                 ("plain", {"text": "b"})], fragile, plain)
    assert [_text(r) for r in results] == [
        ("echo:a", False), ("Error: invalid arguments: validator fell over", True),
        ("echo:b", False)]
    assert results[1].data.error == _INVALID_ARGS
    assert len(model.requests) == 2
    assert isinstance(end.data.reason, TurnCompleted)
