"""The control tools of continuable children: ``send_message``, ``interrupt_agent`` and
``list_agents`` (DSH's ``dsh-tool-subagent-control``): global, and thin (routing, residency,
authority are the continuation manager's, the texts the core's). One-shot children are not listed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ...core import (
    AgentListDiagnostic,
    AgentListEntry,
    AgentStatus,
    MessageSource,
    ToolOutcome,
    ToolSchema,
    interrupt_agent_schema,
    list_agents_schema,
    no_calling_agent,
    render_agent_list,
    render_interrupt_requested,
    render_queued,
    render_start_error,
    send_message_schema,
)
from ..agent import Agent
from ..tools import Tool, ToolContext, _schema_tool
from .continuation import AncestorAuthority, ContinuationManager, ListedChild
from .contract import SubagentError, SubagentHost
from .registry import SubagentRuntime

__all__ = ["SubagentControlTools"]


def agent_tool(schema: ToolSchema,
               body: Callable[[dict[str, Any], Agent], Awaitable[ToolOutcome]]) -> Tool:
    """A control tool (the report tool too): called by an agent only, the manager's refusals
    as error results."""

    async def handler(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        if not isinstance(ctx.agent, Agent):
            return ToolOutcome(no_calling_agent(schema.name), is_error=True)
        try:
            return await body(args, ctx.agent)
        except SubagentError as refused:
            return render_start_error(refused.error)

    return _schema_tool(schema, handler)


class SubagentControlTools:
    """``send_message``, ``interrupt_agent`` and (unless ``list_agents=False``)
    ``list_agents``, over one host's continuation manager."""

    def __init__(self, *, list_agents: bool = True) -> None:
        self.with_list = list_agents
        self._host: SubagentHost | None = None
        self._tools: list[Tool] = []

    @property
    def manager(self) -> ContinuationManager:
        if self._host is None:
            raise RuntimeError("the subagent control tools are not installed")
        return SubagentRuntime.of(self._host).continuation

    def install(self, host: SubagentHost) -> None:
        """Register the tools in ``host``'s global registry, all or none (``ValueError``)."""
        if self._host is not None:
            raise ValueError("the subagent control tools are already installed")
        tools = [agent_tool(send_message_schema(), self._send),
                 agent_tool(interrupt_agent_schema(), self._interrupt)]
        if self.with_list:
            tools.append(agent_tool(list_agents_schema(), self._list))
        host.tools.register_all(tools)
        self._host, self._tools = host, tools

    def uninstall(self) -> None:
        """Withdraw the tools (idempotent)."""
        host, tools = self._host, self._tools
        self._host, self._tools = None, []
        if host is not None:
            host.tools.withdraw(tools)

    async def _send(self, args: dict[str, Any], parent: Agent) -> ToolOutcome:
        await self.manager.followup(
            parent, args["subagent_id"], args["message"],
            source=MessageSource(kind="coordinator", form="relay", sender_session_id=parent.id))
        return ToolOutcome(render_queued(args["subagent_id"]))

    async def _interrupt(self, args: dict[str, Any], caller: Agent) -> ToolOutcome:
        self.manager.interrupt(args["agent_id"], AncestorAuthority(caller))
        return ToolOutcome(render_interrupt_requested(args["agent_id"]))

    def _status(self, child_id: str) -> AgentStatus:
        assert self._host is not None
        agent = self._host.agents.get(child_id)
        if agent is None:
            return "ready"
        return "running" if agent.running else "idle"

    async def _list(self, args: dict[str, Any], caller: Agent) -> ToolOutcome:
        descendants = args.get("scope") == "descendants"
        # The call's cancellation (its turn cancelled) cancels a read in flight.
        rows = await (self.manager.list_descendants(caller.id) if descendants
                      else self.manager.list_children(caller.id))
        entries: list[AgentListEntry | AgentListDiagnostic] = []
        for row in rows:
            where: dict[str, Any] = {"parent": row.parent, "depth": row.depth} \
                if descendants else {}
            if isinstance(row, ListedChild):
                if row.mode != "continuable":
                    continue  # a one-shot child cannot be continued
                entries.append(AgentListEntry(id=row.id, label=row.label or "",
                                              status=self._status(row.id), **where))
            else:
                entries.append(AgentListDiagnostic(id=row.id, reason=row.reason, **where))
        return ToolOutcome(render_agent_list(entries), value=tuple(entries))

    def __repr__(self) -> str:
        return f"SubagentControlTools(installed={self._host is not None})"
