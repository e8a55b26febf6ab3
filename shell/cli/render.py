"""``turnfork show``: a session log as a picture.

Two stages. :func:`build_outline` turns events into plain data (turns, steps, one-line items,
the cut marker); :func:`render_outline` draws that data with ``rich``. The outline is also what
``show --json`` prints, so the picture and the machine form cannot disagree.

Rules of the picture:

* Turns are trees (steps, then items in log order); between-turn events are single lines.
* Chunks are never listed: they are counted and the count is put on the assistant message they
  streamed (or on one summary line when no message followed, e.g. a failed model call).
* A tool call carries its result as a child; a call still waiting for one says so.
* The completed-turn cut is a rule line; what follows it is never part of a seed.
* Long text is shortened and each item stays on one line (ellipsis), so narrow terminals and
  pipes get the same shape. Colour only on a terminal, never with ``NO_COLOR`` or ``plain``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import IO, Literal

import msgspec
from msgspec import UnsetType
from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from ...core import (
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
    OpaqueEvent,
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
    TurnBlocked,
    TurnCompleted,
    TurnEndEvent,
    TurnEndReason,
    TurnError,
    TurnInterrupted,
    TurnMaxTokens,
    TurnStartEvent,
    UserMessageEvent,
    Violation,
    event_type,
)
from ..logfile import LoadedLog
from .assess import Assessment

__all__ = [
    "Item",
    "StepNode",
    "TurnNode",
    "Outline",
    "build_outline",
    "render_outline",
    "make_console",
    "CUT_MARKER",
]

#: The words every cut rule starts with (tests and users look for them).
CUT_MARKER = "completed-turn prefix ends here"

_TEXT_LIMIT = 100
_ARGS_LIMIT = 60
_DATA_LIMIT = 60

ItemKind = Literal["user", "assistant", "chunks", "tool", "result", "pending", "request",
                   "splice", "policy", "descriptor", "end-seed", "event", "structure",
                   "violation", "cut"]


@dataclass
class Item:
    """One line of the picture: an event (or a chunk summary, or a marker)."""

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
    step: int
    start_seq: int
    end_seq: int | None = None
    entries: list[Item] = field(default_factory=list)
    node: Literal["step"] = "step"


@dataclass
class TurnNode:
    turn: int
    start_seq: int
    end_seq: int | None = None
    #: How the turn ended in words; ``None`` while it is in flight.
    reason: str | None = None
    reason_ok: bool = True
    #: After the completed-turn cut: never part of a seed.
    in_flight: bool = False
    entries: list[Item | StepNode] = field(default_factory=list)
    node: Literal["turn"] = "turn"


@dataclass
class Outline:
    """A log as data: header facts, where it came from, the entries and the verdict."""

    path: str
    source: str
    header: dict[str, object] | None
    events: int
    cut: int
    state: Literal["closed", "open", "invalid"]
    verdict: str
    entries: list[TurnNode | Item] = field(default_factory=list)


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


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _quoted(text: str, limit: int = _TEXT_LIMIT) -> str:
    return f'"{shorten(text, limit)}"' if text else "(no text)"


def _reason_words(reason: TurnEndReason) -> tuple[str, bool]:
    if isinstance(reason, TurnCompleted):
        return "completed", True
    if isinstance(reason, TurnAborted):
        cause = reason.reason
        kind = str(type(cause).__struct_config__.tag)
        if isinstance(cause, CancelHook):
            kind += f": {shorten(cause.reason, 40)}"
        return f"aborted ({kind})", False
    if isinstance(reason, TurnError):
        return f"error {reason.error.code}: {shorten(reason.error.message, 60)}", False
    if isinstance(reason, TurnMaxTokens):
        return "max-tokens", False
    if isinstance(reason, TurnBlocked):
        return "blocked", False
    if isinstance(reason, TurnInterrupted):
        return "interrupted (crash repair)", False
    return str(type(reason).__struct_config__.tag), False  # pragma: no cover - closed union


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


# --------------------------------------------------------------------------- the outline


class _Builder:
    """Walks the events once, keeping the open turn, step, chunk run and waiting calls."""

    def __init__(self, cut: int, violation: Violation | None) -> None:
        self.cut = cut
        self.violation = violation
        self.top: list[TurnNode | Item] = []
        self.turn: TurnNode | None = None
        self.step: StepNode | None = None
        self.chunk_count = 0
        self.chunk_seq = 0
        self.chunk_finish: str | None = None
        self.calls: dict[str, Item] = {}
        #: Index of the event being fed (differs from its seq only in a log that breaks
        #: the seq rule; the cut and a violation are positions).
        self.position = 0

    def add(self, item: Item) -> None:
        if self.step is not None:
            self.step.entries.append(item)
        elif self.turn is not None:
            self.turn.entries.append(item)
        else:
            self.top.append(item)

    def flush_chunks(self) -> None:
        if not self.chunk_count:
            return
        words = f"{_count(self.chunk_count, 'streamed chunk')}, no assistant/message"
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
        if self.cut == 0:
            text = f"{CUT_MARKER} (empty: no turn has completed)"
            note = "a fork child starts with no history, like a spawn"
        else:
            text = f"{CUT_MARKER} (seq 0..{self.cut - 1}, {_count(self.cut, 'event')})"
            note = "a fork child is seeded with the events above"
            if invalid_before:
                note = "the log breaks a rule above, so no fork child can be seeded from it"
        note += "; nothing below is part of any seed"
        self.top.append(Item(seq=self.cut, kind="cut", text=text, note=note))

    def feed(self, event: Event, position: int) -> None:
        seq = event.seq
        self.position = position
        if self.violation is not None and position == self.violation.seq:
            self.add(Item(seq=seq, kind="violation", error=True,
                          text=f"invalid here: {self.violation.problem} "
                               f"(rule: {self.violation.rule})"))
        if isinstance(event, AssistantChunkEvent):
            if not self.chunk_count:
                self.chunk_seq = seq
            self.chunk_count += 1
            if isinstance(event.data.chunk, FinishChunk):
                self.chunk_finish = _finish_words(event.data.chunk)
            return
        if isinstance(event, TurnStartEvent):
            self._turn_start(event)
        elif isinstance(event, TurnEndEvent):
            self._turn_end(event)
        elif isinstance(event, StepStartEvent):
            self._step_start(event)
        elif isinstance(event, StepEndEvent):
            self._step_end(event)
        elif isinstance(event, AssistantMessageEvent):
            self._assistant(event)
        elif isinstance(event, ToolCallEvent):
            data = event.data
            item = Item(seq=seq, kind="tool",
                        text=f"{data.name}({shorten(data.arguments, _ARGS_LIMIT)})")
            self.calls[data.call_id] = item
            self.add(item)
        elif isinstance(event, ToolResultEvent):
            self._tool_result(event)
        else:
            self.add(_other_item(event))

    def _turn_start(self, event: TurnStartEvent) -> None:
        self.close_step()
        if self.turn is not None:  # a second turn/start: the earlier turn never ended
            self.turn.reason, self.turn.reason_ok = "never ended", False
        self.turn = TurnNode(turn=event.data.turn, start_seq=event.seq,
                             in_flight=self.position >= self.cut)
        self.top.append(self.turn)

    def _turn_end(self, event: TurnEndEvent) -> None:
        self.close_step()
        words, ok = _reason_words(event.data.reason)
        if self.turn is None:
            self.add(Item(seq=event.seq, kind="structure", error=True,
                          text=f"turn/end for turn {event.data.turn} ({words}) with no open "
                               "turn"))
        else:
            self.turn.end_seq, self.turn.reason, self.turn.reason_ok = event.seq, words, ok
            self.turn = None
        if self.position == self.cut - 1:
            self.mark_cut()

    def _step_start(self, event: StepStartEvent) -> None:
        self.close_step()
        if self.turn is None:
            self.add(Item(seq=event.seq, kind="structure", error=True,
                          text=f"step/start for turn {event.data.turn} step {event.data.step} "
                               "outside a turn"))
            return
        self.step = StepNode(step=event.data.step, start_seq=event.seq)
        self.turn.entries.append(self.step)

    def _step_end(self, event: StepEndEvent) -> None:
        if self.step is None:
            self.add(Item(seq=event.seq, kind="structure", error=True,
                          text=f"step/end for turn {event.data.turn} step {event.data.step} "
                               "with no open step"))
            return
        self.step.end_seq = event.seq
        self.close_step()

    def _assistant(self, event: AssistantMessageEvent) -> None:
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
            extras.append(f"reasoning {reasoning} chars")
        if self.chunk_count:
            extras.append(f"streamed in {self.chunk_count} chunks")
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

    def _tool_result(self, event: ToolResultEvent) -> None:
        data = event.data
        call_id = data.message.source.call_id or "?"
        block = data.message.content[0] if data.message.content else None
        is_error = isinstance(block, ToolResultBlock) and block.is_error is True
        words = _quoted(_blocks_text(data.message.content))
        if not isinstance(data.error, UnsetType):
            words += f" ({data.error.name} {data.error.code})"
        replaced = isinstance(event.surface_op, SurfaceReplace)
        call = None if replaced else self.calls.pop(call_id, None)
        if call is not None:
            call.children.append(Item(seq=event.seq, kind="result", text=f"→ {words}",
                                      error=is_error))
            return
        if replaced:
            assert isinstance(event.surface_op, SurfaceReplace)
            label = f"result for {call_id} rewritten ({_replace_words(event.surface_op)})"
        else:
            label = f"result for {call_id} (no tool/call)"
        self.add(Item(seq=event.seq, kind="result", text=f"{label}: {words}", error=is_error))

    def finish(self) -> None:
        self.close_step()
        for call in self.calls.values():
            call.children.append(Item(seq=call.seq, kind="pending",
                                      text="… no tool/result yet (the log ends here)"))
        self.calls.clear()


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
            parts.append(f"+{len(data.inserted)}: {_quoted(first, 70)}")
        if not isinstance(data.removed_count, UnsetType):
            parts.append(f"{data.removed_count} claimed")
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
    if isinstance(event, OpaqueEvent):
        return Item(seq=seq, kind="event",
                    text=f"{event.type} {shorten(bytes(event.data).decode(), _DATA_LIMIT)}")
    return Item(seq=seq, kind="event", text=event_type(event))  # a type added to core later


def build_outline(log: LoadedLog, assessment: Assessment) -> Outline:
    """The picture of ``log`` as data: turns, steps, items, the cut marker and the verdict."""
    builder = _Builder(assessment.cut, assessment.violation)
    if assessment.cut == 0:
        builder.mark_cut()
    for position, event in enumerate(log.events):
        builder.feed(event, position)
    builder.finish()
    return Outline(path=log.path, source=log.description, header=_header_facts(log.header),
                   events=len(log.events), cut=assessment.cut, state=assessment.state,
                   verdict=assessment.verdict(len(log.events)), entries=builder.top)


# --------------------------------------------------------------------------- drawing


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """Let the command line decide (rich's default is ``SystemExit(1)``)."""
        self.quiet = True
        raise BrokenPipeError


def make_console(file: IO[str], *, plain: bool = False) -> Console:
    """A console that colours only a terminal, never with ``NO_COLOR`` or ``plain``."""
    no_colour = plain or bool(os.environ.get("NO_COLOR"))
    return _Console(file=file, color_system=None if no_colour else "auto",
                   force_terminal=False if plain else None, no_color=no_colour,
                   highlight=False, emoji=False, markup=False, soft_wrap=False)


_STYLES: dict[str, str] = {
    "user": "cyan", "assistant": "green", "chunks": "dim", "tool": "magenta",
    "result": "", "pending": "yellow", "request": "dim", "splice": "blue",
    "policy": "yellow", "descriptor": "yellow", "end-seed": "bold yellow", "event": "dim",
    "structure": "red", "violation": "bold red", "cut": "bold yellow",
}


def _line(item: Item, ascii_only: bool) -> Text:
    mark = ("x " if ascii_only else "✗ ") if item.error else ""
    text = Text(no_wrap=True, overflow="ellipsis")
    if item.kind != "pending":  # it has no event of its own; the call's seq would mislead
        text.append(f"{item.seq} ", style="dim")
    style = "red" if item.error else _STYLES[item.kind]
    text.append(_ascii(f"{mark}{item.text}", ascii_only), style=style)
    return text


def _ascii(words: str, ascii_only: bool) -> str:
    return words.encode("ascii", "replace").decode("ascii") if ascii_only else words


def _label(words: str, style: str, ascii_only: bool, *, wrap: bool = False) -> Text:
    words = _ascii(words, ascii_only)
    if wrap:
        return Text(words, style=style)
    return Text(words, style=style, no_wrap=True, overflow="ellipsis")


def _add_items(tree: Tree, items: list[Item], ascii_only: bool) -> None:
    for item in items:
        branch = tree.add(_line(item, ascii_only))
        _add_items(branch, item.children, ascii_only)


def _turn_tree(turn: TurnNode, ascii_only: bool) -> Tree:
    span = f"seq {turn.start_seq}..{turn.end_seq}" if turn.end_seq is not None else (
        f"seq {turn.start_seq}..")
    if turn.reason is None:
        label = f"Turn {turn.turn} · in flight, not part of any seed · {span}"
        style = "bold yellow"
    else:
        label = f"Turn {turn.turn} · {turn.reason} · {span}"
        style = "bold" if turn.reason_ok else "bold red"
    tree = Tree(_label(label, style, ascii_only), guide_style="dim")
    for entry in turn.entries:
        if isinstance(entry, StepNode):
            end = (f"seq {entry.start_seq}.. (open)" if entry.end_seq is None
                   else f"seq {entry.start_seq}..{entry.end_seq}")
            branch = tree.add(_label(f"step {entry.step} · {end}", "bold", ascii_only))
            _add_items(branch, entry.entries, ascii_only)
        else:
            branch = tree.add(_line(entry, ascii_only))
            _add_items(branch, entry.children, ascii_only)
    return tree


def _header_line(outline: Outline) -> str:
    header = outline.header
    if header is None:
        return "session (no header)"
    words = f"session {header.get('id')}"
    facts = []
    if "parentSession" in header:
        facts.append(f"parent {header['parentSession']}")
    if "delegationDepth" in header:
        facts.append(f"depth {header['delegationDepth']}")
    if "seedLength" in header:
        facts.append(f"seedLength {header['seedLength']}")
    if "origin" in header:
        facts.append(f"origin {header['origin']}")
    if facts:
        words += " · " + " · ".join(facts)
    return words


def render_outline(console: Console, outline: Outline) -> None:
    """Draw ``outline`` on ``console``: header, turns as trees, the cut rule, the verdict."""
    ascii_only = not console.encoding.lower().startswith("utf")
    console.print(_label(_header_line(outline), "bold", ascii_only, wrap=True))
    source = f"{outline.path} · {outline.source} · {_count(outline.events, 'event')}"
    console.print(_label(source, "dim", ascii_only, wrap=True))
    console.print()
    for entry in outline.entries:
        if isinstance(entry, TurnNode):
            console.print(_turn_tree(entry, ascii_only))
        elif entry.kind == "cut":
            console.rule(_label(entry.text, "bold yellow", ascii_only),
                         characters="-" if ascii_only else "─", style="yellow")
            if entry.note:
                console.print(_label(entry.note, "yellow", ascii_only, wrap=True))
        else:
            console.print(_line(entry, ascii_only), no_wrap=True, overflow="ellipsis")
    console.print()
    style = {"closed": "bold green", "open": "bold yellow", "invalid": "bold red"}
    console.print(_label(outline.verdict, style[outline.state], ascii_only, wrap=True))
