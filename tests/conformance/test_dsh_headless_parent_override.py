"""DSH's headless snapshot ``subagent-inheritance-snapshots/parent-override``
(examples/headless-agent/tests/subagent-inheritance.snapshot.ts, config
examples/headless-agent/subagent-inheritance.cordis.snapshot.yml; spec
packages/subagent/subagent-in-process-driver/tests/inheritance.spec.ts "records the parent
sandbox override and the approval pin before publishing a spawn child"): a persisted parent
whose log switched itself to ``read-only`` is resumed under a ``workspace-write`` deployment and
delegates a write; the child inherits the override and its write is denied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _replay import (
    HEADLESS,
    MODEL,
    PROVIDER,
    Replayed,
    ReplayModel,
    Run,
    assert_replays,
    model_script,
    recorded,
    replayed,
    run_bounded,
    watch_children,
)

from turnfork.core import (
    MessageSource,
    SandboxModeData,
    SandboxModeEvent,
    SessionHeader,
    TextBlock,
    ToolErrorInfo,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    UserMessage,
    UserMessageEvent,
)
from turnfork.shell import (
    Agent,
    Host,
    JsonlSessionStore,
    SpawnProvider,
    SubagentRuntime,
    SubagentTool,
    Tool,
    ToolContext,
    ToolOutcome,
)

RECORDING = recorded("parent-override", f"{HEADLESS}parent-override__parent.expected.jsonl",
                     f"{HEADLESS}parent-override__child.expected.jsonl")
PARENT_ID = "subagent-inheritance-parent"
TASK = "Delegate the write probe to a subagent."
SANDBOX_DENIED = (
    "Error: [sandbox: file access denied under read-only mode]\n[sandbox: escalation available "
    "— retry this exact operation once with sandbox_permissions (the narrowest wider mode that "
    "suffices) + justification; the approval prompt asks the user]")
_WRITE = {"type": "object", "properties": {"file_path": {"type": "string"},
                                           "content": {"type": "string"}},
          "required": ["file_path", "content"]}


def seed_read_only_parent(store: JsonlSessionStore, cwd: str) -> None:
    """What the DSH spec persists before the app starts: one completed turn in which the
    session switched itself to ``read-only``."""
    session = store.create(SessionHeader(id=PARENT_ID, created_at=1, cwd=cwd))
    session.append(TurnStartEvent, TurnStartData(turn=1))
    session.append(UserMessageEvent, UserMessage(
        content=(TextBlock(text="Tighten this session to read-only."),),
        source=MessageSource(kind="user"), id="3f0c5d7e-8d0e-4d8e-9a53-6c1f2f4b7a10"),
        surface_op="append")
    session.append(SandboxModeEvent, SandboxModeData(mode="read-only"))
    session.append(TurnEndEvent, TurnEndData(turn=1, reason=TurnCompleted()))
    store.release(PARENT_ID)


async def _write(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    mode = ctx.session.trace.sandbox_mode
    if mode is not None and mode.mode == "read-only":
        return ToolOutcome(SANDBOX_DENIED, is_error=True,
                           error=ToolErrorInfo(name="FsError", code="FS_SANDBOX_DENIED"))
    return ToolOutcome("the stand-in write tool models only the read-only denial",
                       is_error=True)


def run_headless(root: Path) -> Replayed:
    """The headless app of the DSH scenario, on our side: JSONL persistence, deployment sandbox
    ``workspace-write``, no approval service, DSH's tool-fs ``write`` under the file sandbox
    (reduced to its read-only denial), the ``subagent`` tool on ``spawn`` (``maxDepth`` 1);
    the seeded parent is resumed and given the task."""
    cwd = str(root / "workspace")
    seed_read_only_parent(JsonlSessionStore(root / "sessions"), cwd)

    async def main() -> Replayed:
        host = Host(store=JsonlSessionStore(root / "sessions"), sandbox_mode="workspace-write")
        model = ReplayModel([model_script(log) for log in RECORDING.logs()])
        host.models.register(PROVIDER, model)
        host.tools.register(Tool("write", "Write a file.", _WRITE, _write))
        runtime = SubagentRuntime(host)
        runtime.register_provider(SpawnProvider("spawn"))
        SubagentTool(provider="spawn", tool_name="subagent", max_depth=1,
                     enable_run_in_background=True).install(host)
        children: dict[str, Agent] = {}
        watch_children(runtime, children)
        parent = host.create_agent(PARENT_ID, provider=PROVIDER, model=MODEL,
                                   system="You are an AI agent powered by DeepSeek Harness.")
        try:
            parent.followup(TASK)
            await parent.when_idle()
            return replayed(Run(parent, model, children))
        finally:
            await host.aclose()

    return run_bounded(main)


def test_parent_override_logs_equal_dsh(tmp_path: Path) -> None:
    """Our resumed parent (``session/end-seed`` after the persisted turn, a ``read-only``
    snapshot without an approval sentence, the title from its first message at seq 1) and its
    child (``sandbox/mode read-only`` by delegation first, no approval pin, the denied write)
    equal DSH's logs."""
    assert_replays(run_headless(tmp_path), RECORDING, blanket_ids=True, session_ids=[PARENT_ID])
