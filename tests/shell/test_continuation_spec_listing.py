"""DSH ``packages/subagent/subagent/tests/list-children.spec.ts`` ("SubagentRuntime.listChildren",
lines 154–980, and "SubagentRuntime.listDescendants", 982–1220), case by case: each test names
the line of the case it ports. Sessions are authored straight into the store's layout where DSH
authors them through its persistence backend (so a log our writer would refuse can be read)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest
from _continuation_spec import Spec, no_activation, park, spec_host, start
from _shell_helpers import make_host, run

from turnfork.core import (
    SessionHeader,
    StartRequest,
    SubagentDescriptorData,
    SubagentDescriptorEvent,
    TextBlock,
    TurnStartData,
    TurnStartEvent,
)
from turnfork.core.codec import encode_header_line
from turnfork.core.events import OpaqueEvent
from turnfork.shell import AbortController, Host, JsonlSessionStore, Reply, SubagentRuntime
from turnfork.shell.subagents import ListedChild, ListedDiagnostic, SubagentError


def _descriptor(label: str, version: int = 2, mode: str = "continuable",
                provider: object = "spawn") -> dict[str, Any]:
    return {"version": version, "mode": mode, "provider": provider, "label": label}


_TURN_END = {"type": "turn/end", "seq": 1, "time": 2,
             "data": {"turn": 1, "reason": {"kind": "completed"}}}
_TURN_START = {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}}


def _child_events(descriptor: dict[str, Any] | None, *, first_seq: int = 0,
                  turn: int = 1) -> list[dict[str, Any]]:
    """DSH's ``childEvents``: one complete turn, its user message, the descriptor inside it."""
    seq = first_seq
    events: list[dict[str, Any]] = [{"type": "turn/start", "data": {"turn": turn}}]
    if first_seq == 0:
        events.append({"type": "user/message", "surfaceOp": "append", "data": {
            "id": f"m-{turn}", "role": "user", "source": {"kind": "user"},
            "content": [{"type": "text", "text": "work"}]}})
    if descriptor is not None:
        events.append({"type": "subagent/descriptor", "data": descriptor})
    events.append({"type": "turn/end", "data": {"turn": turn, "reason": {"kind": "completed"}}})
    for event in events:
        event.update(seq=seq, time=seq + 1)
        seq += 1
    return events


def _author(host: Host, session_id: str, events: Sequence[dict[str, Any]], *,
            created_at: int = 1, **header: Any) -> str:
    """DSH's ``authorChild``: a persisted session written straight into the store's layout."""
    store = host.sessions
    assert isinstance(store, JsonlSessionStore)
    head = SessionHeader(id=session_id, created_at=created_at, **header)
    path = store.path_for(head)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = b"".join(msgspec.json.encode(event) + b"\n" for event in events)
    data = encode_header_line(head) + b"\n" + text
    if store.compression == "zstd":
        import zstandard
        compressor = zstandard.ZstdCompressor()
        data = (compressor.compress(encode_header_line(head) + b"\n")
                + compressor.compress(text))
    path.write_bytes(data)
    return session_id


def _live(host: Host, session_id: str, parent: str | None, descriptor: dict[str, Any] | None,
          *, created_at: int = 1, origin: bool = True) -> str:
    """A live child session (DSH's ``ctx.sessions.create`` then two appends), no agent."""
    header = SessionHeader(id=session_id, created_at=created_at,
                           **({} if parent is None else {"parent_session": parent}),
                           **({"origin": "subagent"} if origin else {}))
    session = host.sessions.create(header, clock=host.clock)
    session.append(TurnStartEvent, TurnStartData(turn=1))
    if descriptor is not None:
        session.append(SubagentDescriptorEvent,
                       msgspec.convert(descriptor, SubagentDescriptorData, from_attributes=False))
    return session_id


def _child(id_: str, label: str | None, *, live: bool = False, mode: str = "continuable",
           has_children: bool = False, parent: str = "parent", depth: int = 1,
           created_at: int | None = None) -> dict[str, Any]:
    return {"id": id_, "label": label, "live": live, "mode": mode,
            "has_children": has_children, "parent": parent, "depth": depth,
            **({} if created_at is None else {"created_at": created_at})}


def _rows(rows: Sequence[ListedChild | ListedDiagnostic]) -> list[dict[str, Any]]:
    """The listing as plain fields (``created_at`` left out: DSH's rows do not have it)."""
    found = []
    for row in rows:
        if isinstance(row, ListedChild):
            found.append({"id": row.id, "label": row.label, "live": row.live, "mode": row.mode,
                          "has_children": row.has_children, "parent": row.parent,
                          "depth": row.depth})
        else:
            found.append({"id": row.id, "reason": row.reason, "parent": row.parent,
                          "depth": row.depth})
    return found


def _diagnostic(id_: str, reason: str, parent: str = "parent", depth: int = 1) -> dict[str, Any]:
    return {"id": id_, "reason": reason, "parent": parent, "depth": depth}


async def _started_child(spec: Spec, label: str) -> str:
    """DSH's ``startChild``: a continuable child started and released."""
    started = await start(spec, prompt=f"task: {label}", label=label)
    await no_activation(spec.host, started.child_id)
    return started.child_id


def _count_inspections(host: Host) -> list[str]:
    store = host.sessions
    assert isinstance(store, JsonlSessionStore)
    inspected: list[str] = []
    inspect = store.inspect

    def counting(session_id: str) -> Any:
        inspected.append(session_id)
        return inspect(session_id)

    store.inspect = counting  # type: ignore[method-assign]
    return inspected


def _listing_host(tmp_path: Path, script: Sequence[Reply] = (), **options: Any) -> Spec:
    spec = spec_host(tmp_path, script, **options)
    park(spec.parent)
    return spec


# --------------------------------------------------------------------------- listChildren


def test_live_children_are_listed_without_persistence() -> None:
    """DSH list-children.spec.ts:155 — with an in-memory store only (no persistence, no
    continuation manager in use), a live child with a descriptor is listed live."""

    async def main() -> None:
        host = make_host()
        runtime = SubagentRuntime(host)
        _live(host, "live-only-parent", None, None)
        child = _live(host, "live-only-child", "live-only-parent",
                      _descriptor("live-only child"))
        rows = await runtime.continuation.list_children("live-only-parent")
        assert _rows(rows) == [_child(child, "live-only child", live=True,
                                      parent="live-only-parent")]
        await host.aclose()

    run(main)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_a_persisted_continuable_child_is_listed_inactive_with_its_label(
        tmp_path: Path, compression: str) -> None:
    """DSH list-children.spec.ts:199 — a started and settled child is listed not live, with its
    durable label (its header read from the file alone, plain or zstd)."""

    async def main() -> None:
        store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
        spec = spec_host(None, [Reply.text("done")])
        spec.host.sessions = store
        park(spec.parent)
        child = await _started_child(spec, "summarize the doc")
        rows = await spec.manager.list_children(spec.parent.id)
        assert _rows(rows) == [_child(child, "summarize the doc")]
        await spec.host.aclose()

    run(main)


def test_one_shot_and_continuable_children_are_listed_together(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:211 — a one-shot child (no label asked for) and a continuable
    one, under the same parent, each with its mode."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("once"), Reply.text("again")])
        one_shot = await spec.host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="finish once"),)), parent=spec.parent)
        await one_shot.result
        await one_shot.dispose()
        continuable = await _started_child(spec, "continuable child")
        rows = _rows(await spec.manager.list_children(spec.parent.id))
        assert len(rows) == 2
        assert _child(one_shot.id, None, mode="one-shot") in rows
        assert _child(continuable, "continuable child") in rows
        await spec.host.aclose()

    run(main)


def test_a_persisted_parent_is_listed_after_a_restart(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:242 — a parent that exists only in the store (the restart
    shape) is a valid target: its persisted child is listed."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        cold = "00000000-0000-4000-8000-00000000cccc"
        _author(spec.host, cold, [_TURN_START, _TURN_END])
        child = _author(spec.host, "00000000-0000-4000-8000-00000000cdcd",
                        _child_events(_descriptor("persisted parent case")),
                        parent_session=cold, origin="subagent")
        rows = await spec.manager.list_children(cold)
        assert _rows(rows) == [_child(child, "persisted parent case", parent=cold)]
        await spec.host.aclose()

    run(main)


def test_children_are_ordered_by_creation_then_id_and_ordinary_sessions_left_out(
        tmp_path: Path) -> None:
    """DSH list-children.spec.ts:268 — live children created out of order come back by
    ``createdAt``, ties by id; a session that names the parent without subagent origin (an
    ordinary fork) is not listed."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        host, parent = spec.host, spec.parent.id
        late = _live(host, "00000000-0000-4000-8000-000000000009", parent,
                     _descriptor("late child"), created_at=9)
        tie_b = _live(host, "00000000-0000-4000-8000-000000000002", parent,
                      _descriptor("tie b"), created_at=5)
        tie_a = _live(host, "00000000-0000-4000-8000-000000000001", parent,
                      _descriptor("tie a"), created_at=5)
        _live(host, "plain-fork", parent, None, origin=False)
        rows = await spec.manager.list_children(parent)
        assert [row.id for row in rows] == [tie_a, tie_b, late]
        assert all(isinstance(row, ListedChild) for row in rows)
        await host.aclose()

    run(main)


def test_a_live_child_without_its_descriptor_yet_is_left_out(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:293 — a live child still in its creation window (no
    descriptor appended) is omitted, not diagnosed."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        _live(spec.host, "creation-window-child", spec.parent.id, None)
        assert await spec.manager.list_children(spec.parent.id) == []
        await spec.host.aclose()

    run(main)


def test_a_one_shot_child_is_listed_with_its_creation_label(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:304 — a persisted one-shot child whose descriptor has a
    label is listed with it."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        labeled = _author(spec.host, "00000000-0000-4000-8000-00000000ab02",
                          _child_events(_descriptor("labeled one-shot", mode="one-shot")),
                          parent_session=spec.parent.id, origin="subagent")
        rows = await spec.manager.list_children(spec.parent.id)
        assert _rows(rows) == [_child(labeled, "labeled one-shot", mode="one-shot")]
        await spec.host.aclose()

    run(main)


def test_a_live_child_is_listed_live_beside_settled_siblings(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:323 — a live child session (no agent) is listed live, its
    settled sibling not."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("done")])
        settled = await _started_child(spec, "settled child")
        live = _live(spec.host, "live-child", spec.parent.id, _descriptor("live child"))
        rows = _rows(await spec.manager.list_children(spec.parent.id))
        assert _child(settled, "settled child") in rows
        assert _child(live, "live child", live=True) in rows
        await spec.host.aclose()

    run(main)


def test_the_last_of_several_descriptors_is_listed(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:345 — a log with two descriptors is listed under the last one
    (a repeated descriptor is not a corruption)."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("done")])
        healthy = await _started_child(spec, "healthy sibling")
        events = _child_events(_descriptor("twice"))
        events.insert(3, {"type": "subagent/descriptor", "data": _descriptor("twice again")})
        for seq, event in enumerate(events):
            event.update(seq=seq, time=seq + 1)
        doubled = _author(spec.host, "00000000-0000-4000-8000-00000000dupe", events,
                          parent_session=spec.parent.id, origin="subagent")
        rows = _rows(await spec.manager.list_children(spec.parent.id))
        assert _child(doubled, "twice again") in rows
        assert _child(healthy, "healthy sibling") in rows
        await spec.host.aclose()

    run(main)


def test_a_live_child_whose_later_descriptor_is_malformed_is_left_out(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:373 (the listing's part; the projection's JSON sentinel is
    DSH's own) — a live child whose last descriptor is malformed has no identity any more and,
    being live, is omitted."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        live = _live(spec.host, "invalidated-live-child", spec.parent.id,
                     _descriptor("was valid"))
        session = spec.host.sessions.get(live)
        assert session is not None
        assert [row.id for row in await spec.manager.list_children(spec.parent.id)] == [live]
        session.extend([OpaqueEvent(type="subagent/descriptor", seq=len(session.events),
                                    time=9, data=msgspec.Raw(b'{"version":2,"mode":'
                                                             b'"continuable","provider":7}'))])
        assert await spec.manager.list_children(spec.parent.id) == []
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize(("line", "descriptor"), [
    (399, "later malformed"),
    (536, {"version": 2, "mode": "continuable", "provider": 7}),
    (546, {"version": 3, "mode": "continuable", "provider": "spawn", "label": "from the future"}),
])
def test_a_settled_child_without_a_valid_identity_is_corrupt(
        tmp_path: Path, line: int, descriptor: Any) -> None:
    """DSH list-children.spec.ts:399 (a later descriptor invalidated the identity), :536 (a
    malformed descriptor) and :546 (an unknown descriptor version): a persisted child whose
    last descriptor gives no identity is one ``corrupt`` diagnostic."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        if descriptor == "later malformed":
            events = _child_events(_descriptor("was valid"))
            events.insert(3, {"type": "subagent/descriptor",
                              "data": {"version": 2, "mode": "continuable", "provider": 7}})
            for seq, event in enumerate(events):
                event.update(seq=seq, time=seq + 1)
        else:
            events = _child_events(descriptor)
        child = _author(spec.host, f"00000000-0000-4000-8000-00000000{line:04d}", events,
                        parent_session=spec.parent.id, origin="subagent")
        assert _rows(await spec.manager.list_children(spec.parent.id)) == [
            _diagnostic(child, "corrupt")]
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("field", ["version", "id", "created_at", "cwd", "parent_session",
                                   "seed_length", "delegation_depth"])
def test_an_inspection_that_returns_another_lifecycle_is_corrupt(tmp_path: Path,
                                                                 field: str) -> None:
    """DSH list-children.spec.ts:469 (one case per lifecycle witness) — a child whose log, read
    after the enumeration, has another version, id, ``createdAt``, cwd, parent, ``seedLength``
    or ``delegationDepth`` (the id taken again by another lifecycle) is ``corrupt``; its healthy
    sibling is listed as usual (on earlier code it was listed as normal, or under the wrong
    parent)."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("done")])
        healthy = await _started_child(spec, "healthy sibling")
        reborn = _author(spec.host, "00000000-0000-4000-8000-00000000ae03",
                         _child_events(_descriptor("reborn child")),
                         parent_session=spec.parent.id, origin="subagent")
        store = spec.host.sessions
        assert isinstance(store, JsonlSessionStore)
        inspect = store.inspect
        changed = {"version": 1, "id": "another-lifecycle", "created_at": 2, "cwd": "/elsewhere",
                   "parent_session": "another-parent", "seed_length": 1,
                   "delegation_depth": 1}

        def reborn_inspect(session_id: str) -> Any:
            log = inspect(session_id)
            if session_id != reborn:
                return log
            assert log.header is not None
            return msgspec.structs.replace(log, header=msgspec.structs.replace(
                log.header, **{field: changed[field]}))

        store.inspect = reborn_inspect  # type: ignore[method-assign]
        rows = _rows(await spec.manager.list_children(spec.parent.id))
        assert _diagnostic(reborn, "corrupt") in rows
        assert _child(healthy, "healthy sibling") in rows
        await spec.host.aclose()

    run(main)


def test_a_child_the_store_cannot_read_is_unavailable(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:515 — a persisted child whose log the store's inspection
    refuses (a surface message without its ``surfaceOp``) is one ``unavailable`` diagnostic
    (on earlier code it was silently dropped)."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        events = _child_events(_descriptor("broken surface"))[:3]
        del events[1]["surfaceOp"]
        invalid = _author(spec.host, "00000000-0000-4000-8000-0000000000ee", events,
                          parent_session=spec.parent.id, origin="subagent")
        assert _rows(await spec.manager.list_children(spec.parent.id)) == [
            _diagnostic(invalid, "unavailable")]
        await spec.host.aclose()

    run(main)


def test_a_fork_seed_replaying_an_ancestor_descriptor_lists_under_it(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:559 — a fork child whose log holds only the ancestor's
    descriptor (in its seed) is listed under that identity (last wins)."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        seed = _child_events(_descriptor("ancestor label"))
        fork = _author(spec.host, "00000000-0000-4000-8000-0000000000f0", seed,
                       parent_session=spec.parent.id, seed_length=len(seed), origin="subagent")
        assert _rows(await spec.manager.list_children(spec.parent.id)) == [
            _child(fork, "ancestor label")]
        await spec.host.aclose()

    run(main)


def test_children_of_an_unregistered_provider_stay_listed(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:578 — listing does not filter by provider: a child of a
    provider no longer registered is listed."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        foreign = _author(spec.host, "00000000-0000-4000-8000-0000000000bb",
                          _child_events(_descriptor("orphan provider", provider="not-mounted")),
                          parent_session=spec.parent.id, origin="subagent")
        assert _rows(await spec.manager.list_children(spec.parent.id)) == [
            _child(foreign, "orphan provider")]
        await spec.host.aclose()

    run(main)


def test_a_store_that_cannot_list_fails_the_listing(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:639 — when the store cannot list its sessions, the listing
    fails with that error (no diagnostic rows, no cancellation text)."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("done")])
        await _started_child(spec, "never listed")

        def failing() -> tuple[str, ...]:
            raise OSError("backend listing failed")

        spec.host.sessions.list = failing  # type: ignore[method-assign]
        with pytest.raises(OSError, match="backend listing failed"):
            await spec.manager.list_children(spec.parent.id)
        del spec.host.sessions.list  # type: ignore[attr-defined]
        await spec.host.aclose()

    run(main)


def test_a_failed_read_is_unavailable_once_and_retried_next_time(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:648 — a child whose read fails is one ``unavailable`` row
    beside a healthy sibling; nothing is remembered: the next listing, the store healthy
    again, lists it (on earlier code a failed read dropped it)."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("done")])
        healthy = await _started_child(spec, "healthy sibling")
        flaky = _author(spec.host, "00000000-0000-4000-8000-00000000f1a7",
                        _child_events(_descriptor("flaky storage")),
                        parent_session=spec.parent.id, origin="subagent")
        store = spec.host.sessions
        assert isinstance(store, JsonlSessionStore)
        inspect = store.inspect

        def failing(session_id: str) -> Any:
            if session_id == flaky:
                raise OSError("backend read failed")
            return inspect(session_id)

        store.inspect = failing  # type: ignore[method-assign]
        degraded = _rows(await spec.manager.list_children(spec.parent.id))
        assert _diagnostic(flaky, "unavailable") in degraded
        assert _child(healthy, "healthy sibling") in degraded
        store.inspect = inspect  # type: ignore[method-assign]
        assert _child(flaky, "flaky storage") in _rows(
            await spec.manager.list_children(spec.parent.id))
        await spec.host.aclose()

    run(main)


def test_compacted_and_uncompacted_children_are_listed_alike(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:679 — a child whose surface a compaction replaced (the
    descriptor still in its log) is listed like its uncompacted twin."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        plain = _author(spec.host, "00000000-0000-4000-8000-00000000c0de",
                        _child_events(_descriptor("twin child")), created_at=1,
                        parent_session=spec.parent.id, origin="subagent")
        events = _child_events(_descriptor("twin child"))
        events.append({"type": "user/message", "seq": 4, "time": 5,
                       "surfaceOp": {"op": "replace", "start": 1, "end": 1},
                       "sourceEventSeqs": [1],
                       "data": {"id": "summary", "role": "user",
                                "source": {"kind": "plugin", "plugin": "compact"},
                                "content": [{"type": "text", "text": "summary of everything"}]}})
        compacted = _author(spec.host, "00000000-0000-4000-8000-00000000c1de", events,
                            created_at=2, parent_session=spec.parent.id, origin="subagent")
        assert _rows(await spec.manager.list_children(spec.parent.id)) == [
            _child(plain, "twin child"), _child(compacted, "twin child")]
        await spec.host.aclose()

    run(main)


def test_a_grandchild_counts_by_its_header_and_is_never_read(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:718 — a grandchild with subagent origin makes its parent's row
    say ``has_children`` from its header alone: the child is read, the grandchild never (on
    earlier code every session's log was read)."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("done")])
        child = await _started_child(spec, "direct child")
        grandchild = _author(spec.host, "00000000-0000-4000-8000-0000000000cc",
                             _child_events(_descriptor("grandchild")),
                             parent_session=child, origin="subagent")
        inspected = _count_inspections(spec.host)
        assert _rows(await spec.manager.list_children(spec.parent.id)) == [
            _child(child, "direct child", has_children=True)]
        assert child in inspected and grandchild not in inspected
        await spec.host.aclose()

    run(main)


def test_each_cold_child_is_read_once_and_a_live_one_never(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:743 — one read per persisted child, none for a live one; all
    three listed. (DSH:810 — with no projection cache, DSH's cold rung is this read — is the
    same case for us: we have no cache.)"""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("done")])
        cold_started = await _started_child(spec, "cold started child")
        cold_authored = _author(spec.host, "00000000-0000-4000-8000-00000000ab01",
                                _child_events(_descriptor("cold authored child")),
                                parent_session=spec.parent.id, origin="subagent")
        live = _live(spec.host, "live-mixed-child", spec.parent.id,
                     _descriptor("live mixed child"))
        inspected = _count_inspections(spec.host)
        assert len(await spec.manager.list_children(spec.parent.id)) == 3
        assert inspected.count(cold_started) == 1 and inspected.count(cold_authored) == 1
        assert live not in inspected
        await spec.host.aclose()

    run(main)


def test_the_one_read_of_a_cold_child_is_its_inspection(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:810 — without a projection cache the cold child's identity
    comes from one inspection of its log."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        foreign = _author(spec.host, "00000000-0000-4000-8000-00000000ac02",
                          _child_events(_descriptor("uncacheable child")),
                          parent_session=spec.parent.id, origin="subagent")
        inspected = _count_inspections(spec.host)
        assert _rows(await spec.manager.list_children(spec.parent.id)) == [
            _child(foreign, "uncacheable child")]
        assert inspected == [foreign]
        await spec.host.aclose()

    run(main)


def test_an_ordinary_grandchild_does_not_count_as_a_child(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:844 — a session below the child without subagent origin does
    not make it ``has_children``."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("done")])
        child = await _started_child(spec, "direct child")
        _author(spec.host, "00000000-0000-4000-8000-0000000000f1", [_TURN_START, _TURN_END],
                parent_session=child)
        assert _rows(await spec.manager.list_children(spec.parent.id)) == [
            _child(child, "direct child")]
        await spec.host.aclose()

    run(main)


def test_a_corrupt_grandchild_still_counts(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:860 — a grandchild with subagent origin but a malformed
    descriptor is a ``corrupt`` row of its parent's listing and makes that parent
    ``has_children`` in the root's."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("done")])
        child = await _started_child(spec, "direct child")
        broken = _author(spec.host, "00000000-0000-4000-8000-0000000000f2",
                         _child_events({"version": 2, "mode": "continuable", "provider": 7}),
                         parent_session=child, origin="subagent")
        assert _rows(await spec.manager.list_children(child)) == [
            _diagnostic(broken, "corrupt", parent=child)]
        assert _rows(await spec.manager.list_children(spec.parent.id)) == [
            _child(child, "direct child", has_children=True)]
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("descendants", [False, True])
def test_an_aborted_signal_stops_before_any_read(tmp_path: Path, descendants: bool) -> None:
    """DSH list-children.spec.ts:877 (``list_children``) and :1202 (``list_descendants``) — a
    signal aborted before the call: ``CANCELLED``, and the store is not even listed."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("done")])
        await _started_child(spec, "never read")
        listed: list[bool] = []
        store_list = spec.host.sessions.list

        def counting() -> tuple[str, ...]:
            listed.append(True)
            return store_list()

        spec.host.sessions.list = counting  # type: ignore[method-assign]
        controller = AbortController()
        controller.abort()
        listing = (spec.manager.list_descendants if descendants
                   else spec.manager.list_children)
        with pytest.raises(SubagentError) as caught:
            await listing(spec.parent.id, signal=controller.signal)
        assert (caught.value.code, str(caught.value)) == ("CANCELLED",
                                                          "subagent listing was cancelled")
        assert listed == []
        del spec.host.sessions.list  # type: ignore[attr-defined]
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("read", ["list", "inspect"])
def test_a_cancellation_reaches_a_read_in_flight(tmp_path: Path, read: str) -> None:
    """DSH list-children.spec.ts:887 (the store's listing) and :907 (a cold child's read): a
    store whose reads are awaitable has the read in flight cancelled when the signal aborts,
    and the listing fails ``CANCELLED``."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        _author(spec.host, "00000000-0000-4000-8000-00000000ce11",
                _child_events(_descriptor("cancelled cold read")),
                parent_session=spec.parent.id, origin="subagent")
        store = spec.host.sessions
        entered = asyncio.Event()
        cancelled: list[bool] = []

        async def hanging(*args: object) -> Any:
            entered.set()
            try:
                await asyncio.get_running_loop().create_future()
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        setattr(store, read, hanging)
        controller = AbortController()
        listing = asyncio.ensure_future(spec.manager.list_children(spec.parent.id,
                                                                   signal=controller.signal))
        await entered.wait()
        controller.abort()
        with pytest.raises(SubagentError) as caught:
            await listing
        assert caught.value.code == "CANCELLED" and cancelled == [True]
        delattr(store, read)
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("outcome", ["read", "failed"])
def test_an_abort_during_a_read_never_becomes_a_result(tmp_path: Path, outcome: str) -> None:
    """DSH list-children.spec.ts:931 (the read completed, then the abort is seen: not a
    successful listing) and :950 (the read failed while the signal aborted: not an
    ``unavailable`` row): both ``CANCELLED``."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        _author(spec.host, "00000000-0000-4000-8000-00000000ce12",
                _child_events(_descriptor("cancelled mid-listing")),
                parent_session=spec.parent.id, origin="subagent")
        store = spec.host.sessions
        assert isinstance(store, JsonlSessionStore)
        inspect = store.inspect
        controller = AbortController()

        def aborting(session_id: str) -> Any:
            controller.abort()
            if outcome == "failed":
                raise OSError("backend read failed")
            return inspect(session_id)

        store.inspect = aborting  # type: ignore[method-assign]
        with pytest.raises(SubagentError) as caught:
            await spec.manager.list_children(spec.parent.id, signal=controller.signal)
        assert caught.value.code == "CANCELLED"
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("descendants", [False, True])
def test_a_parent_without_children_lists_nothing(tmp_path: Path, descendants: bool) -> None:
    """DSH list-children.spec.ts:968 (``list_children``) and :1018 (``list_descendants``): an
    empty list."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        listing = (spec.manager.list_descendants if descendants
                   else spec.manager.list_children)
        assert await listing(spec.parent.id) == []
        await spec.host.aclose()

    run(main)


def test_a_listing_refusal_is_a_typed_subagent_error(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:974 (ours with the one refusal a listing has, a cancelled
    one; DSH's case names its projection plugin's code) — the error is a ``SubagentError``
    with a stable code, its name DSH's."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        controller = AbortController()
        controller.abort()
        with pytest.raises(SubagentError) as caught:
            await spec.manager.list_children(spec.parent.id, signal=controller.signal)
        assert (caught.value.code, caught.value.error.name) == ("CANCELLED", "SubagentError")
        await spec.host.aclose()

    run(main)


# --------------------------------------------------------------------------- listDescendants


def test_the_whole_tree_in_pre_order_with_parent_and_depth(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:983 — two children and a grandchild below the first: pre-order,
    each row with its direct parent and depth, ``has_children`` where a subagent is below."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        parent = spec.parent.id
        a = _author(spec.host, "00000000-0000-4000-8000-00000000aaa1",
                    _child_events(_descriptor("branch a")), created_at=1,
                    parent_session=parent, origin="subagent")
        under = _author(spec.host, "00000000-0000-4000-8000-00000000aaa2",
                        _child_events(_descriptor("under a")), created_at=2,
                        parent_session=a, origin="subagent")
        b = _author(spec.host, "00000000-0000-4000-8000-00000000aaa3",
                    _child_events(_descriptor("branch b")), created_at=3,
                    parent_session=parent, origin="subagent")
        assert _rows(await spec.manager.list_descendants(parent)) == [
            _child(a, "branch a", has_children=True),
            _child(under, "under a", parent=a, depth=2),
            _child(b, "branch b")]
        await spec.host.aclose()

    run(main)


def test_a_live_creation_window_node_is_left_out_but_walked_through(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:1024 — a live child with no descriptor yet is omitted, and the
    child below it is still found, at depth 2."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        bare = _live(spec.host, "live-creation-window", spec.parent.id, None, created_at=1)
        below = _author(spec.host, "00000000-0000-4000-8000-00000000aaaf",
                        _child_events(_descriptor("below the creation window")), created_at=2,
                        parent_session=bare, origin="subagent")
        assert _rows(await spec.manager.list_descendants(spec.parent.id)) == [
            _child(below, "below the creation window", parent=bare, depth=2)]
        await spec.host.aclose()

    run(main)


def test_a_parent_cycle_does_not_revisit_the_root(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:1043 — a root whose own header names its child as parent (a
    corrupt cycle): the child is listed once, the root never."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        _author(spec.host, "cycle-root", _child_events(_descriptor("ordinary cycle root")),
                created_at=2, parent_session="cycle-node")
        node = _author(spec.host, "cycle-node", _child_events(_descriptor("cycle child")),
                       created_at=1, parent_session="cycle-root", origin="subagent")
        assert _rows(await spec.manager.list_descendants("cycle-root")) == [
            _child(node, "cycle child", parent="cycle-root")]
        await spec.host.aclose()

    run(main)


def test_a_deep_chain_of_ordinary_sessions_is_walked_without_recursion(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:1064 — a subagent below 9,999 ordinary sessions is found at
    depth 10,000 (the walk keeps its own stack)."""

    async def main() -> None:
        host = make_host()  # DSH's in-memory sessions: ten thousand of them, live
        runtime = SubagentRuntime(host)
        depth = 10_000
        parent = root = _live(host, "root", None, None, origin=False)
        for level in range(1, depth):
            parent = _live(host, f"deep-ordinary-{level}", parent, None, created_at=level,
                           origin=False)
        leaf = _live(host, "deep-subagent-leaf", parent, _descriptor("deep leaf"),
                     created_at=depth)
        assert _rows(await runtime.continuation.list_descendants(root)) == [
            _child(leaf, "deep leaf", live=True, parent=parent, depth=depth)]
        await host.aclose()

    run(main, timeout=60)


def test_continuable_descendants_below_ordinary_and_one_shot_intermediates(
        tmp_path: Path) -> None:
    """DSH list-children.spec.ts:1087 — an ordinary session (left out, walked through) and a
    one-shot child (listed with its mode) each have a continuable child below them: both found,
    at depth 2, each after its parent."""

    async def main() -> None:
        spec = _listing_host(tmp_path, [Reply.text("one shot")])
        fork = _live(spec.host, "plain-fork", spec.parent.id, None, origin=False)
        under_fork = _author(spec.host, "00000000-0000-4000-8000-00000000bbb1",
                             _child_events(_descriptor("under the fork")), created_at=2,
                             parent_session=fork, origin="subagent")
        one_shot = await spec.host.subagents.start(
            "spawn", StartRequest(prompt=(TextBlock(text="one-shot task"),),
                                  label="one-shot intermediate"), parent=spec.parent)
        await one_shot.result
        await one_shot.dispose()
        under_one_shot = _author(spec.host, "00000000-0000-4000-8000-00000000bbb2",
                                 _child_events(_descriptor("under the one-shot")),
                                 created_at=9_999_999_999_999, parent_session=one_shot.id,
                                 origin="subagent")
        rows = _rows(await spec.manager.list_descendants(spec.parent.id))
        ids = [row["id"] for row in rows]
        assert fork not in ids
        assert _child(under_fork, "under the fork", parent=fork, depth=2) in rows
        assert _child(one_shot.id, "one-shot intermediate", mode="one-shot",
                      has_children=True) in rows
        assert _child(under_one_shot, "under the one-shot", parent=one_shot.id, depth=2) in rows
        assert ids.index(under_one_shot) > ids.index(one_shot.id)
        await spec.host.aclose()

    run(main)


@pytest.mark.parametrize("line", [1134, 1161])
def test_a_corrupt_node_is_diagnosed_in_place_and_walked_through(tmp_path: Path,
                                                                 line: int) -> None:
    """DSH list-children.spec.ts:1134 (a settled node with no descriptor at all) and :1161 (a
    node with an unsupported descriptor version): a ``corrupt`` row where it stands, and the
    child below it listed at depth 2."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        events = (_child_events(None) if line == 1134
                  else _child_events(_descriptor("unsupported descriptor", version=999)))
        node = _author(spec.host, f"00000000-0000-4000-8000-0000000{line:05d}", events,
                       created_at=1, parent_session=spec.parent.id, origin="subagent")
        below = _author(spec.host, f"00000000-0000-4000-8000-1000000{line:05d}",
                        _child_events(_descriptor("below the node")), created_at=2,
                        parent_session=node, origin="subagent")
        assert _rows(await spec.manager.list_descendants(spec.parent.id)) == [
            _diagnostic(node, "corrupt"), _child(below, "below the node", parent=node, depth=2)]
        await spec.host.aclose()

    run(main)


def test_a_descendant_read_as_another_lifecycle_is_corrupt(tmp_path: Path) -> None:
    """DSH list-children.spec.ts:1184 — a child whose read names another durable parent than
    its enumerated header did is ``corrupt`` where it was enumerated."""

    async def main() -> None:
        spec = _listing_host(tmp_path)
        child = _author(spec.host, "00000000-0000-4000-8000-00000000ddd1",
                        _child_events(_descriptor("lineage checked")),
                        parent_session=spec.parent.id, origin="subagent")
        store = spec.host.sessions
        assert isinstance(store, JsonlSessionStore)
        inspect = store.inspect

        def elsewhere(session_id: str) -> Any:
            log = inspect(session_id)
            assert log.header is not None
            return msgspec.structs.replace(log, header=msgspec.structs.replace(
                log.header, parent_session="someone-else"))

        store.inspect = elsewhere  # type: ignore[method-assign]
        assert _rows(await spec.manager.list_descendants(spec.parent.id)) == [
            _diagnostic(child, "corrupt")]
        await spec.host.aclose()

    run(main)
