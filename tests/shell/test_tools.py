"""Tool registry, scoped overlays with restrictions, argument checks, prompt sections."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from turnfork.core import ToolRestriction
from turnfork.shell import (
    PromptSections,
    Tool,
    ToolContext,
    ToolRefusal,
    ToolRegistry,
    ToolScope,
    compose_system_prompt,
    schema_violations,
)


async def _noop(args: dict[str, Any], ctx: ToolContext) -> str:
    return ""


def _tool(name: str) -> Tool:
    return Tool(name, f"the {name} tool", {"type": "object"}, _noop)


def _registry(*names: str) -> ToolRegistry:
    return ToolRegistry(_tool(name) for name in names)


def test_registry_keeps_order_and_refuses_duplicates() -> None:
    """Tools list in registration order; a second tool of the same name is refused."""
    registry = _registry("a", "b")
    assert registry.names() == ("a", "b")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(_tool("a"))
    registry.unregister("a")
    assert registry.names() == ("b",) and "a" not in registry


def test_schema_is_the_tools_json_schema() -> None:
    """A tool's schema carries its name, description and parameters verbatim."""
    tool = Tool("t", "does t", {"type": "object", "properties": {"x": {"type": "integer"}}},
                _noop)
    assert msgspec.json.decode(tool.schema.parameters) == dict(tool.parameters)
    assert (tool.schema.name, tool.schema.description) == ("t", "does t")


def test_scope_adds_tools_of_its_own() -> None:
    """Added tools shadow a global tool of the same name; all are listed in DSH's canonical
    order, by name (system-prompt orderTools)."""
    registry = _registry("a", "b")
    own_b = _tool("b")
    scope = ToolScope(registry, added=[_tool("structured_output"), own_b])
    assert [t.name for t in scope.tools()] == ["a", "b", "structured_output"]
    assert scope.resolve("b") is own_b
    assert _registry("a").names() == ("a",)  # the global registry is untouched
    assert "structured_output" not in registry


def test_restrictions_intersect_and_never_widen() -> None:
    """allow keeps, deny removes; a second restriction narrows the first further."""
    registry = _registry("read", "write", "shell")
    scope = ToolScope(registry, restriction=ToolRestriction(allow=("read", "write")))
    scope.restrict(ToolRestriction(deny=("write",)))
    assert [t.name for t in scope.tools()] == ["read"]
    scope.restrict(ToolRestriction(allow=("read", "shell")))
    assert [t.name for t in scope.tools()] == ["read"]  # shell stays hidden
    refusal = scope.resolve("shell")
    assert isinstance(refusal, ToolRefusal)
    assert refusal.outcome.content == 'Error: unknown tool "shell"'
    registry.register(_tool("later"))
    assert [t.name for t in scope.tools()] == ["read"]  # allow-lists hide new tools too


def test_restriction_must_name_known_global_tools() -> None:
    """An empty restriction and unknown names are refused with DSH's texts."""
    scope = ToolScope(_registry("a"), added=[_tool("mine")])
    with pytest.raises(ValueError, match=r"tools\.restrict\(\{\}\) is a no-op"):
        scope.restrict(ToolRestriction())
    with pytest.raises(ValueError, match='names unknown global tools "ghost", "mine"; known '
                                         "global tools: a"):
        scope.restrict(ToolRestriction(allow=("a", "ghost"), deny=("mine",)))
    with pytest.raises(ValueError, match="reserved tool"):
        scope.restrict(ToolRestriction(deny=("run_code",)))
    assert scope.restrictions == ()


def test_unknown_tool_resolves_to_a_refusal() -> None:
    """A name no scope or registry holds is refused as unknown."""
    refusal = ToolScope(_registry()).resolve("ghost")
    assert isinstance(refusal, ToolRefusal)
    assert refusal.outcome.error is not None
    assert refusal.outcome.error.code == "UNKNOWN_TOOL"


def test_schema_violations() -> None:
    """The argument check covers types, required, extra keys, enums, items."""
    schema = {"type": "object", "required": ["mode"], "additionalProperties": False,
              "properties": {"mode": {"enum": ["a", "b"]},
                             "n": {"type": "integer"},
                             "tags": {"type": "array", "items": {"type": "string"}},
                             "flag": {"type": ["boolean", "null"]}}}
    assert schema_violations(schema, {"mode": "a", "n": 2, "tags": ["x"], "flag": None}) == []
    assert schema_violations(schema, {"n": True, "tags": ["x", 1], "extra": 0}) == [
        'arguments: missing required property "mode"',
        "arguments.n: expected integer, got boolean",
        "arguments.tags[1]: expected string, got integer",
        'arguments: unexpected property "extra"',
    ]
    assert schema_violations(schema, {"mode": "c"}) == ['arguments.mode: must be one of ["a","b"]']


def test_tool_custom_validator_replaces_the_schema_check() -> None:
    """validate= decides alone (e.g. the core's structured-output validator)."""
    tool = Tool("t", "", {"type": "object", "required": ["x"]}, _noop,
                validate=lambda args: [] if args.get("ok") else ["not ok"])
    assert tool.violations({"ok": True}) == []
    assert tool.violations({}) == ["not ok"]


def test_prompt_sections_compose_in_order_with_agent_overrides() -> None:
    """Sections sort by order, agent sections override host ones, empty texts vanish."""
    host, agent = PromptSections(), PromptSections()
    host.set("deployment:persona", "Host persona.", order=0)
    host.set("tool:structured_output", "Use structured_output.", order=190)
    host.set("empty", "", order=5)
    agent.set("subagent:delegation", "You are delegated.", order=120)
    agent.set("deployment:persona", "Child persona.", order=0)
    assert compose_system_prompt(host, agent) == (
        "Child persona.\n\nYou are delegated.\n\nUse structured_output.")
    agent.remove("deployment:persona")
    assert compose_system_prompt(host, agent).startswith("Host persona.")
    assert compose_system_prompt() == ""
