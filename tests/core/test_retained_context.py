"""Which runtime-context snapshot an agent instance retains, restored when it is built over a
log and then following the log, equals DSH's ``RuntimeContextProjection`` on any log and any
point the instance is built at.

Ports DSH's ``packages/core/agent-loop/tests/runtime-context.spec.ts`` ("restores the latest
visible owned snapshot and ignores other sessions", its log as written) and checks the fold
against DSH's projection (``packages/core/agent-loop/src/runtime-context.ts``: the constructor
scans the log back for the newest owned snapshot still on the surface; afterwards a snapshot
written is retained and a replacement citing the retained one retains none), restated here as a
plain model.
"""

from __future__ import annotations

from dataclasses import dataclass

from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from returns.result import Success

from turnfork.core import (
    EMPTY_TRACE,
    Event,
    MessageSource,
    TextBlock,
    UserMessage,
    UserMessageEvent,
    advance,
    trace_log,
)
from turnfork.core.events import SurfaceReplace
from turnfork.core.trace import Trace

PLUGIN = "@deepseek-ai/dsh-system-prompt"


def _message(seq: int, texts: tuple[str, ...], plugin: str | None,
             op: SurfaceReplace | None = None, cited: tuple[int, ...] = ()) -> UserMessageEvent:
    source = (MessageSource(kind="user") if plugin is None
              else MessageSource(kind="plugin", plugin=plugin))
    data = UserMessage(content=tuple(TextBlock(text=text) for text in texts), source=source,
                       id=f"m{seq}")
    if op is None:
        return UserMessageEvent(seq=seq, time=seq, data=data, surface_op="append")
    return UserMessageEvent(seq=seq, time=seq, data=data, surface_op=op,
                            source_event_seqs=cited)


def _traced(log: list[Event]) -> Trace:
    folded = trace_log(log)
    assert isinstance(folded, Success), folded
    return folded.unwrap()


def _retained(trace: Trace, restored_at: int) -> tuple[int, str | None] | None:
    kept = trace.retained_context(restored_at)
    return None if kept is None else (kept.seq, kept.text)


def test_dsh_spec_log_restores_the_older_visible_snapshot() -> None:
    """DSH's spec log: snapshots ``retained`` and ``shadowed``, then a summary replacing
    ``shadowed``. An instance built over it retains ``retained``; the log's own fold from the
    start (the instance that wrote it) retains none."""
    log: list[Event] = [
        _message(0, ("retained",), PLUGIN),
        _message(1, ("shadowed",), PLUGIN),
        _message(2, ("summary",), "test-compaction", SurfaceReplace(start=1, end=1), (1,)),
    ]
    trace = _traced(log)
    assert trace.context_seen
    assert _retained(trace, restored_at=len(log)) == (0, "retained")
    assert _retained(trace, restored_at=0) is None


def test_a_replacement_after_the_restore_releases_the_restored_snapshot() -> None:
    """Built over the spec log, the instance retains ``retained`` until a later replacement
    cites it; one citing only something else releases nothing."""
    log: list[Event] = [
        _message(0, ("retained",), PLUGIN),
        _message(1, ("shadowed",), PLUGIN),
        _message(2, ("summary",), "test-compaction", SurfaceReplace(start=1, end=1), (1,)),
        _message(3, ("prompt",), None),
    ]
    built = len(log)
    log.append(_message(4, ("pruned",), "test-compaction", SurfaceReplace(start=3, end=3),
                        (3,)))
    assert _retained(_traced(log), built) == (0, "retained")
    log.append(_message(5, ("summary 2",), "test-compaction", SurfaceReplace(start=0, end=0),
                        (0,)))
    assert _retained(_traced(log), built) is None


def test_a_snapshot_cited_but_not_shadowed_is_restored() -> None:
    """A replacement may cite more than it shadows: the cited snapshot is released for the
    instance that wrote the log, yet still on the surface, so a new instance retains it."""
    log: list[Event] = [
        _message(0, ("context",), PLUGIN),
        _message(1, ("prompt",), None),
        _message(2, ("summary",), "test-compaction", SurfaceReplace(start=1, end=1), (0, 1)),
    ]
    trace = _traced(log)
    assert _retained(trace, 0) is None
    assert _retained(trace, len(log)) == (0, "context")


# --------------------------------------------------------------------------- DSH's model


@dataclass
class _Projection:
    """DSH's projection for one instance: restored over the log so far, then following it."""

    retained: tuple[int, str | None] | None

    @classmethod
    def restored(cls, log: list[Event]) -> _Projection:
        surface = set(_surface(log))
        for event in reversed(log):
            if _owned(event) and event.seq in surface:
                assert isinstance(event, UserMessageEvent)
                return cls((event.seq, _text(event)))
        return cls(None)

    def follow(self, event: Event) -> None:
        if _owned(event):
            assert isinstance(event, UserMessageEvent)
            self.retained = (event.seq, _text(event))
        elif (self.retained is not None and isinstance(event, UserMessageEvent)
              and isinstance(event.surface_op, SurfaceReplace)
              and self.retained[0] in tuple(event.source_event_seqs or ())):
            self.retained = None


def _owned(event: Event) -> bool:
    return (isinstance(event, UserMessageEvent) and event.data.source.kind == "plugin"
            and event.data.source.plugin == PLUGIN)


def _text(event: UserMessageEvent) -> str | None:
    blocks = event.data.content
    return blocks[0].text if len(blocks) == 1 and isinstance(blocks[0], TextBlock) else None


def _surface(log: list[Event]) -> list[int]:
    surface: list[int] = []
    for event in log:
        assert isinstance(event, UserMessageEvent)
        op = event.surface_op
        if isinstance(op, SurfaceReplace):
            first, last = surface.index(op.start), surface.index(op.end)
            surface[first:last + 1] = [event.seq]
        else:
            surface.append(event.seq)
    return surface


@st.composite
def _logs(draw: st.DrawFn) -> list[Event]:
    """Snapshots (some of two blocks, some equal), other messages and replacements of any
    surface range, some themselves snapshots, some citing more than they shadow."""
    log: list[Event] = []
    for seq in range(draw(st.integers(1, 16))):
        surface = _surface(log)
        kind = draw(st.sampled_from(("snapshot", "other", "replace") if surface
                                    else ("snapshot", "other")))
        texts = draw(st.sampled_from((("a",), ("b",), ("a", "b"))))
        if kind != "replace":
            log.append(_message(seq, texts, PLUGIN if kind == "snapshot" else None))
            continue
        first = draw(st.integers(0, len(surface) - 1))
        last = draw(st.integers(first, len(surface) - 1))
        extra = draw(st.sets(st.integers(0, seq - 1), max_size=2))
        cited = tuple(sorted({*surface[first:last + 1], *extra}))
        owner = draw(st.sampled_from((PLUGIN, "test-compaction")))
        log.append(_message(seq, texts, owner,
                            SurfaceReplace(start=surface[first], end=surface[last]), cited))
    return log


@settings(max_examples=examples(300))
@given(_logs())
def test_the_fold_retains_what_dshs_projection_retains(log: list[Event]) -> None:
    """For every point an instance is built at and every later point, the snapshot the trace
    says it retains is the one DSH's projection retains (folded one event at a time)."""
    traces = [EMPTY_TRACE]
    for event in log:
        traces.append(advance(traces[-1], event).unwrap())
    for built in range(len(log) + 1):
        projection = _Projection.restored(log[:built])
        assert _retained(traces[built], built) == projection.retained
        for now in range(built, len(log)):
            projection.follow(log[now])
            assert _retained(traces[now + 1], built) == projection.retained, (built, now)
    assert traces[-1].context_seen == any(_owned(event) for event in log)
    assert _retained(traces[-1], len(log)) == _retained(_traced(log), len(log))
