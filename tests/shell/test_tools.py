"""Tool registry, scoped overlays with restrictions, argument checks, prompt sections."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from turnfork.core import ToolRestriction
from turnfork.shell import Tool, ToolContext
from turnfork.shell.tools import (
    PromptSections,
    ToolRefusal,
    ToolRegistry,
    ToolScope,
    compose_system_prompt,
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


def test_register_all_registers_every_tool_or_none() -> None:
    """A batch with a taken name, or a name twice, registers nothing; ``withdraw`` removes only
    the tools still registered as themselves."""
    registry = _registry("a")
    with pytest.raises(ValueError, match="'a' is already registered"):
        registry.register_all([_tool("b"), _tool("a")])
    with pytest.raises(ValueError, match="'c' is already registered"):
        registry.register_all([_tool("c"), _tool("c")])
    assert registry.names() == ("a",)
    mine = [_tool("b"), _tool("c")]
    registry.register_all(mine)
    registry.unregister("c")
    replacement = _tool("c")
    registry.register(replacement)
    registry.withdraw(mine)
    assert registry.names() == ("a", "c") and registry.get("c") is replacement


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


def _parameters(**properties: dict[str, Any]) -> dict[str, Any]:
    """The object root DSH's defineTool compiles a parameter map to (required: true lifted)."""
    required = [key for key, spec in properties.items() if spec.pop("required", False)]
    return {"type": "object", "properties": properties,
            **({"required": required} if required else {})}


def _violations(parameters: dict[str, Any], args: dict[str, Any]) -> list[str]:
    return list(Tool("t", "", parameters, _noop).violations(args))


def test_arguments_are_checked_in_dshs_words() -> None:
    """Missing, mistyped, non-member and nested arguments get DSH's texts with bare paths
    (dsh-tools tests/tools.spec.ts "validateArgs")."""
    path_and_limit = _parameters(path={"type": "string", "required": True},
                                 limit={"type": "number"})
    assert _violations(path_and_limit, {"path": "/tmp", "limit": 5}) == []
    assert _violations(path_and_limit, {"path": "/tmp", "extra": 1}) == []  # open by default
    assert _violations(path_and_limit, {}) == ['missing required property "path"']
    primitives = _parameters(s={"type": "string"}, n={"type": "number"}, b={"type": "boolean"})
    assert _violations(primitives, {"s": 1, "n": "x", "b": "x"}) == [
        '"s" must be a string', '"n" must be a number', '"b" must be a boolean']
    colors = _parameters(color={"type": "string", "enum": ["red", "green"]})
    assert _violations(colors, {"color": "blue"}) == ['"color" must be one of ["red","green"]']
    numbers = _parameters(n={"type": "number", "enum": [1, 2]})
    assert _violations(numbers, {"n": 3}) == ['"n" must be one of [1,2]']
    nested = {"type": "object", "required": ["config"], "properties": {
        "config": {"type": "object", "additionalProperties": True, "required": ["host"],
                   "properties": {"host": {"type": "string"}, "port": {"type": "number"}}},
        "bag": {"type": "object", "additionalProperties": True}}}
    assert _violations(nested, {"config": {"host": "h"}, "bag": {"anything": True}}) == []
    assert _violations(nested, {"config": {"port": 9}, "bag": 5}) == [
        'missing required property "config.host"', '"bag" must be an object']
    arrays = _parameters(tags={"type": "array", "items": {"type": "string"}},
                         raw={"type": "array"},
                         servers={"type": "array", "items": {
                             "type": "object", "required": ["host"],
                             "properties": {"host": {"type": "string"}}}})
    assert _violations(arrays, {"tags": ["a", 2]}) == ['"tags[1]" must be a string']
    assert _violations(arrays, {"tags": "nope", "raw": [1, {}, "x"]}) == [
        '"tags" must be an array']
    assert _violations(arrays, {"servers": [{"host": "a"}, {}]}) == [
        'missing required property "servers[1].host"']
    closed = {"type": "object", "additionalProperties": False, "properties": {}}
    assert _violations(closed, {"x": 1}) == [
        '"x" is not a declared property (additionalProperties: false)']


def test_a_schema_outside_the_subset_is_refused_when_the_tool_is_defined() -> None:
    """A keyword the arguments would not be checked against is refused at definition, naming
    each keyword and its path (DSH refuses an unsupported schema before registering)."""
    with pytest.raises(ValueError) as refused:
        Tool("search", "", {"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 1}, "mode": {"type": ["string", "null"]}}},
            _noop)
    assert str(refused.value) == (
        'tool "search" parameters: unsupported JSON schema: schema.properties.n.minimum is not '
        "a supported keyword (subset: type/oneOf/properties/required/additionalProperties/"
        "items/enum/const + annotations); schema.properties.mode.type must be a single type "
        "string (type arrays are not supported)")
    with pytest.raises(ValueError, match=r'schema\.required names "x" which is not in properties'):
        Tool("t", "", {"type": "object", "required": ["x"]}, _noop)


def test_tool_custom_validator_replaces_the_schema_check() -> None:
    """validate= decides alone (e.g. the core's structured-output validator)."""
    tool = Tool("t", "", {"type": "object", "required": ["x"], "properties": {"x": {}}}, _noop,
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
