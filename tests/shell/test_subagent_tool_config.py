"""The ``subagent`` tool's own checks: its refusal of a call without a calling agent, its
constructor's checks of ``max_depth`` and ``tool_filter``, and the depth-capability check when
it is installed on a registered provider.

Ports DSH's ``packages/subagent/tool-subagent/tests/tool-subagent.spec.ts`` ("fails loud when
invoked without a calling agent", "rejects maxDepth=$label when the plugin loads", "validates
maxDepth when apply() is invoked directly without Schemastery", "an explicit empty toolFilter
fails at plugin load, not at first delegation", "depth budget › rejects a numeric maxDepth on a
provider without the depthLimit capability at mount", "depth budget › 'provider-managed' omits
the cap so a capability-less provider mounts and starts").
"""

from __future__ import annotations

from typing import Any

import pytest
from _shell_helpers import make_host, run
from _subagent_helpers import subagent_host

from turnfork.core import MAX_SAFE_INTEGER, Capabilities, ToolOutcome, ToolRestriction
from turnfork.shell import (
    Reply,
    Session,
    SpawnProvider,
    SubagentRuntime,
    SubagentTool,
    ToolContext,
)

BAD_MAX_DEPTH = "subagent maxDepth must be a non-negative safe integer"
EMPTY_FILTER = ("tool-subagent: `toolFilter` is configured but names neither `allow` nor "
                "`deny` — remove the key or fill the filter")


class _NotAnAgent:
    """A calling context that is not an agent of this runtime (DSH: ``exec.agent`` undefined)."""

    def __init__(self, session: Session) -> None:
        self.id = "outsider"
        self.session = session
        self.cancel_cause = None

    async def request_approval(self, tool_name: str, detail: str, *,
                               call_id: str | None = None) -> None:
        raise AssertionError("never asked")


def test_a_call_without_a_calling_agent_is_refused_in_dshs_words() -> None:
    """The tool invoked with no agent of ours behind it: DSH's exact refusal, an error result
    without an error key, and no child started."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host([Reply.text("never")])
        SubagentTool(provider="spawn").install(host)
        tool = host.tools.get("subagent")
        assert tool is not None
        context = ToolContext(agent=_NotAnAgent(parent.session), call_id="call-1",
                              tool_name="subagent", turn=1, step=1)
        outcome = await tool.handler({"description": "d", "prompt": "p"}, context)
        assert outcome == ToolOutcome(
            "Error: subagent tool requires a calling agent (exec.agent was undefined)",
            is_error=True)
        assert host.sessions.list() == (parent.id,) and recorder.events == []
        assert model.calls == 0
        await parent.dispose()

    run(main)


@pytest.mark.parametrize("value", [
    "1", float("nan"), float("inf"), float("-inf"), -1, 1.5, -0.0, MAX_SAFE_INTEGER + 1, True,
], ids=["a string", "NaN", "+infinity", "-infinity", "a negative integer", "a fraction",
        "negative zero", "an unsafe integer", "a bool"])
def test_a_malformed_max_depth_is_refused_when_the_tool_is_built(value: Any) -> None:
    """Every value DSH's spec refuses gets DSH's sentence (never a type-check message)."""
    with pytest.raises(ValueError) as refused:
        SubagentTool(provider="spawn", max_depth=value)
    assert str(refused.value) == BAD_MAX_DEPTH


@pytest.mark.parametrize(("value", "kept"), [(None, None), (0, 0), (3, 3), (2.0, 2),
                                             (MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)])
def test_a_well_formed_max_depth_is_kept(value: Any, kept: int | None) -> None:
    """None (no cap), 0 up to the largest safe integer, and an integral float (a JS number)
    are accepted; the cap is kept as an int."""
    tool = SubagentTool(provider="spawn", max_depth=value)
    assert tool.max_depth == kept and type(tool.max_depth) is type(kept)


def test_an_empty_tool_filter_is_refused_when_the_tool_is_built() -> None:
    """A filter naming neither list fails at construction with DSH's text; a partial one is
    kept as given."""
    with pytest.raises(ValueError) as refused:
        SubagentTool(provider="spawn", tool_filter=ToolRestriction())
    assert str(refused.value) == EMPTY_FILTER
    deny_only = ToolRestriction(deny=("subagent",))
    assert SubagentTool(provider="spawn", tool_filter=deny_only).tool_filter == deny_only


def test_a_cap_on_a_provider_without_depth_limit_is_refused_at_install() -> None:
    """Installing a tool with a numeric max_depth on a registered provider that cannot enforce
    it fails with DSH's mount text and leaves no tool; without a cap it installs."""

    class External(SpawnProvider):
        def __init__(self) -> None:
            super().__init__("external")
            self.capabilities = Capabilities()

    host = make_host()
    SubagentRuntime(host).register_provider(External())
    capped = SubagentTool(provider="external")  # DSH's default cap 3
    with pytest.raises(ValueError) as refused:
        capped.install(host)
    assert str(refused.value) == (
        'tool-subagent: provider "external" cannot enforce maxDepth (no depthLimit capability) '
        "— set maxDepth: 'provider-managed' to leave the recursion budget to the provider")
    assert not capped.visible and host.tools.get("subagent") is None
    uncapped = SubagentTool(provider="external", max_depth=None)
    uncapped.install(host)
    assert uncapped.visible and uncapped.request("d", "p").max_depth is None
