"""The ``turnfork`` command line: ``check``, ``seed`` and ``show`` a session log; ``demo``.

Conventions: results go to stdout, reports and errors to stderr; an error is one line,
``turnfork: error: <file>:<line>: <problem>``, never a traceback. ``--json`` prints one JSON
object on stdout for machines. Exit codes: 0 success, 1 the log is open or invalid (the
message says which), 2 unreadable input, unwritable output or bad usage, 130 interrupted,
141 stdout closed early.

Commands are :class:`Command` records listed in :data:`COMMANDS`; a new command (``demo``)
is added by defining one more record and appending it there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from returns.result import Failure

from ... import __version__
from ...core import Violation, check_balance, completed_turn_prefix, encode_log
from ..logfile import LoadedLog, LogReadError, read_log
from .assess import Assessment, Tail, assess

__all__ = [
    "EXIT_OK",
    "EXIT_NOT_CLOSED",
    "EXIT_UNREADABLE",
    "EXIT_INTERRUPTED",
    "EXIT_BROKEN_PIPE",
    "Command",
    "COMMANDS",
    "build_parser",
    "main",
]

EXIT_OK = 0
#: The log is open (valid but ends inside a turn) or invalid (breaks a rule).
EXIT_NOT_CLOSED = 1
#: Unreadable input, unwritable output, or bad usage (argparse's own code).
EXIT_UNREADABLE = 2
EXIT_INTERRUPTED = 130
#: stdout was closed early (``turnfork show x | head``): 128 + SIGPIPE, as a shell reports it.
EXIT_BROKEN_PIPE = 141

PROG = "turnfork"

_INPUTS_HELP = """\
PATH may be a JSONL event log, a DSH session.jsonl or session.jsonl.zstd file, or a DSH
session directory holding one of them. The kind is detected from the content; DSH's
projected test fixtures (records without seq/time) are recognised and said so."""


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, help texts, its arguments and what it runs."""

    name: str
    summary: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    epilog: str = ""


# --------------------------------------------------------------------------- output helpers


#: Line breaks a message may quote from the input (a type name, a key): shown escaped, so an
#: error stays one line.
_LINE_BREAKS = {code: repr(chr(code))[1:-1]
                for code in (0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)}


def _error(message: str) -> None:
    print(f"{PROG}: error: {message.translate(_LINE_BREAKS)}", file=sys.stderr)


def _print_json(obj: object) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def _violation_json(violation: Violation, line: int | None) -> dict[str, object]:
    return {"seq": violation.seq, "rule": violation.rule, "message": violation.problem,
            "line": line}


def _error_json(error: LogReadError) -> dict[str, object]:
    return {"file": error.file, "line": error.line, "seq": error.seq,
            "event_type": error.event_type, "problem": error.problem,
            "message": error.message}


def _input_json(path: str, log: LoadedLog | None) -> dict[str, Any]:
    return {
        "path": path,
        "file": None if log is None else log.file,
        "format": None if log is None else log.format,
        "projected": None if log is None else log.projected,
        "source": None if log is None else log.description,
        "events": None if log is None else len(log.events),
    }


def _where(log: LoadedLog, line: int | None) -> str:
    """``file:line`` when a line is known, else the path as given."""
    return log.path if line is None else f"{log.file}:{line}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _load(path: str) -> LoadedLog | LogReadError:
    loaded = read_log(path)
    if isinstance(loaded, Failure):
        error: LogReadError = loaded.failure()
        _error(error.message)
        return error
    log: LoadedLog = loaded.unwrap()
    return log


# --------------------------------------------------------------------------- check


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="the log to check")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (see docs/cli.md) instead of text")


def _check_json(path: str, log: LoadedLog | None, assessment: Assessment | None,
                error: LogReadError | None) -> dict[str, object]:
    report: dict[str, object] = _input_json(path, log)
    report.update({
        "valid": False, "closed": False, "state": "unreadable",
        "completed_prefix_length": None, "completed_turns": None, "open_turn": None,
        "open_step": None, "pending_calls": [], "events_after_cut": None,
        "violation": None, "verdict": None,
        "error": None if error is None else _error_json(error),
    })
    if assessment is None or log is None:
        return report
    report.update({"valid": assessment.valid, "closed": assessment.closed,
                   "state": assessment.state, "verdict": assessment.verdict(len(log.events))})
    if assessment.violation is not None:
        report["violation"] = _violation_json(assessment.violation, assessment.violation_line)
    trace = assessment.trace
    if trace is not None:  # figures past a violation would not be trustworthy
        report.update({
            "completed_prefix_length": assessment.cut,
            "completed_turns": assessment.completed_turns,
            "open_turn": trace.open_turn, "open_step": trace.open_step,
            "pending_calls": [call.call_id for call in trace.pending_calls],
            "events_after_cut": assessment.tail.events,
        })
    return report


def _run_check(args: argparse.Namespace) -> int:
    loaded = _load(args.path)
    if isinstance(loaded, LogReadError):
        if args.json:
            _print_json(_check_json(args.path, None, None, loaded))
        return EXIT_UNREADABLE
    log = loaded
    assessment = assess(log)
    if args.json:
        _print_json(_check_json(args.path, log, assessment, None))
    else:
        print(f"{_where(log, assessment.violation_line)}: {assessment.verdict(len(log.events))}")
        print(f"  input: {log.description}; {_count(len(log.events), 'event')}")
        if assessment.valid:
            print(f"  completed-turn prefix: {_count(assessment.cut, 'event')}, "
                  f"{_count(assessment.completed_turns, 'turn')} "
                  "(what a fork child is seeded with; `turnfork seed` writes it)")
    return EXIT_OK if assessment.closed else EXIT_NOT_CLOSED


CHECK = Command(
    name="check",
    summary="report whether a log is valid and closed",
    description="Check a session log against the balance rules and report whether it is "
                "valid and whether it is closed (no turn in flight), with the first "
                "violation in words.\n\n" + _INPUTS_HELP,
    add_arguments=_check_arguments,
    run=_run_check,
    epilog="exit status: 0 valid and closed; 1 valid but open, or invalid; "
           "2 unreadable input",
)

# --------------------------------------------------------------------------- seed


def _seed_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="the (parent) log to cut")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="write the seed to OUT (atomically: a temporary file in OUT's "
                             "directory, then a rename) instead of stdout")
    parser.add_argument("--json", action="store_true",
                        help="print the report as one JSON object on stdout (needs -o)")


def _excluded_words(tail: Tail) -> str:
    if not tail.events:
        return "excluded: nothing (the log ends with turn/end)"
    parts = []
    if tail.between_turn_events:
        parts.append(_count(tail.between_turn_events, "between-turn event"))
    if tail.open_turn is not None:
        parts.append(f"in-flight turn {tail.open_turn} "
                     f"({_count(tail.in_flight_events, 'event')} from seq {tail.open_turn_seq})")
    return (f"excluded: {_count(tail.events, 'event')} after the last turn/end: "
            + ", then ".join(parts))


def _tail_json(tail: Tail) -> dict[str, object]:
    return {"events": tail.events, "open_turn": tail.open_turn,
            "open_turn_seq": tail.open_turn_seq, "in_flight_events": tail.in_flight_events,
            "between_turn_events": tail.between_turn_events}


def _seed_json(path: str, log: LoadedLog | None) -> dict[str, object]:
    report: dict[str, object] = _input_json(path, log)
    report.update({"output": None, "seed_length": None, "completed_turns": None,
                   "excluded": None, "violation": None, "tail_violation": None, "error": None})
    return report


def _write_atomically(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` whole, or leave it untouched (raises ``OSError``)."""
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a directory", path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle, temporary = tempfile.mkstemp(dir=directory,
                                         prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # durability of the rename; not every FS allows it
        directory_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(directory_fd)
        finally:
            os.close(directory_fd)


def _run_seed(args: argparse.Namespace) -> int:
    if args.json and args.output is None:
        _error("seed --json needs -o OUT (stdout cannot carry both the seed and the report)")
        return EXIT_UNREADABLE
    loaded = _load(args.path)
    report = _seed_json(args.path, None if isinstance(loaded, LogReadError) else loaded)
    if isinstance(loaded, LogReadError):
        if args.json:
            report["error"] = _error_json(loaded)
            _print_json(report)
        return EXIT_UNREADABLE
    log = loaded
    prefix = completed_turn_prefix(log.events)
    balanced = check_balance(prefix)
    if isinstance(balanced, Failure):
        violation: Violation = balanced.failure()
        line = log.line_of(violation.seq)
        _error(f"{_where(log, line)}: invalid: {violation.message} (rule: {violation.rule}); "
               "a seed must be valid, nothing written")
        if args.json:
            report["violation"] = _violation_json(violation, line)
            _print_json(report)
        return EXIT_NOT_CLOSED
    assessment = assess(log)
    data = encode_log(prefix)
    destination = "stdout" if args.output is None else args.output
    if args.output is not None:
        try:
            _write_atomically(args.output, data)
        except OSError as exc:
            problem = exc.strerror or str(exc)
            _error(f"{args.output}: cannot write: {problem}; nothing written")
            if args.json:
                report["error"] = {"file": args.output, "line": None, "seq": None,
                                   "event_type": None, "problem": f"cannot write: {problem}",
                                   "message": f"{args.output}: cannot write: {problem}"}
                _print_json(report)
            return EXIT_UNREADABLE
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    tail_violation = assessment.violation  # only a violation after the cut can remain here
    if args.json:
        report.update({
            "output": args.output, "seed_length": len(prefix),
            "completed_turns": assessment.completed_turns,
            "excluded": _tail_json(assessment.tail),
            "tail_violation": None if tail_violation is None else _violation_json(
                tail_violation, assessment.violation_line),
        })
        _print_json(report)
        return EXIT_OK
    if len(prefix):
        print(f"seed: {_count(len(prefix), 'event')} (seq 0..{len(prefix) - 1}), "
              f"{_count(assessment.completed_turns, 'completed turn')} → {destination}",
              file=sys.stderr)
    else:
        print(f"seed: empty, no turn has completed (a fork child starts with no history, "
              f"like a spawn) → {destination}", file=sys.stderr)
    print(_excluded_words(assessment.tail), file=sys.stderr)
    if tail_violation is not None:
        print(f"warning: {_where(log, assessment.violation_line)}: the excluded part breaks "
              f"a rule: {tail_violation.message} (rule: {tail_violation.rule})",
              file=sys.stderr)
    return EXIT_OK


SEED = Command(
    name="seed",
    summary="write the completed-turn prefix of a log (a fork child's seed)",
    description="Write the completed-turn prefix of a log (every event through the last "
                "turn/end) as JSONL events, and report its length and what it excluded "
                "(the in-flight turn and between-turn events after the last turn/end). The "
                "report goes to stderr, or to stdout as JSON with --json.\n\n" + _INPUTS_HELP,
    add_arguments=_seed_arguments,
    run=_run_seed,
    epilog="exit status: 0 seed written; 1 the log breaks a rule before the cut (nothing "
           "written); 2 unreadable input or unwritable OUT (OUT left untouched)",
)

# --------------------------------------------------------------------------- show


def _show_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="the log to draw")
    parser.add_argument("--plain", action="store_true",
                        help="no colour or other ANSI styling (automatic when stdout is not "
                             "a terminal or NO_COLOR is set)")
    parser.add_argument("--json", action="store_true",
                        help="print the outline the picture is drawn from, as JSON")


def _run_show(args: argparse.Namespace) -> int:
    from .render import build_outline, make_console, render_outline  # noqa: PLC0415 - rich

    loaded = _load(args.path)
    if isinstance(loaded, LogReadError):
        if args.json:
            _print_json({"path": args.path, "error": _error_json(loaded)})
        return EXIT_UNREADABLE
    assessment = assess(loaded)
    outline = build_outline(loaded, assessment)
    if args.json:
        print(msgspec.json.format(msgspec.json.encode(outline), indent=2).decode())
    else:
        render_outline(make_console(sys.stdout, plain=args.plain), outline)
    return EXIT_NOT_CLOSED if assessment.state == "invalid" else EXIT_OK


SHOW = Command(
    name="show",
    summary="draw a log: turns, steps, tool calls and results, the completed-turn cut",
    description="Draw a log as a picture: the header, each turn as a tree of steps, tool "
                "calls with their results, assistant and user text (shortened), between-turn "
                "events, and the completed-turn cut as a rule line (what a fork child is "
                "seeded with lies above it). Streamed chunks are counted, not listed.\n\n"
                + _INPUTS_HELP,
    add_arguments=_show_arguments,
    run=_run_show,
    epilog="exit status: 0 drawn (closed or open log); 1 the log breaks a rule (drawn, with "
           "the violation marked); 2 unreadable input",
)

# --------------------------------------------------------------------------- demo


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="NAME",
                        help="run the same scenario against a real OpenAI-compatible model "
                             "NAME (e.g. deepseek-chat) instead of the embedded scripted "
                             "models; needs an API key in the environment")
    parser.add_argument("--base-url", metavar="URL",
                        help="the endpoint of --model (default https://api.deepseek.com; "
                             "the key is read from OPENAI_API_KEY for api.openai.com, else "
                             "DEEPSEEK_API_KEY)")
    parser.add_argument("--save", metavar="DIR",
                        help="persist both sessions under DIR in DSH's layout "
                             "(DIR/<project>/<session id>/session.jsonl)")
    parser.add_argument("--timeout", metavar="SECONDS", type=float, default=None,
                        help="the longest one user turn may take, the child's run included, "
                             "before it is cancelled (default 300)")
    parser.add_argument("--plain", action="store_true",
                        help="no colour, styling or progress spinner (colour is also off when "
                             "stdout is not a terminal or NO_COLOR is set)")
    parser.add_argument("--json", action="store_true",
                        help="print a summary as one JSON object (see docs/cli.md) instead "
                             "of the picture")


def _demo_provider(base_url: str) -> str:
    """The provider name the demo registers a real model under, from its endpoint."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    host = (urlsplit(base_url).hostname or "").lower()
    for name in ("deepseek", "openai"):
        if host == f"{name}.com" or host.endswith(f".{name}.com"):
            return name
    return "openai-compatible"


def _run_demo(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415 - only the demo runs an event loop

    from ..jsonl_store import JsonlSessionStore  # noqa: PLC0415
    from ..models.openai_chat import (  # noqa: PLC0415
        DEEPSEEK_BASE_URL,
        credential_env_var,
        has_credentials,
    )
    from ..store import SessionExistsError  # noqa: PLC0415
    from .demo import DEFAULT_TURN_TIMEOUT, DemoResult, demo_summary, run_demo_async  # noqa: PLC0415
    from .render import make_console  # noqa: PLC0415 - rich

    if args.base_url is not None and args.model is None:
        _error("demo --base-url needs --model NAME (the embedded demo calls no endpoint)")
        return EXIT_UNREADABLE
    timeout = DEFAULT_TURN_TIMEOUT if args.timeout is None else args.timeout
    if not timeout > 0:
        _error(f"demo --timeout must be a positive number of seconds, not {args.timeout:g}")
        return EXIT_UNREADABLE
    model = None
    provider = "model"
    if args.model is not None:
        base_url = args.base_url or DEEPSEEK_BASE_URL
        if not has_credentials(base_url):
            _error(f"demo --model {args.model} needs an API key for {base_url}: set "
                   f"{credential_env_var(base_url)} (or run `turnfork demo` without --model "
                   "for the embedded scripted models)")
            return EXIT_UNREADABLE
        from ..models.openai_chat import OpenAIChatModel  # noqa: PLC0415 - optional extra

        provider = _demo_provider(base_url)
        try:
            model = OpenAIChatModel(args.model, base_url=base_url, provider_name=provider,
                                    timeout=min(60.0, timeout))
        except ImportError as exc:
            _error(str(exc))
            return EXIT_UNREADABLE
    store = None
    if args.save is not None:
        problem = None
        try:
            if os.path.exists(args.save) and not os.path.isdir(args.save):
                problem = "not a directory"
            else:
                os.makedirs(args.save, exist_ok=True)
                if not os.access(args.save, os.W_OK | os.X_OK):
                    problem = "permission denied"
        except NotADirectoryError:
            problem = "a component of the path is not a directory"
        except PermissionError:
            problem = "permission denied"
        except OSError as exc:
            problem = exc.strerror or str(exc)
        if problem is not None:
            _error(f"{args.save}: cannot write: {problem}; nothing written")
            return EXIT_UNREADABLE
        store = JsonlSessionStore(args.save)

    spinner = None
    if not args.plain and sys.stderr.isatty():
        from rich.console import Console  # noqa: PLC0415 - rich

        spinner = Console(stderr=True).status("turnfork demo: starting")

    def progress(words: str) -> None:
        if spinner is not None:
            spinner.update(f"turnfork demo: {words}")

    async def demo() -> DemoResult:
        try:
            return await run_demo_async(model=model, provider=provider,
                                        model_name=args.model or "scripted", store=store,
                                        turn_timeout=timeout, progress=progress)
        finally:
            if model is not None:
                await model.aclose()

    try:
        with spinner if spinner is not None else contextlib.nullcontext():
            result = asyncio.run(demo())
    except SessionExistsError as exc:
        _error(f"{args.save}: already holds session {exc.session_id} (from an earlier demo "
               "run?); nothing overwritten: choose another directory")
        return EXIT_UNREADABLE
    except OSError as exc:
        _error(f"{args.save or '.'}: cannot write: {exc.strerror or exc}")
        return EXIT_UNREADABLE
    if args.json:
        _print_json(demo_summary(result))
    else:
        from .demo_render import render_demo  # noqa: PLC0415 - rich

        render_demo(make_console(sys.stdout, plain=args.plain), result)
        sys.stdout.flush()
        if result.parent_saved_path is not None:
            print(f"saved: parent {result.parent_header.id} → {result.parent_saved_path}",
                  file=sys.stderr)
            for fork in result.forks:
                print(f"saved: child {fork.child_id} → {fork.saved_path}", file=sys.stderr)
    if not result.ok:
        _error("demo: " + "; ".join(result.problems))
        return EXIT_NOT_CLOSED
    return EXIT_OK


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
    run=_run_demo,
    epilog="exit status: 0 the scenario ran and every check passed; 1 it ran but something "
           "went wrong (the model did not delegate, a turn failed, a check failed: the "
           "message says what); 2 no API key for --model, unwritable DIR, or bad usage; "
           "130 interrupted",
)

#: Every subcommand, in the order ``--help`` lists them.
COMMANDS: tuple[Command, ...] = (CHECK, SEED, SHOW, DEMO)

# --------------------------------------------------------------------------- entry point


def build_parser(commands: Sequence[Command] = COMMANDS) -> argparse.ArgumentParser:
    """The argument parser: one subparser per command, ``--help`` on each."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="turnfork: fork and spawn subagents from a completed-turn prefix. "
                    "Inspect session logs (turnfork's or DSH's) from the command line.",
        epilog="exit status: 0 success; 1 the log is open or invalid; 2 unreadable input or "
               "bad usage; 130 interrupted. Run 'turnfork COMMAND --help' for details.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for command in commands:
        sub = subparsers.add_parser(
            command.name, help=command.summary, description=command.description,
            epilog=command.epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def _tolerate_narrow_encodings() -> None:
    # A terminal or pipe that cannot encode "…", "─" or "✓" must get a replacement
    # character, not a UnicodeEncodeError traceback.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="replace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    _tolerate_narrow_encodings()
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as exc:  # --help and --version exit 0, usage errors 2
        return exc.code if isinstance(exc.code, int) else EXIT_UNREADABLE
    try:
        status: int = args.run(args)
        sys.stdout.flush()
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`turnfork show x | head`): stop quietly, as a pipe stage
        # should, and keep the interpreter from complaining when it flushes stdout at exit.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return status


if __name__ == "__main__":
    sys.exit(main())
