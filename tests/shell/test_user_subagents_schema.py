"""An output schema given as a Python value instead of JSON text is refused in words."""

from __future__ import annotations

from typing import Any

import pytest
from _shell_helpers import run
from _subagent_helpers import request, subagent_host

from turnfork.core import UNSUPPORTED_SCHEMA
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
