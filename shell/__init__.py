"""turnfork's imperative shell: a thin asyncio runtime over the pure core.

A :class:`Host` owns models, tools, sessions and agents; an :class:`Agent` carries out the
core's turn machine over a :class:`Session` (append-only, always valid, forkable without
copying); stores keep sessions in memory or in DSH's JSONL layout on disk; the subagent runtime
(``host.subagents``) starts fork and spawn children through one driver; :class:`ScriptedModel`
is the embedded default model and :class:`OpenAIChatModel` talks to any OpenAI-compatible
endpoint.

The front door below (``__all__``) is what a host needs, and the whole contract of this
package; everything else lives in its module (``turnfork.shell.agent``, ``.session``,
``.store``, ``.jsonl_store``, ``.tools``, ``.subagents``, ``.models``, ``.clock``, ``.abort``,
``.errors``, ``.telemetry``) and is imported from there. A module's public name asked of the
package still resolves, for code written when the package answered for its modules, with a
``DeprecationWarning`` naming its home. Importing the package costs next to nothing: each name
is loaded on first use. The library's loggers (``turnfork`` and its children, one per module) are
silent until the application configures logging: ``turnfork`` has a ``NullHandler``.
"""

import importlib as _importlib
import logging as _logging
import typing as _typing
import warnings as _warnings

_logging.getLogger("turnfork").addHandler(_logging.NullHandler())

if _typing.TYPE_CHECKING:
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

#: The front door: each module and the names it lends it.
_HOMES = {
    ".host": ("Host",),
    ".agent": ("Agent", "AgentLoopError", "AgentDisposedError"),
    "..core": ("RunResult",),
    ".errors": ("ModelError", "ModelRateLimitedError", "ModelTimeoutError", "ModelServerError",
                "ModelTransportError", "ModelNotFoundError", "ModelAuthenticationError"),
    ".session": ("Session",),
    ".store": ("SessionStore", "MemorySessionStore", "SessionLoadError", "SessionExistsError"),
    ".jsonl_store": ("JsonlSessionStore",),
    ".models.base": ("Model", "ModelRequest"),
    ".models.scripted": ("ScriptedModel", "Reply"),
    ".models.openai_chat": ("OpenAIChatModel",),
    ".tools": ("Tool", "ToolContext", "ToolOutcome", "ToolError"),
    ".subagents": ("SubagentRuntime", "ForkProvider", "SpawnProvider", "SubagentRun",
                   "SubagentTool", "SubagentStartError"),
    ".abort": ("AbortController",),
    ".clock": ("ManualClock", "CountingIds"),
}
_FRONT_DOOR = {name: home for home, names in _HOMES.items() for name in names}

#: Modules whose public names the package once answered for: still resolved, deprecated.
_MODULES = (".agent", ".approval", ".abort", ".clock", ".host", ".registries", ".session", ".store",
            ".jsonl_store", ".tools", ".subagents", ".models.base", ".models.scripted", ".errors",
            ".telemetry")

__all__ = list(_FRONT_DOOR)


def __getattr__(name: str) -> _typing.Any:
    """Load a front-door name on first use (``OpenAIChatModel`` imports the optional
    ``openai`` SDK); resolve a module's name with a warning (never cached, so every use is
    told)."""
    home = _FRONT_DOOR.get(name)
    if home is not None:
        value = getattr(_importlib.import_module(home, __name__), name)
        globals()[name] = value
        return value
    for module_name in _MODULES:
        module = _importlib.import_module(module_name, __name__)
        if name in getattr(module, "__all__", ()):
            _warnings.warn(f"turnfork.shell.{name} is not in the shell's front door: import it "
                          f"from {module.__name__}", DeprecationWarning, stacklevel=2)
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_FRONT_DOOR})
