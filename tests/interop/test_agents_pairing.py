"""The Responses pairing table agrees with the OpenAI Agents SDK's own: the call types both know
map to the same output types, `program` to `program_output` among them."""

from __future__ import annotations

import pytest
from _capture import EXTRA

pytest.importorskip("agents", reason=EXTRA)

from agents.run_internal import items

from turnfork.core.formats import openai_responses


def test_openai_agents_pairs_program_with_program_output() -> None:
    """The pairing above is the Agents SDK's own (its call-to-output table)."""
    table = items._TOOL_CALL_TO_OUTPUT_TYPE
    assert table["program"] == "program_output"
    assert {call: out for call, out in table.items()
            if call in openai_responses.OUTPUT_OF_CALL} == {
        call: out for call, out in openai_responses.OUTPUT_OF_CALL.items() if call in table}
