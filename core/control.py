"""Kept importable: the names of :mod:`turnfork.core.machine.control`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .machine.control import (
    CONTINUABLE_SECTION_ORDER,
    INTERRUPT_AGENT,
    LIST_AGENTS,
    REPORT,
    REPORT_SECTION_NAME,
    REPORT_SECTION_ORDER,
    REPORT_SECTION_TEXT,
    SEND_MESSAGE,
    AgentListDiagnostic,
    AgentListEntry,
    AgentStatus,
    BackgroundValue,
    ContinuableValue,
    DiagnosticReason,
    ForegroundValue,
    ListScope,
    SubagentToolValue,
    continuable_tool_section,
    interrupt_agent_schema,
    list_agents_schema,
    no_calling_agent,
    object_tool_schema,
    render_agent_list,
    render_interrupt_requested,
    render_queued,
    render_report_accepted,
    render_started,
    report_schema,
    report_section,
    send_message_schema,
)

__all__ = [
    "SEND_MESSAGE", "INTERRUPT_AGENT", "LIST_AGENTS", "REPORT", "REPORT_SECTION_NAME",
    "REPORT_SECTION_ORDER", "REPORT_SECTION_TEXT", "CONTINUABLE_SECTION_ORDER", "AgentStatus",
    "ListScope", "DiagnosticReason", "AgentListEntry", "AgentListDiagnostic", "ForegroundValue",
    "BackgroundValue", "ContinuableValue", "SubagentToolValue", "send_message_schema",
    "interrupt_agent_schema", "list_agents_schema", "report_schema", "object_tool_schema",
    "report_section", "continuable_tool_section", "render_started", "render_queued",
    "render_interrupt_requested", "render_report_accepted", "render_agent_list", "no_calling_agent",
]
