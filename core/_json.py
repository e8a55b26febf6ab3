"""JSON text rules shared by the codec, the event model and tool arguments.

* **Nesting.** JSON nested deeper than :data:`MAX_JSON_DEPTH` levels is refused. msgspec and
  the standard library parse recursively, and how deep they get before ``RecursionError``
  depends on the Python version (about 1,000 levels on 3.11 minus the caller's stack, 1,500 on
  3.12, 10,000 on 3.13), so the limit is ours and is checked on the text before parsing.
* **Lossless numbers.** DSH's JavaScript refuses ``-0`` and numbers it cannot hold
  (``1e999`` reads as Infinity); an integer beyond ±(2^53−1) would read back rounded.
* **Lone surrogates.** ``JSON.parse`` accepts an escape such as ``"\\ud800"`` that msgspec
  refuses. :func:`mask_lone_surrogates` rewrites such escapes as escapes of private-use
  characters msgspec reads, and :func:`unmask_text` / :func:`unmask_json` turn them back.
"""

from __future__ import annotations

import itertools
import json
import math
import operator
import re
from typing import Any

from ._checking import unchecked

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_SAFE_INTEGER",
    "brackets_close",
    "exceeds_depth",
    "has_negative_zero",
    "negative_zero_candidates",
    "json_string_literal",
    "lossless_problem",
    "mask_lone_surrogates",
    "plain_lone_surrogates",
    "may_be_lossy",
    "unmask_json",
    "unmask_text",
]

#: Deepest JSON nesting read or written, the same on every Python: arrays and objects inside
#: one another (``{}`` is one level). Far beyond any real log; well within what msgspec can
#: parse on every supported Python from a moderately deep call stack.
MAX_JSON_DEPTH = 512
#: JavaScript's Number.MAX_SAFE_INTEGER.
MAX_SAFE_INTEGER = 2**53 - 1

# --------------------------------------------------------------------------- nesting

# A complete JSON string literal (the unrolled form never backtracks).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_OPEN_CLOSE = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")


@unchecked
def exceeds_depth(text: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON ``text`` nests arrays and objects more than ``limit`` levels deep.

    Brackets inside strings do not count. Cheap when the text has at most ``limit`` opening
    brackets (the nesting cannot be deeper than that); otherwise one pass in C over the
    brackets left once strings are removed.

    >>> exceeds_depth(b'[[1]]', 2), exceeds_depth(b'[[[1]]]', 2), exceeds_depth(b'["[[["]', 1)
    (False, True, False)
    """
    if text.count(b"[") + text.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", text).translate(_OPEN_CLOSE, _NOT_BRACKETS)
    steps = map(operator.sub, brackets, itertools.repeat(1))  # +1 opening, -1 closing
    return max(itertools.accumulate(steps), default=0) > limit


_CLOSING = {ord("]"): ord("["), ord("}"): ord("{")}


@unchecked
def brackets_close(text: bytes) -> bool:
    """Whether the brackets of ``text`` (outside strings) close in order and nothing but white
    space follows the last one: a whole value, for text too deep to parse here.

    >>> brackets_close(b'[{"a":"]"}]'), brackets_close(b'[{"a":1}'), brackets_close(b'[]]')
    (True, False, False)
    """
    skeleton = _STRING.sub(b'""', text)
    open_brackets: list[int] = []
    for byte in skeleton.translate(None, _NOT_BRACKETS):
        if byte in _CLOSING:
            if not open_brackets or open_brackets.pop() != _CLOSING[byte]:
                return False
        else:
            open_brackets.append(byte)
    return not open_brackets and skeleton.rstrip()[-1:] in (b"]", b"}")


# --------------------------------------------------------------------------- lossless numbers

_NEGATIVE_ZERO = re.compile(rb"(?<![0-9.eE+-])-0(?:\.0*)?(?:[eE][+-]?[0-9]+)?(?![0-9.eE])")
# A JSON number starts after ':', ',', '[' or white space.
_NUMBER_STARTS = frozenset(b":,[ \t\r\n")
_MINUS_ZERO = re.compile(rb"-0")


@unchecked
def has_negative_zero(text: bytes) -> bool:
    """Whether JSON ``text`` holds the number ``-0`` (``-0.0``, ``-0e5``…) outside strings.

    >>> has_negative_zero(b'{"a":-0.0}'), has_negative_zero(b'{"a":"-0","b":-0.5}')
    (True, False)
    """
    for found in _MINUS_ZERO.finditer(text):
        at = found.start()
        if at and text[at - 1] in _NUMBER_STARTS:
            return _NEGATIVE_ZERO.search(_STRING.sub(b'""', text)) is not None
    return False


@unchecked
def negative_zero_candidates(data: bytes) -> list[int]:
    """Offsets in ``data`` where ``-0`` follows a byte a number may start after (a cheap
    over-approximation of :func:`has_negative_zero`, to be confirmed on the lines found)."""
    return [found.start() for found in _MINUS_ZERO.finditer(data)
            if found.start() and data[found.start() - 1] in _NUMBER_STARTS]


# Digits become "0", every byte a number may follow becomes ":", "E" and an exponent's "+"
# become "e" and "0": an unsafe integer is 16 zeros in a row; a number beyond the double
# range without 16 digits in a row has an exponent of three digits or more, "e000".
_SCAN_TABLE = bytes.maketrans(b"123456789,[ \t\r\nE+", b"000000000::::::e0")


@unchecked
def may_be_lossy(text: bytes) -> bool:
    """Whether ``text`` may hold an integer beyond the safe range or a number beyond the
    double range (cheap; false positives allowed, none missed)."""
    scanned = text.translate(_SCAN_TABLE)
    return scanned.find(b"0" * 16) != -1 or scanned.find(b"e000") != -1


@unchecked
def lossless_problem(value: Any) -> str | None:
    """Why a decoded JSON value could not be held exactly by DSH's JavaScript, if it can't.

    >>> lossless_problem({"a": [1, 2.5, 2**53]})
    'integer 9007199254740992 is beyond the safe-integer range'
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if isinstance(item, int):
            if abs(item) > MAX_SAFE_INTEGER:
                return f"integer {item} is beyond the safe-integer range"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "number is not finite"
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return None


# --------------------------------------------------------------------------- lone surrogates

# One escape at a time, so an escaped backslash is never read as the start of another one: a
# surrogate pair, a lone surrogate (group 1), or any other escape.
_ESCAPE = re.compile(
    rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
    rb"|u([dD][89a-fA-F][0-9a-fA-F]{2})|.)")
#: A lone surrogate U+D800+k is carried as U+F0000+k (Supplementary Private Use Area-A).
_MASK_BASE = 0xF0000
_MASKED = re.compile(rb"\\u[dD][bB]8[01]\\u[dD][c-fC-F][0-9a-fA-F]{2}")
# Raw UTF-8 of U+F0000..U+F0FFF starts F3 B0; the escaped pairs of U+F0000..U+F07FF start
# \uDB80 or \uDB81.
_MASK_UTF8_PREFIX = b"\xf3\xb0"
_UNMASK_TEXT = {_MASK_BASE + k: 0xD800 + k for k in range(0x800)}


def _masked_escape(lone: re.Match[bytes]) -> bytes:
    if lone.group(1) is None:
        return lone.group(0)
    code = _MASK_BASE + int(lone.group(1), 16) - 0xD800 - 0x10000
    return b"\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))


@unchecked
def mask_lone_surrogates(text: bytes) -> bytes | str | None:
    """``text`` with every lone-surrogate escape rewritten as the escape of its private-use
    stand-in; ``None`` if it has none; a problem if the text already holds stand-ins.

    >>> mask_lone_surrogates(rb'["\\ud800", "\\ud83d\\ude00"]')
    b'["\\\\udb80\\\\udc00", "\\\\ud83d\\\\ude00"]'
    """
    if b"\\" not in text:
        return None
    masked = _ESCAPE.sub(_masked_escape, text)
    if masked == text:
        return None
    if _MASK_UTF8_PREFIX in text or _MASKED.search(text):
        return ("a lone surrogate escape cannot be read in a record that also holds "
                "characters U+F0000-U+F0FFF (they stand in for lone surrogates while reading)")
    return masked


def plain_lone_surrogates(text: bytes) -> bytes:
    """``text`` with every lone-surrogate escape rewritten as ``\\u0000``: the same JSON
    syntax, readable by a decoder that refuses lone surrogates (for a syntax check only)."""
    return _ESCAPE.sub(lambda lone: lone.group(0) if lone.group(1) is None else b"\\u0000",
                       text)


@unchecked
def unmask_text(text: str) -> str:
    """A decoded string with its stand-ins turned back into lone surrogates."""
    return text.translate(_UNMASK_TEXT)


def _unmasked_escape(masked: re.Match[bytes]) -> bytes:
    code = int(masked.group(0)[2:6], 16), int(masked.group(0)[8:12], 16)
    point = 0x10000 + ((code[0] - 0xD800) << 10) + (code[1] - 0xDC00)
    return b"\\u%04x" % (point - _MASK_BASE + 0xD800)


@unchecked
def unmask_json(text: bytes) -> bytes:
    """JSON text with the escapes of stand-ins turned back into lone-surrogate escapes."""
    return _MASKED.sub(_unmasked_escape, text)


@unchecked
def json_string_literal(text: str) -> bytes:
    """``text`` as a JSON string literal; a lone surrogate is written as its escape, which
    JSON.parse reads back (UTF-8 cannot hold it).

    >>> json_string_literal("a\\ud800")
    b'"a\\\\ud800"'
    """
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace")
