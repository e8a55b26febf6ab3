"""A Ray child's session is kept on the parent's host like a local child's: in its store, live
while it runs (host.sessions), in the store's DSH-layout file afterwards, equal to what the
host held and seeded by reference like a local fork child."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray.actor", reason="the Ray tests need the ray extra")

from _ray_host import (
    WHERE,
    assert_balanced,
    close,
    contract_host,
    one_turn,
    provider,
    request,
    run,
    types,
)

from turnfork.shell import JsonlSessionStore


@pytest.mark.parametrize("where", WHERE)
def test_the_childs_session_file_is_the_hosts(pool: Any, where: str, tmp_path: Path) -> None:
    """While the child runs its session is live in host.sessions; once disposed its file
    reads back as the same events, also through a fresh store."""

    async def main() -> tuple[str, list[Any]]:
        store = JsonlSessionStore(tmp_path / "sessions")
        host, parent, _ = contract_host(pool, store=store)
        await one_turn(parent, "say remember")
        run_ = await host.subagents.start(provider(where), request('tool echo {"text":"y"}'),
                                          parent=parent)
        assert host.sessions.get(run_.id) is run_.child.session
        await run_.result
        await run_.dispose()
        assert host.sessions.get(run_.id) is None
        events = list(run_.child.session.events)
        loaded = store.inspect(run_.id)
        assert list(loaded.events) == events and loaded.header == run_.child.session.header
        await close(host)
        return run_.id, events

    child_id, events = run(main)
    reread = JsonlSessionStore(tmp_path / "sessions").inspect(child_id)
    assert list(reread.events) == events and "tool/call" in types(events)
    assert_balanced(reread.events, "child read back")
