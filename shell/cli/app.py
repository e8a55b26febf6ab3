"""The ``turnfork`` command line: every command's words and options, the parser, the entry point.

Conventions: results go to stdout, reports and errors to stderr; an error is one line,
``turnfork: error: <file>:<line>: <problem>``, never a traceback, and every character from a
log, a model or a file name is made inert first (:mod:`.terminal`). ``--json`` prints one JSON
object on stdout for machines. Exit status:

* 0 success;
* 1 ``check``: the log is open (valid, but it ends inside a turn); ``demo``: the scenario ran
  but did not go as intended;
* 2 unreadable input, unwritable output, or bad usage (argparse's own code);
* 3 the log is invalid: it breaks a balance rule (``check``, ``seed``, ``show``);
* 130 interrupted; 141 stdout was closed early.

Commands are :class:`Command` records listed in :data:`COMMANDS`. A record holds the command's
words and options; what it does lives in the module it names (``run(args) -> int``), imported
only when the command runs: ``--help`` and ``check`` never import ``rich`` or the asyncio
runtime. A new command is one more record and one more module.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import NoReturn

from ... import __version__
from .terminal import PROG, UnwritableOutput, WholeWrites, closed_stdout, error, inert

__all__ = [
    "EXIT_OK",
    "EXIT_OPEN",
    "EXIT_NOT_AS_INTENDED",
    "EXIT_UNREADABLE",
    "EXIT_INVALID",
    "EXIT_INTERRUPTED",
    "EXIT_BROKEN_PIPE",
    "Command",
    "COMMANDS",
    "INPUT_FORMATS",
    "TurnRange",
    "parse_turn_range",
    "build_parser",
    "main",
]

EXIT_OK = 0
#: ``check``: the log is valid but open (it ends inside a turn).
EXIT_OPEN = 1
#: ``demo``: the scenario ran but did not go as intended (the message says what).
EXIT_NOT_AS_INTENDED = 1
#: Unreadable input, unwritable output, or bad usage (argparse's own code).
EXIT_UNREADABLE = 2
#: The log breaks a balance rule.
EXIT_INVALID = 3
EXIT_INTERRUPTED = 130
#: stdout was closed early (``turnfork show x | head``): 128 + SIGPIPE, as a shell reports it.
EXIT_BROKEN_PIPE = 141


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, help texts, its arguments and the module that runs it."""

    name: str
    summary: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    epilog: str = ""
    #: The module of this package whose ``run(args) -> int`` carries the command out, when it
    #: is not named after the command.
    module: str | None = None

    def run(self, args: argparse.Namespace) -> int:
        """Import the command's module (only now) and run it."""
        module = importlib.import_module(f"{__package__}.{self.module or self.name}")
        status: int = module.run(args)
        return status


# --------------------------------------------------------------------------- inputs

_INPUTS_HELP = """\
PATH may be a JSONL event log, a DSH session.jsonl or session.jsonl.zstd file, a DSH session
directory holding one of them, or - for stdin (plain or zstd). The kind is detected from the
content; DSH's projected test fixtures (records without seq/time) are recognised and said so.

PATH may also hold an OpenAI Chat, OpenAI Responses or Anthropic Messages history: one JSON
document, the list of items or a request body (its messages or input list), whose format is
detected where the items allow it; or, with --format, JSONL with one item per line."""

#: What --format names: DSH's event log, or a wire history (core.formats.FORMAT_NAMES).
INPUT_FORMATS = ("dsh", "openai-chat", "openai-responses", "anthropic")


def _add_input(parser: argparse.ArgumentParser, what: str) -> None:
    """The log a command reads (every reading command takes its input the same way)."""
    parser.add_argument("path", metavar="PATH", help=f"{what} (- reads stdin)")
    parser.add_argument("--format", choices=INPUT_FORMATS, default=None,
                        help="what PATH holds: a DSH log (dsh), or a history of that wire "
                             "format, read by its rules (a JSON list, a request body, or JSONL "
                             "with one item per line); by default detected: a DSH log, or a "
                             "JSON document holding a history of one format")
    parser.add_argument("--thinking", choices=("on", "off"), default=None,
                        help="an Anthropic history: whether the request enables extended "
                             "thinking (by default a request body's thinking setting, else "
                             "inferred from the history's thinking blocks)")


def _add_json(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=what)


# --------------------------------------------------------------------------- check


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    _add_input(parser, "the log to check")
    _add_json(parser, "print one JSON object (see docs/cli.md) instead of text")
    parser.add_argument("--strict", action="store_true",
                        help="a wire history only: check the provider's rules about each "
                             "item's content too (an assistant message with no content, an "
                             "empty text block, …; docs/formats/README.md lists them)")


CHECK = Command(
    name="check",
    summary="report whether a log is valid and closed",
    description="Check a session log (or a wire history) against the balance rules and "
                "report whether it is valid and whether it is closed (no turn in flight), "
                "with the first violation in words.\n\n" + _INPUTS_HELP,
    add_arguments=_check_arguments,
    epilog="exit status: 0 valid and closed; 1 valid but open (a turn is in flight); "
           "2 unreadable input; 3 invalid (a balance rule is broken)",
)

# --------------------------------------------------------------------------- seed


def _seed_arguments(parser: argparse.ArgumentParser) -> None:
    _add_input(parser, "the (parent) log to cut")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="write the seed to OUT (atomically: a temporary file in OUT's "
                             "directory, then a rename) instead of stdout; - is stdout; OUT "
                             "may not be the input itself")
    _add_json(parser, "print the report as one JSON object on stdout (needs -o OUT)")


SEED = Command(
    name="seed",
    summary="write the completed-turn prefix of a log (a fork child's seed)",
    description="Write the completed-turn prefix of a log (every event through the last "
                "turn/end) as JSONL events, and report its length and what it excluded "
                "(the in-flight turn and between-turn events after the last turn/end). The "
                "report goes to stderr, or to stdout as JSON with --json. A wire history's "
                "prefix (every item through its last completed turn) keeps the input's "
                "layout: a list, a request body with its other keys, or JSONL.\n\n"
                + _INPUTS_HELP,
    add_arguments=_seed_arguments,
    epilog="exit status: 0 seed written (a wire history's cut stops before its first "
           "violation, so it is always written); 2 unreadable input, unwritable OUT, or OUT "
           "is the input (OUT and the input left untouched); 3 the log breaks a rule before "
           "the cut (nothing written)",
)

# --------------------------------------------------------------------------- show


@dataclass(frozen=True)
class TurnRange:
    """Turns ``first..last`` (either end open), as ``--turns`` gives them."""

    first: int | None
    last: int | None

    def __contains__(self, turn: object) -> bool:
        return (isinstance(turn, int) and (self.first is None or turn >= self.first)
                and (self.last is None or turn <= self.last))

    def __str__(self) -> str:
        if self.first is not None and self.first == self.last:
            return str(self.first)
        first = "" if self.first is None else str(self.first)
        return f"{first}..{'' if self.last is None else self.last}"


_RANGE = re.compile(r"(\d*)\.\.(\d*)")


def parse_turn_range(text: str) -> TurnRange:
    """``4``, ``3..7``, ``5..``, ``..2`` or ``..`` as a :class:`TurnRange`.

    >>> parse_turn_range("3..7"), parse_turn_range("5.."), parse_turn_range("4")
    (TurnRange(first=3, last=7), TurnRange(first=5, last=None), TurnRange(first=4, last=4))

    Raises:
        argparse.ArgumentTypeError: not a turn or a range, a turn 0, or a backwards range.
    """
    spelled = text.strip()
    if spelled.isascii() and spelled.isdigit():
        first: int | None = int(spelled)
        last: int | None = first
    else:
        match = _RANGE.fullmatch(spelled)
        if match is None:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a turn or a range of turns (use N, A..B, A.. or ..B)")
        first = int(match.group(1)) if match.group(1) else None
        last = int(match.group(2)) if match.group(2) else None
    if first == 0 or last == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: turns are numbered from 1")
    if first is not None and last is not None and first > last:
        raise argparse.ArgumentTypeError(
            f"{text!r} runs backwards (did you mean {last}..{first}?)")
    return TurnRange(first, last)


def _positive_count(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of turns (1 or more)")
    return int(text)


def _show_arguments(parser: argparse.ArgumentParser) -> None:
    _add_input(parser, "the log to draw")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--turns", metavar="RANGE", type=parse_turn_range,
                       help="draw these turns as trees: N, A..B, A.. or ..B (turn numbers "
                            "as in the log)")
    which.add_argument("--tail", metavar="N", type=_positive_count,
                       help="draw the last N turns as trees")
    which.add_argument("--all", action="store_true",
                       help="draw every turn as a tree (the same as --turns ..)")
    parser.add_argument("--seed", action="store_true",
                        help="a fork child's inherited seed too (by default it is one line)")
    parser.add_argument("--plain", action="store_true",
                        help="no colour or other ANSI styling (automatic when stdout is not "
                             "a terminal or NO_COLOR is set)")
    parser.add_argument("--no-pager", action="store_true",
                        help="never page (by default output to a terminal goes through "
                             "TURNFORK_PAGER, PAGER or less, with LESS=FRX)")
    _add_json(parser, "print the outline the picture is drawn from, as JSON")


SHOW = Command(
    name="show",
    summary="summarise or draw a log: turns, steps, tool calls, the completed-turn cut",
    description="Without --turns, --tail or --all: a summary that fits a screen, whatever "
                "the size of the log: the header, counts (turns, steps, tool calls, results, "
                "chunks), one line per turn (the middle of a long log left out), the "
                "completed-turn cut as a rule line (what a fork child is seeded with lies "
                "above it) and what lies beyond it.\n\n"
                "With --turns, --tail or --all: those turns drawn as trees of steps, tool "
                "calls with their results, assistant and user text (shortened) and "
                "between-turn events; what is left out is one line. Streamed chunks are "
                "counted, not listed. A fork child's inherited seed is one line unless "
                "--seed is given. On a terminal the output goes through a pager, as git's "
                "does.\n\n" + _INPUTS_HELP,
    add_arguments=_show_arguments,
    epilog="exit status: 0 shown (closed or open log); 2 unreadable input, or no turn in "
           "the range; 3 the log breaks a rule (shown, with the violation marked)",
)

# --------------------------------------------------------------------------- demo


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="NAME",
                        help="run the same scenario against a real OpenAI-compatible model "
                             "NAME (e.g. deepseek-chat) instead of the embedded scripted "
                             "models")
    parser.add_argument("--base-url", metavar="URL",
                        help="the endpoint of --model (default https://api.deepseek.com; "
                             "the key is read from OPENAI_API_KEY for api.openai.com, else "
                             "DEEPSEEK_API_KEY; a local server on loopback needs none)")
    parser.add_argument("--api-key", metavar="KEY",
                        help="the key for --model, instead of the environment (visible to "
                             "other users of this machine in the process list)")
    parser.add_argument("--save", metavar="DIR",
                        help="persist both sessions under DIR in DSH's layout "
                             "(DIR/<project>/<session id>/session.jsonl)")
    parser.add_argument("--timeout", metavar="SECONDS", type=float, default=None,
                        help="the longest one user turn may take, the child's run included, "
                             "before it is cancelled (default 300)")
    parser.add_argument("--max-retries", metavar="N", type=int, default=None,
                        help="how many times a failed model request (rate limit, server "
                             "error, timeout, broken connection, empty answer) is retried, "
                             "with backoff from 0.5 s to 10 s (default 5; 0: none)")
    parser.add_argument("--plain", action="store_true",
                        help="no colour, styling or progress spinner (colour is also off when "
                             "stdout is not a terminal or NO_COLOR is set)")
    _add_json(parser, "print a summary as one JSON object (see docs/cli.md) instead of the "
                      "picture")


DEMO = Command(
    name="demo",
    summary="watch a parent agent fork a child mid-turn (embedded models, no key needed)",
    description="Run the main job end to end and draw it. A parent agent works on a tiny "
                "in-memory project over three turns with real tools (list_files, read_file, "
                "grep); in the middle of its third turn it calls the subagent tool, and a fork "
                "child seeded with the parent's completed-turn prefix (turns 1 and 2) runs a "
                "turn of its own. The parent gets only the child's final text and finishes "
                "its turn. The picture shows the parent's turns, the cut (the fork point), "
                "the child's own events after its seed, the tool result the parent received "
                "and its final answer, then checks both logs.\n\n"
                "By default two scripted models play the parent and the child: no key, no "
                "network, the same output every time. --model NAME runs the same scenario "
                "(same tools, same user turns) against a real OpenAI-compatible model.\n\n"
                "--save DIR writes both sessions as DSH session files "
                "(DIR/<project>/<session id>/session.jsonl); `turnfork check PATH`, "
                "`turnfork show PATH` and `turnfork seed PATH` read them.",
    add_arguments=_demo_arguments,
    module="demo_command",
    epilog="exit status: 0 the scenario ran and every check passed; 1 it ran but something "
           "went wrong (the model did not delegate, a turn failed, a check failed: the "
           "message says what); 2 no API key for --model, unwritable DIR, or bad usage; "
           "130 interrupted",
)

# --------------------------------------------------------------------------- export


def _export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="a session to export: a session file (plain or zstd) or a "
                             "session directory, e.g. one `turnfork demo --save DIR` wrote "
                             "(- reads stdin)")
    parser.add_argument("-o", "--output", metavar="OUT", required=True,
                        help="one PATH: the file to write (- is stdout), or a directory; "
                             "several: a directory (created if missing). In a directory each "
                             "session is written in DSH's layout, "
                             "OUT/<project>/<session id>/session.jsonl")
    parser.add_argument("--zstd", action="store_true",
                        help="write zstd (session.jsonl.zstd, DSH's default encoding; an OUT "
                             "file named *.zstd is written so anyway)")
    parser.add_argument("--force", action="store_true",
                        help="replace output files that exist (each one is said); without "
                             "it an existing output refuses the export")
    _add_json(parser, "print the report as one JSON object on stdout")


EXPORT = Command(
    name="export",
    summary="write sessions as self-contained DSH session files (fork seeds inline)",
    description="Write each session as one DSH session file: its header line, then every "
                "event. A fork child saved by turnfork's disk store keeps its seed in its "
                "parent's file (a turnfork/seed record DSH does not read); the exported file "
                "holds the seed inline, so DSH reads it as its own.\n\n"
                "Every input is read and checked and every output planned before anything is "
                "written: an unreadable input, one without a session header, an invalid log, "
                "an output that is an input or that exists (without --force) refuses the "
                "whole export, and nothing is written. Each file is written atomically.",
    add_arguments=_export_arguments,
    epilog="exit status: 0 every session exported; 2 an unreadable input, an unusable or "
           "existing output, or a write that failed (the sessions already exported are "
           "said); 3 an input breaks a balance rule (nothing written)",
)

#: Every subcommand, in the order ``--help`` lists them.
COMMANDS: tuple[Command, ...] = (CHECK, SEED, SHOW, EXPORT, DEMO)

# --------------------------------------------------------------------------- entry point


class _Paragraphs(argparse.HelpFormatter):
    """Descriptions and epilogs wrapped to the terminal, paragraph by paragraph."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(super(_Paragraphs, self)._fill_text(paragraph, width, indent)
                           for paragraph in text.split("\n\n"))


class _Parser(argparse.ArgumentParser):
    """argparse, with its error line made inert (it quotes arguments, e.g. file names)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_UNREADABLE, f"{self.prog}: error: {inert(message)}\n")


def build_parser(commands: Sequence[Command] = COMMANDS) -> argparse.ArgumentParser:
    """The argument parser: one subparser per command, ``--help`` on each."""
    parser = _Parser(
        prog=PROG, formatter_class=_Paragraphs,
        description="turnfork: fork and spawn subagents from a completed-turn prefix. "
                    "Inspect session logs (turnfork's or DSH's) from the command line.",
        epilog="exit status: 0 success; 1 the log is open (check) or the demo did not go as "
               "intended; 2 unreadable input, unwritable output or bad usage; 3 the log is "
               "invalid (it breaks a balance rule); 130 interrupted; 141 stdout closed early. "
               "Run 'turnfork COMMAND --help' for details.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for command in commands:
        sub = subparsers.add_parser(
            command.name, help=command.summary, description=command.description,
            epilog=command.epilog, formatter_class=_Paragraphs)
        command.add_arguments(sub)
        sub.set_defaults(command=command)
    return parser


def _tolerate_narrow_encodings() -> None:
    # A terminal or pipe that cannot encode "…", "─" or "✓" must get a replacement
    # character, not a UnicodeEncodeError traceback.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="replace")


@contextlib.contextmanager
def _whole_stdout() -> Iterator[None]:
    """The process's stdout, written whole or not at all while the command runs: a write a
    closed pipe cut short raises ``BrokenPipeError`` instead of being dropped in silence (a
    buffered stream may report a short write of a large piece and lose the rest)."""
    stdout = sys.stdout
    if stdout is not sys.__stdout__ or not isinstance(stdout, io.TextIOWrapper):
        yield  # embedded, or captured: left as it is
        return
    try:
        descriptor = stdout.fileno()
    except (OSError, ValueError):
        yield
        return
    stdout.flush()
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(WholeWrites(descriptor)), encoding=stdout.encoding,
        errors="replace", line_buffering=stdout.line_buffering)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        sys.stdout = stdout


def _stand_in_for_closed_streams() -> None:
    # A descriptor the shell closed (`2>&-`, `>&-`) leaves sys.stderr or sys.stdout None, and
    # print(file=None) writes to stdout: the reports would land in the seed. A closed stderr
    # takes nothing; a closed stdout refuses what is written, which is then said.
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the process's
    if sys.stdout is None:
        sys.stdout = closed_stdout()


def _quiet_stdout() -> None:
    """Point stdout's descriptor at the null device: what is still buffered for it is then
    dropped in silence when the interpreter flushes it at exit."""
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError):  # a stdout the shell closed: nothing is buffered for it
        sys.stdout.close()
        return
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), descriptor)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    _stand_in_for_closed_streams()
    _tolerate_narrow_encodings()
    with _whole_stdout():
        return _run(argv)


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args: argparse.Namespace | None = None
    try:
        try:
            args = parser.parse_args(None if argv is None else list(argv))
        except SystemExit as exc:  # --help and --version exit 0, usage errors 2
            sys.stdout.flush()  # argparse ignores a failed write: the flush says it
            return exc.code if isinstance(exc.code, int) else EXIT_UNREADABLE
        command: Command = args.command
        status = command.run(args)
        sys.stdout.flush()
    except KeyboardInterrupt as exc:
        print(f"{PROG}: interrupted" + (f": {exc}" if str(exc) else ""), file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`turnfork show x | head`): stop quietly, as a pipe stage
        # should, and keep the interpreter from complaining when it flushes stdout at exit.
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except UnwritableOutput as exc:
        # A full disk under `> report`: the result was not delivered, whatever it was (exit 1
        # would tell a script the log is open).
        _quiet_stdout()
        error(f"stdout: cannot write: {exc.strerror or exc}")
        return EXIT_UNREADABLE
    except MemoryError:
        path = None if args is None else getattr(args, "path", None)
        where = f"{'<stdin>' if path == '-' else path}: " if path is not None else ""
        error(f"{where}out of memory: the input is larger than this machine can hold")
        return EXIT_UNREADABLE
    return status


if __name__ == "__main__":
    sys.exit(main())
