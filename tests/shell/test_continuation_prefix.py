"""A continued fork child keeps extending the same cache-aligned prefix (issue 16.6), measured
on the wire through the real SDK against the loopback fake server (tests/shell/
_continued_wire.py): its first request extends its parent's (share 1.0, as issue 13.2 measures
a one-shot fork's), and each later request — the step after a tool call, a later turn, a turn
after the process restarted and the child was resumed from its log — is a byte-identical
extension of the one before. DSH's own caveat (its child-only report tool and guidance sit in
the request head, so DSH ships fork children one-shot) is measured too: with the report tool
in the child's scope the first request no longer extends the parent's, while the child's own
requests still extend each other; with the tool offered globally the prefix is kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _continued_wire import ContinuedWire, continued_fork_on_the_wire, extends
from _wire_prefix import prompt_share

PLACEMENTS = ("none", "global", "child")


@pytest.fixture(scope="module", params=PLACEMENTS)
def wire(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
         ) -> tuple[str, ContinuedWire]:
    placement: str = request.param
    root: Path = tmp_path_factory.mktemp(f"wire-{placement}")
    return placement, asyncio.run(continued_fork_on_the_wire(root, placement))  # type: ignore[arg-type]


def test_every_later_request_extends_the_one_before(wire: tuple[str, ContinuedWire]) -> None:
    """Ensures that the child's requests after its first — after its tool call, in its next
    turn, and after a restart and cold resume — each start with the whole of the previous
    one's rendered prompt, whatever the report tool's placement."""
    _, recorded = wire
    first, after_tool, second_turn, after_restart = recorded.child
    assert extends(after_tool, first)
    assert extends(second_turn, after_tool)
    assert extends(after_restart, second_turn)
    # the provider's cache accounting agrees: each later request is a hit on all but its tail
    for earlier, later in zip(recorded.child, recorded.child[1:], strict=False):
        assert later.usage is not None and earlier.usage is not None
        assert later.usage["prompt_cache_hit_tokens"] >= earlier.usage["prompt_tokens"] - 1


def test_the_first_request_extends_the_parents_unless_the_report_tool_is_child_only(
        wire: tuple[str, ContinuedWire]) -> None:
    """Ensures that without the report tool, or with it offered to every agent, the child's
    first request shares its whole inherited prompt with its parent's (system, tools, seed
    messages); with DSH's child-only placement the system prompt and the tools differ and the
    share drops below a third."""
    placement, recorded = wire
    share = prompt_share(recorded.parent, recorded.child[0], recorded.seed_messages)
    if placement == "child":
        assert not share.system_equal and not share.tools_equal and share.share < 0.34
    else:
        assert share.is_prefix_extension and share.share == 1.0
