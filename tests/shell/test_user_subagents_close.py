"""A closed runtime admits no continuable child, whether or not one was started before."""

from __future__ import annotations

from pathlib import Path

import pytest
from _shell_helpers import run
from _subagent_helpers import subagent_host

from turnfork.core import TextBlock
from turnfork.core.continuation import DRAINING, ContinuableStart
from turnfork.shell import JsonlSessionStore
from turnfork.shell.subagents import SubagentError


def test_a_closed_runtime_refuses_continuable_children_it_never_served(tmp_path: Path) -> None:
    """``aclose()`` drains the continuation manager, closing admission for good, also when
    nothing had used it yet: a later start is refused ``DRAINING``, nothing is created."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host(store=JsonlSessionStore(tmp_path))
        await host.subagents.aclose()
        with pytest.raises(SubagentError) as refused:
            await host.subagents.continuation.start_continuable(
                "spawn", ContinuableStart(prompt=(TextBlock(text="p"),), label="l"),
                parent=parent)
        assert refused.value.error.code == DRAINING
        assert host.agents.list() == (parent,) and recorder.events == [] and model.calls == 0
        await host.aclose()

    run(main)
