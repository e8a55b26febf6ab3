"""What the continuable-subagent scenarios need and our runtime lacks (shared xfail reason)."""

from __future__ import annotations

#: Why DSH's continuable scenarios cannot equal ours yet; each test adds what it needs beyond.
NO_CONTINUABLE = (
    "no tool starts continuable children: DSH's ACP `subagent` tool is `backgroundMode: "
    "continuable` (examples/acp-agent/cordis.yml), so `run_in_background: true` starts one "
    "through the continuation manager and returns `started subagent <id>` at once "
    "(packages/subagent/tool-subagent/src/index.ts:371); its log starts with the seeded "
    "`subagent/descriptor {mode: continuable, agentProvider, agentModel}` and "
    "`session/end-seed`, and the parent later gets a settlement-notice turn "
    "(packages/subagent/subagent/src/continuation.ts:301-311). Ours has the manager "
    "(shell/subagents/continuation.py) but SubagentTool (shell/subagents/tool.py _call) runs "
    "every call in the foreground as a one-shot child, `run_in_background: true` included")
