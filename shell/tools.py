"""Tools, the scopes that decide which ones an agent sees, and the named prompt sections
(the rules: docs/api-shell-runtime.md, "Tools and prompt sections")."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypeVar

import msgspec
from msgspec import UnsetType
from returns.result import Failure

from ..core import (
    CancelCause,
    CancelUser,
    ContentBlock,
    ImageBlock,
    PromptSection,
    ReasoningBlock,
    SupportedSchema,
    TextBlock,
    ToolCallBlock,
    ToolErrorInfo,
    ToolOutcome,
    ToolRestriction,
    ToolResultBlock,
    ToolSchema,
    check_schema,
    merge_sections,
    parse_tool_arguments,
    ranked_sections,
    value_violations,
)
from ..core.delegation import validate_tool_filter

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "CallingAgent", "Tool", "ToolHandler", "ToolGuard", "ToolResult", "ToolOutcome", "ToolError",
    "ToolContext", "ToolRefusal", "ToolRegistry", "ToolScope", "execute_call", "error_outcome",
    "restriction_problem", "PromptSections", "compose_system_prompt", "runtime_context",
    "DEFAULT_SECTION_ORDER",
]

T = TypeVar("T")

#: The order of a section set without one (DSH's tool-guidance band starts here).
DEFAULT_SECTION_ORDER = 100

_BLOCK_TYPES = (TextBlock, ReasoningBlock, ImageBlock, ToolCallBlock, ToolResultBlock)


ToolResult: TypeAlias = str | tuple[ContentBlock, ...] | ToolOutcome
ToolHandler: TypeAlias = Callable[[dict[str, Any], "ToolContext"], Awaitable[ToolResult]]
#: A call guard: the reason to deny a call, or ``None`` (see :attr:`ToolScope.guards`).
ToolGuard: TypeAlias = Callable[["ToolContext"], "str | None"]


class ToolError(Exception):
    """A tool failure with structured info: the result gets ``error: {name, code}``."""

    def __init__(self, message: str, *, name: str = "ToolError", code: str = "UNKNOWN") -> None:
        super().__init__(message)
        self.info = ToolErrorInfo(name=name, code=code)


_INVALID_ARGS = ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS")


def error_outcome(message: str, info: ToolErrorInfo | None = None) -> ToolOutcome:
    return ToolOutcome(content=f"Error: {message}", is_error=True, error=info)


def outcome_of(result: object) -> ToolOutcome:
    if isinstance(result, ToolOutcome):
        return result
    if isinstance(result, str):
        return ToolOutcome(content=result)
    if isinstance(result, Sequence) and all(isinstance(b, _BLOCK_TYPES) for b in result):
        return ToolOutcome(content=tuple(result))
    raise TypeError(f"a tool returned {type(result).__name__}; expected str, content blocks "
                    "or ToolOutcome")


async def execute_call(tool: Tool | ToolRefusal, arguments: str, context: ToolContext,
                       ) -> ToolOutcome:
    """Run one call: refusals, argument checks (``INVALID_ARGS``), then the handler, whose
    failures become error outcomes. Only cancellation propagates."""
    if isinstance(tool, ToolRefusal):
        return tool.outcome
    parsed = parse_tool_arguments(arguments)
    if isinstance(parsed, Failure):
        return error_outcome(f"invalid arguments: {parsed.failure()}", _INVALID_ARGS)
    args = parsed.unwrap()
    try:
        problems = tool.violations(args)
    except Exception as exc:  # a failing check fails this call only, like a failing handler
        return error_outcome(f"invalid arguments: {str(exc) or type(exc).__name__}", _INVALID_ARGS)
    if problems:
        return error_outcome(f"invalid arguments: {'; '.join(problems)}", _INVALID_ARGS)
    try:
        return outcome_of(await tool.handler(args, context))
    except asyncio.CancelledError:
        raise
    except ToolError as exc:
        return error_outcome(str(exc), exc.info)
    except Exception as exc:  # a plain error: Error: text, no structured info (DSH)
        return error_outcome(str(exc) or type(exc).__name__)


@dataclass(frozen=True)
class Tool:
    """A model-callable tool. ``parameters`` outside the core's JSON Schema subset are refused
    here, so that no keyword reaches the model that the arguments are not checked against."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: ToolHandler
    concurrency_safe: bool = False
    validate: Callable[[dict[str, Any]], Sequence[str]] | None = None
    _checked: SupportedSchema = field(init=False, repr=False, compare=False)

    @cached_property
    def schema(self) -> ToolSchema:
        return ToolSchema(name=self.name, description=self.description,
                          parameters=msgspec.Raw(msgspec.json.encode(dict(self.parameters))))

    def __post_init__(self) -> None:
        checked = check_schema(dict(self.parameters))
        if isinstance(checked, Failure):
            raise ValueError(f'tool "{self.name}" parameters: {checked.failure().message}')
        object.__setattr__(self, "_checked", checked.unwrap())

    def violations(self, args: dict[str, Any]) -> Sequence[str]:
        """Every way ``args`` break the parameters, in DSH's words; empty when valid."""
        if self.validate is not None:
            return self.validate(args)
        return value_violations(self._checked, args, "")


def _schema_tool(schema: ToolSchema, handler: ToolHandler, *, concurrency_safe: bool = False,
                validate: Callable[[dict[str, Any]], Sequence[str]] | None = None) -> Tool:
    """A tool of one of the core's schemas (the delegation, job, control, report and
    structured-output tools')."""
    return Tool(schema.name, schema.description, msgspec.json.decode(schema.parameters), handler,
                concurrency_safe, validate)


@dataclass(frozen=True, slots=True)
class ToolRefusal:
    """Why a called tool cannot run: the result it gets instead."""

    outcome: ToolOutcome


class CallingAgent(Protocol):
    """What a running tool may use of the agent that called it (an :class:`~.agent.Agent`)."""

    @property
    def id(self) -> str: ...

    @property
    def session(self) -> Session: ...

    @property
    def cancel_cause(self) -> CancelCause | None: ...

    async def request_approval(self, tool_name: str, detail: str, *,
                               call_id: str | None = None) -> None: ...


@dataclass(frozen=True)
class ToolContext:
    """What a running tool knows: the calling agent and its call."""

    agent: CallingAgent
    call_id: str
    tool_name: str
    turn: int
    step: int
    extras: dict[str, Any] = field(default_factory=dict)
    arguments: str = ""  # as the model produced them

    @property
    def session(self) -> Session:
        return self.agent.session

    @property
    def cancel_cause(self) -> CancelCause | None:
        return self.agent.cancel_cause

    async def request_approval(self, detail: str) -> None:
        """Ask for approval; raises ``ApprovalRefusedError`` unless granted."""
        await self.agent.request_approval(self.tool_name, detail, call_id=self.call_id)

    async def run(self, awaitable: Awaitable[T], *,
                  on_cancel: Callable[[CancelCause], object] | None = None) -> T:
        """Await ``awaitable``; on the agent's cancellation call ``on_cancel(cause)``
        synchronously (so it cannot be skipped), then let the cancellation go on."""
        try:
            return await awaitable
        except asyncio.CancelledError:
            if on_cancel is not None:
                on_cancel(self.cancel_cause or CancelUser())
            raise


class ToolRegistry:
    """The host's global tools, in registration order."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self.register_all(tools)

    def register(self, tool: Tool) -> None:
        self.register_all((tool,))

    def register_all(self, tools: Iterable[Tool]) -> None:
        """Register every tool, or none when a name is taken or repeated (``ValueError``)."""
        named: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools or tool.name in named:
                raise ValueError(f"a tool named {tool.name!r} is already registered")
            named[tool.name] = tool
        self._tools.update(named)

    def unregister(self, name: str) -> None:
        if self._tools.pop(name, None) is None:
            raise KeyError(f"no tool named {name!r}")

    def withdraw(self, tools: Iterable[Tool]) -> None:
        """Unregister each of ``tools`` still registered as itself (a replaced one stays)."""
        for tool in tools:
            if self._tools.get(tool.name) is tool:
                del self._tools[tool.name]

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def list(self) -> tuple[Tool, ...]:
        return tuple(self._tools.values())

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


def restriction_problem(restriction: ToolRestriction, known: Iterable[str]) -> str | None:
    """Why a restriction is unusable, in ``core.delegation.validate_tool_filter``'s words."""
    result = validate_tool_filter(restriction, frozenset(known))
    return result.failure().message if isinstance(result, Failure) else None


def _permits(restriction: ToolRestriction, name: str) -> bool:
    if not isinstance(restriction.allow, UnsetType) and name not in restriction.allow:
        return False
    return isinstance(restriction.deny, UnsetType) or name not in restriction.deny


def _code_units(tool: Tool) -> bytes:
    # JavaScript compares strings by UTF-16 code units, not code points: big-endian UTF-16
    # bytes compare as those units do.
    return tool.name.encode("utf-16-be", "surrogatepass")


class ToolScope:
    """One agent's tools: a live registry's (minus restrictions), plus its own, which shadow
    global ones and are never restricted. ``restriction`` is taken as already checked (as a
    child plan's is); ``listed`` fixes the offered list only, not what a call runs."""

    def __init__(self, registry: ToolRegistry, added: Iterable[Tool] = (),
                 restriction: ToolRestriction | None = None,
                 listed: Sequence[Tool] | None = None,
                 guards: Iterable[ToolGuard] = ()) -> None:
        self.registry = registry
        self.listed = None if listed is None else tuple(listed)
        self._added: dict[str, Tool] = {}
        self._restrictions: list[ToolRestriction] = []
        #: Checked before every call of this scope's agent, known tool or not: the first
        #: message returned denies the call (``Error: <message>``, no ``error`` key).
        self.guards: list[ToolGuard] = list(guards)
        for tool in added:
            self.add(tool)
        if restriction is not None:
            self._restrictions.append(restriction)

    def add(self, tool: Tool) -> None:
        if tool.name in self._added:
            raise ValueError(f"this scope already has a tool named {tool.name!r}")
        self._added[tool.name] = tool

    def remove(self, name: str) -> None:
        if self._added.pop(name, None) is None:
            raise KeyError(f"this scope added no tool named {name!r}")

    def restrict(self, restriction: ToolRestriction) -> None:
        """Narrow the registry's tools further; raises ValueError for an unusable restriction."""
        problem = restriction_problem(restriction, self.registry.names())
        if problem is not None:
            raise ValueError(problem)
        self._restrictions.append(restriction)

    @property
    def restrictions(self) -> tuple[ToolRestriction, ...]:
        return tuple(self._restrictions)

    def permits(self, name: str) -> bool:
        """Whether a global tool passes every restriction of this scope."""
        return all(_permits(restriction, name) for restriction in self._restrictions)

    def offers(self, name: str) -> bool:
        """Whether the model's tool list holds a global tool (so its ``tool:<name>`` guidance
        shows)."""
        if self.listed is not None:
            return any(tool.name == name for tool in self.listed)
        return self.permits(name)

    def tools(self) -> tuple[Tool, ...]:
        """The tools the model is offered, in DSH's canonical order (by UTF-16 name)."""
        if self.listed is not None:
            return self.listed
        shared = [tool for tool in self.registry.list()
                  if tool.name not in self._added and self.permits(tool.name)]
        return tuple(sorted((*shared, *self._added.values()), key=_code_units))

    def schemas(self) -> tuple[ToolSchema, ...]:
        return tuple(tool.schema for tool in self.tools())

    def guard(self, context: ToolContext) -> ToolOutcome | None:
        """The denial of a call by one of :attr:`guards`, or ``None`` to let it run."""
        for guard in list(self.guards):
            denial = guard(context)
            if denial is not None:
                return error_outcome(denial)
        return None

    async def call(self, context: ToolContext) -> ToolOutcome:
        """Run the call ``context`` describes: resolved, guarded, then :func:`execute_call`."""
        tool = self.resolve(context.tool_name)
        denied = self.guard(context)
        return denied if denied is not None else await execute_call(tool, context.arguments,
                                                                    context)

    def resolve(self, name: str) -> Tool | ToolRefusal:
        """The tool a call names, or the refusal it gets (unknown or restricted)."""
        own = self._added.get(name)
        if own is not None:
            return own
        shared = self.registry.get(name)
        if shared is None or not self.permits(name):
            # A restricted tool is hidden from lookup too: it is simply unknown (DSH).
            return ToolRefusal(error_outcome(
                f'unknown tool "{name}"',
                ToolErrorInfo(name="ToolNotFoundError", code="UNKNOWN_TOOL")))
        return shared


class PromptSections:
    """Named prompt contributions with an order (lower first), of either
    :class:`turnfork.core.PromptSection` ``kind``."""

    def __init__(self, sections: Iterable[PromptSection] = ()) -> None:
        self._sections: dict[str, PromptSection] = {section.name: section
                                                    for section in sections}

    def set(self, name: str, text: str, *, order: float = DEFAULT_SECTION_ORDER,
            kind: Literal["section", "context"] = "section") -> None:
        """Add or replace a contribution."""
        self._sections[name] = PromptSection(name=name, text=text, order=order, kind=kind)

    def add(self, section: PromptSection) -> None:
        self._sections[section.name] = section

    def remove(self, name: str) -> None:
        self._sections.pop(name, None)

    def get(self, name: str) -> PromptSection | None:
        return self._sections.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._sections

    def sections(self) -> tuple[PromptSection, ...]:
        return tuple(self._sections.values())


def _ranked(layers: Sequence[PromptSections],
            kind: Literal["section", "context"]) -> tuple[PromptSection, ...]:
    return ranked_sections(merge_sections(*(layer.sections() for layer in layers)), kind)


def runtime_context(*layers: PromptSections) -> tuple[PromptSection, ...]:
    """The layers' runtime-context contributions, as :func:`compose_system_prompt` ranks them."""
    return _ranked(layers, "context")


def compose_system_prompt(*layers: PromptSections) -> str:
    """Later layers override earlier ones by name; sorted by order (ties keep their first
    appearance), non-empty texts joined by blank lines.

    >>> host, agent = PromptSections(), PromptSections()
    >>> host.set("deployment:persona", "You are a helper.", order=0)
    >>> host.set("notes", "Be brief.")
    >>> agent.set("deployment:persona", "You are a reviewer.", order=0)
    >>> compose_system_prompt(host, agent)
    'You are a reviewer.\\n\\nBe brief.'
    """
    return "\n\n".join(section.text for section in _ranked(layers, "section"))
