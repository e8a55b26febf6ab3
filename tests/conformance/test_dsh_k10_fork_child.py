"""DSH's K10 fork benchmark run (tests/fixtures/dsh/generated/K10-{parent,child0}: a parent of
ten completed turns with turn 11 in flight, and its fork child, dumped from DSH's runtime with a
mock provider and no session-title, sandbox or approval plugin): a fork of our shell-built K10
parent writes, after its seed, DSH's child events type for type."""

from __future__ import annotations

import json

from _replay import (
    FIXTURES,
    Log,
    ReplayModel,
    Run,
    assert_types_equal,
    model_script,
    replayed,
    run_bounded,
)

from benchmarks.workloads import PARENT_PROVIDER, shell_parent
from turnfork.core import SessionHeader, StartRequest, TextBlock, decode_log
from turnfork.shell import SubagentRun

GENERATED = FIXTURES / "generated"


def _dsh_child() -> Log:
    header = json.loads((GENERATED / "K10-child0.header.json").read_text())
    events = decode_log((GENERATED / "K10-child0.events.jsonl").read_bytes()).unwrap()
    return Log(SessionHeader(id=header["id"], created_at=header["createdAt"],
                             seed_length=header["seedLength"]), events)


def test_k10_fork_child_writes_dsh_events_after_its_seed() -> None:
    """Forking our K10 parent mid-turn 11 with DSH's ``child task`` and replaying the DSH
    child's model output on the parent's route: the child's events after its seed have DSH's
    types in DSH's order (``session/end-seed``, the prompt splice, turn 11 with the descriptor,
    the snapshot, a ``resume`` header and no request context, the ``echo`` step, ``ok``)."""
    dsh = _dsh_child()

    async def main() -> tuple[Log, tuple[str, ...]]:
        parent = await shell_parent(10, child_runs=0)
        host = parent.host
        model = ReplayModel([model_script(dsh)])
        # The parent's stream is under way (it hangs); the child, on the parent's route, calls
        # the replay model from now on.
        host.models.unregister(PARENT_PROVIDER)
        host.models.register(PARENT_PROVIDER, model)
        try:
            run = await host.subagents.start(
                "fork", StartRequest(prompt=(TextBlock(text="child task"),)), parent=parent.agent)
            assert isinstance(run, SubagentRun)
            await run.result
            replay = replayed(Run(parent.agent, model, {run.id: run.local_agent}))
            await run.dispose()
            return replay.logs[1], replay.replay_problems
        finally:
            await host.aclose()

    ours, problems = run_bounded(main)
    assert problems == ()
    assert_types_equal(ours.own_events, dsh.own_events)
