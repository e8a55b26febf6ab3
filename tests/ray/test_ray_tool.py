"""Through the same SubagentTool, the parent sees only a Ray child's final output, as with an
in-process child: the child's own tool calls stay in the child's log (in-process test:
test_subagent_tool.py's end-to-end fork)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import (
    WHERE,
    assert_balanced,
    close,
    contract_host,
    one_turn,
    provider,
    run,
    text,
    types,
)

from turnfork.core import ToolCallEvent, final_assistant_output
from turnfork.shell import SubagentTool


@pytest.mark.parametrize("where", WHERE)
def test_the_parent_sees_only_the_final_output(pool: Any, where: str) -> None:
    """The child calls echo, then answers; the parent's log holds one subagent call and its
    result, the child's text; the child's log holds its echo call."""

    async def main() -> None:
        host, parent, recorder = contract_host(pool)
        SubagentTool(provider=provider(where)).install(host)
        await one_turn(parent, 'delegate 1 tool echo {"text":"x"}')
        assert text(final_assistant_output(parent.session.events) or ()) == \
            "parent saw: tool said: echo:x"
        calls = [e.data.name for e in parent.session.events if isinstance(e, ToolCallEvent)]
        assert calls == ["subagent"]
        (start,) = recorder.starts()
        child_calls = [e.data.name for e in start.run.own_events()
                       if isinstance(e, ToolCallEvent)]
        assert child_calls == ["echo"] and start.run.disposed
        assert "tool/call" in types(start.run.own_events())
        assert_balanced(parent.session.events, "parent")
        await close(host)

    run(main)
