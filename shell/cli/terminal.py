"""Everything the command line prints goes through here: made inert, then put where it belongs.

Text from a log or a model is untrusted: a session id, a tool name, an error quote or a file
name may hold terminal controls (``ESC [ 2 J`` clears the screen, ``ESC ] 52`` writes the
clipboard, a carriage return overwrites what was printed, U+202E reverses what follows). So
every character that a terminal could act on is shown as a visible escape instead
(:func:`inert`):

* C0 controls U+0000–U+001F, DEL U+007F and C1 controls U+0080–U+009F: ``\\t``, ``\\n``,
  ``\\r`` and ``\\xNN`` otherwise (ESC is ``\\x1b``);
* the line and paragraph separators U+2028/U+2029, the bidirectional controls (U+061C,
  U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and lone surrogates: ``\\uNNNN``.

A backslash is left as it is (a log's own ``\\x1b`` text reads the same as an escaped ESC;
``--json`` tells them apart). JSON output keeps JSON's own escapes for C0 and uses
``\\uNNNN`` for the rest (:func:`inert_json`), so a JSON reader gets the exact text back.

Errors are one line on stderr (:func:`error`); reports go through :func:`say`. :func:`paged`
sends long output through a pager on a terminal, as ``git`` does. Counts are written one way
everywhere (:func:`counted`, ``f"{n:,}"``): with thousands separators; what a reader types back
(a seq, a line, a turn number, a byte offset) is written bare, and ``--json`` holds plain
numbers. :class:`Progress` draws a bar on stderr while a long read runs, on a terminal only.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

from .._inert import inert

if TYPE_CHECKING:
    from subprocess import Popen

__all__ = [
    "PROG",
    "counted",
    "inert",
    "inert_json",
    "error",
    "say",
    "print_json",
    "Output",
    "paged",
    "pager_command",
    "CUT_NOTICE",
    "TrimmedLines",
    "WholeWrites",
    "UnwritableOutput",
    "closed_stdout",
    "Progress",
    "PROGRESS_AFTER",
]

PROG = "turnfork"

#: What JSON's encoder leaves raw (it escapes C0 itself).
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                             "\u2066-\u2069\ud800-\udfff]")


def inert_json(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with no raw terminal control.

    Such characters only occur inside JSON strings, where ``\\uNNNN`` means the same thing, so
    the document decodes to the same value.
    """
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def counted(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless it is one, the number with thousands
    separators: ``counted(2, "event")`` is ``2 events``, ``counted(23009, "event")``
    ``23,009 events``."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def error(message: str) -> None:
    """``turnfork: error: <message>`` on stderr, on one line, inert."""
    print(f"{PROG}: error: {inert(message)}", file=sys.stderr)


def say(text: str, *, file: TextIO | None = None) -> None:
    """One line of a report (stdout by default), inert."""
    print(inert(text), file=sys.stdout if file is None else file)


def print_json(obj: object, *, file: TextIO | None = None) -> None:
    """``obj`` as indented JSON, non-ASCII text kept readable, terminal controls escaped."""
    text = inert_json(json.dumps(obj, indent=2, ensure_ascii=False))
    print(text, file=sys.stdout if file is None else file)


# --------------------------------------------------------------------------- the pager


def pager_command(environ: dict[str, str] | os._Environ[str] | None = None) -> str | None:
    """The pager to use: ``TURNFORK_PAGER``, else ``PAGER``, else ``less``; ``None`` for none.

    An empty value or ``cat`` means no pager, as for ``git``; so does a command not found.
    """
    env = os.environ if environ is None else environ
    command = env.get("TURNFORK_PAGER", env.get("PAGER", "less")).strip()
    if not command or command == "cat":
        return None
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        return None
    return command if shutil.which(program) is not None else None


#: The line a pager shows last when the document was interrupted (Ctrl-C) before its end.
CUT_NOTICE = (f"{PROG}: interrupted (Ctrl-C): the document is cut here, what follows was "
              "never written")


@dataclass(frozen=True)
class Output:
    """Where a command writes: a text stream, and what it finally shows on."""

    stream: TextIO
    #: The output ends on a terminal (directly, or through the pager).
    terminal: bool
    #: The terminal's width when it does (a pipe to the pager has none of its own).
    width: int | None


@contextlib.contextmanager
def paged(*, enabled: bool = True, stdout: TextIO | None = None) -> Iterator[Output]:
    """Write through a pager when ``stdout`` is a terminal and ``enabled``, as ``git`` does.

    ``LESS`` defaults to ``FRX`` (quit when it fits on one screen, pass colours through, leave
    the screen as it was) and ``LV`` to ``-c``. Leaving the pager early is not an error. When
    stdout is not a terminal, or no pager is found, output goes straight to stdout.
    """
    out = sys.stdout if stdout is None else stdout
    on_terminal = _isatty(out)
    command = pager_command() if enabled and on_terminal else None
    if command is None:
        yield Output(stream=out, terminal=on_terminal, width=None)
        return
    import subprocess  # noqa: PLC0415 - only a paged command starts a process

    width = shutil.get_terminal_size().columns
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    out.flush()
    try:
        pager = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        yield Output(stream=out, terminal=on_terminal, width=None)
        return
    assert pager.stdin is not None
    stream = _text(pager.stdin)
    try:
        yield Output(stream=stream, terminal=True, width=width)
    except BrokenPipeError:
        pass  # the reader quit the pager before the end: nothing was lost that was asked for
    except KeyboardInterrupt:
        # The reader is still in the pager, looking at a document that stops here: say so
        # there, where it is read.
        with contextlib.suppress(OSError, ValueError):
            stream.write(f"\n{CUT_NOTICE}\n")
            stream.flush()
        raise KeyboardInterrupt("the document in the pager was cut short") from None
    finally:
        with contextlib.suppress(OSError, ValueError):
            stream.close()
        with contextlib.suppress(OSError, ValueError):
            pager.stdin.close()
        _wait(pager)


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _text(binary: IO[bytes]) -> TextIO:
    return io.TextIOWrapper(io.BufferedWriter(WholeWrites(binary.fileno())), encoding="utf-8",
                            errors="replace", line_buffering=False)


def _wait(pager: Popen[bytes]) -> None:
    """Wait for the pager to end; Ctrl-C meanwhile belongs to it (it stays on screen)."""
    import signal  # noqa: PLC0415

    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals are not ours to change
        pager.wait()
        return
    try:
        pager.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


# --------------------------------------------------------------------------- streams


class WholeWrites(io.RawIOBase):
    """A descriptor written whole or not at all: each write loops until every byte is out
    (a pipe takes a large write in parts) or raises (``BrokenPipeError`` when the reader has
    gone). A buffered writer over a raw file may otherwise report a short write and drop the
    rest without an error. The descriptor is not closed."""

    def __init__(self, descriptor: int) -> None:
        super().__init__()
        self._descriptor = descriptor

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._descriptor

    def isatty(self) -> bool:
        return os.isatty(self._descriptor)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        written = 0
        while written < len(view):
            try:
                written += os.write(self._descriptor, view[written:])
            except BrokenPipeError:
                raise
            except OSError as exc:  # a full disk, an I/O error: not the reader leaving
                raise UnwritableOutput(exc.errno, exc.strerror) from exc
        return written


class UnwritableOutput(OSError):
    """The output cannot take what is written to it (a full disk, an I/O error, a descriptor
    the shell closed): unlike a reader that went away (``BrokenPipeError``), an error to say."""


class _ClosedBytes(io.RawIOBase):
    """A descriptor the shell closed (``>&-``): every write is refused, nothing is held."""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raise UnwritableOutput(errno.EBADF, "it is closed")


class _ClosedText(io.TextIOBase):
    """The text side of :class:`_ClosedBytes`, unbuffered too: nothing is left to flush. A
    flush after a refused write refuses too (once), for a writer that ignores a failed write,
    as argparse's ``--help`` does."""

    def __init__(self) -> None:
        super().__init__()
        self.buffer = _ClosedBytes()
        self._refused = False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._refused = True
        raise UnwritableOutput(errno.EBADF, "it is closed")

    def flush(self) -> None:
        if self._refused:
            self._refused = False
            raise UnwritableOutput(errno.EBADF, "it is closed")

    def close(self) -> None:
        self._refused = False  # said already, or never to be said: the process is ending
        super().close()


def closed_stdout() -> TextIO:
    """What stands for a stdout the process was started without: Python leaves
    ``sys.stdout`` ``None`` then, and ``print()`` to it is an ``AttributeError``."""
    return cast(TextIO, _ClosedText())


_LINE_END = re.compile(r" +((?:\x1b\[[0-9;]*m)*)\n")
_OPEN_END = re.compile(r"(?: |\x1b\[[0-9;]*m)*\Z")


class TrimmedLines(io.TextIOBase):
    """Text passed on to ``stream`` without the spaces at the end of its lines (rich keeps
    the space a wrapped line was broken at; colour codes after it are kept). What may still
    end a line is held back until the next write shows whether it does."""

    def __init__(self, stream: IO[str]) -> None:
        super().__init__()
        self._stream = stream
        self._held = ""

    def write(self, text: str) -> int:
        whole = self._held + text
        open_line = whole.rfind("\n") + 1
        held = _OPEN_END.search(whole, open_line)
        at = len(whole) if held is None else held.start()
        self._held = whole[at:]
        self._stream.write(_LINE_END.sub(r"\1\n", whole[:at]))
        return len(text)

    def flush(self) -> None:
        if not getattr(self._stream, "closed", False):
            self._stream.flush()

    def close(self) -> None:
        """Pass on what is held (it ends no line) and flush; ``stream`` stays open."""
        if not self.closed:
            with contextlib.suppress(OSError, ValueError):
                self._stream.write(self._held)
                self._stream.flush()
            self._held = ""
        with contextlib.suppress(OSError, ValueError):
            super().close()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return _isatty(self._stream)

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self._stream, "errors", None)


# --------------------------------------------------------------------------- progress

#: A read that has run this long (seconds) gets a progress bar, on a terminal.
PROGRESS_AFTER = 1.0


class Progress:
    """A progress bar on stderr for a long read: drawn only when stderr is a terminal, and
    only once the read has run :data:`PROGRESS_AFTER` seconds (``rich`` is imported then);
    removed when it ends. ``measure`` gives (bytes read, bytes to read)."""

    def __init__(self, measure: Callable[[], tuple[int, int]], what: str, *,
                 enabled: bool = True) -> None:
        self._measure = measure
        self._what = what
        self._enabled = enabled and _isatty(sys.stderr)
        self._started = time.monotonic()
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def tick(self) -> None:
        """Called as the read goes on: draws or moves the bar when it is due."""
        if not self._enabled:
            return
        if self._bar is None:
            if time.monotonic() - self._started < PROGRESS_AFTER:
                return
            self._show()
        done, total = self._measure()
        self._bar.update(self._task, completed=done, total=total or None)

    def pause(self) -> None:
        """Take the bar off the screen (before the command writes to the terminal)."""
        self.close()
        self._enabled = False

    def _show(self) -> None:
        from rich.console import Console  # noqa: PLC0415
        from rich.progress import (  # noqa: PLC0415
            BarColumn,
            DownloadColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar  # noqa: PLC0415

        self._bar = Bar(TextColumn(inert(self._what)), BarColumn(), DownloadColumn(),
                        TimeRemainingColumn(),
                        console=Console(file=sys.stderr), transient=True)
        self._task = self._bar.add_task(self._what, total=None)
        self._bar.start()

    def close(self) -> None:
        if self._bar is not None:
            with contextlib.suppress(OSError, ValueError):
                self._bar.stop()
            self._bar = None
