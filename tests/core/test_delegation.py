"""Start checks: provider capabilities, tool filters and start errors."""

from __future__ import annotations

import pytest
from msgspec import Raw
from returns.result import Success

from turnfork.core import (
    INVALID_TOOL_FILTER,
    UNSUPPORTED_CAPABILITY,
    Capabilities,
    StartError,
    StartRequest,
    TextBlock,
    ToolErrorInfo,
    ToolRestriction,
    check_capabilities,
    child_depth,
    validate_tool_filter,
)

PROMPT = (TextBlock(text="do it"),)
ALL = Capabilities(output_schema=True, depth_limit=True, tool_filter=True, persona=True)


@pytest.mark.parametrize(("request_", "capability"), [
    (StartRequest(prompt=PROMPT, output_schema=Raw(b'{"type":"object"}')), "outputSchema"),
    (StartRequest(prompt=PROMPT, max_depth=3), "depthLimit"),
    (StartRequest(prompt=PROMPT, tool_filter=ToolRestriction(deny=("x",))), "toolFilter"),
    (StartRequest(prompt=PROMPT, persona="terse"), "persona"),
])
def test_missing_capability_is_refused_with_dsh_text(request_: StartRequest,
                                                     capability: str) -> None:
    """Ensures each capability is required by its request part, with DSH's exact message."""
    error = check_capabilities("acp", Capabilities(), request_).failure()
    assert error.message == \
        f'subagent provider "acp" does not support the "{capability}" capability'
    assert error.code == UNSUPPORTED_CAPABILITY
    assert error.error_info() == ToolErrorInfo(name="SubagentError", code="UNSUPPORTED_CAPABILITY")
    assert check_capabilities("acp", ALL, request_) == Success(None)


def test_first_missing_capability_in_dsh_order_is_named() -> None:
    """Ensures the first missing capability (outputSchema before persona) is the one reported."""
    request = StartRequest(prompt=PROMPT, persona="p", output_schema=Raw(b"{}"), max_depth=1)
    assert '"outputSchema"' in check_capabilities("x", Capabilities(), request).failure().message
    only_schema = Capabilities(output_schema=True)
    assert '"depthLimit"' in check_capabilities("x", only_schema, request).failure().message


def test_a_bare_request_needs_no_capability() -> None:
    """Ensures a prompt-only request passes any provider."""
    assert check_capabilities("spawn", Capabilities(), StartRequest(prompt=PROMPT)) == Success(None)


def test_empty_tool_filter_is_a_no_op_and_refused() -> None:
    """Ensures a filter naming neither allow nor deny is refused with DSH's runtime text."""
    error = validate_tool_filter(ToolRestriction(), {"read"}).failure()
    assert error.message == "tools.restrict({}) is a no-op: pass `allow` and/or `deny`"
    assert error.code == INVALID_TOOL_FILTER
    assert error.error_info() is None


def test_empty_allow_list_is_a_real_filter() -> None:
    """Ensures `allow: []` (keep no tools) is accepted, unlike a filter naming nothing."""
    assert validate_tool_filter(ToolRestriction(allow=()), {"read"}).unwrap().allow == ()


def test_unknown_tools_are_all_named() -> None:
    """Ensures every unknown name (allow then deny) is listed, with the sorted known tools."""
    error = validate_tool_filter(ToolRestriction(allow=("web", "read"), deny=("shell",)),
                                 {"write", "read"}).failure()
    assert error.message == ('tools.restrict() names unknown global tools "web", "shell"; '
                             "known global tools: read, write")


def test_unknown_tool_with_no_known_tools() -> None:
    """Ensures an empty deployment says (none)."""
    assert validate_tool_filter(ToolRestriction(deny=("x",)), set()).failure().message == \
        'tools.restrict() names unknown global tool "x"; known global tools: (none)'


def test_reserved_tool_is_refused_even_when_known() -> None:
    """Ensures run_code can never be filtered."""
    error = validate_tool_filter(ToolRestriction(deny=("run_code",)), {"run_code"}).failure()
    assert error.message == 'tools.restrict() cannot name the reserved tool "run_code"'


def test_unknown_name_check_can_be_skipped() -> None:
    """Ensures known_tools=None checks shape only."""
    restriction = ToolRestriction(allow=("anything",))
    assert validate_tool_filter(restriction, None) == Success(restriction)


def test_depth_start_error_is_plain() -> None:
    """Ensures a depth refusal has no error info (DSH's plain error, no `error` key)."""
    error = StartError.from_depth(child_depth(2, 2).failure())
    assert error.error_info() is None
    assert str(error) == "subagent depth 3 exceeds maxDepth 2"
    assert error.code == "DEPTH"
