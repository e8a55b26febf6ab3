"""Approval asks, logged as DSH's user-approval plugin does (``approval/asked``, then
``approval/decided`` whatever happens)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeAlias

import msgspec

from ..core import OpaqueEvent
from .clock import IdFactory
from .session import Session

__all__ = ["ApprovalPolicy", "Approver", "ApprovalRefusedError", "ApprovalAsker",
           "request_approval"]

ApprovalPolicy: TypeAlias = Literal["ask", "never"]
#: (agent, tool name, detail) -> granted; the agent is typed ``Any`` so that this module needs
#: nothing of ``agent.py`` (which imports it) and an approver may annotate it as an ``Agent``.
Approver: TypeAlias = Callable[[Any, str, str], Awaitable[bool]]


class _ApprovalServices(Protocol):
    ids: IdFactory
    approver: Approver | None


class ApprovalAsker(Protocol):
    """What an ask needs of the asking agent (an :class:`~turnfork.shell.Agent` is one)."""

    session: Session
    approval_policy: ApprovalPolicy
    approver: Approver | None

    @property
    def host(self) -> _ApprovalServices: ...


_JSON = msgspec.json.Encoder()


class ApprovalRefusedError(Exception):
    """An approval ask was refused; a tool raising it gets an ``Error:`` result."""


async def request_approval(agent: ApprovalAsker, tool_name: str, detail: str, *,
                           call_id: str | None = None) -> None:
    """Ask ``agent``'s approver (or its host's) to let ``tool_name`` act; a refusal (policy
    ``never``, no approver, a no) raises :class:`ApprovalRefusedError`."""
    ask_id = agent.host.ids()
    asked: dict[str, object] = {"id": ask_id, "toolName": tool_name}
    if call_id is not None:
        asked["callId"] = call_id
    if detail:
        asked["reason"] = detail
    _log(agent, "approval/asked", asked)
    outcome, refusal = "rejected", ""
    try:
        if agent.approval_policy == "never":
            refusal = (f"{tool_name} needs approval ({detail}), but approval prompts are "
                       "disabled in this session: the action was rejected")
        else:
            approver = agent.approver or agent.host.approver
            if approver is None:
                outcome = "unavailable"
                refusal = f"{tool_name} needs approval ({detail}), but no approver is available"
            elif await approver(agent, tool_name, detail):
                outcome = "allowed-once"
            else:
                refusal = f"{tool_name} was not approved ({detail})"
    except asyncio.CancelledError:
        outcome = "cancelled"
        raise
    finally:
        _log(agent, "approval/decided", {"id": ask_id, "outcome": outcome})
    if refusal:
        raise ApprovalRefusedError(refusal)


def _log(agent: ApprovalAsker, event_type: str, data: dict[str, object]) -> None:
    agent.session.append(OpaqueEvent, msgspec.Raw(_JSON.encode(data)), type=event_type)
