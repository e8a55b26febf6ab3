"""Structured-output requests: a schema given as a Python value is refused in words; a
structured child that fails keeps its failure."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from _shell_helpers import run
from _subagent_helpers import request, subagent_host

from turnfork.core import UNSUPPORTED_SCHEMA, LlmFailure, render_tool_result
from turnfork.shell import Reply
from turnfork.shell.subagents import SubagentStartError


@pytest.mark.parametrize(("schema", "kind"), [({"type": "object"}, "dict"),
                                              ('{"type": "object"}', "str")])
def test_a_schema_that_is_not_json_text_is_refused_before_any_child(schema: Any,
                                                                    kind: str) -> None:
    """``output_schema`` holds JSON text (``msgspec.Raw``); a dict or a str there is refused
    as an unsupported schema naming what it got, and nothing is created."""

    async def main() -> None:
        host, parent, model, recorder = subagent_host()
        with pytest.raises(SubagentStartError) as refused:
            await host.subagents.start("spawn", request("p", output_schema=schema),
                                       parent=parent)
        assert refused.value.error.code == UNSUPPORTED_SCHEMA
        assert str(refused.value) == ("unsupported JSON schema: schema must be JSON text "
                                      f"(msgspec.Raw), not {kind}")
        assert host.agents.list() == (parent,) and recorder.events == [] and model.calls == 0
        await host.aclose()

    run(main)


def test_a_structured_child_whose_model_fails_keeps_its_failure_and_diagnostic() -> None:
    """A child asked for structured output whose turn ends ``error`` because its model failed
    has that failure as ``result.failure`` and, described, as its diagnostic, as a child asked
    for none does; the parent's model reads it in the tool result."""

    async def main() -> None:
        host, parent, _, _ = subagent_host([Reply.error("UNAVAILABLE", "the upstream is down")])
        started = await host.subagents.start(
            "spawn", request("p", output_schema=msgspec.Raw(b'{"type":"object"}')),
            parent=parent)
        result = await started.result
        await started.dispose()
        assert result.stop_reason == "error"
        assert isinstance(result.failure, LlmFailure)
        assert (result.failure.code, result.failure.message) == ("UNAVAILABLE",
                                                                 "the upstream is down")
        assert result.diagnostic == "UNAVAILABLE: the upstream is down"
        assert render_tool_result(result).content == (
            "Error: subagent run failed\nDiagnostic: UNAVAILABLE: the upstream is down")
        await host.aclose()

    run(main)
