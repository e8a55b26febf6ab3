"""A session writer for the crash tests: it appends to a disk store until it is killed.

Usage: ``python _writer.py ROOT COMPRESSION MODE TEMPLATE PACK SEED``

* ``COMPRESSION``: ``none`` or ``zstd``; ``PACK``: ``1`` to write packed chunk rows.
* ``MODE`` ``agent``: the agent loop (scripted model, tools) runs against a
  :class:`~shell.JsonlSessionStore`, so every event is one append, as in production.
* ``MODE`` ``batches``: the same turns, built in memory first, appended in batches of 1 to 12
  events (sizes drawn from ``SEED``) with ``Session.extend``: one write per batch.
* ``MODE`` ``forks``: as ``batches``, and after every batch that completes a turn a fork
  child ``child-K`` is started from the parent's completed prefix (its seed a reference to
  the parent's file) and writes one turn of its own (:func:`child_events`) in one batch.
* ``TEMPLATE`` ``normal`` (many turns with chunks, parallel and serial tool calls, results up
  to 64 KiB, max-tokens and error endings) or ``huge`` (a few turns, one 8 MiB tool result,
  so that a kill can land inside one long ``write``).

Stdout protocol (line by line, flushed at once): first ``template DIGEST`` (see
:func:`digest`: the test checks that it expects the same events); in ``batches`` and ``forks``
mode ``> N`` before a batch that will bring the log to N events; after every append that
returned (its batch *written*: in the file, which a crash of the process no longer loses) the
number of events now written; ``d N`` whenever the session's ``durable_length`` (what its
commits have made durable) has grown to N; ``c K N`` when child ``child-K`` has written N
events; ``done`` when the template is written (and flushed), after which it waits to be
killed. The turns are deterministic (manual clock, counting ids, fixed script), so the test
rebuilds them with :func:`build_template` to know what every acknowledged event must be.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from turnfork.core import (
    Event,
    SessionHeader,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    encode_session,
)
from turnfork.shell import (
    CountingIds,
    Host,
    JsonlSessionStore,
    ManualClock,
    MemorySessionStore,
    Reply,
    ScriptedModel,
    Session,
    SessionStore,
    Tool,
    ToolContext,
)

SESSION_ID = "crash-writer"
TEMPLATES = ("normal", "huge")
HUGE_RESULT_BYTES = 8 * 1024 * 1024


def _payload(size: int) -> str:
    """``size`` characters of incompressible-looking, deterministic text."""
    raw = random.Random(size).randbytes(size * 3 // 4 + 3)
    return base64.b64encode(raw).decode()[:size]


async def _read(args: dict[str, Any], ctx: ToolContext) -> str:
    return _payload(int(args["size"]))


async def _write(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"wrote {len(str(args['text']))} characters to {args['path']}"


def _script(template: str, turn: int) -> list[Reply]:
    """The model's replies for one turn."""
    if template == "huge":
        size = HUGE_RESULT_BYTES if turn == 1 else 100
        return [Reply.tool_call("read", {"size": size}, text="Reading it."),
                Reply.text("Read it.", reasoning="short")]
    big = 64 * 1024 if turn % 7 == 3 else 300
    kind = turn % 5
    if kind == 0:
        return [Reply.tool_calls([("read", {"size": big}), ("read", {"size": 40})],
                                 text="Let me look at both."),
                Reply.text("Both files read. " * 6, reasoning="comparing " * 12)]
    if kind == 1:
        return [Reply.tool_call("write", {"path": f"f{turn}.txt", "text": "x" * 50}),
                Reply.tool_call("read", {"size": 20}),
                Reply.text("Written and checked.")]
    if kind == 2:
        return [Reply.text("A plain answer, streamed in small chunks. " * 4,
                           reasoning="no tools needed")]
    if kind == 3:
        return [Reply.max_tokens("This answer runs out of tok",
                                 tool_calls=[("read", {"size": 10})])]
    return [Reply.tool_call("read", {"size": 64}), Reply.error("RATE_LIMIT", "slow down")]


def _turns(template: str) -> int:
    return 3 if template == "huge" else 60


def run_agent(store: SessionStore, template: str,
              on_append: Callable[[int], None] | None = None,
              holder: list[Session] | None = None,
              ) -> tuple[SessionHeader, tuple[Event, ...]]:
    """Drive the scripted agent through the template's turns; its header and events."""

    async def main() -> tuple[SessionHeader, tuple[Event, ...]]:
        host = Host(store=store, clock=ManualClock(1_700_000_000_000, step=3),
                    ids=CountingIds("m-"))
        model = ScriptedModel()
        host.models.register("scripted", model, retry=None)  # the template ends a turn RATE_LIMIT
        host.tools.register(Tool("read", "read a file", {"type": "object"}, _read,
                                 concurrency_safe=True))
        host.tools.register(Tool("write", "write a file", {"type": "object"}, _write))
        agent = host.create_agent(SESSION_ID, provider="scripted", model="m",
                                  system="You are a careful coding agent.")
        session = agent.session
        if holder is not None:
            holder.append(session)
        if on_append is not None:
            session.listeners.append(lambda batch: on_append(len(session)))
        for turn in range(_turns(template)):
            model.add(*_script(template, turn))
            agent.followup(f"task {turn}: look at the files and report")
            await agent.when_idle()
        await session.wait_durable()
        return session.header, tuple(session.events)

    return asyncio.run(main())


def build_template(template: str) -> tuple[SessionHeader, tuple[Event, ...]]:
    """The header and events the writer writes (built in memory)."""
    return run_agent(MemorySessionStore(), template)


def digest(header: SessionHeader, events: Sequence[Event]) -> str:
    """A fingerprint of a template (differs if the code that builds it changed)."""
    return hashlib.sha256(encode_session(header, events)).hexdigest()


def _say(text: object) -> None:
    print(text, flush=True)


def appends(template: str, mode: str, seed: int) -> list[tuple[int, int]]:
    """(start, end) of each durable append the writer makes, in order."""
    if mode == "agent":
        ends = [0]
        run_agent(MemorySessionStore(), template, on_append=ends.append)
        return list(itertools.pairwise(ends))
    return _batch_bounds(len(build_template(template)[1]), seed)


def _batch_bounds(count: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < count:
        end = min(count, start + rng.randint(1, 12))
        bounds.append((start, end))
        start = end
    return bounds


def child_events(seed_length: int, turn: int, time: int) -> list[Event]:
    """The turn a fork child seeded with ``seed_length`` events writes after its
    ``session/end-seed``: deterministic, so the test knows it."""
    seq = seed_length + 1
    return [TurnStartEvent(seq=seq, time=time, data=TurnStartData(turn=turn)),
            TurnEndEvent(seq=seq + 1, time=time,
                         data=TurnEndData(turn=turn, reason=TurnCompleted()))]


def _child_events(session: Session) -> list[Event]:
    seed = session.events[:len(session) - 1]
    return child_events(len(seed), session.trace.next_turn, seed[-1].time)


def _report_durable(session: Session, known: list[int]) -> None:
    if session.durable_length > known[0]:
        known[0] = session.durable_length
        _say(f"d {known[0]}")


def _replay(store: JsonlSessionStore, header: SessionHeader, events: Sequence[Event],
            seed: int, *, forks: bool) -> None:
    session = store.create(header)
    durable = [0]
    children = 0
    for start, end in _batch_bounds(len(events), seed):
        _say(f"> {end}")
        session.extend(events[start:end])
        _say(end)
        _report_durable(session, durable)
        if forks and any(isinstance(event, TurnEndEvent) for event in events[start:end]):
            prefix, trace = session.completed_prefix()
            child = store.create(SessionHeader(
                id=f"child-{children}", created_at=header.created_at,
                parent_session=header.id, seed_length=len(prefix), origin="subagent",
                delegation_depth=1), seed=prefix, seed_trace=trace)
            child.extend(_child_events(child))
            _say(f"c {children} {len(child)}")
            store.release(child.id)
            children += 1
    session.flush()
    _report_durable(session, durable)


def main(argv: Sequence[str]) -> None:
    root, compression, mode, template, pack, seed = argv
    if compression not in ("none", "zstd") or mode not in ("agent", "batches", "forks"):
        raise SystemExit(f"usage: {__doc__}")
    store = JsonlSessionStore(root, compression="zstd" if compression == "zstd" else "none",
                              pack_chunks=pack == "1")
    header, events = build_template(template)
    _say(f"template {digest(header, events)}")
    if mode == "agent":
        holder: list[Session] = []
        durable = [0]

        def on_append(written: int) -> None:
            _say(written)
            if holder:
                _report_durable(holder[0], durable)

        run_agent(store, template, on_append=on_append, holder=holder)
        _report_durable(holder[0], durable)
    else:
        _replay(store, header, events, int(seed), forks=mode == "forks")
    _say("done")
    while True:  # wait to be killed, as a live process would
        time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1:])
