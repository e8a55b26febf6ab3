"""DSH's continuable ACP snapshot scenarios replayed through our runtime composed as DSH's ACP
app composes its continuable ``subagent`` tool (examples/acp-agent/cordis.yml: ``subagent`` on
``spawn`` with ``backgroundMode: continuable``, ``maxDepth`` 1; ``subagent_fork`` one-shot,
background disabled; the control, list-agents, report and job plugins; session persistence),
compared event for event with DSH's recorded logs (tests/conformance/_replay.py):

* ``subagent-continuable-inheritance`` (spec continuation-inheritance.spec.ts "seeds the parent
  sandbox override and pins approval to never"): the root switches itself to ``read-only``;
  its background child's log is its descriptor, ``session/end-seed``, ``sandbox/mode
  {read-only, delegation}``, ``approval/policy never``, then its turn; the parent gets a
  settlement-notice turn.
* ``subagent-list-agents`` (spec list-children.spec.ts "lists a persisted continuable child as
  inactive with its durable label", tool-subagent-control.spec.ts "accepts an absent target as
  a no-op"): a background child settles, the parent's notice turn, then ``list_agents`` →
  ``<id> [ready] — Reply with CHILD_OK``.

The scenario text names the child ``33333333-…`` (DSH's projection writes its real child so);
ours gets that id from the manager's ``child_ids``, so the prompt and the log name the same
child.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path

from _replay import (
    ACP_CWD,
    ACP_PERSONA,
    MODEL,
    PROVIDER,
    Recorded,
    Replayed,
    ReplayModel,
    Run,
    acp_recorded,
    assert_replays,
    model_script,
    replayed,
    run_bounded,
    watch_children,
)
from test_dsh_continuable_inheritance import PROMPTS as INHERITANCE_PROMPTS
from test_dsh_continuable_inheritance import switch_to_read_only
from test_dsh_subagent_list_agents import PROMPTS as LIST_PROMPTS

from turnfork.shell import (
    Agent,
    ForkProvider,
    Host,
    JsonlSessionStore,
    SpawnProvider,
    SubagentRuntime,
    SubagentTool,
)
from turnfork.shell.subagents import (
    BackgroundJobs,
    JobTools,
    ReportTool,
    SubagentControlTools,
)

CHILD_ID = "33333333-3333-4333-8333-333333333333"


def run_continuable_acp(root: Path, recording: Recorded, prompts: Sequence[str], *,
                        prepare_parent: Callable[[Agent], None] | None = None) -> Replayed:
    """The ACP app with its continuable composition; each prompt runs until the parent and every
    background child are quiet (DSH's driver waits for the settlement-notice turn too)."""

    async def main() -> Replayed:
        host = Host(store=JsonlSessionStore(root), sandbox_mode="danger-full-access",
                    approval_default="never")
        model = ReplayModel([model_script(log) for log in recording.logs()])
        host.models.register(PROVIDER, model)
        runtime = SubagentRuntime(host)
        runtime.register_provider(SpawnProvider("spawn"))
        runtime.register_provider(ForkProvider("fork"))
        runtime.continuation.child_ids = itertools.chain(
            [CHILD_ID], iter(host.ids, None)).__next__
        jobs = BackgroundJobs(host)
        JobTools(jobs).install()
        SubagentTool(provider="spawn", tool_name="subagent", max_depth=1,
                     background_mode="continuable", jobs=jobs).install(host)
        SubagentTool(provider="fork", tool_name="subagent_fork", max_depth=1,
                     enable_run_in_background=False).install(host)
        SubagentControlTools().install(host)
        ReportTool().install(host)
        children: dict[str, Agent] = {}
        watch_children(runtime, children)
        parent = host.create_agent(provider=PROVIDER, model=MODEL, cwd=ACP_CWD,
                                   system=ACP_PERSONA, approval=True)
        if prepare_parent is not None:
            prepare_parent(parent)
        try:
            for prompt in prompts:
                parent.followup(prompt)
                async with asyncio.timeout(5):
                    while parent.running or runtime.continuation.activations():
                        await parent.when_idle()
                        await asyncio.sleep(0.001)
            return replayed(Run(parent, model, children))
        finally:
            await host.aclose()

    return run_bounded(main)


def test_continuable_inheritance_logs_equal_dsh(tmp_path: Path) -> None:
    """Our read-only parent and its continuable child equal DSH's logs, the notice turn
    included."""
    recording = acp_recorded("subagent-continuable-inheritance", children=1)
    assert_replays(run_continuable_acp(tmp_path, recording, INHERITANCE_PROMPTS,
                                       prepare_parent=switch_to_read_only), recording)


def test_list_agents_logs_equal_dsh(tmp_path: Path) -> None:
    """Our parent's three turns (start, notice, list and interrupt) and the settled child
    equal DSH's logs."""
    recording = acp_recorded("subagent-list-agents", children=1)
    assert_replays(run_continuable_acp(tmp_path, recording, LIST_PROMPTS), recording)
