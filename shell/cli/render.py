"""``turnfork show``: an :class:`~.outline.Outline` drawn with ``rich``, as a summary or as trees.

What is drawn is a :class:`Drawing` (:func:`drawing_of`): the one outline model, read from a log
or a wire history (:mod:`.history_outline`), so both look alike and share one set of conventions.

* :func:`render_summary` (the default): the header, the log in figures, one line per turn (the
  middle of a long log left out, in one line), the cut as a rule line and what lies beyond
  it, the verdict. It fits a screen whatever the size of the log.
* :func:`render_outline` (``--turns``, ``--tail``, ``--all``): each drawn turn as a tree of
  steps and items, between-turn events as single lines, the stretches not drawn as one line
  each.

Every item stays on one line (cut with an ellipsis at the terminal's width), so narrow
terminals and pipes get the same shape; every text is made inert first
(:func:`.terminal.inert`). Colour only on a terminal, never with ``NO_COLOR`` or ``plain``.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter, deque
from dataclasses import dataclass
from typing import IO, Literal, cast

from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from .outline import Counts, Item, Outline, StepNode, TurnNode
from .terminal import TrimmedLines, counted, inert

__all__ = ["Drawing", "drawing_of", "draw_trees", "draw_summary", "make_console",
           "render_outline", "render_summary", "visible", "SUMMARY_TURNS", "TreeStream",
           "SummaryLines", "header_line"]

#: A summary lists this many first and last turns of a log with more than their sum and two
#: more, and one line for the turns in between.
SUMMARY_TURNS = (3, 6)


@dataclass(frozen=True)
class Drawing:
    """What a picture shows: its two header lines, figures, entries, the cut's sentence and
    the verdict, and how positions are named (``seq`` in a log, ``item``/``items`` in a wire
    history)."""

    title: str
    source: str
    #: The whole input in figures (the summary's first line).
    figures: str
    entries: list[TurnNode | Item]
    excluded: str
    verdict: str
    state: Literal["closed", "open", "invalid", "empty"]
    unit: str = "seq"
    units: str = "seq"
    #: What the read left out (the torn-tail rule), in one sentence.
    left_out: str | None = None

    def span(self, first: int, last: int | None) -> str:
        """``seq 3..9`` (a log), ``items 3..9`` or ``item 3`` (a history); ``seq 3..`` open."""
        if last is None:
            return f"{self.units} {first}.."
        if first == last and self.unit != self.units:
            return f"{self.unit} {first}"
        return f"{self.units} {first}..{last}"


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """Let the command line decide (rich's default is ``SystemExit(1)``)."""
        self.quiet = True
        raise BrokenPipeError


#: The widest drawing: rules span the width, so an absurd ``COLUMNS`` would write megabytes of
#: dashes per rule.
_WIDEST = 10_000


def _usable_width(width: int | None) -> int | None:
    """``width``, or ``COLUMNS`` as rich would read it (``None``: rich reads it), kept from 1
    to :data:`_WIDEST`: rich takes ``COLUMNS=0`` (``$(tput cols)`` without a terminal) as a
    width of 0 and draws nothing."""
    if width is None:
        columns = os.environ.get("COLUMNS", "")
        if not columns.isdigit():
            return None  # rich ignores it too: the terminal's width, or 80
        width = int(columns) or shutil.get_terminal_size((80, 24)).columns
    return max(1, min(width, _WIDEST))


def make_console(file: IO[str], *, plain: bool = False, terminal: bool | None = None,
                 width: int | None = None) -> Console:
    """A console that colours only a terminal, never with ``NO_COLOR`` or ``plain``.

    ``terminal=True`` says the output ends on a terminal although ``file`` is not one (the
    pager's pipe); ``width`` is then that terminal's width.
    """
    no_colour = plain or bool(os.environ.get("NO_COLOR"))
    width = _usable_width(width)
    trimmed = cast(IO[str], TrimmedLines(file))
    return _Console(file=trimmed, color_system=None if no_colour else "auto",
                    force_terminal=False if plain else (True if terminal else None),
                    no_color=no_colour, width=width, highlight=False, emoji=False,
                    markup=False, soft_wrap=False)


def visible(words: str, ascii_only: bool, *, lines: bool = False) -> str:
    """``words`` made inert, and plain ASCII when the output cannot encode more."""
    words = inert(words, lines=lines)
    return words.encode("ascii", "replace").decode("ascii") if ascii_only else words


_STYLES: dict[str, str] = {
    "user": "cyan", "assistant": "green", "chunks": "dim", "tool": "magenta",
    "result": "", "pending": "yellow", "request": "dim", "splice": "blue",
    "policy": "yellow", "descriptor": "yellow", "end-seed": "bold yellow", "event": "dim",
    "structure": "red", "violation": "bold red", "cut": "bold yellow", "seed": "yellow",
    "elided": "dim", "system": "blue", "reasoning": "dim", "call": "magenta", "server": "magenta",
}
#: Items with no event (or history item) of their own: a position in front would mislead.
_NO_SEQ = frozenset({"pending", "seed", "elided", "call"})
#: Items that say what is not drawn and how to draw it: wrapped, never cut.
_WRAPPED = frozenset({"seed", "elided"})


def _line(item: Item, ascii_only: bool) -> Text:
    mark = ("x " if ascii_only else "✗ ") if item.error else ""
    wrapped = item.kind in _WRAPPED
    text = Text(no_wrap=not wrapped, overflow="fold" if wrapped else "ellipsis")
    if item.kind not in _NO_SEQ:
        text.append(f"{item.seq} ", style="dim")
    style = "red" if item.error else _STYLES[item.kind]
    text.append(visible(f"{mark}{item.text}", ascii_only), style=style)
    return text


def _label(words: str, style: str, ascii_only: bool, *, wrap: bool = False) -> Text:
    words = visible(words, ascii_only)
    if wrap:
        return Text(words, style=style)
    return Text(words, style=style, no_wrap=True, overflow="ellipsis")


def _ascii_only(console: Console) -> bool:
    return not console.encoding.lower().startswith("utf")


def _add_items(tree: Tree, items: list[Item], ascii_only: bool) -> None:
    for item in items:
        branch = tree.add(_line(item, ascii_only))
        _add_items(branch, item.children, ascii_only)


def _turn_label(drawing: Drawing, turn: TurnNode, ascii_only: bool,
                figures: str | None = None) -> Text:
    """A turn's heading; with ``figures``, its one summary line (the cut line says what an
    in-flight turn is, so it says so in fewer words there)."""
    span = drawing.span(turn.start_seq, turn.end_seq)
    if turn.reason is None:
        what = "in flight" if figures is not None else "in flight, not part of any seed"
        label = f"Turn {turn.turn} · {what} · {span}"
        style = "bold yellow"
    else:
        label = f"Turn {turn.turn} · {turn.reason} · {span}"
        style = "bold" if turn.reason_ok else "bold red"
    return _label(label + (figures or ""), style, ascii_only)


def _turn_tree(drawing: Drawing, turn: TurnNode, ascii_only: bool) -> Tree:
    tree = Tree(_turn_label(drawing, turn, ascii_only), guide_style="dim")
    for entry in turn.entries:
        if isinstance(entry, StepNode):
            end = (f"{drawing.span(entry.start_seq, None)} (open)" if entry.end_seq is None
                   else drawing.span(entry.start_seq, entry.end_seq))
            branch = tree.add(_label(f"step {entry.step} · {end}", "bold", ascii_only))
            _add_items(branch, entry.entries, ascii_only)
        else:
            branch = tree.add(_line(entry, ascii_only))
            _add_items(branch, entry.children, ascii_only)
    return tree


def header_line(header: dict[str, object] | None) -> str:
    """A log's first line: its session id, parent, depth, seedLength and origin."""
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


def _head(console: Console, drawing: Drawing, ascii_only: bool) -> None:
    console.print(_label(drawing.title, "bold", ascii_only, wrap=True))
    console.print(_label(drawing.source, "dim", ascii_only, wrap=True))
    console.print()


def _cut(console: Console, item: Item, ascii_only: bool) -> None:
    console.rule(_label(item.text, "bold yellow", ascii_only),
                 characters="-" if ascii_only else "─", style="yellow")
    if item.note:
        console.print(_label(item.note, "yellow", ascii_only, wrap=True))


_VERDICT_STYLES = {"closed": "bold green", "open": "bold yellow", "invalid": "bold red",
                   "empty": "bold"}


def _verdict(console: Console, drawing: Drawing, ascii_only: bool) -> None:
    console.print()
    if drawing.left_out:
        console.print(_label(drawing.left_out, "yellow", ascii_only, wrap=True))
    console.print(_label(drawing.verdict, _VERDICT_STYLES[drawing.state], ascii_only,
                         wrap=True))


def drawing_of(outline: Outline, *, events: bool = True) -> Drawing:
    """What an outline shows (``events``: a log's event count on the source line)."""
    if outline.reader == "history":
        return Drawing(title=f"{outline.format} history",
                       source=f"{outline.path} · {outline.source} · "
                              f"{counted(outline.length, 'item')}",
                       figures=_history_figures(outline.counts), entries=outline.entries,
                       excluded=outline.excluded, verdict=outline.verdict,
                       state=outline.state, unit="item", units="items")
    count = f" · {counted(outline.length, 'event')}" if events else ""
    return Drawing(title=header_line(outline.header),
                   source=f"{outline.path} · {outline.source}{count}",
                   figures=_figures_line(outline), entries=outline.entries,
                   excluded=outline.excluded, verdict=outline.verdict, state=outline.state,
                   left_out=outline.left_out)


def render_outline(console: Console, outline: Outline) -> None:
    """Draw a log's ``outline`` as trees (see :func:`draw_trees`)."""
    draw_trees(console, drawing_of(outline))


class TreeStream:
    """Turns drawn as trees as their entries arrive: the head first, then the entries, each
    batch drawn at once, then (:meth:`end`) the verdict."""

    def __init__(self, console: Console, drawing: Drawing) -> None:
        self.console = console
        self.drawing = drawing
        self.ascii_only = _ascii_only(console)
        _head(console, drawing, self.ascii_only)

    def draw(self, entries: list[TurnNode | Item]) -> None:
        console, drawing, ascii_only = self.console, self.drawing, self.ascii_only
        for entry in entries:
            if isinstance(entry, TurnNode):
                console.print(_turn_tree(drawing, entry, ascii_only))
            elif entry.kind == "cut":
                _cut(console, entry, ascii_only)
            else:
                _print_line(console, entry, ascii_only)

    def end(self, drawing: Drawing) -> None:
        """The verdict (and what was left out) of ``drawing``."""
        _verdict(self.console, drawing, self.ascii_only)


def draw_trees(console: Console, drawing: Drawing) -> None:
    """Draw ``drawing`` on ``console``: header, turns as trees, the cut rule, the verdict."""
    stream = TreeStream(console, drawing)
    stream.draw(drawing.entries)
    stream.end(drawing)


def _print_line(console: Console, item: Item, ascii_only: bool) -> None:
    if item.kind in _WRAPPED:
        console.print(_line(item, ascii_only))
    else:
        console.print(_line(item, ascii_only), no_wrap=True, overflow="ellipsis")


# --------------------------------------------------------------------------- the summary


def _results_words(counts: Counts) -> str:
    results = counted(counts.tool_results, "result")
    if counts.error_results:
        results += f" ({counted(counts.error_results, 'error')})"
    return f"{counted(counts.tool_calls, 'tool call')}, {results}"


def _figures_line(outline: Outline) -> str:
    from .assess import END_REASONS  # noqa: PLC0415

    counts = outline.counts
    turns = counted(counts.turns, "turn")
    if counts.turns:
        how = [f"{outline.turns_ended[reason]:,} {reason}" for reason in END_REASONS
               if outline.turns_ended.get(reason)]
        open_turns = counts.turns - counts.completed_turns
        if open_turns > 0:
            how.append(f"{open_turns:,} in flight")
        turns += f" ({', '.join(how)})"
    return " · ".join([
        turns, counted(counts.steps, "step"), _results_words(counts),
        counted(counts.assistant_messages, "assistant message"),
        counted(counts.chunks, "streamed chunk"),
        counted(counts.between_turn_events, "between-turn event"),
    ])


def _history_figures(counts: Counts) -> str:
    turns = counted(counts.turns, "turn")
    if counts.turns:
        in_flight = counts.turns - counts.completed_turns
        turns += f" ({counts.completed_turns} completed" + (
            f", {in_flight} in flight" if in_flight else "") + ")"
    figures = [counted(counts.items, "item"), turns, counted(counts.steps, "step"),
               _results_words(counts), counted(counts.assistant_messages, "assistant message")]
    if counts.reasoning:
        figures.append(f"reasoning or thinking in {counted(counts.reasoning, 'item')}")
    if counts.server_tool_calls:
        figures.append(counted(counts.server_tool_calls, "server tool call"))
    return " · ".join(figures)


def _turn_figures(drawing: Drawing, turn: TurnNode) -> str:
    figures = [counted(turn.steps, "step")
               + (" (open)" if turn.reason is None and turn.steps else "")]
    if turn.violation_seq is not None:  # first: the line is cut at the width, this must show
        figures.insert(0, f"✗ breaks a rule at {drawing.unit} {turn.violation_seq}")
    calls = counted(turn.tool_calls, "tool call")
    if turn.tool_names:
        names = turn.tool_names[:3] + (["…"] if len(turn.tool_names) > 3 else [])
        calls += f" ({', '.join(names)})"
    figures.append(calls)
    if turn.waiting_calls:
        figures.append(f"{turn.waiting_calls:,} waiting")
    if turn.error_results:
        figures.append(counted(turn.error_results, "error result"))
    words = " · " + ", ".join(figures)
    if turn.prompt:
        words += f' · "{turn.prompt}"'
    return words


class _LeftOut:
    """A run of turns the summary does not list, as one line."""

    def __init__(self) -> None:
        self.reasons: Counter[str] = Counter()
        self.low: int | None = None
        self.high = 0
        self.first_seq = 0

    def _reset(self) -> None:
        self.reasons = Counter()
        self.low, self.high, self.first_seq = None, 0, 0

    def add(self, turn: TurnNode) -> None:
        if self.low is None:
            self.low, self.high, self.first_seq = turn.turn, turn.turn, turn.start_seq
        self.low, self.high = min(self.low, turn.turn), max(self.high, turn.turn)
        self.reasons[turn.reason or "in flight"] += 1

    def item(self) -> Item | None:
        """The line, and the run is empty again (``None``: it was)."""
        if self.low is None:
            return None
        how = ", ".join(f"{number:,} {reason}" for reason, number in
                        self.reasons.most_common(3))
        if len(self.reasons) > 3:
            how += ", …"
        span = f"{self.low}..{self.high}"
        item = Item(seq=self.first_seq, kind="elided",
                    text=f"… turns {span} not listed: "
                         f"{counted(sum(self.reasons.values()), 'turn')} ({how}); "
                         f"--turns {span} draws them")
        self._reset()
        return item


class SummaryLines:
    """The summary's lines from entries fed in log order: every turn of a short log, the
    first and last of a long one (:data:`SUMMARY_TURNS`), a turn in flight or one that breaks
    a rule always, the cut, the stretches not drawn, a violation and any error line, and one
    line for each run of turns left out. It holds only the turns still to be decided (at
    most the last few), so a summary costs the same whatever the length of the log."""

    def __init__(self) -> None:
        self._head, self._tail = SUMMARY_TURNS
        self._pending: deque[tuple[int, TurnNode | Item]] = deque()
        self._turns = 0
        self._left_out = _LeftOut()
        self.lines: list[TurnNode | Item] = []

    def feed(self, entries: list[TurnNode | Item]) -> None:
        for entry in entries:
            if isinstance(entry, TurnNode):
                self._pending.append((self._turns, entry))
                self._turns += 1
            elif entry.kind in ("cut", "seed", "elided", "violation") or entry.error:
                self._pending.append((-1, entry))
        self._settle(final=False)

    def finish(self) -> list[TurnNode | Item]:
        """Every line, once the last entry is fed."""
        self._settle(final=True)
        self._list(self._left_out.item())
        return self.lines

    def _list(self, entry: TurnNode | Item | None) -> None:
        if entry is not None:
            self.lines.append(entry)

    def _settle(self, *, final: bool) -> None:
        head, tail, seen = self._head, self._tail, self._turns
        long_log = seen > head + tail + 2
        while self._pending:
            index, entry = self._pending[0]
            if isinstance(entry, TurnNode):
                notable = entry.in_flight or entry.violation_seq is not None
                if not (notable or index < head):
                    if final:
                        skipped = long_log and index < seen - tail
                    elif long_log and seen > index + tail:
                        skipped = True
                    else:
                        break  # not yet known whether it is among the last turns
                    if skipped:
                        self._pending.popleft()
                        self._left_out.add(entry)
                        continue
            self._pending.popleft()
            self._list(self._left_out.item())
            self._list(entry)


def _listed(entries: list[TurnNode | Item]) -> list[TurnNode | Item]:
    """The summary's lines: every turn of a short log; the first and last of a long one."""
    lines = SummaryLines()
    lines.feed(entries)
    return lines.finish()


def render_summary(console: Console, outline: Outline) -> None:
    """Draw a log's ``outline`` as a summary (see :func:`draw_summary`)."""
    draw_summary(console, drawing_of(outline))


def draw_summary(console: Console, drawing: Drawing) -> None:
    """Draw ``drawing`` as a summary: figures, a line per turn, the cut and what lies beyond."""
    ascii_only = _ascii_only(console)
    _head(console, drawing, ascii_only)
    console.print(_label(drawing.figures, "", ascii_only, wrap=True))
    console.print()
    for entry in _listed(drawing.entries):
        if isinstance(entry, TurnNode):
            console.print(_turn_label(drawing, entry, ascii_only,
                                      _turn_figures(drawing, entry)),
                          no_wrap=True, overflow="ellipsis")
        elif entry.kind == "cut":
            _cut(console, entry, ascii_only)
            console.print(_label(drawing.excluded, "yellow", ascii_only, wrap=True))
        else:
            _print_line(console, entry, ascii_only)
    _verdict(console, drawing, ascii_only)
    console.print(_label("--turns A..B, --tail N or --all draw turns as trees (see --help)",
                         "dim", ascii_only, wrap=True))
