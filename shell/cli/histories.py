"""Wire histories on the command line: an OpenAI Chat, OpenAI Responses or Anthropic Messages
history read from a file and judged, as :mod:`.assess` judges a DSH log.

Layouts (``layout`` in ``--json``):

* ``list``: one JSON document, the item list itself (``[{"role": "user", …}, …]``);
* ``request``: one JSON document, a request body holding the history under ``input``
  (Responses) or ``messages`` (Chat, Anthropic); its other keys are kept (``seed`` replaces
  the history only), and Anthropic's ``thinking`` setting is read from it;
* ``jsonl``: one item per line, read only when ``--format`` names a wire format (JSONL is
  DSH's own layout, so without ``--format`` a JSONL file stays a DSH log).

The text is read by the shared reader's :func:`~shell.logfile.read_text` (regular files only,
the same size, decompression and line limits as a DSH log). The rules, the cut and the
violations are the core's (:mod:`core.formats`); this module only reads, words and locates.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal, TypeAlias

import msgspec
from returns.result import Failure

from ...core.formats import (
    FormatName,
    FormatViolation,
    History,
    anthropic,
    detect_format,
    history_items,
    openai_chat,
    openai_responses,
    server_side_history,
)
from ..logfile import FileText, LogReadError, read_text
from .terminal import counted

__all__ = [
    "HistoryLayout",
    "HistoryState",
    "LoadedHistory",
    "FORMAT_WORDS",
    "read_history",
    "history_from_text",
    "strictly",
    "jsonl_items_hint",
    "history_state",
    "history_verdict",
    "excluded_words",
    "span_words",
    "encode_seed",
]

HistoryLayout: TypeAlias = Literal["list", "request", "jsonl"]
HistoryState: TypeAlias = Literal["closed", "open", "invalid"]

#: Each format in words.
FORMAT_WORDS: dict[FormatName, str] = {
    "openai-chat": "OpenAI Chat messages",
    "openai-responses": "OpenAI Responses input items",
    "anthropic": "Anthropic Messages",
}
_LAYOUT_WORDS: dict[HistoryLayout, str] = {
    "list": "a JSON list",
    "request": "a request body",
    "jsonl": "JSONL, one item per line",
}
#: Where each format's request body holds its history.
_KEY: dict[FormatName, str] = {"openai-chat": "messages", "openai-responses": "input",
                               "anthropic": "messages"}


class LoadedHistory(msgspec.Struct, frozen=True, kw_only=True):
    """A wire history read from a file: the document as parsed and the core's one pass over it."""

    #: The path as the user gave it.
    path: str
    #: The file actually read (``<stdin>`` for ``-``).
    file: str
    format: FormatName
    layout: HistoryLayout
    #: The format was detected from the items (not named by ``--format``).
    detected: bool
    #: The parsed document: the item list, the request body, or the JSONL items as a list.
    document: Any
    #: The request body's key holding the history (``messages``, ``input``); else ``None``.
    key: str | None
    history: History[Any]
    #: JSONL: the 1-based line of each item; empty for a JSON document.
    lines: tuple[int, ...]
    compressed: bool
    #: Anthropic's thinking setting as the check used it (``None``: inferred from the blocks).
    thinking: bool | None
    #: Where ``thinking`` came from: ``--thinking``, ``the request`` or ``None``.
    thinking_source: str | None
    file_bytes: int = 0

    @property
    def items(self) -> int:
        return len(self.history.source)

    @property
    def description(self) -> str:
        """The input in words, e.g. ``OpenAI Chat messages (detected), a JSON list``."""
        how = "detected" if self.detected else "--format"
        words = f"{FORMAT_WORDS[self.format]} ({how}), {_LAYOUT_WORDS[self.layout]}"
        if self.key is not None:
            words += f" (`{self.key}`)"
        if self.compressed:
            words += ", zstd"
        if self.thinking is not None:
            words += (f", thinking {'on' if self.thinking else 'off'} "
                      f"({self.thinking_source})")
        if self.history.strict:
            words += ", strict rules"
        return words

    def line_of(self, index: int) -> int | None:
        """The line holding item ``index`` (JSONL only), or ``None``."""
        return self.lines[index] if 0 <= index < len(self.lines) else None

    def where(self, index: int | None) -> str:
        """``file:line`` when item ``index`` has a known line, else the path as given."""
        line = None if index is None else self.line_of(index)
        return self.path if line is None else f"{self.file}:{line}"


# --------------------------------------------------------------------------- parsing


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _OutOfRange(ValueError):
    """A number too large for a double: Python would read it as infinity, and write that back
    as ``Infinity``, which is not JSON."""

    def __init__(self, literal: str) -> None:
        super().__init__(f"the number {literal[:40]}{'…' if len(literal) > 40 else ''} is "
                         "beyond the range of a double (it would read as infinity, which JSON "
                         "cannot write back)")
        self.literal = literal


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise _OutOfRange(literal)
    return value


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_constant, parse_float=_finite)


#: A JSON string (skipped whole) or a number: where a number stands outside strings.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?')


def _line_of_number(text: str, literal: str) -> int | None:
    """The line of the first number ``literal`` outside strings, or ``None``."""
    for match in _TOKEN.finditer(text):
        if match.group() == literal:
            return text.count("\n", 0, match.start()) + 1
    return None


class _Parsed(msgspec.Struct, frozen=True):
    layout: HistoryLayout
    document: Any
    lines: tuple[int, ...]


def _json_problem(exc: ValueError | RecursionError, text: str = "",
                  ) -> tuple[int | None, str]:
    if isinstance(exc, _OutOfRange):
        return _line_of_number(text, exc.literal), f"not JSON this reader can hold: {exc}"
    if isinstance(exc, json.JSONDecodeError):
        return exc.lineno, f"not JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
    if isinstance(exc, RecursionError):
        return None, "not JSON this reader can hold: nested too deeply"
    return None, f"not JSON: {exc}"


def _text(data: bytes, file: str) -> str | LogReadError:
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        return LogReadError(file=file, line=data.count(b"\n", 0, exc.start) + 1,
                            problem=f"not UTF-8 (byte {exc.start})")


def _jsonl(text: str, file: str) -> _Parsed | LogReadError:
    items: list[Any] = []
    lines: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            items.append(_loads(line))
        except (ValueError, RecursionError) as exc:
            _, problem = _json_problem(exc)
            return LogReadError(file=file, line=number,
                                problem=problem.replace(" (line 1 column", " (column"))
        lines.append(number)
    return _Parsed("jsonl", items, tuple(lines))


def _parse(data: bytes, file: str, *, jsonl: bool) -> _Parsed | LogReadError | None:
    """The text as a JSON document (a list or a request body), or else as JSONL when
    ``jsonl``. ``None`` (only without ``jsonl``): not a history document, and not a broken
    JSON list either (a DSH log, say)."""
    text = _text(data, file)
    if isinstance(text, LogReadError):
        return text if jsonl else None
    try:
        document = _loads(text)
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, _OutOfRange):  # JSON that parses, but not as a history we can keep
            line, problem = _json_problem(exc, text)
            return LogReadError(file=file, line=line, problem=problem)
        first = next((line for line in text.split("\n") if line.strip()), "")
        if jsonl and first.lstrip().startswith("{"):
            try:
                _loads(first)
            except (ValueError, RecursionError):
                pass  # not one item per line either: the document's error says where
            else:
                return _jsonl(text, file)
        if not jsonl and not text.lstrip().startswith("["):
            return None
        line, problem = _json_problem(exc, text)
        return LogReadError(file=file, line=line, problem=problem)
    if isinstance(document, list):
        return _Parsed("list", document, ())
    if isinstance(document, dict):
        if isinstance(document.get("input"), list) or isinstance(document.get("messages"),
                                                                  list):
            return _Parsed("request", document, ())
        if jsonl:  # one line holding one item
            return _jsonl(text, file)
    if not jsonl:
        return None
    return LogReadError(file=file, problem=(
        "not a history: expected a JSON list of items, a request body with a `messages` or "
        "`input` list, or JSONL, one item per line"))


def jsonl_items_hint(data: bytes) -> str | None:
    """A hint for a JSONL file the DSH reader refused whose first record is a chat message
    (it has a ``role``), or ``None``: without ``--format``, JSONL is read as a DSH log."""
    first = next((line for line in data.split(b"\n", 8)[:8] if line.strip()), b"")
    try:
        record = _loads(first.decode("utf-8").removeprefix("\ufeff"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or "role" not in record:
        return None
    return ("(JSONL is read as a DSH log; for a wire history with one item per line, pass "
            "--format openai-chat, openai-responses or anthropic)")


def _thinking_of(document: Any) -> bool | None:
    """A request body's Anthropic ``thinking`` setting: on unless its type is ``disabled``."""
    if not isinstance(document, dict) or not isinstance(document.get("thinking"), dict):
        return None
    kind = document["thinking"].get("type")
    return None if not isinstance(kind, str) else kind != "disabled"


def read_history(path: str, file: str, format_name: FormatName, *,
                 thinking: bool | None = None) -> LoadedHistory | LogReadError:
    """Read ``file`` (shown as ``path``) as a wire history in ``format_name``: a JSON document
    or JSONL. ``thinking`` is ``--thinking`` (Anthropic), overriding a request body's."""
    read = read_text(file)
    if isinstance(read, Failure):
        failure: LogReadError = read.failure()
        return failure
    return _history_from_text(path, read.unwrap(), format_name, thinking=thinking)


def history_from_text(path: str, text: FileText, format_name: FormatName | None, *,
                      thinking: bool | None = None) -> LoadedHistory | LogReadError | None:
    """A wire history from a file's text, in ``format_name`` or detected.

    Detected (``format_name`` ``None``) only from one JSON document; ``None`` when the text is
    not one holding a history (nor a JSON list that fails to parse): no wire history, then.
    """
    parsed = _parse(text.text, text.file, jsonl=format_name is not None)
    if parsed is None or isinstance(parsed, LogReadError):
        return parsed
    return _loaded(path, text, parsed, format_name, thinking)


def _history_from_text(path: str, text: FileText, format_name: FormatName, *,
                       thinking: bool | None) -> LoadedHistory | LogReadError:
    parsed = _parse(text.text, text.file, jsonl=True)
    if isinstance(parsed, LogReadError):
        return parsed
    if parsed is None:  # only without jsonl; a named format always reads or says why not
        return LogReadError(file=text.file, problem="not a history")
    return _loaded(path, text, parsed, format_name, thinking)


def _decode(fmt: FormatName, items: Any, thinking: bool | None, strict: bool) -> History[Any]:
    if fmt == "anthropic":
        return anthropic.decode_history(items, thinking=thinking, strict=strict)
    if fmt == "openai-chat":
        return openai_chat.decode_history(items, strict=strict)
    return openai_responses.decode_history(items, strict=strict)


def _loaded(path: str, text: FileText, parsed: _Parsed, format_name: FormatName | None,
            thinking: bool | None) -> LoadedHistory | LogReadError:
    file = text.file
    document = parsed.document
    stored = server_side_history(document) if parsed.layout == "request" else None
    if stored is not None:
        return LogReadError(file=file, problem=stored)
    if format_name is None:
        detected = detect_format(document)
        if isinstance(detected, Failure):
            return LogReadError(file=file, problem=(
                f"{_LAYOUT_WORDS[parsed.layout]} whose history format cannot be told: "
                f"{detected.failure()} (--format openai-chat, openai-responses or anthropic "
                "reads it as that format)"))
        fmt: FormatName = detected.unwrap()
    else:
        fmt = format_name
    key: str | None = None
    items: Any = document
    if parsed.layout == "request":
        if format_name is None:
            items = history_items(document)[0]
            key = next(k for k in ("input", "messages") if document.get(k) is items)
        else:
            key = _KEY[fmt]
            items = document.get(key)
            if not isinstance(items, list):
                return LogReadError(file=file, problem=(
                    f"--format {fmt}: the request body has no `{key}` list (a {fmt} request "
                    f"holds its history there)"))
    source = None
    if thinking is not None:
        source = "--thinking"
    elif fmt == "anthropic" and _thinking_of(document) is not None:
        thinking, source = _thinking_of(document), "the request"
    if fmt != "anthropic":
        thinking = None
    return LoadedHistory(path=path, file=file, format=fmt, layout=parsed.layout,
                         detected=format_name is None, document=document, key=key,
                         history=_decode(fmt, items, thinking, False), lines=parsed.lines,
                         compressed=text.compressed, thinking=thinking, thinking_source=source,
                         file_bytes=text.file_bytes)


def strictly(loaded: LoadedHistory) -> LoadedHistory:
    """The history judged at the strict level too (``check --strict``): read again, O(n)."""
    history = _decode(loaded.format, loaded.history.source, loaded.thinking, True)
    return msgspec.structs.replace(loaded, history=history)


# --------------------------------------------------------------------------- judging


def history_state(history: History[Any]) -> HistoryState:
    """``invalid``: an item breaks a rule; ``open``: only where it ends is wrong, or it ends
    inside a turn; ``closed``: balanced, ending at a completed turn."""
    if history.violation is not None:
        return "invalid"
    if history.end_violation is not None or not history.ends_at_completed_turn:
        return "open"
    return "closed"


def span_words(first: int, stop: int) -> str:
    """``item 3`` or ``items 3..7`` for the positions ``first..stop-1``."""
    return f"item {first}" if stop - first == 1 else f"items {first}..{stop - 1}"


def _after_cut(history: History[Any]) -> str:
    cut, total = history.completed_prefix_length, len(history.source)
    if not cut:
        return f"no turn has completed, {counted(total, 'item')}"
    return f"{counted(total - cut, 'item')} after the last completed turn"


def _rule_words(violation: FormatViolation) -> str:
    return f"{violation.message} (rule: {violation.rule})"


def history_verdict(history: History[Any]) -> str:
    """The state in one sentence, as :meth:`.assess.Assessment.verdict` gives a log's."""
    if history.violation is not None:
        return f"invalid: {_rule_words(history.violation)}"
    state = history_state(history)
    if state == "open":
        where = f"the history ends inside a turn ({_after_cut(history)})"
        if history.end_violation is not None:
            return f"open: {_rule_words(history.end_violation)}; {where}"
        return f"open: {where}; it is balanced: a provider accepts it as it is"
    return (f"valid and closed: {counted(len(history.source), 'item')}, ending at a completed "
            "turn")


def excluded_words(history: History[Any]) -> str:
    """What the cut leaves out, in one sentence."""
    cut, total = history.completed_prefix_length, len(history.source)
    if not total:
        return "excluded: nothing (the history holds no items)"
    if cut == total:
        return "excluded: nothing (the history ends at a completed turn)"
    return (f"excluded: {counted(total - cut, 'item')} after the last completed turn "
            f"({span_words(cut, total)})")


# --------------------------------------------------------------------------- writing


def _encode(value: Any, *, indent: int | None) -> bytes:
    text = json.dumps(value, ensure_ascii=False, indent=indent,
                      separators=None if indent else (",", ":"))
    # A lone surrogate (JSON allows its escape) can only stand inside a string, where the
    # backslash form is that same escape.
    return text.encode("utf-8", "backslashreplace")


def encode_seed(loaded: LoadedHistory) -> bytes:
    """The completed-turn prefix in the input's layout: a list stays a list, a request body
    keeps its other keys (in their order) with the history replaced, JSONL stays JSONL."""
    prefix = list(loaded.history.source[:loaded.history.completed_prefix_length])
    if loaded.layout == "jsonl":
        return b"".join(_encode(item, indent=None) + b"\n" for item in prefix)
    if loaded.key is not None:  # a request body: the history replaced, the rest kept
        return _encode({**loaded.document, loaded.key: prefix}, indent=2) + b"\n"
    return _encode(prefix, indent=2) + b"\n"
