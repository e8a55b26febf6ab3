"""A complete final line that JSON.parse reads is never a torn tail (issue 14, items 9 and 13):
a lone-surrogate escape is kept, a line nested beyond the codec's limit is refused, not cut."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from turnfork.core import SessionHeader, TextDelta, encode_header_line
from turnfork.shell import JsonlSessionStore, SessionLoadError

HEADER = SessionHeader(id="s", created_at=0)
TURN_START = b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}'
STEP_START = b'{"type":"step/start","seq":1,"time":1,"data":{"turn":1,"step":1}}'
LONE_CHUNK = (b'{"type":"assistant/chunk","seq":2,"time":1,"data":{"turn":1,"step":1,"chunk":'
              b'{"type":"text-delta","index":0,"text":"half \\ud83d"}}}')


def _write(root: Path, *records: bytes) -> Path:
    path = root / "_no-cwd" / "s" / "session.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(line + b"\n" for line in (encode_header_line(HEADER), *records)))
    return path


def test_a_final_line_with_a_lone_surrogate_escape_is_kept(tmp_path: Path) -> None:
    """The store writes half of a surrogate pair as its escape: that line, last in a crashed
    session, loads as written (the open turn is closed after it)."""
    path = _write(tmp_path, TURN_START, STEP_START, LONE_CHUNK)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the open turn's repair is announced
        session = JsonlSessionStore(tmp_path).load("s")
    chunk = session.events[2].data.chunk  # type: ignore[union-attr]
    assert chunk == TextDelta(index=0, text="half \ud83d")
    assert LONE_CHUNK + b"\n" in path.read_bytes()


def test_a_final_line_nested_beyond_the_limit_is_refused_and_kept(tmp_path: Path) -> None:
    """Too deep for the codec, yet whole JSON: refused naming its line, the file untouched."""
    deep = (b'{"type":"goal/change","seq":1,"time":1,"data":' + b"[" * 2_000 + b"]" * 2_000
            + b"}")
    path = _write(tmp_path, TURN_START, deep)
    before = path.read_bytes()
    with pytest.raises(SessionLoadError, match="line 3"):
        JsonlSessionStore(tmp_path).load("s")
    assert path.read_bytes() == before
