"""The log a command reads: a path, or ``-`` for stdin; and telling whether a file *is* that input.

Reading is :func:`shell.logfile.read_log`'s job (the one reader of DSH files, with its limits:
a device or a FIFO is refused, sizes, lines and events are capped). For ``-`` the bytes on
stdin (plain or zstd) are spooled, at most :data:`STDIN_LIMIT` of them (the reader's own
``max_bytes``), into a private temporary file that the same reader reads; messages name
``<stdin>``. A terminal or a device on stdin is refused at once rather than read.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from typing import BinaryIO

import msgspec
from returns.result import Failure

from ..logfile import DEFAULT_LIMITS, LoadedLog, LogReadError, read_log
from .terminal import error

__all__ = ["STDIN", "STDIN_NAME", "STDIN_LIMIT", "load", "read_input", "is_the_input"]

#: The PATH that means stdin.
STDIN = "-"
#: How messages and reports name stdin.
STDIN_NAME = "<stdin>"
#: The most bytes read from stdin: what the reader allows a file (1 GiB by default).
STDIN_LIMIT = DEFAULT_LIMITS.max_bytes
_CHUNK = 1 << 20


def load(path: str) -> LoadedLog | LogReadError:
    """Read ``path`` (``-``: stdin); on failure print its one error line and return it."""
    loaded = read_input(path)
    if isinstance(loaded, LogReadError):
        error(loaded.message)
    return loaded


def read_input(path: str, *, stdin: BinaryIO | None = None,
               limit: int = STDIN_LIMIT) -> LoadedLog | LogReadError:
    """``path`` read by the shared reader; ``-`` reads ``stdin`` (default ``sys.stdin``)."""
    if path != STDIN:
        result = read_log(path)
        if isinstance(result, Failure):
            failure: LogReadError = result.failure()
            return failure
        log: LoadedLog = result.unwrap()
        return log
    source = sys.stdin.buffer if stdin is None else stdin
    try:
        with tempfile.TemporaryDirectory(prefix="turnfork-stdin-") as directory:
            spool = os.path.join(directory, "stdin")
            problem = _spool(source, spool, limit)
            if problem is not None:
                return LogReadError(file=STDIN_NAME, problem=problem)
            read = read_input(spool)
    except OSError as exc:  # reading stdin, or keeping what it gave (a full disk)
        return LogReadError(file=STDIN_NAME, problem=f"cannot read stdin: {exc.strerror or exc}")
    if isinstance(read, LogReadError):
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


def is_the_input(output: str, path: str, log: LoadedLog) -> bool:
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
            if log.header_file is not None:
                sources.append(os.stat(log.header_file))
    return any(os.path.samestat(source, target) for source in sources)
