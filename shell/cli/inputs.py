"""The input a command reads: a path, or ``-`` for stdin; and telling whether a file *is* it.

An input is a DSH log (:class:`~shell.logfile.LoadedLog`) or a wire history
(:class:`~.histories.LoadedHistory`), as ``--format`` says: ``dsh``, a wire format, or, not
given, a DSH log unless the DSH reader refuses the file and it is one JSON document holding a
history (a list of items, or a request body), whose format is then detected. So every DSH log
reads as it always did.

Reading is :func:`shell.logfile.read_log`'s job for a log and :func:`shell.logfile.read_text`'s
for a history (the one reader, with its limits: a device or a FIFO is refused, sizes, lines and
events are capped). For ``-`` the bytes on stdin (plain or zstd) are spooled, at most
:data:`STDIN_LIMIT` of them (the reader's own ``max_bytes``), into a private temporary file
that the same reader reads; messages name ``<stdin>``. A terminal or a device on stdin is
refused at once rather than read.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import tempfile
from typing import TYPE_CHECKING, BinaryIO, Literal, TypeAlias

import msgspec
from returns.result import Failure, Success

from ..logfile import DEFAULT_LIMITS, LoadedLog, LogReadError, read_log, read_text
from .terminal import error

if TYPE_CHECKING:
    from .histories import LoadedHistory

__all__ = ["STDIN", "STDIN_NAME", "STDIN_LIMIT", "InputFormat", "Loaded", "load", "load_arguments",
           "read_input",
           "is_the_input"]

#: What ``--format`` names.
InputFormat: TypeAlias = Literal["dsh", "openai-chat", "openai-responses", "anthropic"]
#: What a command reads.
Loaded: TypeAlias = "LoadedLog | LoadedHistory"

#: The PATH that means stdin.
STDIN = "-"
#: How messages and reports name stdin.
STDIN_NAME = "<stdin>"
#: The most bytes read from stdin: what the reader allows a file (1 GiB by default).
STDIN_LIMIT = DEFAULT_LIMITS.max_bytes
_CHUNK = 1 << 20


def load_arguments(args: argparse.Namespace) -> Loaded | LogReadError:
    """:func:`load` of a reading command's ``PATH``, ``--format`` and ``--thinking``."""
    thinking = None if args.thinking is None else args.thinking == "on"
    return load(args.path, args.format, thinking=thinking)


def load(path: str, format_name: InputFormat | None = None, *,
         thinking: bool | None = None) -> Loaded | LogReadError:
    """Read ``path`` (``-``: stdin); on failure print its one error line and return it."""
    loaded = read_input(path, format_name, thinking=thinking)
    if isinstance(loaded, LogReadError):
        error(loaded.message)
    return loaded


def _thinking_refused(loaded: Loaded) -> LogReadError | None:
    if isinstance(loaded, LoadedLog):
        what = "a DSH log"
    elif loaded.format == "anthropic":
        return None
    else:
        from .histories import FORMAT_WORDS  # noqa: PLC0415

        what = f"this is {FORMAT_WORDS[loaded.format]}"
    return LogReadError(file=loaded.path, problem=(
        f"--thinking is the setting of an Anthropic request, and {what}"))


def _read_file(path: str, format_name: InputFormat | None,
               thinking: bool | None) -> Loaded | LogReadError:
    # The wire formats are imported only for an input that may be one: a DSH log's command
    # does not pay for them.
    if format_name is not None and format_name != "dsh":
        from .histories import read_history  # noqa: PLC0415

        return read_history(path, path, format_name, thinking=thinking)
    result = read_log(path)
    if isinstance(result, Success):
        log: LoadedLog = result.unwrap()
        return log
    failure: LogReadError = result.failure()
    if format_name == "dsh" or os.path.isdir(path):
        return failure
    text = read_text(path)  # read again only when the DSH reader refused the file
    if isinstance(text, Failure):
        return failure
    from .histories import history_from_text, jsonl_items_hint  # noqa: PLC0415

    detected = history_from_text(path, text.unwrap(), None, thinking=thinking)
    if detected is not None:
        return detected
    hint = jsonl_items_hint(text.unwrap().text)
    return failure if hint is None else msgspec.structs.replace(
        failure, problem=f"{failure.problem} {hint}")


def read_input(path: str, format_name: InputFormat | None = None, *,
               thinking: bool | None = None, stdin: BinaryIO | None = None,
               limit: int = STDIN_LIMIT) -> Loaded | LogReadError:
    """``path`` read by the shared reader; ``-`` reads ``stdin`` (default ``sys.stdin``).

    ``format_name`` is ``--format`` (see the module docstring); ``thinking`` is
    ``--thinking``, refused for anything but an Anthropic history.
    """
    if path != STDIN:
        loaded = _read_file(path, format_name, thinking)
        if thinking is not None and not isinstance(loaded, LogReadError):
            return _thinking_refused(loaded) or loaded
        return loaded
    source = sys.stdin.buffer if stdin is None else stdin
    try:
        with tempfile.TemporaryDirectory(prefix="turnfork-stdin-") as directory:
            spool = os.path.join(directory, "stdin")
            problem = _spool(source, spool, limit)
            if problem is not None:
                return LogReadError(file=STDIN_NAME, problem=problem)
            read = read_input(spool, format_name, thinking=thinking)
    except OSError as exc:  # reading stdin, or keeping what it gave (a full disk)
        return LogReadError(file=STDIN_NAME, problem=f"cannot read stdin: {exc.strerror or exc}")
    if isinstance(read, LogReadError):
        if read.file != spool:  # a file the log names beside it: a fork child's seed file
            return msgspec.structs.replace(read, file=STDIN_NAME, line=None, seq=None, problem=(
                f"{os.path.basename(read.file)}: {read.problem} (the log on stdin names a "
                "file beside it, a fork child's seed: give the session file's path instead)"))
        return msgspec.structs.replace(
            read, file=STDIN_NAME, problem=read.problem.replace(spool, STDIN_NAME))
    return msgspec.structs.replace(read, path=STDIN_NAME, file=STDIN_NAME)


def _spool(source: BinaryIO, spool: str, limit: int) -> str | None:
    """Copy ``source`` into the file ``spool``; the problem in words, or ``None`` (raises
    ``OSError`` when reading or writing fails)."""
    kind = _kind(source)
    if kind is not None:
        return kind
    written = 0
    with open(spool, "wb") as out:
        while True:
            chunk = source.read(min(_CHUNK, limit + 1 - written))
            if not chunk:
                return None
            written += len(chunk)
            if written > limit:
                return (f"stdin holds more than the read limit of {limit:,} bytes "
                        "(ReadLimits.max_bytes)")
            out.write(chunk)


def _kind(source: BinaryIO) -> str | None:
    """Why stdin cannot be a log (a terminal, a device), or ``None``."""
    try:
        descriptor = source.fileno()
    except (AttributeError, OSError, ValueError):
        return None  # an in-memory stream
    if os.isatty(descriptor):
        return "stdin is a terminal: pipe or redirect a log into turnfork"
    with contextlib.suppress(OSError):
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return "stdin is a device, not a log"
    return None


def is_the_input(output: str, path: str, log: Loaded) -> bool:
    """Whether the file ``output`` is one the log was read from (any spelling or link of it).

    Compares device and inode (:func:`os.path.samestat`), so ``./X``, a symlink or a hard link
    to the input all count; for ``-`` it is the file redirected into stdin, if any.
    """
    try:
        target = os.stat(output)
    except OSError:
        return False  # does not exist (yet), or cannot be looked at: not the input
    sources: list[os.stat_result] = []
    with contextlib.suppress(OSError, ValueError):
        if path == STDIN:
            sources.append(os.fstat(sys.stdin.fileno()))
        else:
            sources.append(os.stat(log.file))
            if isinstance(log, LoadedLog) and log.header_file is not None:
                sources.append(os.stat(log.header_file))
    return any(os.path.samestat(source, target) for source in sources)
