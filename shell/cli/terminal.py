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
sends long output through a pager on a terminal, as ``git`` does.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, TextIO

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
]

PROG = "turnfork"

#: Characters a terminal may act on, other than the line break and the tab.
_CONTROLS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
             "\u2066-\u2069\ud800-\udfff")
_UNSAFE_IN_LINES = re.compile(f"[{_CONTROLS}]")
_UNSAFE_IN_A_LINE = re.compile(f"[\t\n{_CONTROLS}]")
#: What JSON's encoder leaves raw (it escapes C0 itself).
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                             "\u2066-\u2069\ud800-\udfff]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in _SHORT:
        return _SHORT[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def inert(text: str, *, lines: bool = False) -> str:
    """``text`` with every terminal control shown as a visible escape (see the module doc).

    ``lines=True`` keeps line breaks and tabs (a multi-line panel); otherwise they are escaped
    too, so the text stays on one line.

    >>> inert("ok\\x1b]52;c;aGk=\\x07 \\u202egnp.exe\\r")
    'ok\\\\x1b]52;c;aGk=\\\\x07 \\\\u202egnp.exe\\\\r'
    >>> inert("a\\nb", lines=True)
    'a\\nb'
    """
    pattern = _UNSAFE_IN_LINES if lines else _UNSAFE_IN_A_LINE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


def inert_json(text: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with no raw terminal control.

    Such characters only occur inside JSON strings, where ``\\uNNNN`` means the same thing, so
    the document decodes to the same value.
    """
    return _UNSAFE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def counted(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless it is one: ``counted(2, "event")`` is ``2 events``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


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
    finally:
        with contextlib.suppress(OSError, ValueError):
            stream.close()
        _wait(pager)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _text(binary: IO[bytes]) -> TextIO:
    import io  # noqa: PLC0415

    return io.TextIOWrapper(binary, encoding="utf-8", errors="replace", line_buffering=False)


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
