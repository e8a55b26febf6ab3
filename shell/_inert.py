"""Untrusted text (a model's, a log file's, a server's) made inert before it reaches what a
terminal may show: a log record, an exception's message."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["TERMINAL_CONTROLS", "inert"]

#: What a terminal may act on or that reorders or breaks a line: C0 (line breaks and tabs
#: included), DEL, C1, the bidirectional marks and overrides, the Unicode line and paragraph
#: separators, and lone surrogates.
TERMINAL_CONTROLS: Final = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                                      "\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SHORT: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _SHORT.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def inert(text: str) -> str:
    """``text`` on one line, every terminal control shown as a visible escape (``\\n``,
    ``\\x1b``, ``\\u202e``)."""
    return TERMINAL_CONTROLS.sub(_escape, text)
