"""DSH's ACP snapshot ``subagent-published-run-failure`` (examples/acp-agent/tests/snapshots/
subagent-published-run-failure with its replay.override.json, config
subagent-durability-failure.cordis.yml, env ``DSH_SUBAGENT_PUBLISHED_FAILURE=1``; spec
packages/subagent/subagent-in-process-driver/tests/subagent-in-process-driver.spec.ts "keeps
published run and handle disposal failures on separate channels"): the child is published, then
delivering its prompt fails and disposing it fails too; the parent's model is told both."""

from __future__ import annotations

from typing import Any

from _replay import (
    acp_recorded,
    assert_replays,
    run_acp,
)

from turnfork.shell import Agent, Host, Session, SubagentRuntime

RECORDING = acp_recorded("subagent-published-run-failure", children=1)
PROMPTS = ("Delegate one foreground subagent. Its published run will fail; report that failure "
           "as PARENT_OBSERVED_ERROR.",)


def fail_published_children(host: Host, runtime: SubagentRuntime) -> None:
    """What DSH's fixture plugin (examples/acp-agent/tests/fixtures/
    subagent-durability-failure.ts) does to every child the agent factory creates: its
    follow-up throws ``snapshot published run failed``; disposing it disposes it, then throws
    ``snapshot published handle disposal failed``. Ours: the same to every child agent the host
    builds (a session with a parent)."""
    build = host.build_agent

    def build_failing(session: Session, **options: Any) -> Agent:
        agent = build(session, **options)
        if not isinstance(session.header.parent_session, str):
            return agent
        dispose = agent.dispose
        failed: list[bool] = []

        def followup(prompt: object) -> None:
            raise RuntimeError("snapshot published run failed")

        async def dispose_failing() -> None:
            await dispose()
            if not failed:
                failed.append(True)
                raise RuntimeError("snapshot published handle disposal failed")

        agent.followup = followup  # type: ignore[method-assign,assignment]
        agent.dispose = dispose_failing  # type: ignore[method-assign]
        return agent

    host.build_agent = build_failing  # type: ignore[method-assign]


def test_published_run_failure_logs_equal_dsh() -> None:
    """Our parent's tool result joins both failures in DSH's words (``Error: subagent run
    failed: Error: …; dispose failed: Error: …``) and the child's log is only its policy pin,
    as DSH's are."""
    assert_replays(run_acp(RECORDING, PROMPTS, prepare=fail_published_children), RECORDING)
