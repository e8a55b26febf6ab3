"""The input a command reads: a path, or ``-`` for stdin; and telling whether a file *is* it.

An input is a DSH log, streamed (:class:`~shell.logfile.LogStream`), or a wire history
(:class:`~.histories.LoadedHistory`), as ``--format`` says: ``dsh``, a wire format, or, not
given, a DSH log unless the DSH reader refuses the file (or reads nothing of it but one torn
line) and it is one JSON document holding a history (a list of items, or a request body),
whose format is then detected. So every DSH log reads as it always did.

Reading is the shared reader's job (:mod:`shell.logfile`: :func:`~shell.logfile.open_log` for
a log, :func:`~shell.logfile.read_text` for a history), with its limits: a device or a FIFO is
refused, sizes, lines and events are capped. For ``-`` the bytes on stdin (plain or zstd) are
spooled, at most :data:`STDIN_LIMIT` of them (the reader's own ``max_bytes``), into a private
temporary file that the same reader reads, for as long as the command runs; messages name
``<stdin>``. A terminal or a device on stdin is refused at once rather than read.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Literal, TypeAlias

import msgspec
from returns.result import Failure

from ..logfile import DEFAULT_LIMITS, LoadedLog, LogReadError, LogStream, open_log, read_text
from .terminal import Progress, error

if TYPE_CHECKING:
    from .histories import LoadedHistory

__all__ = ["STDIN", "STDIN_NAME", "STDIN_LIMIT", "InputFormat", "Loaded", "Opened", "Input",
           "opened_input", "read_input", "is_the_input"]

#: What ``--format`` names.
InputFormat: TypeAlias = Literal["dsh", "openai-chat", "openai-responses", "anthropic"]
#: What a command reads, whole.
Loaded: TypeAlias = "LoadedLog | LoadedHistory"
#: What a command reads, a log streamed.
Opened: TypeAlias = "LogStream | LoadedHistory"

#: The PATH that means stdin.
STDIN = "-"
#: How messages and reports name stdin.
STDIN_NAME = "<stdin>"
#: The most bytes read from stdin: what the reader allows a file (1 GiB by default).
STDIN_LIMIT = DEFAULT_LIMITS.max_bytes
_CHUNK = 1 << 20


@dataclass
class Input:
    """What ``PATH`` names, opened: a log stream or a wire history, and how to open it again
    (a second pass over a log)."""

    #: ``PATH`` as given.
    path: str
    opened: Opened
    _location: str
    _shown: str | None
    _format: InputFormat | None
    _thinking: bool | None

    def again(self) -> Opened | LogReadError:
        """The same input opened once more (stdin's spool is kept while the command runs)."""
        return _open(self._location, self._shown, self._format, self._thinking)


@contextlib.contextmanager
def opened_input(args: argparse.Namespace, *, stdin: BinaryIO | None = None,
                 limit: int = STDIN_LIMIT) -> Iterator[Input | LogReadError]:
    """A reading command's ``PATH``, ``--format`` and ``--thinking``, opened for the length of
    the ``with``; on failure its one error line is printed and the error given instead."""
    thinking = None if args.thinking is None else args.thinking == "on"
    with _located(args.path, stdin, limit) as located:
        if isinstance(located, LogReadError):
            error(located.message)
            yield located
            return
        location, shown = located
        opened = _open(location, shown, args.format, thinking)
        if isinstance(opened, LogReadError):
            error(opened.message)
            yield opened
            return
        try:
            yield Input(args.path, opened, location, shown, args.format, thinking)
        finally:
            if isinstance(opened, LogStream):
                opened.close()


def read_input(path: str, format_name: InputFormat | None = None, *,
               thinking: bool | None = None, stdin: BinaryIO | None = None,
               limit: int = STDIN_LIMIT, progress: str | None = None) -> Loaded | LogReadError:
    """``path`` read whole by the shared reader; ``-`` reads ``stdin`` (default
    ``sys.stdin``). ``format_name`` is ``--format`` (see the module docstring); ``thinking``
    is ``--thinking``, refused for anything but an Anthropic history; ``progress`` says
    what is done, on a progress bar when the read runs long."""
    with _located(path, stdin, limit) as located:
        if isinstance(located, LogReadError):
            return located
        location, shown = located
        opened = _open(location, shown, format_name, thinking)
        if not isinstance(opened, LogStream):
            return opened
        with opened, Progress(lambda: opened.progress, progress or "reading",
                              enabled=progress is not None) as bar:
            read = opened.read_all(tick=bar.tick)
        if isinstance(read, Failure):
            failure: LogReadError = read.failure()
            return failure
        log: LoadedLog = read.unwrap()
        return log


@contextlib.contextmanager
def _located(path: str, stdin: BinaryIO | None,
             limit: int) -> Iterator[tuple[str, str | None] | LogReadError]:
    """Where ``path``'s bytes are on disk, and how to name them (``None``: as found); stdin
    spooled into a private temporary file kept for the length of the ``with``."""
    if path != STDIN:
        yield path, None
        return
    if stdin is None and sys.stdin is None:  # the shell closed it (`<&-`)
        yield LogReadError(file=STDIN_NAME, problem=(
            "stdin is closed: pipe or redirect a log into turnfork"))
        return
    source = sys.stdin.buffer if stdin is None else stdin
    with contextlib.ExitStack() as stack:
        try:
            directory = stack.enter_context(
                tempfile.TemporaryDirectory(prefix="turnfork-stdin-"))
            spool = os.path.join(directory, "stdin")
            problem = _spool(source, spool, limit)
        except OSError as exc:  # reading stdin, or keeping what it gave (a full disk)
            problem = f"cannot read stdin: {exc.strerror or exc}"
        if problem is not None:
            yield LogReadError(file=STDIN_NAME, problem=problem)
            return
        yield spool, STDIN_NAME


def _open(location: str, shown: str | None, format_name: InputFormat | None,
          thinking: bool | None) -> Opened | LogReadError:
    opened = _open_file(location, shown, format_name, thinking)
    if shown is not None:
        opened = _named_stdin(opened, location)
    if thinking is not None and not isinstance(opened, LogReadError):
        refused = _thinking_refused(opened)
        if refused is not None:
            if isinstance(opened, LogStream):
                opened.close()
            return refused
    return opened


def _named_stdin(opened: Opened | LogReadError, spool: str) -> Opened | LogReadError:
    """What was read from stdin's spool, named ``<stdin>``."""
    if isinstance(opened, LogStream):
        return opened
    if isinstance(opened, LogReadError):
        if opened.file not in (spool, STDIN_NAME):  # a file beside it: a fork child's seed
            return msgspec.structs.replace(opened, file=STDIN_NAME, line=None, seq=None, problem=(
                f"{os.path.basename(opened.file)}: {opened.problem} (the log on stdin names a "
                "file beside it, a fork child's seed: give the session file's path instead)"))
        return msgspec.structs.replace(
            opened, file=STDIN_NAME, problem=opened.problem.replace(spool, STDIN_NAME))
    return msgspec.structs.replace(opened, path=STDIN_NAME, file=STDIN_NAME)


def _thinking_refused(opened: Opened) -> LogReadError | None:
    if isinstance(opened, LogStream):
        what, file = "a DSH log", opened.file
    elif opened.format == "anthropic":
        return None
    else:
        from .histories import FORMAT_WORDS  # noqa: PLC0415

        what, file = f"this is {FORMAT_WORDS[opened.format]}", opened.path
    return LogReadError(file=file, problem=(
        f"--thinking is the setting of an Anthropic request, and {what}"))


def _open_file(path: str, shown: str | None, format_name: InputFormat | None,
               thinking: bool | None) -> Opened | LogReadError:
    # The wire formats are imported only for an input that may be one: a DSH log's command
    # does not pay for them.
    if format_name is not None and format_name != "dsh":
        from .histories import read_history  # noqa: PLC0415

        return read_history(path, path, format_name, thinking=thinking)
    result = open_log(path, shown=shown)
    if isinstance(result, Failure):
        failure: LogReadError = result.failure()
    else:
        stream: LogStream = result.unwrap()
        if format_name is not None:
            return stream
        first = stream.peek()  # a DSH log unless the reader refuses how the file starts
        if not isinstance(first, LogReadError):
            if not stream.one_torn_line:
                return stream
            # One line and no newline: a JSON document rather than a log whose only record
            # was cut short, when it holds a history.
            detected = _history_in(path, thinking)
            if detected is None or isinstance(detected, tuple):
                return stream
            stream.close()
            return detected
        stream.close()
        failure = first
    if format_name == "dsh" or os.path.isdir(path):
        return failure
    if failure.file in (path, shown) and failure.line is not None and failure.line > 1:
        # Its first line read as a record of its own: the file is no one JSON document, and
        # reading it all again to find out would hold the whole of a large log in memory.
        return failure
    found = _history_in(path, thinking)
    if found is None:
        return failure
    if not isinstance(found, tuple):
        return found
    from .histories import jsonl_items_hint  # noqa: PLC0415

    hint = jsonl_items_hint(found[0])
    return failure if hint is None else msgspec.structs.replace(
        failure, problem=f"{failure.problem} {hint}")


def _history_in(path: str, thinking: bool | None,
                ) -> LoadedHistory | LogReadError | tuple[bytes] | None:
    """The history ``path`` holds as one JSON document, or why it is none; ``(text,)`` when
    it holds no JSON document at all; ``None`` when it cannot be read as text."""
    text = read_text(path)  # read again only when the DSH reader could not take the file
    if isinstance(text, Failure):
        return None
    from .histories import history_from_text  # noqa: PLC0415

    detected = history_from_text(path, text.unwrap(), None, thinking=thinking)
    return (text.unwrap().text,) if detected is None else detected


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


def is_the_input(output: str, path: str, read: Opened | Loaded) -> bool:
    """Whether the file ``output`` is one the log was read from (any spelling or link of
    it): the log's file, its header file, the seed files of a fork child's log.

    Compares device and inode (:func:`os.path.samestat`), so ``./X``, a symlink or a hard link
    to the input all count; for ``-`` it is the file redirected into stdin, if any.
    """
    try:
        target = os.stat(output)
    except OSError:
        return False  # does not exist (yet), or cannot be looked at: not the input
    sources: list[os.stat_result] = []
    if path == STDIN:
        with contextlib.suppress(OSError, ValueError):
            sources.append(os.fstat(sys.stdin.fileno()))
    files = read.files if isinstance(read, LogStream | LoadedLog) else (read.file,)
    for file in files:
        if file != STDIN_NAME:
            with contextlib.suppress(OSError, ValueError):
                sources.append(os.stat(file))
    return any(os.path.samestat(source, target) for source in sources)
