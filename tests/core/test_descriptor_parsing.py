"""Reading a persisted subagent descriptor by DSH's rules, texts and order (DSH
packages/subagent/subagent/tests/service.spec.ts, "subagent descriptors")."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from msgspec import UNSET
from returns.result import Failure, Success

from turnfork.core.descriptor import DescriptorError, parse_subagent_descriptor
from turnfork.core.events import (
    SUBAGENT_DESCRIPTOR_VERSION,
    SubagentDescriptorData,
    ToolRestriction,
)

V = SUBAGENT_DESCRIPTOR_VERSION

#: DSH's "rejects a malformed persisted descriptor: %s" table: (case, payload, detail).
MALFORMED: list[tuple[str, Any, str]] = [
    ("string payload", "invalid", "payload must be an object"),
    ("null payload", None, "payload must be an object"),
    ("array payload", [], "payload must be an object"),
    ("missing version", {"provider": "spawn"}, "version must be a number"),
    ("string version", {"version": "1", "provider": "spawn"}, "version must be a number"),
    ("missing mode", {"version": V}, 'mode must be "one-shot" or "continuable"'),
    ("invalid mode", {"version": V, "mode": "later"}, 'mode must be "one-shot" or "continuable"'),
    ("unknown one-shot field", {"version": V, "mode": "one-shot", "provider": "spawn",
                                "label": "l", "persona": "reviewer"},
     'payload has unknown field "persona"'),
    ("invalid one-shot label", {"version": V, "mode": "one-shot", "provider": "spawn",
                                "label": 7}, "label must be a string"),
    ("unknown payload field", {"version": V, "mode": "continuable", "provider": "spawn",
                               "extra": True}, 'payload has unknown field "extra"'),
    ("missing provider", {"version": V, "mode": "continuable"}, "provider must be a string"),
    ("missing label", {"version": V, "mode": "continuable", "provider": "spawn"},
     "label must be a string"),
    ("invalid label", {"version": V, "mode": "continuable", "provider": "spawn", "label": 7},
     "label must be a string"),
    ("invalid provider", {"version": V, "mode": "continuable", "provider": 7},
     "provider must be a string"),
    ("invalid agent provider", {"version": V, "mode": "continuable", "provider": "spawn",
                                "label": "l", "agentProvider": 7},
     "agentProvider must be a string"),
    ("invalid agent model", {"version": V, "mode": "continuable", "provider": "spawn",
                             "label": "l", "agentModel": []}, "agentModel must be a string"),
    ("invalid persona", {"version": V, "mode": "continuable", "provider": "spawn",
                         "label": "l", "persona": {}}, "persona must be a string"),
    ("non-object tool filter", {"version": V, "mode": "continuable", "provider": "spawn",
                                "label": "l", "toolFilter": []}, "toolFilter must be an object"),
    ("unknown tool-filter field", {"version": V, "mode": "continuable", "provider": "spawn",
                                   "label": "l", "toolFilter": {"except": ["bash"]}},
     'toolFilter has unknown field "except"'),
    ("empty tool filter", {"version": V, "mode": "continuable", "provider": "spawn",
                           "label": "l", "toolFilter": {}},
     "toolFilter must declare allow and/or deny"),
    ("non-array allow list", {"version": V, "mode": "continuable", "provider": "spawn",
                              "label": "l", "toolFilter": {"allow": "read"}},
     "toolFilter.allow must be an array of strings"),
    ("non-string deny item", {"version": V, "mode": "continuable", "provider": "spawn",
                              "label": "l", "toolFilter": {"deny": [7]}},
     "toolFilter.deny must be an array of strings"),
]


@pytest.mark.parametrize(("payload", "detail"), [(p, d) for _, p, d in MALFORMED],
                         ids=[case for case, _, _ in MALFORMED])
def test_a_malformed_descriptor_is_refused_in_dsh_words(payload: Any, detail: str) -> None:
    """Each malformed payload of DSH's table is refused with DSH's whole sentence."""
    assert parse_subagent_descriptor(payload) == Failure(
        DescriptorError(message=f"persisted subagent descriptor {detail}"))


def test_absent_fields_stay_absent_and_a_complete_payload_is_recovered() -> None:
    """A minimal one-shot payload keeps only its keys; a complete continuable one comes back
    whole, in DSH's key order (DSH "omits absent fields, recovers a complete payload")."""
    minimal = {"version": V, "mode": "one-shot", "provider": "spawn"}
    parsed = parse_subagent_descriptor(minimal).unwrap()
    assert parsed == SubagentDescriptorData(version=V, mode="one-shot", provider="spawn")
    assert msgspec.json.decode(msgspec.json.encode(parsed)) == minimal
    complete = {"toolFilter": {"deny": ["bash"], "allow": ["read"]}, "persona": "reviewer",
                "agentModel": "chat", "agentProvider": "deepseek", "label": "complete child",
                "provider": "spawn", "mode": "continuable", "version": V}
    written = msgspec.json.encode(parse_subagent_descriptor(complete).unwrap())
    assert written == (b'{"version":2,"mode":"continuable","provider":"spawn",'
                       b'"label":"complete child","agentProvider":"deepseek","agentModel":"chat",'
                       b'"persona":"reviewer","toolFilter":{"allow":["read"],"deny":["bash"]}}')


@pytest.mark.parametrize("tool_filter", [{"allow": ["read"]}, {"deny": ["bash"]}])
def test_a_tool_filter_may_declare_one_list(tool_filter: dict[str, list[str]]) -> None:
    """A tool filter with only allow, or only deny, is recovered as it is."""
    parsed = parse_subagent_descriptor({"version": V, "mode": "continuable", "provider": "spawn",
                                        "label": "l", "toolFilter": tool_filter}).unwrap()
    assert parsed is not None
    assert msgspec.to_builtins(parsed.tool_filter) == {
        key: tuple(value) for key, value in tool_filter.items()}


@pytest.mark.parametrize("payload", [
    {"version": V + 1, "provider": "spawn"},
    {"version": 1, "mode": "later", "persona": 7, "extra": True},
    {"version": 2.5},
])
def test_another_version_is_no_descriptor_and_no_error(payload: dict[str, Any]) -> None:
    """A numeric version other than 2 is not classified, whatever else the payload holds."""
    assert parse_subagent_descriptor(payload) == Success(None)


def test_checks_run_in_dsh_order() -> None:
    """The first broken rule in DSH's order is the one named: version before mode, unknown keys
    before provider, the first unknown key in the payload's own order."""
    def message(payload: Any) -> str:
        return parse_subagent_descriptor(payload).failure().message

    assert message({"version": "2", "mode": "later"}).endswith("version must be a number")
    assert message({"version": True}).endswith("version must be a number")
    assert message({"version": V, "mode": 1, "x": 1}).endswith(
        'mode must be "one-shot" or "continuable"')
    assert message({"version": V, "mode": "one-shot", "provider": 7, "agentModel": "m",
                    "persona": "p"}).endswith('unknown field "agentModel"')
    assert message({"version": V, "mode": "one-shot", "persona": "p", "agentModel": "m"}
                   ).endswith('unknown field "persona"')
    assert message({"version": V, "mode": "continuable", "provider": "p", "label": "l",
                    "agentModel": 1, "persona": 2}).endswith("agentModel must be a string")


def test_a_typed_descriptor_is_read_as_it_would_be_written() -> None:
    """A SubagentDescriptorData is judged by its wire form: a one-shot carrying a persona is
    refused, a well-formed one is returned equal."""
    persona = SubagentDescriptorData(version=V, mode="one-shot", provider="fork", persona="x")
    assert parse_subagent_descriptor(persona, seq=9).failure() == DescriptorError(
        message='persisted subagent descriptor payload has unknown field "persona"', seq=9)
    good = SubagentDescriptorData(version=V, mode="continuable", provider="spawn", label="l",
                                  tool_filter=ToolRestriction(deny=("echo",)))
    assert parse_subagent_descriptor(good) == Success(good)
    assert good.persona is UNSET


def test_the_error_names_the_event_seq() -> None:
    """str() of a refusal from a log names its seq; the message stays DSH's alone."""
    refused = parse_subagent_descriptor([], seq=4).failure()
    assert str(refused) == "seq 4: persisted subagent descriptor payload must be an object"
    assert refused.message == "persisted subagent descriptor payload must be an object"
