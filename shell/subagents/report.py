"""The ``report`` tool: how a continuable child hands content to the agent that started it
(DSH's ``dsh-tool-subagent-report``). Installed, it is a continuable setup: every continuable
child, fresh or resumed, gets the tool in its own scope (no tool filter hides it) and the
``tool:report`` guidance; refusals are the continuation manager's. ``scope="global"`` also
lists it in the host's registry, so a fork child's request head stays its parent's (the
guidance then goes into the child's runtime context). Placement rules: the API doc.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ...core import (
    CLOSING_REPORT_SECTION,
    ToolOutcome,
    no_calling_agent,
    render_report_accepted,
    report_schema,
    report_section,
)
from ..agent import Agent
from .continuation import ReportDelivery
from .contract import SubagentHost
from .control import agent_tool
from .registry import SubagentRuntime

__all__ = ["ReportTool"]


class ReportTool:
    """The child-side ``report`` tool of every continuable child of one host."""

    def __init__(self, *, delivery: ReportDelivery = "next-step",
                 scope: Literal["child", "global"] = "child") -> None:
        if delivery not in ("next-step", "quiet"):
            raise ValueError(f"reportDelivery must be 'quiet' or 'next-step', not {delivery!r}")
        if scope not in ("child", "global"):
            raise ValueError(f"scope must be 'child' or 'global', not {scope!r}")
        self.delivery: ReportDelivery = delivery
        self.scope = scope
        self.tool = agent_tool(report_schema(), self._report)
        self.section = report_section("context" if scope == "global" else "section")
        self._host: SubagentHost | None = None
        self._remove: Callable[[], None] | None = None

    def install(self, host: SubagentHost) -> None:
        """Give every later continuable child of ``host`` the tool and its guidance
        (``ValueError``: installed already, or, ``scope="global"``, a global ``report`` exists)."""
        if self._host is not None:
            raise ValueError("the report tool is already installed")
        if self.scope == "global":
            host.tools.register(self.tool)
        self._host = host
        self._remove = SubagentRuntime.of(host).continuation.register_setup(self._setup)

    def uninstall(self) -> None:
        """Stop granting the tool (children already resident keep it until they settle)."""
        host, remove = self._host, self._remove
        self._host = self._remove = None
        if remove is not None:
            remove()
        if host is not None and self.scope == "global":
            host.tools.withdraw((self.tool,))

    def _setup(self, child: Agent) -> Callable[[], None]:
        listed = child.tools.listed
        if listed is not None and not any(tool.name == self.tool.name for tool in listed):
            # A cache-preserving child whose parent lists no report tool: adding one would
            # change its request head, so its closing message is its report.
            child.prompt_sections.add(CLOSING_REPORT_SECTION)
            return lambda: child.prompt_sections.remove(CLOSING_REPORT_SECTION.name)
        section = self.section if listed is None else report_section("context")
        child.tools.add(self.tool)
        child.prompt_sections.add(section)

        def undo() -> None:
            child.prompt_sections.remove(section.name)
            child.tools.remove(self.tool.name)

        return undo

    async def _report(self, args: dict[str, Any], child: Agent) -> ToolOutcome:
        if self._host is None:
            return ToolOutcome(no_calling_agent("report"), is_error=True)
        message_id = SubagentRuntime.of(self._host).continuation.report_from(
            child, args["output"], delivery=self.delivery)
        return ToolOutcome(render_report_accepted(message_id))
