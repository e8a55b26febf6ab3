"""turnfork's imperative shell: a thin asyncio runtime over the pure core.

A :class:`Host` owns models, tools, sessions and agents; an :class:`Agent` carries out the
core's turn machine over a :class:`Session` (append-only, always valid, forkable without
copying); stores keep sessions in memory or in DSH's JSONL layout on disk; the subagent runtime
(``host.subagents``) starts fork and spawn children through one driver; :class:`ScriptedModel`
is the embedded default model and :class:`OpenAIChatModel` talks to any OpenAI-compatible
endpoint.

The front door below is what a host needs; everything else lives in its module
(``turnfork.shell.agent``, ``.session``, ``.store``, ``.jsonl_store``, ``.tools``,
``.subagents``, ``.models``, ``.clock``, ``.abort``, ``.errors``, ``.telemetry``) and stays
importable from this package too. Importing the package costs next to nothing: each name is
loaded on first use. The library's loggers (``turnfork`` and its children, one per module) are
silent until the application configures logging: ``turnfork`` has a ``NullHandler``.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

logging.getLogger("turnfork").addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from ..core import RunResult as RunResult
    from .abort import AbortController as AbortController
    from .agent import Agent as Agent
    from .agent import AgentDisposedError as AgentDisposedError
    from .agent import AgentLoopError as AgentLoopError
    from .clock import CountingIds as CountingIds
    from .clock import ManualClock as ManualClock
    from .errors import ModelAuthenticationError as ModelAuthenticationError
    from .errors import ModelError as ModelError
    from .errors import ModelNotFoundError as ModelNotFoundError
    from .errors import ModelRateLimitedError as ModelRateLimitedError
    from .errors import ModelServerError as ModelServerError
    from .errors import ModelTimeoutError as ModelTimeoutError
    from .errors import ModelTransportError as ModelTransportError
    from .host import Host as Host
    from .jsonl_store import JsonlSessionStore as JsonlSessionStore
    from .models.base import Model as Model
    from .models.base import ModelRequest as ModelRequest
    from .models.openai_chat import OpenAIChatModel as OpenAIChatModel
    from .models.scripted import Reply as Reply
    from .models.scripted import ScriptedModel as ScriptedModel
    from .session import Session as Session
    from .store import MemorySessionStore as MemorySessionStore
    from .store import SessionExistsError as SessionExistsError
    from .store import SessionLoadError as SessionLoadError
    from .store import SessionStore as SessionStore
    from .subagents import ForkProvider as ForkProvider
    from .subagents import SpawnProvider as SpawnProvider
    from .subagents import SubagentRun as SubagentRun
    from .subagents import SubagentRuntime as SubagentRuntime
    from .subagents import SubagentStartError as SubagentStartError
    from .subagents import SubagentTool as SubagentTool
    from .tools import Tool as Tool
    from .tools import ToolContext as ToolContext
    from .tools import ToolError as ToolError
    from .tools import ToolOutcome as ToolOutcome

#: The front door: each name and the module it lives in.
_FRONT_DOOR = {
    "Host": ".host",
    "Agent": ".agent",
    "AgentLoopError": ".agent",
    "AgentDisposedError": ".agent",
    "RunResult": "..core",
    "ModelError": ".errors",
    "Session": ".session",
    "SessionStore": ".store",
    "MemorySessionStore": ".store",
    "JsonlSessionStore": ".jsonl_store",
    "SessionLoadError": ".store",
    "SessionExistsError": ".store",
    "Model": ".models.base",
    "ModelRequest": ".models.base",
    "ScriptedModel": ".models.scripted",
    "Reply": ".models.scripted",
    "OpenAIChatModel": ".models.openai_chat",
    "Tool": ".tools",
    "ToolContext": ".tools",
    "ToolOutcome": ".tools",
    "ToolError": ".tools",
    "SubagentRuntime": ".subagents",
    "ForkProvider": ".subagents",
    "SpawnProvider": ".subagents",
    "SubagentRun": ".subagents",
    "SubagentTool": ".subagents",
    "SubagentStartError": ".subagents",
    "AbortController": ".abort",
}

#: Modules whose public names are importable from the package as well (their home stays the
#: module; they are not part of the front door).
_MODULES = (".agent", ".approval", ".abort", ".clock", ".host", ".registries", ".session", ".store",
            ".jsonl_store", ".tools", ".subagents", ".models.base", ".models.scripted", ".errors",
            ".telemetry")

__all__ = list(_FRONT_DOOR)


def __getattr__(name: str) -> Any:
    """Load a name on first use (``OpenAIChatModel`` imports the optional ``openai`` SDK)."""
    home = _FRONT_DOOR.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home, __name__), name)
    else:
        for module_name in _MODULES:
            module = importlib.import_module(module_name, __name__)
            if name in getattr(module, "__all__", ()):
                value = getattr(module, name)
                break
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_FRONT_DOOR})
