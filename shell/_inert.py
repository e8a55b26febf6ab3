"""Untrusted text (a model's, a log file's, a server's) made inert before it reaches what a
terminal may show: a log record, an exception's message, the command line's output."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["inert"]

#: What a terminal may act on or that reorders or breaks a line, other than the line break
#: and the tab: C0, DEL, C1, the bidirectional marks and overrides, the Unicode line and
#: paragraph separators, and lone surrogates.
_CONTROLS: Final = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                    "\u2066-\u2069\ud800-\udfff")
_UNSAFE_IN_LINES: Final = re.compile(f"[{_CONTROLS}]")
_UNSAFE_IN_A_LINE: Final = re.compile(f"[\t\n{_CONTROLS}]")
_SHORT: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _SHORT.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def inert(text: str, *, lines: bool = False) -> str:
    """``text`` with every terminal control shown as a visible escape.

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
