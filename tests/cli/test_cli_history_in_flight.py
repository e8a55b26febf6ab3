"""Histories drawn by `core.formats.strategies` through the command line: an in-flight one is
open (exit 1) with the strategy's cut, its seed is exactly the items before the cut, and
`show` groups its items into turns where the core says turns complete; a closed one is closed.
`main` runs in this process (quick)."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from turnfork.core.formats import FORMAT_NAMES, FormatName, decode_history
from turnfork.core.formats.strategies import Sample, closed_histories, in_flight_histories
from turnfork.shell.cli import main


def _run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue()


def _completes_a_turn(fmt: FormatName, items: list[Any]) -> bool:
    history = decode_history(items, fmt).unwrap()
    return history.is_balanced and history.ends_at_completed_turn


def _through_the_cli(fmt: FormatName, sample: Sample) -> dict[str, Any]:
    """check, seed and show of the sample; what they said."""
    items = list(sample.items)
    with tempfile.TemporaryDirectory() as scratch:
        given_path = Path(scratch) / "history.json"
        given_path.write_text(json.dumps(items), encoding="utf-8")
        code, out = _run("check", "--json", "--format", fmt, str(given_path))
        report = json.loads(out)
        seed_path = Path(scratch) / "seed.json"
        seed_code, _ = _run("seed", "--format", fmt, str(given_path), "-o", str(seed_path))
        seed = json.loads(seed_path.read_text(encoding="utf-8"))
        show_code, out = _run("show", "--json", "--format", fmt, str(given_path))
        outline = json.loads(out)
    assert (seed_code, show_code) == (0, 0)
    assert seed == items[:sample.cut]
    assert report["completed_prefix_length"] == sample.cut
    assert [entry["seq"] for entry in outline["entries"] if entry.get("kind") == "cut"] == [
        sample.cut]
    turns = [entry for entry in outline["entries"] if entry["node"] == "turn"]
    # Every turn drawn as completed ends where the core says a turn completes; the turns
    # cover the items in order.
    for turn in turns:
        if turn["reason"] == "completed":
            assert _completes_a_turn(fmt, items[:turn["end_seq"] + 1]), turn
    assert [t["start_seq"] for t in turns[1:]] == [t["end_seq"] + 1 for t in turns[:-1]]
    return {"code": code, "report": report, "turns": turns}


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
@settings(max_examples=examples(40), deadline=None)
@given(data=st.data())
def test_an_in_flight_history_is_open_at_its_cut(fmt: FormatName, data: st.DataObject) -> None:
    """In flight: exit 1, `open`, the strategy's cut; the seed is the items before it; only
    the last turn is drawn in flight, and it starts at the cut."""
    sample = data.draw(in_flight_histories(fmt, max_turns=3))
    said = _through_the_cli(fmt, sample)
    assert (said["code"], said["report"]["state"]) == (1, "open")
    turns = said["turns"]
    assert [t["reason"] for t in turns] == ["completed"] * (len(turns) - 1) + [None]
    assert turns[-1]["start_seq"] == sample.cut


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
@settings(max_examples=examples(20), deadline=None)
@given(data=st.data())
def test_a_closed_history_is_closed(fmt: FormatName, data: st.DataObject) -> None:
    """Closed: exit 0, `closed`, every item in the seed, every turn drawn completed."""
    sample = data.draw(closed_histories(fmt, max_turns=3))
    said = _through_the_cli(fmt, sample)
    assert (said["code"], said["report"]["state"]) == (0, "closed")
    assert all(turn["reason"] == "completed" for turn in said["turns"])
