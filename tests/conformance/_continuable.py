"""What the continuable-subagent scenarios need and our runtime lacks (shared xfail reason)."""

from __future__ import annotations

#: Why DSH's continuable scenarios cannot equal ours yet; each test adds what it needs beyond.
NO_CONTINUABLE = (
    "no continuable background subagents: DSH's ACP `subagent` tool is `backgroundMode: "
    "continuable` (examples/acp-agent/cordis.yml), so `run_in_background: true` returns "
    "`started subagent <id>` at once (packages/subagent/tool-subagent/src/index.ts:371) and "
    "the child's log starts with a seeded `subagent/descriptor {mode: continuable, "
    "agentProvider, agentModel}` and `session/end-seed`; ours (shell/subagents/tool.py "
    "SubagentTool._call) runs every call in the foreground with a one-shot descriptor, and has "
    "no settlement notice turn (packages/subagent/subagent/src/continuation.ts:301-311)")
