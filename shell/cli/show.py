"""``turnfork show``: a log or a wire history summarised (the default) or drawn as trees,
through a pager."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import msgspec

from ...core import Event
from ..logfile import LoadedLog, LogReadError
from .app import EXIT_INVALID, EXIT_OK, EXIT_UNREADABLE, TurnRange
from .assess import assess
from .inputs import load_arguments
from .outline import TurnSpan, build_outline, turn_spans
from .reports import error_json
from .terminal import error, paged, print_json

if TYPE_CHECKING:
    from .histories import LoadedHistory

__all__ = ["run", "select_turns"]


def select_turns(events: tuple[Event, ...], *, turns: TurnRange | None = None,
                 tail: int | None = None) -> tuple[int, int] | str:
    """The positions ``(first, stop)`` that hold the chosen turns, or why there are none.

    The window starts just after the turn before the first chosen one (so the user's message
    spliced in before ``turn/start`` is drawn with its turn) and ends with the last chosen
    turn's ``turn/end``, or at the end of the log when that is the last turn.
    """
    spans = turn_spans(events)
    if turns is not None:
        chosen = [index for index, span in enumerate(spans) if span.turn in turns]
        asked = f"--turns {turns}"
    else:
        assert tail is not None
        chosen = list(range(max(len(spans) - tail, 0), len(spans)))
        asked = f"--tail {tail}"
    if not chosen:
        return f"{asked}: no such turn ({_which(spans)})"
    first, last = chosen[0], chosen[-1]
    before = spans[first - 1].end if first > 0 else None
    start = 0 if first == 0 else (spans[first].start if before is None else before + 1)
    end = spans[last].end
    stop = len(events) if last == len(spans) - 1 or end is None else end + 1
    return start, stop


def _which(spans: list[TurnSpan]) -> str:
    if not spans:
        return "the log has no turns"
    numbers = sorted({span.turn for span in spans})
    if len(numbers) == 1:
        return f"the log has turn {numbers[0]} only"
    return f"the log has turns {numbers[0]}..{numbers[-1]}"


def _show_history(args: argparse.Namespace, loaded: LoadedHistory) -> int:
    from .history_outline import (  # noqa: PLC0415
        build_history_outline,
        history_drawing,
        select_history_turns,
    )

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
            print_json(msgspec.to_builtins(outline), file=output.stream)
        else:
            from .render import draw_summary, draw_trees, make_console  # noqa: PLC0415

            console = make_console(output.stream, plain=args.plain, terminal=output.terminal,
                                   width=output.width)
            (draw_trees if trees else draw_summary)(console, history_drawing(outline))
    return EXIT_INVALID if outline.state == "invalid" else EXIT_OK


def run(args: argparse.Namespace) -> int:
    """Show ``args.path``; exit 0 shown, 2 unreadable or no such turn, 3 invalid (shown)."""
    loaded = load_arguments(args)
    if isinstance(loaded, LogReadError):
        if args.json:
            print_json({"path": args.path, "error": error_json(loaded)})
        return EXIT_UNREADABLE
    if not isinstance(loaded, LoadedLog):
        return _show_history(args, loaded)
    log = loaded
    window: tuple[int, int] | None = None
    if args.turns is not None or args.tail is not None:
        selected = select_turns(log.events, turns=args.turns, tail=args.tail)
        if isinstance(selected, str):
            error(f"{log.path}: {selected}")
            return EXIT_UNREADABLE
        window = selected
    trees = args.all or window is not None
    assessment = assess(log)
    outline = build_outline(log, assessment, window=window, seed=args.seed)
    with paged(enabled=not args.no_pager) as output:
        if args.json:
            print_json(msgspec.to_builtins(outline), file=output.stream)
        else:
            from .render import make_console, render_outline, render_summary  # noqa: PLC0415

            console = make_console(output.stream, plain=args.plain, terminal=output.terminal,
                                   width=output.width)
            (render_outline if trees else render_summary)(console, outline)
    return EXIT_INVALID if assessment.state == "invalid" else EXIT_OK
