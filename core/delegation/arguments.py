"""A tool call's arguments: the model's raw JSON text read as an object, or why it is not one.

Read as DSH reads them (``JSON.parse``), with the bounds the rest of the core keeps, so that one
bad call is one bad result and never an exception in the agent loop:

* empty (or blank) text is ``{}``;
* ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON (``JSON.parse`` refuses them too);
* nesting deeper than :data:`~turnfork.core.codec.MAX_JSON_DEPTH` is refused before parsing,
  the same on every Python (the standard library's parser recurses);
* an integer beyond ±(2^53−1) is refused as soon as the parser meets its digits (JavaScript
  would read it rounded; a very long one would cost a slow conversion), and so is a number
  beyond the double range (``JSON.parse`` would read Infinity);
* a lone-surrogate escape (``"\\ud800"``) is read as that lone surrogate, as ``JSON.parse``
  reads it;
* anything but an object is refused, naming what it is.
"""

from __future__ import annotations

import json
import math
from typing import Any

from returns.result import Failure, Result, Success

from .._checking import checked
from .._json import MAX_JSON_DEPTH, MAX_SAFE_INTEGER, exceeds_depth

__all__ = ["parse_tool_arguments"]

_KINDS = {list: "array", str: "string", bool: "boolean", type(None): "null"}


class _Refused(ValueError):
    """A number the arguments may not hold (raised from inside the parser to stop it)."""


def _shown(number: str) -> str:
    return number if len(number) <= 24 else f"{number[:20]}… ({len(number)} characters)"


def _constant(name: str) -> Any:
    raise _Refused(f"arguments are not valid JSON ({name} is not a JSON value)")


def _integer(digits: str) -> int:
    # More than 16 digits is beyond 2^53-1 whatever they are: refused before converting.
    value = int(digits) if len(digits.lstrip("-")) <= 16 else None
    if value is None or abs(value) > MAX_SAFE_INTEGER:
        raise _Refused(f"arguments hold the integer {_shown(digits)}, beyond the safe-integer "
                       f"range ±{MAX_SAFE_INTEGER}")
    return value


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"arguments hold the number {_shown(text)}, beyond the double range")
    return value


#: Built once: ``json.loads`` with hooks builds a decoder and its scanner on every call.
_DECODER = json.JSONDecoder(parse_constant=_constant, parse_int=_integer, parse_float=_number)


@checked
def parse_tool_arguments(text: str) -> Result[dict[str, Any], str]:
    """A call's raw arguments as an object, or why they are not one (for the model to read).

    >>> parse_tool_arguments('{"path": "a.txt"}').unwrap(), parse_tool_arguments("").unwrap()
    ({'path': 'a.txt'}, {})
    >>> parse_tool_arguments("[1]").failure()
    'arguments must be a JSON object, got array'
    >>> parse_tool_arguments('{"n": NaN}').failure()
    'arguments are not valid JSON (NaN is not a JSON value)'
    >>> parse_tool_arguments('{"a": 1').failure()
    "arguments are not valid JSON (Expecting ',' delimiter at char 7)"
    """
    if not text.strip():
        return Success({})
    if exceeds_depth(text.encode("utf-8", "surrogatepass")):
        return Failure(f"arguments are nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        return Failure(f"arguments are not valid JSON ({exc.msg} at char {exc.pos})")
    except _Refused as exc:
        return Failure(str(exc))
    except RecursionError:  # the caller's own stack was already deep
        return Failure(f"arguments are nested deeper than this call's stack allows "
                       f"(at most {MAX_JSON_DEPTH} levels are ever read)")
    if not isinstance(value, dict):
        return Failure(f"arguments must be a JSON object, got {_KINDS.get(type(value), 'number')}")
    return Success(value)
