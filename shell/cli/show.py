"""``turnfork show``: a log or a wire history summarised (the default) or drawn as trees,
through a pager.

A log is read once, as it streams (``--tail N`` reads it twice: first to count its turns):
the rules are folded chunk by chunk (:mod:`.assess`) and the outline built alongside
(:class:`~.outline.OutlineBuilder`). Trees and ``--json`` are written as each turn becomes
final, so a long log starts to draw at once and memory holds one turn at a time; a summary
keeps only the turns it may list and is drawn at the end.
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

import msgspec

from ..logfile import LogChunk, LogReadError, LogStream
from .app import EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE
from .assess import Assessor, assess_stream
from .inputs import Input, opened_input
from .outline import Choose, Item, Outline, OutlineBuilder, TurnNode, seed_length_of
from .reports import error_json
from .terminal import Output, error, inert_json, paged, print_json

if TYPE_CHECKING:
    from rich.console import Console

    from .histories import LoadedHistory
    from .render import TreeStream

__all__ = ["run"]


def _show_history(args: argparse.Namespace, loaded: LoadedHistory) -> int:
    from .history_outline import build_history_outline, select_history_turns  # noqa: PLC0415

    if args.seed:
        error(f"{loaded.path}: --seed draws a fork child's inherited seed, and a wire history "
              "has none")
        return EXIT_UNREADABLE
    outline = build_history_outline(loaded)
    if args.turns is not None or args.tail is not None:
        selected = select_history_turns(outline, turns=args.turns, tail=args.tail)
        if isinstance(selected, str):
            error(f"{loaded.path}: {selected}")
            return EXIT_UNREADABLE
        outline = selected
    trees = args.all or args.turns is not None or args.tail is not None
    with paged(enabled=not args.no_pager) as output:
        if args.json:
            _write_history_json(outline, output.stream)
        else:
            from .render import draw_summary, draw_trees, drawing_of, make_console  # noqa: PLC0415

            console = make_console(output.stream, plain=args.plain, terminal=output.terminal,
                                   width=output.width)
            (draw_trees if trees else draw_summary)(console, drawing_of(outline))
    return EXIT_INVALID if outline.state == "invalid" else EXIT_OK


def _write_history_json(outline: Outline, out: TextIO) -> None:
    """``outline.as_json()`` as indented JSON, an entry at a time (its entries are the last
    key): the whole document as one string cost tens of times the history's size."""
    text = _json(outline.as_json(entries=False))
    out.write(text[:text.rindex("}")].rstrip() + ',\n  "entries": [')
    for index, entry in enumerate(outline.entries):
        body = _json(msgspec.to_builtins(entry)).replace("\n", "\n    ")
        out.write(("\n    " if index == 0 else ",\n    ") + body)
    out.write("\n  ]\n}\n" if outline.entries else "]\n}\n")


def run(args: argparse.Namespace) -> int:
    """Show ``args.path``; exit 0 shown, 2 unreadable or no such turn, 3 invalid (shown)."""
    with opened_input(args) as read:
        if isinstance(read, LogReadError):
            if args.json:
                print_json({"path": args.path, "error": error_json(read)})
            return EXIT_UNREADABLE
        if not isinstance(read.opened, LogStream):
            return _show_history(args, read.opened)
        return _show_log(args, read)


def _turn_count(log: LogStream) -> int | LogReadError:
    """How many turns the log has (a ``turn/start`` opens one): the first of ``--tail``'s
    two reads."""
    counted = assess_stream(log, what=f"counting the turns of {os.path.basename(log.file)}")
    return counted if isinstance(counted, LogReadError) else counted.turns


def _unreadable(args: argparse.Namespace, problem: LogReadError) -> int:
    error(problem.message)
    if args.json:
        print_json({"path": args.path, "error": error_json(problem)})
    return EXIT_UNREADABLE


def _choice(args: argparse.Namespace, read: Input) -> tuple[LogStream, Choose | None] | int:
    """The log to draw and which of its turns (``None``: all); an exit status on a failure."""
    log = read.opened
    assert isinstance(log, LogStream)
    if args.turns is not None:
        turns = args.turns
        return log, lambda number, _index: number in turns
    if args.tail is None:
        return log, None
    total = _turn_count(log)
    if isinstance(total, LogReadError):
        return _unreadable(args, total)
    if not total:
        error(f"{log.path}: --tail {args.tail}: no such turn (the log has no turns)")
        return EXIT_UNREADABLE
    again = read.again()
    if isinstance(again, LogReadError):
        return _unreadable(args, again)
    assert isinstance(again, LogStream)
    first = total - args.tail
    return again, lambda _number, index: index >= first


def _show_log(args: argparse.Namespace, read: Input) -> int:
    chosen = _choice(args, read)
    if isinstance(chosen, int):
        return chosen
    log, choose = chosen
    trees = args.all or choose is not None
    builder = OutlineBuilder(header=log.header, seed_length=seed_length_of(log.header),
                             draw_seed=args.seed, choose=choose, detail=trees or args.json)
    with contextlib.ExitStack() as stack:
        if args.json:
            writer: _Writer = _JsonWriter(args, stack, log)
        elif trees:
            writer = _TreeWriter(args, stack, log)
        else:
            writer = _SummaryWriter(args, stack, log)

        # Nothing is written before a chosen turn is seen: a choice that names no turn is an
        # error, with nothing drawn (the lines of what was not drawn before it wait).
        waiting: list[TurnNode | Item] = []

        def each(chunk: LogChunk, assessor: Assessor) -> None:
            builder.feed_chunk(chunk, assessor.violation)
            waiting.extend(builder.take())
            if choose is None or builder.chose:
                writer.entries(waiting)
                waiting.clear()

        assessment = assess_stream(log, what=f"reading {os.path.basename(log.file)}", each=each,
                                   progress=writer.progress)
        if isinstance(assessment, LogReadError):
            if writer.cut_short(assessment):
                error(assessment.message)
                return EXIT_UNREADABLE
            return _unreadable(args, assessment)
        outline = builder.finish(assessment, path=log.path, source=log.description,
                                 left_out=None if assessment.torn is None
                                 else assessment.torn.words)
        last = waiting + builder.take()
        if choose is not None and not builder.chose:
            asked = f"--turns {args.turns}" if args.turns is not None else f"--tail {args.tail}"
            error(f"{log.path}: {asked}: no such turn ({builder.which()})")
            return EXIT_UNREADABLE
        writer.entries(last)
        writer.end(outline)
        return EXIT_INVALID if assessment.state == "invalid" else EXIT_OK
    return EXIT_OK  # the pager was left early: what was asked for was seen


class _Writer(abc.ABC):
    """Where the outline goes as it is built; the output (a pager on a terminal) is opened at
    the first entry to write, so that nothing is shown of a log that turns out unreadable
    before its first turn, or of a choice of turns that names none."""

    def __init__(self, args: argparse.Namespace, stack: contextlib.ExitStack,
                 log: LogStream) -> None:
        self.args = args
        self.stack = stack
        self.log = log
        self.output: Output | None = None
        # The bar goes on stderr; it would mix with what is drawn on the same terminal.
        self.progress = not _on_terminal()

    def opened(self) -> Output:
        if self.output is None:
            self.output = self.stack.enter_context(paged(enabled=not self.args.no_pager))
            self.started(self.output)
        return self.output

    def started(self, output: Output) -> None:  # noqa: B027 (a hook: most writers write nothing first)
        """The output is open: write what comes first."""

    @abc.abstractmethod
    def entries(self, entries: list[TurnNode | Item]) -> None:
        """Draw the turns and items the read has just finished."""

    def cut_short(self, problem: LogReadError) -> bool:
        """The read failed: say so where the output is, if it was started (then ``True``: the
        output is ended; the error line follows on stderr)."""
        return False

    @abc.abstractmethod
    def end(self, outline: Outline) -> None:
        """The whole log is read: write what comes last."""


def _on_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _console(args: argparse.Namespace, output: Output) -> Console:
    from .render import make_console  # noqa: PLC0415

    return make_console(output.stream, plain=args.plain, terminal=output.terminal,
                        width=output.width)


class _TreeWriter(_Writer):
    """Turns drawn as trees as they become final."""

    drawer: TreeStream

    def started(self, output: Output) -> None:
        from .render import Drawing, TreeStream  # noqa: PLC0415

        log = self.log
        header = None if log.header is None else msgspec.to_builtins(log.header)
        from .render import header_line  # noqa: PLC0415

        head = Drawing(title=header_line(header), source=f"{log.path} · {log.description}",
                       figures="", entries=[], excluded="", verdict="", state="open")
        self.drawer = TreeStream(_console(self.args, output), head)

    def entries(self, entries: list[TurnNode | Item]) -> None:
        if entries:
            self.opened()
            self.drawer.draw(entries)

    def cut_short(self, problem: LogReadError) -> bool:
        if self.output is None:
            return False
        self.drawer.draw([Item(seq=0, kind="elided", error=True,
                               text=f"the log cannot be read past here: {problem.message}")])
        return True

    def end(self, outline: Outline) -> None:
        from .render import drawing_of  # noqa: PLC0415

        self.opened()
        self.drawer.end(drawing_of(outline, events=False))


class _SummaryWriter(_Writer):
    """A summary: the lines it lists kept as the entries go by, drawn at the end."""

    def __init__(self, args: argparse.Namespace, stack: contextlib.ExitStack,
                 log: LogStream) -> None:
        super().__init__(args, stack, log)
        from .render import SummaryLines  # noqa: PLC0415

        self.lines = SummaryLines()
        self.progress = True  # nothing is drawn before the end

    def entries(self, entries: list[TurnNode | Item]) -> None:
        self.lines.feed(entries)

    def end(self, outline: Outline) -> None:
        from .render import draw_summary, drawing_of  # noqa: PLC0415

        outline.entries = self.lines.finish()
        draw_summary(_console(self.args, self.opened()), drawing_of(outline))


class _JsonWriter(_Writer):
    """The outline as one JSON object, its entries written as they become final: ``path``,
    ``source``, ``header``, ``entries``, then the figures known at the end."""

    def __init__(self, args: argparse.Namespace, stack: contextlib.ExitStack,
                 log: LogStream) -> None:
        super().__init__(args, stack, log)
        self.first = True

    def _stream(self) -> TextIO:
        return self.opened().stream

    def started(self, output: Output) -> None:
        log = self.log
        header = None if log.header is None else msgspec.to_builtins(log.header)
        opening = {"path": log.path, "source": log.description, "header": header}
        text = _json(opening)
        output.stream.write(text[:text.rindex("}")].rstrip() + ',\n  "entries": [')

    def entries(self, entries: list[TurnNode | Item]) -> None:
        if not entries:
            return
        out = self._stream()
        for entry in entries:
            body = _json(msgspec.to_builtins(entry)).replace("\n", "\n    ")
            out.write(("\n    " if self.first else ",\n    ") + body)
            self.first = False

    def cut_short(self, problem: LogReadError) -> bool:
        if self.output is None:
            return False
        out = self._stream()
        out.write("\n  ]" if not self.first else "]")
        text = _json({"error": error_json(problem)})
        out.write("," + text[text.index("{") + 1:] + "\n")
        return True

    def end(self, outline: Outline) -> None:
        out = self._stream()
        out.write("\n  ]" if not self.first else "]")
        rest = outline.as_json()
        for key in ("path", "source", "header", "entries"):
            rest.pop(key)
        text = _json(rest)
        out.write("," + text[text.index("{") + 1:] + "\n")


def _json(value: Any) -> str:
    return inert_json(json.dumps(value, indent=2, ensure_ascii=False))
