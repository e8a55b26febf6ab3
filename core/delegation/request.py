"""What a delegation may ask for, and the checks a request passes before any child exists.

Rules of this module:

* A :class:`StartRequest` is what a caller (the ``subagent`` tool, or a program) asks one
  provider for. Every optional part of it needs a provider :class:`Capabilities` flag; a request
  needing a flag the provider lacks is refused with DSH's ``UNSUPPORTED_CAPABILITY`` message,
  naming the first missing capability in DSH's order (outputSchema, depthLimit, toolFilter,
  persona), never accepted and then ignored.
* A tool filter names ``allow`` and/or ``deny``; both empty-handed is a no-op and refused, and
  every name must be a known global tool (DSH's ``tools.restrict()`` texts).
* Failures are :class:`StartError` values. ``name`` is the error class DSH would report in the
  parent's ``tool/result`` ``error`` key; ``None`` marks a plain error, which has no such key
  (the depth and tool-filter errors are plain, wire-format §2.8, §7.6).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

import msgspec
from msgspec import Raw, UnsetType
from returns.result import Failure, Result, Success

from .._checking import checked
from ..log import ContentBlock, ToolErrorInfo, ToolRestriction
from .depth import DepthError

__all__ = [
    "UNSUPPORTED_CAPABILITY",
    "DEPTH",
    "INVALID_TOOL_FILTER",
    "UNSUPPORTED_SCHEMA",
    "RESERVED_TOOL_NAMES",
    "AgentOptions",
    "RuntimeOptions",
    "StartRequest",
    "Capabilities",
    "StartError",
    "PromptSection",
    "check_capabilities",
    "validate_tool_filter",
]

#: Error codes of :class:`StartError`.
UNSUPPORTED_CAPABILITY = "UNSUPPORTED_CAPABILITY"
DEPTH = "DEPTH"
INVALID_TOOL_FILTER = "INVALID_TOOL_FILTER"
#: DSH's code for an output schema outside the supported subset (class ``JsonSchemaError``).
UNSUPPORTED_SCHEMA = "UNSUPPORTED_SCHEMA"

#: Tool names a filter may never mention: DSH refuses its code-mode transport tool.
RESERVED_TOOL_NAMES = frozenset({"run_code"})


class AgentOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Per-child model route overrides; ``None`` means "inherit the parent's"."""

    provider: str | None = None
    model: str | None = None
    max_tokens: int | None = None


class RuntimeOptions(msgspec.Struct, frozen=True, kw_only=True):
    """An agent's runtime options that delegation reads and writes (``None``: absent)."""

    provider: str | None = None
    model: str | None = None
    max_tokens: int | None = None
    #: Delegation depth stamped on a child (wire-format §7.6); absent on a top-level agent. A
    #: JavaScript number on DSH's side, so a float is possible; only non-negative safe
    #: integers are accepted where it is read.
    subagent_depth: int | float | None = None


class StartRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One delegation as asked for: the child's first prompt plus optional settings.

    ``output_schema`` is the requested JSON Schema as its exact JSON text; it must be an
    object-rooted schema within the subset of :mod:`core.structured`.
    """

    prompt: tuple[ContentBlock, ...]
    #: Short display label; becomes the descriptor ``label`` (the tool's ``description``).
    label: str | None = None
    agent_options: AgentOptions | None = None
    output_schema: Raw | None = None
    max_depth: int | None = None
    tool_filter: ToolRestriction | None = None
    persona: str | None = None


class Capabilities(msgspec.Struct, frozen=True, kw_only=True):
    """Which optional request parts a provider can honour (DSH ``SubagentCapabilities``)."""

    output_schema: bool = False
    depth_limit: bool = False
    tool_filter: bool = False
    persona: bool = False


class StartError(msgspec.Struct, frozen=True, kw_only=True):
    """A delegation refused before any child exists.

    ``name`` is the error class reported in the parent's ``tool/result`` ``error`` key
    (``SubagentError``, ``JsonSchemaError``); ``None`` for a plain error, which has no key.
    """

    code: str
    message: str
    name: str | None = None

    def error_info(self) -> ToolErrorInfo | None:
        """The ``tool/result`` ``error`` value, or ``None`` for a plain error."""
        return None if self.name is None else ToolErrorInfo(name=self.name, code=self.code)

    @classmethod
    def from_depth(cls, error: DepthError) -> StartError:
        """A depth refusal as a start error (plain: no ``error`` key)."""
        return cls(code=DEPTH, message=error.message)

    def __str__(self) -> str:
        return self.message


class PromptSection(msgspec.Struct, frozen=True, kw_only=True):
    """A named piece of a child's prompt, placed by ``order`` (lower first).

    ``kind="section"`` is a system-prompt section; ``kind="context"`` a runtime-context
    contribution (rendered in the per-step runtime-context message, wire-format §3.3).
    """

    name: str
    order: float
    text: str
    kind: Literal["section", "context"] = "section"


@checked
def check_capabilities(provider_name: str, capabilities: Capabilities,
                       request: StartRequest) -> Result[None, StartError]:
    """Refuse a request that needs a capability the provider lacks.

    Args:
        provider_name: the provider's registry name (``"fork"``, ``"spawn"``, …).
        capabilities: what the provider supports.
        request: the delegation asked for.

    Returns:
        ``Success(None)``, or the first missing capability in DSH's order as a
        ``SubagentError`` ``UNSUPPORTED_CAPABILITY``.

    >>> request = StartRequest(prompt=(), persona="terse")
    >>> check_capabilities("acp", Capabilities(), request).failure().message
    'subagent provider "acp" does not support the "persona" capability'
    >>> check_capabilities("fork", Capabilities(persona=True), request)
    <Success: None>
    """
    # In DSH's order; a plain request (none of them asked for) passes without a table.
    if request.output_schema is not None and not capabilities.output_schema:
        missing = "outputSchema"
    elif request.max_depth is not None and not capabilities.depth_limit:
        missing = "depthLimit"
    elif request.tool_filter is not None and not capabilities.tool_filter:
        missing = "toolFilter"
    elif request.persona is not None and not capabilities.persona:
        missing = "persona"
    else:
        return _SUPPORTED
    return Failure(StartError(
        code=UNSUPPORTED_CAPABILITY, name="SubagentError",
        message=f'subagent provider "{provider_name}" does not support the '
                f'"{missing}" capability'))


#: A result is immutable: the one success is made once (every start asks).
_SUPPORTED: Result[None, StartError] = Success(None)


def _quoted(names: Collection[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


@checked
def validate_tool_filter(tool_filter: ToolRestriction,
                         known_tools: Collection[str] | None) -> Result[ToolRestriction,
                                                                        StartError]:
    """Check a child's tool filter against the global tools it may name.

    Args:
        tool_filter: ``{allow?, deny?}``: keep only ``allow``, remove ``deny``.
        known_tools: the global tool names of the parent's deployment; ``None`` skips the
            unknown-name check (for a caller that cannot list them).

    Returns:
        The filter unchanged, or a plain ``INVALID_TOOL_FILTER`` error when it names neither
        list, names a reserved tool, or names tools that are not known.

    >>> validate_tool_filter(ToolRestriction(deny=("write",)), {"read", "write"})
    <Success: ToolRestriction(allow=UNSET, deny=('write',))>
    >>> validate_tool_filter(ToolRestriction(allow=("web",)), {"read"}).failure().message
    'tools.restrict() names unknown global tool "web"; known global tools: read'
    """
    allow, deny = tool_filter.allow, tool_filter.deny
    if isinstance(allow, UnsetType) and isinstance(deny, UnsetType):
        return Failure(StartError(code=INVALID_TOOL_FILTER,
                                  message="tools.restrict({}) is a no-op: pass `allow` and/or "
                                          "`deny`"))
    named = (*(() if isinstance(allow, UnsetType) else allow),
             *(() if isinstance(deny, UnsetType) else deny))
    reserved = [name for name in named if name in RESERVED_TOOL_NAMES]
    if reserved:
        return Failure(StartError(code=INVALID_TOOL_FILTER,
                                  message=f"tools.restrict() cannot name the reserved tool"
                                          f"{'s' if len(reserved) > 1 else ''} "
                                          f"{_quoted(reserved)}"))
    unknown = [] if known_tools is None else [name for name in named if name not in known_tools]
    if unknown and known_tools is not None:
        known = ", ".join(sorted(known_tools)) or "(none)"
        return Failure(StartError(code=INVALID_TOOL_FILTER,
                                  message=f"tools.restrict() names unknown global tool"
                                          f"{'s' if len(unknown) > 1 else ''} "
                                          f"{_quoted(unknown)}; known global tools: {known}"))
    return Success(tool_filter)
