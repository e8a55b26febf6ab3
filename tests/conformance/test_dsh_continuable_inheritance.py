"""DSH's ACP snapshot ``subagent-continuable-inheritance`` (examples/acp-agent/tests/snapshots/
subagent-continuable-inheritance, config subagent-continuable-inheritance.cordis.yml with the
fixture plugin tests/fixtures/parent-sandbox-override.ts; spec packages/subagent/subagent/tests/
continuation-inheritance.spec.ts "seeds the parent sandbox override and pins approval to
never"): the root switches itself to ``read-only`` at creation; its background child inherits
the override (``sandbox/mode {read-only, delegation}``) and the parent gets a settlement
notice turn."""

from __future__ import annotations

from _replay import acp_recorded, assert_replays, run_acp

from turnfork.core import SandboxModeData, SandboxModeEvent
from turnfork.shell import Agent

RECORDING = acp_recorded("subagent-continuable-inheritance", children=1)
PROMPTS = ("Follow these steps exactly, then stop. 1. Call the subagent tool once with "
           "run_in_background set to true, description 'Reply with CHILD_OK', and prompt 'Reply "
           "with exactly the word CHILD_OK and nothing else.'. 2. Reply with the single word "
           "DONE. Do not use the bash tool.",)


def switch_to_read_only(parent: Agent) -> None:
    """DSH's parent-sandbox-override fixture: one ``sandbox/mode read-only`` on every root
    session as it is created (the UI's access switch)."""
    parent.session.append(SandboxModeEvent, SandboxModeData(mode="read-only"))


def test_continuable_inheritance_logs_equal_dsh() -> None:
    """Our parent (read-only from seq 0) and its continuable child equal DSH's logs."""
    assert_replays(run_acp(RECORDING, PROMPTS, prepare_parent=switch_to_read_only), RECORDING)
