"""The disk store never acknowledges what its loader cannot read back (red-team finding G11).

A 257 MiB tool result, or 1 GiB of zstd text spread over several results, used to be written
and reported durable; after a restart ``load()`` refused the file against its read limits
(``ReadLimits``) and the session could never be resumed. Now the writer measures every batch
against the same limits (a store's ``limits``, the reader's defaults unless given) and refuses,
with ``SessionEventError``, a batch the reader would refuse; a batch that does not end its turn
must also leave the room a turn's closers need, so the turn can be closed and the session loaded.

The limits are injected small here: nothing writes hundreds of MiB.
"""

from __future__ import annotations

import inspect
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from _budget import examples
from _shell_helpers import make_host, of_type, run, scripted, types
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from returns.result import Failure, Success

from turnfork.core import (
    AssistantChunkData,
    AssistantChunkEvent,
    CancelUser,
    SessionHeader,
    StepData,
    StepEndEvent,
    StepStartEvent,
    TextBlock,
    TextDelta,
    ToolCallData,
    ToolCallEvent,
    ToolResultBlock,
    ToolResultEvent,
    TurnAborted,
    TurnCompleted,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    check_balance,
    close_open_turn,
    tool_result_event,
)
from turnfork.shell import JsonlSessionStore, Reply, Session, Tool, ToolContext
from turnfork.shell.jsonl_store import closing_room
from turnfork.shell.logfile import (
    DEFAULT_LIMITS,
    ReadLimits,
    read_log,
    read_session_file,
    read_text,
)
from turnfork.shell.session import draft
from turnfork.shell.store import SessionEventError, SessionRepairWarning


def _clock() -> Any:
    """The same stamps for every store of a test, so that two stores write the same bytes."""
    ticks = iter(range(1, 1 << 30))
    return lambda: next(ticks)


def _open_step(store: JsonlSessionStore, session_id: str = "s") -> Session:
    session = store.create(SessionHeader(id=session_id, created_at=0, cwd="/w"), clock=_clock())
    session.append_many([draft(TurnStartEvent, TurnStartData(turn=1)),
                         draft(StepStartEvent, StepData(turn=1, step=1))])
    return session


def _call(session: Session, call_id: str) -> int:
    trace = session.trace
    assert trace.open_turn is not None and trace.open_step is not None
    event = session.append(ToolCallEvent, ToolCallData(
        turn=trace.open_turn, step=trace.open_step, call_id=call_id, name="t", arguments="{}"))
    return event.seq


def _result(session: Session, call_id: str, call_seq: int, text: str) -> None:
    trace = session.trace
    assert trace.open_turn is not None and trace.open_step is not None
    made = tool_result_event(seq=len(session), time=0, turn=trace.open_turn,
                             step=trace.open_step, call_id=call_id, message_id=f"m-{call_id}",
                             text=text, is_error=False, call_seq=call_seq)
    session.append(type(made), made.data, source_event_seqs=made.source_event_seqs,
                   surface_op=made.surface_op)


def _close(session: Session) -> None:
    session.extend(close_open_turn(session.trace, session.events,
                                   TurnAborted(reason=CancelUser())))


def _reloads(root: Path, limits: ReadLimits, session: Session,
             compression: str = "none") -> Session:
    """The session loaded by a new store with the same limits: the events it held."""
    again = JsonlSessionStore(root, limits=limits,
                              compression=compression)  # type: ignore[arg-type]
    loaded = again.load(session.id)
    assert list(loaded.events)[:len(session)] == list(session.events)
    assert check_balance(loaded.events).unwrap().is_closed
    return loaded


def test_a_result_over_the_line_limit_is_refused_and_the_session_reloads(
        tmp_path: Path) -> None:
    """A tool result whose line would pass max_line is refused, naming its seq and type and
    the limit; nothing is written; the turn is closed and the session loads again."""
    limits = ReadLimits(max_line=4096)
    store = JsonlSessionStore(tmp_path, limits=limits)
    session = _open_step(store)
    call_seq = _call(session, "c1")
    path = store.path_for(session.header)
    before, length = path.read_bytes(), len(session)
    with pytest.raises(SessionEventError) as caught:
        _result(session, "c1", call_seq, "x" * 4096)
    assert str(caught.value) == (
        f"session s: seq {length} (tool/result): a line is longer than the read limit of "
        "4 KiB (ReadLimits.max_line): the session could not be loaded again; nothing was "
        "written")
    assert path.read_bytes() == before and len(session) == length
    _result(session, "c1", call_seq, "x" * 3000)  # one that fits is written
    _close(session)
    store.release(session.id)
    _reloads(tmp_path, limits, session)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_text_over_the_size_limit_across_results_is_refused(tmp_path: Path,
                                                            compression: str) -> None:
    """Results that each fit but together pass max_bytes of text (for zstd: a file of a few
    KiB that decompresses past the limit) are refused at the result that passes it."""
    limits = ReadLimits(max_bytes=64 << 10)
    store = JsonlSessionStore(tmp_path, limits=limits,
                              compression=compression)  # type: ignore[arg-type]
    session = _open_step(store)
    refused: SessionEventError | None = None
    for index in range(20):
        call_seq = _call(session, f"c{index}")
        try:
            _result(session, f"c{index}", call_seq, "a" * 8000)
        except SessionEventError as exc:
            refused = exc
            break
    assert refused is not None and refused.event_type == "tool/result"
    assert "ReadLimits.max_bytes" in refused.problem
    # The results written so far read back within the limits; the refused one would not.
    written = read_log(store.path_for(session.header), limits=limits).unwrap()
    assert written.spent_bytes + 8000 > limits.max_bytes - closing_room(limits)[0]
    if compression == "zstd":
        assert store.path_for(session.header).stat().st_size < 8 << 10
    _close(session)
    store.release(session.id)
    _reloads(tmp_path, limits, session, compression)


def test_events_over_the_event_limit_are_refused(tmp_path: Path) -> None:
    """Packed chunk rows count one event per member, as the reader counts them."""
    limits = ReadLimits(max_events=200)
    store = JsonlSessionStore(tmp_path, limits=limits, pack_chunks=True)
    session = _open_step(store)
    chunk = draft(AssistantChunkEvent, AssistantChunkData(turn=1, step=1,
                                                          chunk=TextDelta(index=0, text="w")))
    with pytest.raises(SessionEventError) as caught:
        for _ in range(20):
            session.append_many([chunk] * 20)
    assert "ReadLimits.max_events" in str(caught.value)
    assert 100 < len(session) < 200
    _close(session)
    store.release(session.id)
    _reloads(tmp_path, limits, session)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_fork_child_counts_its_parents_seed(tmp_path: Path, compression: str) -> None:
    """A child whose seed stays in its parent's file is read with that seed: the seed's text
    counts against the child's limit, as the reader counts it; a grandchild's too."""
    limits = ReadLimits(max_bytes=48 << 10)
    store = JsonlSessionStore(tmp_path, limits=limits,
                              compression=compression)  # type: ignore[arg-type]
    parent = _open_step(store, "parent")
    for index in range(4):
        _result(parent, f"p{index}", _call(parent, f"p{index}"), "p" * 8000)
    parent.append_many([draft(StepEndEvent, StepData(turn=1, step=1)),
                        draft(TurnEndEvent, TurnEndData(turn=1, reason=TurnCompleted()))])
    prefix, trace = parent.completed_prefix()
    child = store.create(SessionHeader(id="child", created_at=1, cwd="/w",
                                       parent_session="parent", seed_length=len(prefix),
                                       origin="subagent", delegation_depth=1),
                         seed=prefix, seed_trace=trace, clock=_clock())
    child.append_many([draft(TurnStartEvent, TurnStartData(turn=2)),
                       draft(StepStartEvent, StepData(turn=2, step=1))])
    child_file = store.path_for(child.header)
    assert child_file.stat().st_size < 2048  # the seed is a reference, not a copy
    _assert_counted_as_read(store, child, limits)
    with pytest.raises(SessionEventError, match=r"ReadLimits\.max_bytes"):
        _result(child, "c", _call(child, "c"), "c" * 9000)
    _close(child)
    prefix, trace = child.completed_prefix()
    grandchild = store.create(SessionHeader(id="grandchild", created_at=2, cwd="/w",
                                            parent_session="child", seed_length=len(prefix),
                                            origin="subagent", delegation_depth=2),
                              seed=prefix, seed_trace=trace, clock=_clock())
    grandchild.append(TurnStartEvent, TurnStartData(turn=3))
    assert (store.path_for(grandchild.header).parent / "seed-1.jsonl").name in {
        path.name.removesuffix(".zstd") for path in store.path_for(grandchild.header).parent
        .iterdir()}
    _assert_counted_as_read(store, grandchild, limits)
    for session in (grandchild, child, parent):
        store.release(session.id)
    _reloads(tmp_path, limits, child, compression)


def test_a_tool_result_the_store_will_not_hold_is_that_calls_error_and_the_session_resumes(
        tmp_path: Path) -> None:
    """Through an agent, with sibling calls in one step: the result the store refuses becomes
    that call's error result, naming the limit; its siblings keep theirs and the turn goes
    on; after a restart the session loads and its next turn runs."""
    limits = ReadLimits(max_line=16 << 10)

    async def huge(args: dict[str, Any], ctx: ToolContext) -> str:
        return "y" * (20 << 10)

    async def small(args: dict[str, Any], ctx: ToolContext) -> str:
        return "ok"

    async def main() -> tuple[list[Any], list[Any], Any]:
        host = make_host(store=JsonlSessionStore(tmp_path, limits=limits))
        host.tools.register(Tool("huge", "", {"type": "object"}, huge, concurrency_safe=True))
        host.tools.register(Tool("small", "", {"type": "object"}, small,
                                 concurrency_safe=True))
        agent, model = scripted(
            host, [Reply.tool_calls([("small", {}), ("huge", {}), ("small", {})]),
                   Reply.text("noted")], session_id="a")
        agent.followup("go")
        await agent.when_idle()
        events = list(agent.session.events)
        await agent.dispose()
        restarted = make_host(store=JsonlSessionStore(tmp_path, limits=limits))
        again, _ = scripted(restarted, [Reply.text("resumed")], session_id="a")
        again.followup("and now?")
        await again.when_idle()
        return events, list(again.session.events), model

    first, resumed, model = run(main)
    texts = []
    for result in of_type(first, ToolResultEvent):
        block = result.data.message.content[0]
        assert isinstance(block, ToolResultBlock) and isinstance(block.content[0], TextBlock)
        texts.append((block.content[0].text, block.is_error is True))
    assert texts == [
        ("ok", False),
        ("Error: the tool result was not stored: a line is longer than the read limit of "
         "16 KiB (ReadLimits.max_line): the session could not be loaded again", True),
        ("ok", False)]
    assert len(model.requests) == 2, "the turn did not go on to the next step"
    assert isinstance(of_type(first, TurnEndEvent)[-1].data.reason, TurnCompleted)
    assert resumed[:len(first)] == first
    assert types(resumed)[-1] == "turn/end"
    assert isinstance(of_type(resumed, TurnEndEvent)[-1].data.reason, TurnCompleted)


def test_the_writer_and_the_readers_share_their_default_limits(tmp_path: Path) -> None:
    """The store writes against the limits its loader, the CLI's reader and read_text use by
    default, and it loads with the limits it was given."""
    store = JsonlSessionStore(tmp_path)
    assert store.limits is DEFAULT_LIMITS
    for reader in (read_log, read_session_file, read_text):
        assert inspect.signature(reader).parameters["limits"].default is DEFAULT_LIMITS
    assert ReadLimits(max_bytes=1 << 30, max_line=256 << 20,
                      max_events=1 << 25) == DEFAULT_LIMITS
    # A file written under generous limits is refused by a store whose limits it passes.
    session = _open_step(store)
    _result(session, "c", _call(session, "c"), "z" * 5000)
    _close(session)
    store.release(session.id)
    tight = JsonlSessionStore(tmp_path, limits=ReadLimits(max_line=4096))
    with pytest.raises(Exception, match=r"ReadLimits\.max_line"):
        tight.load(session.id)


# ------------------------------------------------------------------ the writer = the reader

_STEP = st.one_of(
    st.tuples(st.just("result"), st.integers(0, 12000), st.sampled_from("ab\u00e9\u4e00")),
    st.tuples(st.just("chunks"), st.integers(1, 30), st.just("c")),
    st.tuples(st.just("turn"), st.just(0), st.just("")),
)


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limits=st.builds(ReadLimits, max_line=st.one_of(st.integers(600, 8000), st.just(256 << 20)),
                       max_bytes=st.integers(16 << 10, 40 << 10),
                       max_events=st.integers(40, 400)),
       options=st.fixed_dictionaries({"compression": st.sampled_from(["none", "zstd"]),
                                      "pack_chunks": st.booleans()}),
       steps=st.lists(_STEP, min_size=1, max_size=40), torn=st.booleans())
def test_what_the_store_accepts_reads_back_and_what_it_refuses_would_not(
        tmp_path_factory: pytest.TempPathFactory, limits: ReadLimits, options: dict[str, Any],
        steps: list[tuple[str, int, str]], torn: bool) -> None:
    """Two stores write the same batches: one under small limits, one under the defaults.
    Every batch the limited store accepts leaves a file its reader accepts under those limits;
    the first it refuses, written by the other store, makes a file that reader refuses — unless
    the refusal kept a turn's closing room. Then the turn is closed, and the session (its file
    torn first, sometimes) loads again under the limits."""
    roots = tmp_path_factory.mktemp("limited"), tmp_path_factory.mktemp("free")
    limited = JsonlSessionStore(roots[0], limits=limits, **options)
    free = JsonlSessionStore(roots[1], **options)
    sessions = [_open_step(store) for store in (limited, free)]

    def batch(session: Session, step: tuple[str, int, str], index: int) -> list[Any]:
        trace = session.trace
        assert trace.open_turn is not None and trace.open_step is not None
        turn, number = trace.open_turn, trace.open_step
        kind, size, letter = step
        if kind == "chunks":
            return [draft(AssistantChunkEvent, AssistantChunkData(
                turn=turn, step=number, chunk=TextDelta(index=0, text=letter)))] * size
        if kind == "turn":
            return [draft(StepEndEvent, StepData(turn=turn, step=number)),
                    draft(TurnEndEvent, TurnEndData(turn=turn, reason=TurnCompleted())),
                    draft(TurnStartEvent, TurnStartData(turn=turn + 1)),
                    draft(StepStartEvent, StepData(turn=turn + 1, step=1))]
        call = draft(ToolCallEvent, ToolCallData(turn=turn, step=number, call_id=f"c{index}",
                                                 name="t", arguments="{}"))
        made = tool_result_event(seq=len(session) + 1, time=0, turn=turn, step=number,
                                 call_id=f"c{index}", message_id=f"m{index}",
                                 text=letter * size, is_error=False, call_seq=len(session))
        return [call, draft(type(made), made.data, source_event_seqs=made.source_event_seqs,
                            surface_op="append")]

    path = limited.path_for(sessions[0].header)
    for index, step in enumerate(steps):
        drafts = batch(sessions[0], step, index)
        try:
            sessions[0].append_many(drafts)
        except SessionEventError as refused:
            event("refused: " + ("closing room" if "closing a turn" in refused.problem
                                 else refused.problem.split(" (ReadLimits.")[1].split(")")[0]))
            sessions[1].append_many(batch(sessions[1], step, index))
            over = read_log(free.path_for(sessions[1].header), limits=limits)
            assert isinstance(over, Failure) or "closing a turn" in refused.problem, refused
            break
        sessions[1].append_many(drafts)
        assert path.read_bytes() == free.path_for(sessions[1].header).read_bytes()
        _assert_counted_as_read(limited, sessions[0], limits)
    session = sessions[0]
    _close(session)
    assert isinstance(read_log(path, limits=limits), Success)
    limited.release(session.id)
    if torn:  # a crash cut the last write short: load cuts the tail and writes it again
        size = path.stat().st_size
        os.truncate(path, size - max(1, min(40, size // 10)))
    again = JsonlSessionStore(roots[0], limits=limits, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SessionRepairWarning)
        loaded = again.load(session.id)
    assert check_balance(loaded.events).unwrap().is_closed
    _assert_counted_as_read(again, loaded, limits)


def _assert_counted_as_read(store: JsonlSessionStore, session: Session,
                            limits: ReadLimits) -> None:
    """The file reads back under the limits, and what the store's writer counts as spent is
    what the reader spends on it."""
    spent = store._writers[session.id].spent
    read = read_log(store.path_for(session.header), limits=limits).unwrap()
    assert (spent.text_bytes, spent.events) == (read.spent_bytes, read.spent_events)
