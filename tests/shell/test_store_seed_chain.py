"""A long seed chain (issue 25, G10): a fork of a fork of a fork… keeps its seed as a seed file
naming a lower-numbered one, one link per generation. Before (cb407df) the reader followed the
links by recursion: ~600 links made `load`/`inspect` raise RecursionError and `turnfork check`
print a traceback. The chain is walked iteratively now, whatever its length."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnfork.shell import JsonlSessionStore, SessionLoadError
from turnfork.shell.cli import main
from turnfork.shell.logfile import read_log


def _header(session_id: str, parent: str | None) -> str:
    header: dict[str, object] = {"type": "session", "version": 0, "id": session_id,
                                 "createdAt": 0, "delegationDepth": 0}
    if parent is not None:
        header["parentSession"] = parent
    return json.dumps(header, separators=(",", ":"))


def _turn(turn: int, seq: int) -> list[str]:
    return [json.dumps({"type": "turn/start", "seq": seq, "time": seq, "data": {"turn": turn}}),
            json.dumps({"type": "turn/end", "seq": seq + 1, "time": seq + 1,
                        "data": {"turn": turn, "reason": {"kind": "completed"}}})]


def _chain(root: Path, links: int) -> Path:
    """A child whose seed is `seed-{links-1}.jsonl`, whose seed is the one below, … down to
    `seed-0.jsonl`; each file adds one completed turn. Returns the child's directory."""
    directory = root / "_no-cwd" / "child"
    directory.mkdir(parents=True)
    parent: str | None = None
    below: tuple[str, int] | None = None  # (file, size) of the link below
    for index in range(links + 1):
        name = "session.jsonl" if index == links else f"seed-{index}.jsonl"
        session_id = "child" if index == links else f"g{index}"
        lines = [_header(session_id, parent)]
        if below is not None:
            lines.append(json.dumps({"type": "turnfork/seed", "file": below[0],
                                     "size": below[1], "events": 2 * index,
                                     "lastTime": 2 * index - 1}))
        lines += _turn(index + 1, 2 * index)
        data = "".join(line + "\n" for line in lines).encode()
        (directory / name).write_bytes(data)
        parent, below = session_id, (name, len(data))
    return directory


@pytest.mark.parametrize("links", [1, 600, 3000])
def test_a_long_chain_is_read_by_every_reader(tmp_path: Path, links: int,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`inspect`, `load`, the CLI's reader and `turnfork check` read every link: one turn per
    generation, the deepest seed's first."""
    directory = _chain(tmp_path, links)
    store = JsonlSessionStore(tmp_path)
    inspected = store.inspect("child")
    assert len(inspected.events) == 2 * (links + 1)
    assert [event.seq for event in inspected.events] == list(range(2 * (links + 1)))
    read = read_log(directory).unwrap()
    assert read.events == inspected.events
    assert len(read.files) == links + 1  # the session file and every seed file
    assert main(["check", str(directory)]) == 0
    out = capsys.readouterr().out
    assert f"valid and closed: {2 * (links + 1):,} events, {links + 1:,} turns" in out
    loaded = store.load("child")
    assert len(loaded.events) == 2 * (links + 1) + 1  # and its session/end-seed
    store.release("child")


def test_a_broken_link_deep_in_the_chain_is_named(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A seed file missing 500 links down: one error naming it, no traceback."""
    directory = _chain(tmp_path, 600)
    (directory / "seed-100.jsonl").unlink()
    with pytest.raises(SessionLoadError, match=r"seed-100\.jsonl: cannot read: no such file"):
        JsonlSessionStore(tmp_path).inspect("child")
    assert main(["check", str(directory)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "seed-100.jsonl: cannot read: no such file" in err


def test_a_link_that_does_not_go_down_is_refused(tmp_path: Path) -> None:
    """Each link must name a lower-numbered seed file: a loop cannot be made."""
    directory = _chain(tmp_path, 3)
    seed = directory / "seed-1.jsonl"
    seed.write_text(seed.read_text().replace('"file": "seed-0.jsonl"', '"file": "seed-2.jsonl"'))
    error = read_log(directory).failure()
    assert error.problem == ("seed seed-2.jsonl: a seed file may only name a lower-numbered one "
                             "(read from seed-1)")
