"""The replay harness itself: its projection keeps every difference but ids, times and DSH's
placeholders, and its model serves each session exactly what DSH's recorded."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from _replay import (
    ID_TOKEN,
    Log,
    ReplayError,
    ReplayModel,
    acp_recorded,
    assert_same_logs,
    differences,
    model_script,
    project,
    run_bounded,
)

from turnfork.core import (
    AssistantChunkEvent,
    InboxSplicedEvent,
    LlmCallConfig,
    RequestHeaderEvent,
    StepStartEvent,
    UserMessageEvent,
)
from turnfork.shell import ModelRequest

SPAWN = acp_recorded("subagent-spawn-in-process", children=1)


def _replace(log: Log, seq: int, event: object) -> Log:
    events = list(log.events)
    events[seq] = event  # type: ignore[call-overload]
    return Log(log.header, tuple(events))


def test_a_recording_equals_itself() -> None:
    """Projecting DSH's parent and child logs twice gives equal projections."""
    assert_same_logs(SPAWN.logs(), SPAWN.logs())


def test_a_changed_payload_is_named_with_its_seq() -> None:
    """One changed field of one event is reported with both seqs and the field's path."""
    parent = SPAWN.root
    step = parent.events[3]
    assert isinstance(step, StepStartEvent)
    changed = _replace(parent, 3, msgspec.structs.replace(
        step, data=msgspec.structs.replace(step.data, step=2)))
    found = differences([project(changed)], [project(parent)], names=["parent"])
    assert found == ["parent: ours seq 3 / DSH seq 3 step/start: .data.step: ours 2 / DSH 1"]


def test_a_missing_event_is_named() -> None:
    """An event only DSH's log has is named as missing, with its type and seq."""
    parent = SPAWN.root
    shorter = Log(parent.header, parent.events[:6] + parent.events[7:])
    found = differences([project(shorter)], [project(parent)], names=["parent"])
    assert found[0].startswith("parent: DSH seq 6..6 missing in ours: session/title")


def test_times_ids_and_placeholders_are_all_it_hides() -> None:
    """A log differing only in time, message ids and the request header's system prompt and
    tools projects equal to DSH's; a different model route does not."""
    parent = SPAWN.root
    message = parent.events[4]
    header = parent.events[7]
    assert isinstance(message, UserMessageEvent) and isinstance(header, RequestHeaderEvent)
    renamed = msgspec.structs.replace(
        message, time=99, data=msgspec.structs.replace(
            message.data, id="00000000-0000-4000-8000-000000000000"))
    # The splice that queued the prompt names the same id: rename it there too.
    spliced = parent.events[0]
    assert isinstance(spliced, InboxSplicedEvent)
    inserted = spliced.data.inserted[0]
    spliced = msgspec.structs.replace(spliced, data=msgspec.structs.replace(
        spliced.data, inserted=(msgspec.structs.replace(inserted, id=renamed.data.id),)))
    real_header = msgspec.structs.replace(header, data=msgspec.structs.replace(
        header.data, header=msgspec.structs.replace(header.data.header, system="You are X.",
                                                     tools=())))
    ours = Log(parent.header, (spliced, *parent.events[1:4], renamed, *parent.events[5:7],
                               real_header, *parent.events[8:]))
    assert differences([project(ours)], [project(parent)]) == []
    rerouted = msgspec.structs.replace(header, data=msgspec.structs.replace(
        header.data, header=msgspec.structs.replace(
            header.data.header, config=LlmCallConfig(provider="other", model="m"))))
    found = differences([project(_replace(parent, 7, rerouted))], [project(parent)])
    assert len(found) == 1 and ".data.header.config.provider" in found[0]


def test_an_absent_system_prompt_is_not_hidden() -> None:
    """The placeholder keeps the field's presence: a header without a system prompt differs
    from DSH's ``{{system}}``."""
    header = SPAWN.root.events[7]
    assert isinstance(header, RequestHeaderEvent)
    bare = msgspec.structs.replace(header, data=msgspec.structs.replace(
        header.data, header=msgspec.structs.replace(header.data.header,
                                                     system=msgspec.UNSET)))
    found = differences([project(_replace(SPAWN.root, 7, bare))], [project(SPAWN.root)])
    assert found == ['log 0: ours seq 7 / DSH seq 7 request/header: .data.header.system: '
                     'missing in ours (DSH: "{{system}}")']


def test_ids_must_be_used_alike() -> None:
    """Ids are hidden, but one of ours must stand wherever its DSH counterpart does: a prompt
    whose message id differs from the id its splice queued it under is reported."""
    parent = SPAWN.root
    message = parent.events[4]
    assert isinstance(message, UserMessageEvent)
    other = msgspec.structs.replace(message, data=msgspec.structs.replace(
        message.data, id="00000000-0000-4000-8000-000000000000"))
    projected = project(_replace(parent, 4, other))
    assert projected.events[4]["data"]["id"] == ID_TOKEN
    found = differences([projected], [project(parent)], names=["parent"])
    assert len(found) == 1 and found[0].startswith(
        "parent: ours seq 4 / DSH seq 4 user/message: our id "
        "00000000-0000-4000-8000-000000000000")


def test_the_model_script_is_the_recorded_chunks() -> None:
    """A session's script is its own assistant/chunk payloads grouped by step, in log order;
    a fork child's excludes its seed."""
    chunks = [e.data.chunk for e in SPAWN.root.events if isinstance(e, AssistantChunkEvent)]
    script = model_script(SPAWN.root)
    assert len(script) == 2 and [c for call in script for c in call] == chunks
    fork = acp_recorded("subagent-fork-in-process", children=1)
    child = fork.children[0]
    own = [e.data.chunk for e in child.own_events if isinstance(e, AssistantChunkEvent)]
    assert [c for call in model_script(child) for c in call] == own
    assert len(model_script(child)) == 1


def test_the_replay_model_binds_sessions_by_first_call() -> None:
    """Each agent task claims the next recorded script on its first call and then advances its
    own cursor; a call beyond the recording is refused and remembered."""
    model = ReplayModel([[["a1"], ["a2"]], [["b1"]]])  # type: ignore[list-item]
    request = ModelRequest(config=LlmCallConfig(provider="p", model="m"), system=None,
                           tools=(), messages=())

    async def call(name: str) -> list[object]:
        async def inner() -> list[object]:
            return [chunk async for chunk in model.stream(request)]
        return await asyncio.get_running_loop().create_task(inner(), name=f"agent:{name}")

    async def main() -> list[list[object]]:
        return [await call("p"), await call("c"), await call("p")]

    assert run_bounded(main) == [["a1"], ["b1"], ["a2"]]
    assert model.bound == {"p": 0, "c": 1} and model.unconsumed() == []
    with pytest.raises(ReplayError, match="its recording holds 1"):
        run_bounded(lambda: call("c"))
    assert model.errors and "recorded log 1" in model.errors[0]
