"""turnfork's imperative shell: a thin asyncio runtime over the pure core.

A :class:`Host` owns models, tools, sessions and agents; an :class:`Agent` runs turns over a
:class:`Session` (append-only, always valid, forkable without copying); stores keep sessions in
memory or in DSH's JSONL layout on disk; :class:`ScriptedModel` is the embedded default model.
``OpenAIChatModel`` is imported on first use (it needs the optional ``openai`` package).
"""

from __future__ import annotations

from typing import Any

from .abort import AbortController, AbortListener, AbortSignal
from .agent import (
    Agent,
    AgentDisposedError,
    AgentLoopError,
    ApprovalPolicy,
    ApprovalRefusedError,
    Approver,
    PreStepHook,
    Prompt,
)
from .clock import Clock, CountingIds, IdFactory, ManualClock, system_clock, uuid_ids
from .host import AgentExistsError, AgentRegistry, Host, ModelRegistry, UnknownProviderError
from .jsonl_store import Compression, JsonlSessionStore
from .models.base import Model, ModelRequest
from .models.scripted import SCRIPT_EXHAUSTED, Reply, ScriptedModel, ScriptEntry, ToolCallSpec
from .session import Draft, EventsView, Session, SessionSink, SessionViolationError, draft
from .store import (
    MemorySessionStore,
    SessionExistsError,
    SessionLoadError,
    SessionNotFoundError,
    SessionRepairWarning,
    SessionStore,
    decode_segment,
    encode_segment,
    project_dir_name,
    project_key,
)
from .subagent_tool import DEFAULT_MAX_DEPTH, SubagentTool
from .subagents import (
    ABORTED,
    ALL_CAPABILITIES,
    NO_PROVIDER,
    ForkProvider,
    ForkSeed,
    InProcessProvider,
    Registration,
    SpawnProvider,
    StructuredCapture,
    SubagentAbortedError,
    SubagentEnd,
    SubagentEvent,
    SubagentListener,
    SubagentProvider,
    SubagentRun,
    SubagentRuntime,
    SubagentStart,
    SubagentStartError,
)
from .tools import (
    DEFAULT_SECTION_ORDER,
    DELEGATION_ORDER,
    DELEGATION_SECTION,
    PERSONA_ORDER,
    PERSONA_SECTION,
    STRUCTURED_OUTPUT_ORDER,
    STRUCTURED_OUTPUT_SECTION,
    PromptSection,
    PromptSections,
    Tool,
    ToolContext,
    ToolError,
    ToolGuard,
    ToolHandler,
    ToolOutcome,
    ToolRefusal,
    ToolRegistry,
    ToolResult,
    ToolScope,
    compose_system_prompt,
    restriction_problem,
    schema_violations,
)

__all__ = [
    # host
    "Host",
    "ModelRegistry",
    "AgentRegistry",
    "UnknownProviderError",
    "AgentExistsError",
    # time and ids
    "Clock",
    "IdFactory",
    "system_clock",
    "uuid_ids",
    "ManualClock",
    "CountingIds",
    # sessions and stores
    "Session",
    "EventsView",
    "SessionSink",
    "SessionViolationError",
    "Draft",
    "draft",
    "SessionStore",
    "MemorySessionStore",
    "JsonlSessionStore",
    "Compression",
    "SessionNotFoundError",
    "SessionExistsError",
    "SessionLoadError",
    "SessionRepairWarning",
    "project_key",
    "project_dir_name",
    "encode_segment",
    "decode_segment",
    # agents
    "Agent",
    "AgentDisposedError",
    "AgentLoopError",
    "ApprovalRefusedError",
    "ApprovalPolicy",
    "Approver",
    "PreStepHook",
    "Prompt",
    # models
    "Model",
    "ModelRequest",
    "ScriptedModel",
    "Reply",
    "ScriptEntry",
    "ToolCallSpec",
    "SCRIPT_EXHAUSTED",
    "OpenAIChatModel",
    # tools and prompt sections
    "Tool",
    "ToolHandler",
    "ToolGuard",
    "ToolResult",
    "ToolOutcome",
    "ToolError",
    "ToolContext",
    "ToolRefusal",
    "ToolRegistry",
    "ToolScope",
    "restriction_problem",
    "schema_violations",
    "PromptSection",
    "PromptSections",
    "compose_system_prompt",
    "PERSONA_SECTION",
    "PERSONA_ORDER",
    "DELEGATION_SECTION",
    "DELEGATION_ORDER",
    "STRUCTURED_OUTPUT_SECTION",
    "STRUCTURED_OUTPUT_ORDER",
    "DEFAULT_SECTION_ORDER",
    # subagents
    "SubagentRuntime",
    "SubagentProvider",
    "Registration",
    "ForkProvider",
    "SpawnProvider",
    "InProcessProvider",
    "ForkSeed",
    "ALL_CAPABILITIES",
    "SubagentRun",
    "SubagentStart",
    "SubagentEnd",
    "SubagentEvent",
    "SubagentListener",
    "StructuredCapture",
    "SubagentStartError",
    "SubagentAbortedError",
    "NO_PROVIDER",
    "ABORTED",
    "SubagentTool",
    "DEFAULT_MAX_DEPTH",
    "AbortController",
    "AbortSignal",
    "AbortListener",
]


def __getattr__(name: str) -> Any:
    """Import ``OpenAIChatModel`` (and the optional ``openai`` SDK) only when asked for."""
    if name == "OpenAIChatModel":
        from .models.openai_chat import OpenAIChatModel  # noqa: PLC0415 - optional extra

        return OpenAIChatModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
