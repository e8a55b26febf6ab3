"""A session log as plain data: the outline ``turnfork show`` draws and ``show --json`` prints.

An :class:`OutlineBuilder` walks the events once, as the shared reader streams them, and hands
out the entries in log order (turns with their steps and items, between-turn items, the cut
marker) as soon as each is final: a turn once it has ended, what follows the last ``turn/end``
only at the end (the cut is known then). :meth:`OutlineBuilder.finish` gives the rest and an
:class:`Outline`: header facts, the whole log's :class:`Counts`, the verdict.
:func:`build_outline` does it all for a log held in memory. Drawing is :mod:`.render`'s job,
so the picture and the machine form cannot disagree. The model (:class:`Item`,
:class:`StepNode`, :class:`TurnNode`, :class:`Counts`, :class:`Outline`) is the one outline of
either input: :mod:`.history_outline` reads a wire history into it; each reader keeps its own
figures and JSON keys.

Rules of the outline:

* Turns are trees (steps, then items in log order); between-turn events are single items.
  Each turn also carries its figures (steps, tool calls, the user's prompt) for a summary.
* Turns and steps open and close where the core's turn grammar says. A boundary that cannot
  stand where the walk is closes what is open deeper first, or is an error item of its own
  when a level it needs is not open: the walk reads on past the first broken rule.
* Chunks are never listed: they are counted and the count is put on the assistant message they
  streamed (or on one summary item when no message followed, e.g. a failed model call).
* A tool call carries its result as a child; a call still waiting for one says so.
* The completed-turn cut is an item of kind ``cut``, exactly once, in log order; what follows
  it is never part of a seed.
* Events not drawn are one item each stretch: a fork child's inherited seed (kind ``seed``,
  unless asked for) and what lies outside the chosen turns (kind ``elided``). When the cut
  falls in such a stretch, its marker follows the stretch's item. A chosen turn is drawn with
  the between-turn events just before it (the user's message spliced in before its
  ``turn/start``); the events after the last turn are drawn when the last turn is.
* A summary needs no items inside turns, only each turn's figures: built with
  ``detail=False``, a turn has no entries.
* Text is shortened to one line here; it is made inert (terminal controls escaped) where it is
  drawn, so ``--json`` keeps the exact characters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
from msgspec import UnsetType

from ...core import (
    STEP_END,
    STEP_START,
    TURN_END,
    TURN_START,
    ApprovalPolicyEvent,
    AssistantChunkEvent,
    AssistantMessageEvent,
    CancelHook,
    ContentBlock,
    Event,
    FinishAborted,
    FinishChunk,
    FinishError,
    FinishMaxTokens,
    ImageBlock,
    InboxSplicedEvent,
    LlmRetryEvent,
    LlmRetryStartedEvent,
    OpaqueEvent,
    Phase,
    ReasoningBlock,
    RequestHeaderEvent,
    SandboxModeEvent,
    SessionEndSeedEvent,
    SessionHeader,
    StepEndEvent,
    StepStartEvent,
    SubagentDescriptorEvent,
    SurfaceReplace,
    TextBlock,
    ToolCallBlock,
    ToolCallEvent,
    ToolResultBlock,
    ToolResultEvent,
    TurnAborted,
    TurnCompleted,
    TurnEndEvent,
    TurnEndReason,
    TurnError,
    TurnInterrupted,
    TurnStartEvent,
    UserMessageEvent,
    Violation,
    closings_before,
    event_type,
    phase_of,
)
from ..logfile import LoadedLog, LogChunk
from .assess import Assessment
from .terminal import counted

__all__ = [
    "CUT_MARKER",
    "Item",
    "StepNode",
    "TurnNode",
    "Reader",
    "Counts",
    "FIGURES",
    "SeedFacts",
    "Outline",
    "Choose",
    "OutlineBuilder",
    "seed_length_of",
    "build_outline",
    "shorten",
    "cut_item",
    "violation_item",
    "answer_call",
    "still_waiting",
    "which_turns",
]

#: The words every cut rule starts with (tests and users look for them).
CUT_MARKER = "completed-turn prefix ends here"

_TEXT_LIMIT = 100
_ARGS_LIMIT = 60
_DATA_LIMIT = 60
_PROMPT_LIMIT = 60

ItemKind = Literal["user", "assistant", "chunks", "tool", "result", "pending", "request",
                   "splice", "policy", "descriptor", "end-seed", "event", "structure",
                   "violation", "cut", "seed", "elided",
                   # a wire history's: system/developer text, reasoning items, a tool call
                   # inside a message (it has no position of its own), a hosted tool call
                   "system", "reasoning", "call", "server"]


@dataclass
class Item:
    """One line of the picture: an event (or a chunk summary, a marker, a stretch not drawn)."""

    seq: int
    kind: ItemKind
    text: str
    error: bool = False
    children: list[Item] = field(default_factory=list)
    #: A second sentence, drawn on its own line (the cut marker's explanation).
    note: str | None = None
    node: Literal["item"] = "item"


@dataclass
class StepNode:
    """A step of a turn: its items in log order (a wire history's steps are not nodes)."""

    step: int
    start_seq: int
    end_seq: int | None = None
    entries: list[Item] = field(default_factory=list)
    node: Literal["step"] = "step"


@dataclass
class TurnNode:
    """A turn: its steps (a log's) or items, and its figures for a summary line."""

    turn: int
    start_seq: int
    end_seq: int | None = None
    #: How the turn ended in words; ``None`` while it is in flight.
    reason: str | None = None
    reason_ok: bool = True
    #: After the completed-turn cut: never part of a seed.
    in_flight: bool = False
    entries: list[Item | StepNode] = field(default_factory=list)
    #: The turn's figures, for a summary line.
    steps: int = 0
    tool_calls: int = 0
    tool_names: list[str] = field(default_factory=list)
    error_results: int = 0
    waiting_calls: int = 0
    #: The first user message of the turn (its prompt), shortened.
    prompt: str | None = None
    #: Seq of the event in this turn that breaks a rule, if one does.
    violation_seq: int | None = None
    node: Literal["turn"] = "turn"

    def add_call(self, name: str) -> None:
        self.tool_calls += 1
        if name not in self.tool_names:
            self.tool_names.append(name)


#: Who read the outline: a DSH log's reader (this module) or a wire history's
#: (:mod:`.history_outline`). Each keeps its own figures and JSON keys (:meth:`Outline.as_json`).
Reader = Literal["log", "history"]


@dataclass
class Counts:
    """The whole input in figures (whatever part of it is drawn); a reader fills the figures
    its input has (:data:`FIGURES`) and leaves the others at 0."""

    #: A wire history's items.
    items: int = 0
    turns: int = 0
    completed_turns: int = 0
    steps: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    error_results: int = 0
    assistant_messages: int = 0
    user_messages: int = 0
    #: A log's streamed chunks.
    chunks: int = 0
    #: A log's events outside any turn.
    between_turn_events: int = 0
    #: A history's reasoning items (Responses), thinking blocks (Anthropic), reasoning texts
    #: (Chat).
    reasoning: int = 0
    #: A history's server-side tool calls (Anthropic ``server_tool_use``, Responses hosted
    #: tools).
    server_tool_calls: int = 0

    def as_json(self, reader: Reader) -> dict[str, int]:
        return {name: getattr(self, name) for name in FIGURES[reader]}


_SHARED_FIGURES = ("turns", "completed_turns", "steps", "tool_calls", "tool_results",
                   "error_results", "assistant_messages", "user_messages")
#: The figures each reader reports, in the order of its JSON.
FIGURES: dict[Reader, tuple[str, ...]] = {
    "log": (*_SHARED_FIGURES, "chunks", "between_turn_events"),
    "history": ("items", *_SHARED_FIGURES, "reasoning", "server_tool_calls"),
}


@dataclass
class SeedFacts:
    """A fork child's inherited seed: its first ``length`` events (``seedLength``)."""

    length: int
    completed_turns: int
    parent: str | None
    #: Drawn in full (``show --seed``) rather than as one item.
    drawn: bool


@dataclass
class Outline:
    """An input as data: where it came from, header facts, figures, the entries and the
    verdict."""

    reader: Reader
    path: str
    source: str
    #: Its events (a log) or items (a wire history).
    length: int
    cut: int
    state: Literal["closed", "open", "invalid", "empty"]
    verdict: str
    #: What the cut leaves out, in one sentence.
    excluded: str
    counts: Counts
    #: The positions drawn (``[first, stop)``); the rest are ``elided`` items.
    window: tuple[int, int]
    entries: list[TurnNode | Item] = field(default_factory=list)
    #: A log's header, as its JSON.
    header: dict[str, object] | None = None
    seed: SeedFacts | None = None
    #: How a log's turns before the cut ended (``{"completed": 9, "error": 1}``).
    turns_ended: dict[str, int] = field(default_factory=dict)
    #: What the read of a log left out by the torn-tail rule, in one sentence.
    left_out: str | None = None
    #: A wire history's format and layout (how its items were found).
    format: str | None = None
    layout: str | None = None

    def as_json(self, *, entries: bool = True) -> dict[str, object]:
        """What ``show --json`` prints, in the reader's keys and order (``entries=False``:
        all but the entries, for a writer that writes them one at a time)."""
        wire: dict[str, object] = {}
        for key in _JSON_KEYS[self.reader]:
            if key == "entries" and not entries:
                continue
            if key == "counts":
                wire[key] = self.counts.as_json(self.reader)
            else:
                wire[key] = msgspec.to_builtins(getattr(self, _JSON_ATTRIBUTES.get(key, key)))
        return wire


#: The keys of each reader's JSON, in order.
_JSON_KEYS: dict[Reader, tuple[str, ...]] = {
    "log": ("path", "source", "header", "events", "cut", "state", "verdict", "excluded",
            "counts", "seed", "window", "entries", "turns_ended", "left_out"),
    "history": ("path", "source", "format", "layout", "items", "cut", "state", "verdict",
                "excluded", "counts", "window", "entries"),
}
_JSON_ATTRIBUTES = {"events": "length", "items": "length"}


# --------------------------------------------------------------------------- words


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis marks a cut).

    >>> shorten("a  b\\n c", 10)
    'a b c'
    >>> shorten("abcdefghij", 5)
    'abcd…'
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


def cut_item(cut: int, span: str, seeded: str) -> Item:
    """The cut marker at ``cut``; ``span``: the positions before it in words; ``seeded``: what
    a fork child is seeded with."""
    if cut == 0:
        text = f"{CUT_MARKER} (empty: no turn has completed)"
        note = "a fork child starts with no history, like a spawn"
    else:
        text, note = f"{CUT_MARKER} ({span})", seeded
    return Item(seq=cut, kind="cut", text=text, note=note + "; nothing below is part of any seed")


def violation_item(seq: int, problem: str, rule: str) -> Item:
    return Item(seq=seq, kind="violation", error=True,
                text=f"invalid here: {problem} (rule: {rule})")


def answer_call(call: Item, seq: int, words: str, *, error: bool) -> None:
    """Hang a result under its call."""
    call.children.append(Item(seq=seq, kind="result", text=f"→ {words}", error=error))


def still_waiting(call: Item | None, turn: TurnNode | None, words: str) -> None:
    """A call has no result where the input ends."""
    if call is not None:
        call.children.append(Item(seq=call.seq, kind="pending", text=words))
    if turn is not None:
        turn.waiting_calls += 1


def _blocks_text(blocks: tuple[ContentBlock, ...]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ImageBlock):
            parts.append("[image]")
        elif isinstance(block, ToolResultBlock):
            parts.append(_blocks_text(block.content))
    return " ".join(part for part in parts if part)


def _quoted(text: str, limit: int = _TEXT_LIMIT) -> str:
    return f'"{shorten(text, limit)}"' if text else "(no text)"


def _reason_words(reason: TurnEndReason) -> tuple[str, bool]:
    """How a turn ended, in words (its kind, and what an abort, an error or a repair adds),
    and whether it completed."""
    if isinstance(reason, TurnAborted):
        cause = reason.reason
        kind = str(type(cause).__struct_config__.tag)
        if isinstance(cause, CancelHook):
            kind += f": {shorten(cause.reason, 40)}"
        return f"aborted ({kind})", False
    if isinstance(reason, TurnError):
        return f"error {reason.error.code}: {shorten(reason.error.message, 60)}", False
    if isinstance(reason, TurnInterrupted):
        return "interrupted (crash repair)", False
    return str(type(reason).__struct_config__.tag), isinstance(reason, TurnCompleted)


def _finish_words(chunk: FinishChunk) -> str | None:
    reason = chunk.reason
    if isinstance(reason, FinishError | FinishAborted):
        kind = "error" if isinstance(reason, FinishError) else "aborted"
        return f"finish {kind} {reason.failure.code}"
    if isinstance(reason, FinishMaxTokens):
        return "finish max-tokens"
    return None


def _header_facts(header: SessionHeader | None) -> dict[str, object] | None:
    if header is None:
        return None
    wire = msgspec.to_builtins(header)
    assert isinstance(wire, dict)
    return wire


def _span_words(first: int, last: int) -> str:
    return f"seq {first}" if first == last else f"seq {first}..{last}"


def _turns_words(turns: list[int]) -> str:
    if not turns:
        return ""
    if len(turns) == 1:
        return f"turn {turns[0]}"
    return f"turns {turns[0]}..{turns[-1]}"


# --------------------------------------------------------------------------- turns


def _counted_into(counts: Counts, events: tuple[Event, ...], in_turn: bool) -> bool:
    """Add ``events`` to ``counts``; returns whether a turn is open after them."""
    for event in events:
        kind = type(event)
        if kind is AssistantChunkEvent:
            counts.chunks += 1
        elif kind is TurnStartEvent:
            counts.turns += 1
            in_turn = True
        elif kind is TurnEndEvent:
            counts.completed_turns += 1
            in_turn = False
        elif not in_turn:
            counts.between_turn_events += 1
        elif kind is StepStartEvent:
            counts.steps += 1
        elif kind is ToolCallEvent:
            counts.tool_calls += 1
        elif kind is ToolResultEvent:
            assert isinstance(event, ToolResultEvent)
            counts.tool_results += 1
            content = event.data.message.content
            if content and isinstance(content[0], ToolResultBlock) and content[0].is_error:
                counts.error_results += 1
        elif kind is AssistantMessageEvent:
            counts.assistant_messages += 1
        elif kind is UserMessageEvent:
            counts.user_messages += 1
    return in_turn


# --------------------------------------------------------------------------- the outline


@dataclass
class _Stretch:
    """Consecutive events not drawn, and what they hold."""

    kind: Literal["seed", "elided"]
    first: int
    last: int
    turns: list[int] = field(default_factory=list)
    completed: int = 0
    violation: Violation | None = None


#: Which turns to draw: called with a turn's number and its index among the log's turns (a
#: ``turn/start`` opens one), from 0.
Choose = Callable[[int, int], bool]


class OutlineBuilder:
    """Walks the events once, keeping the open turn, step, chunk run and waiting calls, and
    hands out each entry once it is final (see the module docstring).

    Args:
        header: the log's header (its ``parentSession`` names a fork child's parent).
        seed_length: how many first events are an inherited seed (one ``seed`` item unless
            ``draw_seed``).
        choose: which turns to draw (``None``: all).
        detail: build the items inside turns (``False``: only each turn's figures).
        cut: the cut, when it is known before the events are (then entries are final at
            once); by default it is the position past the last ``turn/end`` seen.
    """

    def __init__(self, *, header: SessionHeader | None = None, seed_length: int = 0,
                 draw_seed: bool = False, choose: Choose | None = None, detail: bool = True,
                 cut: int | None = None) -> None:
        self.header = header
        self.parent = header.parent_session if header is not None and isinstance(
            header.parent_session, str) else None
        self.seed_length = seed_length
        self.hidden_seed = 0 if draw_seed else seed_length
        self.draw_seed = draw_seed
        self.choose = choose
        self.detail = detail
        self.known_cut = cut
        self.cut = 0 if cut is None else cut
        self.violation: Violation | None = None
        self.counts = Counts()
        self._counting_in_turn = False
        self.turn: TurnNode | None = None
        self.step: StepNode | None = None
        self.chunk_count = 0
        self.chunk_seq = 0
        self.chunk_finish: str | None = None
        #: Each call the walk saw no result for yet: its item, its turn, its position.
        self.calls: dict[str, tuple[Item | None, TurnNode | None, int]] = {}
        self.stretch: _Stretch | None = None
        #: Index of the event being fed (differs from its seq only in a log that breaks
        #: the seq rule; the cut and a violation are positions).
        self.position = 0
        #: Final entries not yet handed out; and those after the latest candidate for the
        #: cut, held until it is known whether it is the cut (``None``: nothing held).
        self._ready: list[TurnNode | Item] = []
        self._held: list[TurnNode | Item] | None = [] if cut is None else None
        if cut == 0:
            self.mark_cut()
        # Which turns are drawn: the turns seen, the chosen one in progress, and the
        # between-turn events waiting for the next turn to say whether they are drawn.
        self.spans = 0
        self._in_span = False
        self._span_chosen = choose is None
        self._last_span_chosen = False
        self._waiting: list[tuple[Event, int]] = []
        self.numbers: tuple[int, int] | None = None
        self.numbers_distinct = False
        #: A turn was chosen (it may lie in a seed that is not drawn).
        self.chose = False
        self._first_drawn: int | None = None
        self._stop_drawn = 0
        self.seed_turn_ends = 0

    # ------------------------------------------------------------------ entries out

    def _emit(self, entry: TurnNode | Item) -> None:
        (self._ready if self._held is None else self._held).append(entry)

    def _cut_candidate(self) -> None:
        """The entry just emitted holds the latest ``turn/end``: the cut may follow it."""
        if self.known_cut is not None:
            return
        assert self._held is not None
        self._ready.extend(self._held)
        self._held = []

    def take(self) -> list[TurnNode | Item]:
        """The entries that became final since the last call."""
        ready, self._ready = self._ready, []
        return ready

    # ------------------------------------------------------------------ events in

    def feed_chunk(self, chunk: LogChunk, violation: Violation | None) -> None:
        """The next events of the log (``violation``: the log's first, once it is known)."""
        self.violation = violation
        self._counting_in_turn = _counted_into(self.counts, chunk.events,
                                               self._counting_in_turn)
        for offset, event in enumerate(chunk.events):
            self._route(event, chunk.start + offset)

    def _route(self, event: Event, position: int) -> None:
        kind = type(event)
        if kind is TurnStartEvent:
            assert isinstance(event, TurnStartEvent)
            self._span_start(event.data.turn)
        if position < self.seed_length and kind is TurnEndEvent:
            self.seed_turn_ends += 1
        if position < self.hidden_seed:
            self._in_span = self._in_span and kind is not TurnEndEvent
            self.hide(event, position, "seed")
            return
        if self.choose is None:
            self._draw(event, position)
        elif kind is TurnStartEvent:
            self._release(self._span_chosen)
            self._place(event, position, self._span_chosen)
        elif self._in_span:
            self._place(event, position, self._span_chosen)
        else:
            self._waiting.append((event, position))
        if kind is TurnEndEvent:
            self._in_span = False

    def _span_start(self, number: int) -> None:
        if self.numbers is None:
            self.numbers = (number, number)
        else:
            low, high = self.numbers
            self.numbers_distinct = self.numbers_distinct or number != low
            self.numbers = (min(low, number), max(high, number))
        chosen = self.choose is None or self.choose(number, self.spans)
        self.chose = self.chose or chosen
        self.spans += 1
        self._in_span = True
        self._span_chosen = chosen
        self._last_span_chosen = chosen

    def _release(self, drawn: bool) -> None:
        """The between-turn events waiting for this turn: drawn with it, or not drawn."""
        waiting, self._waiting = self._waiting, []
        for event, position in waiting:
            self._place(event, position, drawn)

    def _place(self, event: Event, position: int, drawn: bool) -> None:
        if drawn:
            self._draw(event, position)
        else:
            self.hide(event, position, "elided")

    def _draw(self, event: Event, position: int) -> None:
        if self._first_drawn is None:
            self._first_drawn = position
        self._stop_drawn = position + 1
        self.feed(event, position)

    @property
    def drawn(self) -> tuple[int, int] | None:
        """The positions drawn, ``(first, stop)``; ``None`` when nothing is."""
        if self._first_drawn is None:
            return None
        return self._first_drawn, self._stop_drawn

    # ------------------------------------------------------------------ entries

    def add(self, item: Item) -> None:
        if self.step is not None:
            self.step.entries.append(item)
        elif self.turn is not None:
            self.turn.entries.append(item)
        else:
            self._emit(item)

    def _close_turn(self) -> None:
        """The open turn is final: hand it out."""
        if self.turn is not None:
            self._emit(self.turn)
            self.turn = None

    def flush_chunks(self) -> None:
        if not self.chunk_count:
            return
        if self.detail or self.turn is None:
            words = f"{counted(self.chunk_count, 'streamed chunk')}, no assistant/message"
            if self.chunk_finish:
                words += f" ({self.chunk_finish})"
            self.add(Item(seq=self.chunk_seq, kind="chunks", text=words,
                          error=self.chunk_finish is not None))
        self._reset_chunks()

    def _reset_chunks(self) -> None:
        self.chunk_count = 0
        self.chunk_finish = None

    def close_step(self) -> None:
        self.flush_chunks()
        self.step = None

    def mark_cut(self) -> None:
        invalid_before = self.violation is not None and self.violation.seq < self.cut
        seeded = ("the log breaks a rule above, so no fork child can be seeded from it"
                  if invalid_before else "a fork child is seeded with the events above")
        self._ready.append(cut_item(self.cut, f"seq 0..{self.cut - 1}, "
                                              f"{counted(self.cut, 'event')}", seeded))

    def _cut_after(self, first: int, last: int) -> None:
        """Entries of positions ``first..last`` holding a ``turn/end`` were just emitted."""
        if self.known_cut is None:
            self._cut_candidate()
        elif first <= self.known_cut - 1 <= last:
            self.mark_cut()

    # ------------------------------------------------------------------ not drawn

    def hide(self, event: Event, position: int, kind: Literal["seed", "elided"]) -> None:
        """``event`` is not drawn: it joins the current stretch of such events."""
        if self.stretch is None or self.stretch.kind != kind:
            self.end_stretch()
            self.close_step()
            self._close_turn()
            self.stretch = _Stretch(kind=kind, first=position, last=position)
        stretch = self.stretch
        stretch.last = position
        if isinstance(event, TurnStartEvent):
            stretch.turns.append(event.data.turn)
        elif isinstance(event, TurnEndEvent):
            stretch.completed += 1
        if self.violation is not None and position == self.violation.seq:
            stretch.violation = self.violation

    def end_stretch(self) -> None:
        stretch = self.stretch
        if stretch is None:
            return
        self.stretch = None
        events = counted(stretch.last - stretch.first + 1, "event")
        span = _span_words(stretch.first, stretch.last)
        turns = _turns_words(stretch.turns)
        if stretch.kind == "seed":
            parent = f" from parent {self.parent}" if self.parent else ""
            text = (f"{span} · the inherited seed{parent}: {events}"
                    + (f", {turns}" if turns else "") + "; not drawn (--seed draws it)")
        else:
            text = f"{span} · not drawn: {events}" + (f" ({turns})" if turns else "")
        error = stretch.violation is not None
        if stretch.violation is not None:
            text += (f"; ✗ seq {stretch.violation.seq} breaks a rule: "
                     f"{stretch.violation.problem} (rule: {stretch.violation.rule})")
        self._emit(Item(seq=stretch.first, kind=stretch.kind, text=text, error=error))
        if stretch.completed:
            self._cut_after(stretch.first, stretch.last)

    # ------------------------------------------------------------------ drawn

    def _items_here(self) -> bool:
        """Whether items are built where the walk is (always between turns)."""
        return self.detail or self.turn is None

    def feed(self, event: Event, position: int) -> None:
        self.end_stretch()
        seq = event.seq
        self.position = position
        if self.violation is not None and position == self.violation.seq:
            if self.turn is not None:
                self.turn.violation_seq = seq
            if self._items_here():
                self.add(violation_item(seq, self.violation.problem, self.violation.rule))
        kind = type(event)
        if kind is AssistantChunkEvent:
            assert isinstance(event, AssistantChunkEvent)
            if not self.chunk_count:
                self.chunk_seq = seq
            self.chunk_count += 1
            if isinstance(event.data.chunk, FinishChunk):
                self.chunk_finish = _finish_words(event.data.chunk)
            return
        structural = _STRUCTURAL.get(kind)
        if structural is not None:
            structural(self, event)
        else:
            if isinstance(event, UserMessageEvent) and self.turn is not None and (
                    self.turn.prompt is None):
                self.turn.prompt = shorten(_blocks_text(event.data.content), _PROMPT_LIMIT)
            if isinstance(event, LlmRetryEvent):
                self.flush_chunks()  # the failed call's chunks are not the retried call's
            if self._items_here():
                self.add(_other_item(event))

    def _phase(self) -> Phase:
        """Where the walk stands in the turn grammar: the turn and step it has open."""
        return phase_of(None if self.turn is None else self.turn.turn,
                        None if self.step is None else self.step.step)

    def _cross(self, kind: str) -> bool:
        """Bring the walk to where the turn grammar lets a boundary of type ``kind`` stand
        (the grammar's ``closings_before``); ``False``: a level it needs is not open, and the
        walk stays as it is. A turn closed on the way never ended."""
        closings = closings_before(self._phase(), kind)
        if closings is None:
            return False
        for closing in closings:
            if closing == TURN_END and self.turn is not None:
                self.turn.reason, self.turn.reason_ok = "never ended", False
                self._close_turn()
            else:
                self.close_step()
        return True

    def _turn_start(self, event: TurnStartEvent) -> None:
        self.flush_chunks()
        self._cross(TURN_START)
        in_flight = self.known_cut is not None and self.position >= self.known_cut
        self.turn = TurnNode(turn=event.data.turn, start_seq=event.seq, in_flight=in_flight)

    def _turn_end(self, event: TurnEndEvent) -> None:
        self.flush_chunks()
        words, ok = _reason_words(event.data.reason)
        if self._cross(TURN_END) and self.turn is not None:
            self.turn.end_seq, self.turn.reason, self.turn.reason_ok = event.seq, words, ok
            self._close_turn()
        else:
            self.add(Item(seq=event.seq, kind="structure", error=True,
                          text=f"turn/end for turn {event.data.turn} ({words}) with no open "
                               "turn"))
        self._cut_after(self.position, self.position)

    def _step_start(self, event: StepStartEvent) -> None:
        self.flush_chunks()
        if not self._cross(STEP_START) or self.turn is None:
            self.add(Item(seq=event.seq, kind="structure", error=True,
                          text=f"step/start for turn {event.data.turn} step {event.data.step} "
                               "outside a turn"))
            return
        self.step = StepNode(step=event.data.step, start_seq=event.seq)
        if self.detail:
            self.turn.entries.append(self.step)
        self.turn.steps += 1

    def _step_end(self, event: StepEndEvent) -> None:
        if not self._cross(STEP_END) or self.step is None:
            if self._items_here():
                self.add(Item(seq=event.seq, kind="structure", error=True,
                              text=f"step/end for turn {event.data.turn} step "
                                   f"{event.data.step} with no open step"))
            return
        self.step.end_seq = event.seq
        self.close_step()

    def _assistant(self, event: AssistantMessageEvent) -> None:
        if not self._items_here():
            self._reset_chunks()
            return
        data = event.data
        blocks = data.message.content
        words = f"assistant: {_quoted(_blocks_text(blocks))}" if _blocks_text(blocks) else (
            "assistant")
        reasoning = sum(len(b.text) for b in blocks if isinstance(b, ReasoningBlock))
        calls = [b.name for b in blocks if isinstance(b, ToolCallBlock)]
        extras: list[str] = []
        if calls:
            extras.append(f"calls {', '.join(calls)}")
        if reasoning:
            extras.append(f"reasoning {reasoning:,} chars")
        if self.chunk_count:
            extras.append(f"streamed in {self.chunk_count:,} chunks")
        if self.chunk_finish:
            extras.append(self.chunk_finish)
        if data.interrupted is True:
            extras.append("interrupted")
        if not isinstance(event.surface_op, str):
            extras.append(_replace_words(event.surface_op))
        if not blocks:
            extras.append("no content")
        if extras:
            words += f" ({'; '.join(extras)})"
        self._reset_chunks()
        self.add(Item(seq=event.seq, kind="assistant", text=words,
                      error=data.interrupted is True))

    def _tool_call(self, event: ToolCallEvent) -> None:
        data = event.data
        item = None
        if self._items_here():
            item = Item(seq=event.seq, kind="tool",
                        text=f"{data.name}({shorten(data.arguments, _ARGS_LIMIT)})")
        self.calls[data.call_id] = (item, self.turn, self.position)
        if self.turn is not None:
            self.turn.add_call(data.name)
        if item is not None:
            self.add(item)

    def _tool_result(self, event: ToolResultEvent) -> None:
        data = event.data
        call_id = data.message.source.call_id or "?"
        block = data.message.content[0] if data.message.content else None
        is_error = isinstance(block, ToolResultBlock) and block.is_error is True
        if is_error and self.turn is not None:
            self.turn.error_results += 1
        replaced = isinstance(event.surface_op, SurfaceReplace)
        waiting = None if replaced else self.calls.pop(call_id, None)
        if not self._items_here():
            return
        words = _quoted(_blocks_text(data.message.content))
        if not isinstance(data.error, UnsetType):
            words += f" ({data.error.name} {data.error.code})"
        if waiting is not None and waiting[0] is not None:
            answer_call(waiting[0], event.seq, words, error=is_error)
            return
        if isinstance(event.surface_op, SurfaceReplace):
            label = f"result for {call_id} rewritten ({_replace_words(event.surface_op)})"
        else:
            label = f"result for {call_id} (no tool/call)"
        self.add(Item(seq=event.seq, kind="result", text=f"{label}: {words}", error=is_error))

    # ------------------------------------------------------------------ the end

    def finish(self, assessment: Assessment, *, path: str, source: str,
               left_out: str | None = None) -> Outline:
        """The log has ended: every entry left is handed out by the next :meth:`take`, the
        cut marked (``assessment``: the whole log's), and the outline's figures returned
        (its ``entries`` empty: they were handed out)."""
        self.violation = assessment.violation
        self._release(self._last_span_chosen)
        self.end_stretch()
        self.close_step()
        for call, turn in self._waiting_calls(assessment):
            still_waiting(call, turn, "… no tool/result yet (the log ends here)")
        self.calls.clear()
        self._close_turn()
        if self._held is not None:
            self.cut = assessment.cut
            for entry in self._held:
                if isinstance(entry, TurnNode):
                    entry.in_flight = True
            self.mark_cut()
            self._ready.extend(self._held)
            self._held = None
        events = assessment.events
        inherited = min(self.seed_length, events)
        seed_facts = None
        if inherited:
            seed_facts = SeedFacts(length=inherited, parent=self.parent, drawn=self.draw_seed,
                                   completed_turns=self.seed_turn_ends)
        return Outline(reader="log", path=path, source=source,
                       header=_header_facts(self.header), length=events, cut=self.cut,
                       state=assessment.state,
                       verdict=assessment.verdict(), excluded=assessment.tail.words(),
                       counts=self.counts, seed=seed_facts,
                       window=(0, events) if self.choose is None else (self.drawn or (0, 0)),
                       turns_ended=dict(assessment.ended), left_out=left_out)

    def _waiting_calls(self, assessment: Assessment,
                       ) -> list[tuple[Item | None, TurnNode | None]]:
        """The calls still waiting for a result at the end: the trace's pending calls that
        started (the walk only finds their items), the trace up to the first rule broken in a
        broken log; past that rule the log has no trace, and the calls are the ``tool/call``
        events there the walk saw no result for."""
        broken_at = assessment.events if assessment.violation is None else (
            assessment.violation.seq)
        waiting = [self.calls[call.call_id][:2] for call in assessment.traced.pending_calls
                   if call.call_seq is not None and call.call_id in self.calls
                   and self.calls[call.call_id][2] < broken_at]
        waiting += [(item, turn) for item, turn, position in self.calls.values()
                    if position >= broken_at]
        return waiting

    def which(self) -> str:
        """The turns the log has, in words (for a choice that names none of them)."""
        return which_turns("log", self.numbers, distinct=self.numbers_distinct)


def which_turns(what: str, numbers: tuple[int, int] | None, *, distinct: bool) -> str:
    """The turns an input has (their lowest and highest numbers), in words."""
    if numbers is None:
        return f"the {what} has no turns"
    low, high = numbers
    return f"the {what} has turns {low}..{high}" if distinct else (
        f"the {what} has turn {low} only")


#: The events that shape the outline (turns, steps, messages, calls and results): each
#: class's handler, looked up by exact class as the trace's fold does.
_STRUCTURAL: dict[type[Event], Callable[[OutlineBuilder, Any], None]] = {
    TurnStartEvent: OutlineBuilder._turn_start,
    TurnEndEvent: OutlineBuilder._turn_end,
    StepStartEvent: OutlineBuilder._step_start,
    StepEndEvent: OutlineBuilder._step_end,
    AssistantMessageEvent: OutlineBuilder._assistant,
    ToolCallEvent: OutlineBuilder._tool_call,
    ToolResultEvent: OutlineBuilder._tool_result,
}


def _replace_words(op: SurfaceReplace) -> str:
    return f"replaces seq {op.start}..{op.end}"


def _other_item(event: Event) -> Item:
    seq = event.seq
    if isinstance(event, UserMessageEvent):
        message = event.data
        kind = message.source.kind
        who = "user" if kind == "user" else f"user ({kind})"
        words = f"{who}: {_quoted(_blocks_text(message.content))}"
        if isinstance(event.surface_op, SurfaceReplace):
            words += f" ({_replace_words(event.surface_op)})"
        return Item(seq=seq, kind="user", text=words)
    if isinstance(event, InboxSplicedEvent):
        data = event.data
        parts = [f"inbox splice → {data.target}"]
        if data.inserted:
            first = _blocks_text(data.inserted[0].content)
            parts.append(f"+{len(data.inserted):,}: {_quoted(first, 70)}")
        if not isinstance(data.removed_count, UnsetType):
            parts.append(f"{data.removed_count:,} claimed")
        if data.outcome == "canceled":
            parts.append("canceled")
        return Item(seq=seq, kind="splice", text=", ".join(parts))
    if isinstance(event, RequestHeaderEvent):
        config = event.data.header.config
        return Item(seq=seq, kind="request",
                    text=f"request/header ({event.data.reason}): "
                         f"{config.provider}/{config.model}")
    if isinstance(event, SessionEndSeedEvent):
        return Item(seq=seq, kind="end-seed",
                    text="session/end-seed — the events above were seeded; this session's "
                         "own events follow")
    if isinstance(event, SubagentDescriptorEvent):
        data_d = event.data
        words = f"subagent/descriptor: {data_d.mode} child via {data_d.provider}"
        for name, value in (("label", data_d.label), ("agent", data_d.agent_model),
                            ("persona", data_d.persona)):
            if isinstance(value, str):
                words += f", {name} {shorten(value, 30)}"
        return Item(seq=seq, kind="descriptor", text=words)
    if isinstance(event, SandboxModeEvent):
        words = f"sandbox/mode: {event.data.mode}"
        if event.data.source == "delegation":
            words += " (inherited by delegation)"
        return Item(seq=seq, kind="policy", text=words)
    if isinstance(event, ApprovalPolicyEvent):
        words = f"approval/policy: {event.data.policy}"
        if event.data.source == "delegation":
            words += " (set by delegation)"
        return Item(seq=seq, kind="policy", text=words)
    if isinstance(event, LlmRetryEvent):
        retry = event.data
        number = (f"{retry.retry} of {retry.max_retries}" if retry.mode == "normal"
                  else f"{retry.retry} (always)")
        return Item(seq=seq, kind="event",
                    text=f"llm/retry {number} in {retry.delay_ms:g} ms after "
                         f"{retry.failure.code}: {_quoted(retry.failure.message, 70)}")
    if isinstance(event, LlmRetryStartedEvent):
        return Item(seq=seq, kind="event",
                    text=f"llm/retry-started: retry {event.data.retry}")
    if isinstance(event, OpaqueEvent):
        return Item(seq=seq, kind="event",
                    text=f"{event.type} {shorten(bytes(event.data).decode(), _DATA_LIMIT)}")
    return Item(seq=seq, kind="event", text=event_type(event))  # a type added to core later


def seed_length_of(header: SessionHeader | None) -> int:
    """How many of a log's first events a fork child inherited (its header's seedLength)."""
    if header is None or isinstance(header.seed_length, UnsetType):
        return 0
    return max(header.seed_length, 0)


def build_outline(log: LoadedLog, assessment: Assessment, *,
                  window: tuple[int, int] | None = None, seed: bool = False) -> Outline:
    """The picture of a log held in memory, as data (see the module docstring).

    Args:
        log: the log.
        assessment: its :func:`~.assess.assess` (the cut and the violation are taken from it,
            so a caller may move the cut: the demo draws it at the fork point).
        window: the positions to draw, ``(first, stop)``, whole turns; default all.
        seed: draw a fork child's inherited seed instead of one ``seed`` item.
    """
    choose: Choose | None = None
    if window is not None:
        first, stop = window
        starts = [position for position, event in enumerate(log.events)
                  if isinstance(event, TurnStartEvent)]
        chosen = {index for index, start in enumerate(starts) if first <= start < stop}
        choose = lambda _number, index: index in chosen  # noqa: E731
    builder = OutlineBuilder(header=log.header, seed_length=seed_length_of(log.header),
                             draw_seed=seed, choose=choose, cut=assessment.cut)
    builder.feed_chunk(LogChunk(log.events, 0, log.file, 1, b""), assessment.violation)
    outline = builder.finish(assessment, path=log.path, source=log.description)
    outline.entries = builder.take()
    return outline
