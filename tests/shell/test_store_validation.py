"""The disk store never writes what its own loader refuses: every batch is read back through
the typed decoder before it is written, and refused whole at the API when it would not load
(issue 14.2); the file, the session and the next append are as if it was never tried."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from turnfork.core import (
    MAX_SAFE_INTEGER,
    AssistantChunkData,
    AssistantChunkEvent,
    EpochHeader,
    LlmCallConfig,
    RequestHeaderData,
    RequestHeaderEvent,
    SessionHeader,
    StepData,
    StepStartEvent,
    TextDelta,
    TokenUsage,
    TurnStartData,
    TurnStartEvent,
    UsageChunk,
    check_balance,
)
from turnfork.shell import JsonlSessionStore, Session
from turnfork.shell.session import draft
from turnfork.shell.store import SessionEventError


def _usage(**tokens: int) -> Any:
    values = {"input_tokens": 1, "output_tokens": 1, **tokens}
    return draft(AssistantChunkEvent, AssistantChunkData(
        turn=1, step=1, chunk=UsageChunk(usage=TokenUsage(**values))))


def _header(**config: Any) -> Any:
    values = {"provider": "p", "model": "m", **config}
    return draft(RequestHeaderEvent, RequestHeaderData(
        header=EpochHeader(config=LlmCallConfig(**values)), reason="initial"))


#: (name, a draft the loader would refuse, words of the refusal)
REFUSED = [
    ("negative token count", _usage(input_tokens=-3), "Expected `int` >= 0"),
    ("token count past 2^53", _usage(output_tokens=MAX_SAFE_INTEGER + 1),
     "beyond the safe-integer range"),
    ("empty model name", _header(model=""), "Expected `str` of length >= 1"),
    ("negative max_tokens", _header(max_tokens=-1), "Expected `int` >= 0"),
    ("max_tokens past 2^53", _header(max_tokens=2**60), "integer"),
]


def _open_step(tmp_path: Path) -> tuple[JsonlSessionStore, Session]:
    store = JsonlSessionStore(tmp_path)
    session = store.create(SessionHeader(id="v", created_at=0))
    session.append(TurnStartEvent, TurnStartData(turn=1))
    session.append(StepStartEvent, StepData(turn=1, step=1))
    return store, session


@pytest.mark.parametrize(("name", "bad", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_an_event_the_loader_would_refuse_is_refused_at_the_api(
        tmp_path: Path, name: str, bad: Any, words: str) -> None:
    """Refused with its seq and type; nothing written or appended; the next append works."""
    store, session = _open_step(tmp_path)
    path = store.path_for(session.header)
    before, length, trace = path.read_bytes(), len(session), session.trace
    good = draft(AssistantChunkEvent, AssistantChunkData(
        turn=1, step=1, chunk=TextDelta(index=0, text="fine")))
    with pytest.raises(SessionEventError) as caught:
        session.append_many([good, bad])  # the whole batch goes, the good event too
    message = str(caught.value)
    assert f"seq {length + 1} (" in message and "nothing was written" in message, message
    assert words in message, message
    assert path.read_bytes() == before
    assert (len(session), session.trace) == (length, trace)
    session.append_many([good])
    store.release("v")
    loaded = JsonlSessionStore(tmp_path).load("v")
    assert list(loaded.events)[:length + 1] == list(session.events)


def test_text_the_file_cannot_hold_is_never_written_half(tmp_path: Path) -> None:
    """A lone surrogate in model text: refused (naming its seq and type) or stored so that it
    reads back equal; either way the file loads and holds exactly what the session holds."""
    store, session = _open_step(tmp_path)
    chunk = AssistantChunkData(turn=1, step=1, chunk=TextDelta(index=0, text="a\ud800b"))
    try:
        session.append(AssistantChunkEvent, chunk)
    except SessionEventError as refused:
        assert "seq 2 (assistant/chunk)" in str(refused)
    store.release("v")
    loaded = JsonlSessionStore(tmp_path).load("v")
    assert list(loaded.events)[:len(session)] == list(session.events)
    assert check_balance(loaded.events).unwrap().is_closed
