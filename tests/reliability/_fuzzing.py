"""Shared by the fuzz tests: example budgets, a time bound per example, and corrupted logs.

A corrupted log starts as a valid generated log (``core.strategies.session_logs``), encoded as a
JSONL event log or as a DSH session file (header line first), with or without packed chunk rows.
It then receives one corruption, which knows what a correct reader must say about it: the line a
``DecodeError`` must name (or may name, when the damage can happen to still be valid), the
position a trace ``Violation`` must name, or that the text still decodes to the original events.

Budgets: each fuzz test takes a share of :data:`CI_EXAMPLES`; with ``TURNFORK_FUZZ_EXAMPLES=N`` in
the environment the shares are scaled so that all fuzz tests together run about ``N`` examples.
"""

from __future__ import annotations

import json
import os
import random
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from types import FrameType
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn, SearchStrategy
from returns.result import Failure

from turnfork.core import (
    KNOWN_EVENT_TYPES,
    MAX_SAFE_INTEGER,
    TYPED_EVENT_CLASSES,
    DecodeError,
    Event,
    SessionHeader,
    Violation,
    decode_log,
    decode_session,
    encode_header_line,
    encode_log,
    trace_log,
)
from turnfork.core.codec import MAX_JSON_DEPTH
from turnfork.core.strategies import session_logs

FUZZ_EXAMPLES_ENV = "TURNFORK_FUZZ_EXAMPLES"
#: Examples the CI suite runs over all fuzz tests together (the sum of the tests' shares).
CI_EXAMPLES = 3150
#: The hypothesis profile every fuzz test starts from (the long run uses the same profile with
#: bigger budgets).
PROFILE = "turnfork-fuzz-long" if os.environ.get(FUZZ_EXAMPLES_ENV) else "turnfork-fuzz"
#: An example that runs longer than this is a hang, whatever the machine.
TIME_BOUND_SECONDS = 20.0

_COMMON: dict[str, Any] = {
    # Generous: a deadline is a hang detector here, not a speed target.
    "deadline": timedelta(seconds=10),
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                              HealthCheck.function_scoped_fixture],
    "print_blob": True,
}
settings.register_profile("turnfork-fuzz", **_COMMON)
settings.register_profile("turnfork-fuzz-long", **_COMMON)

ROW_TAGS = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
TYPED_TAGS = frozenset(str(cls.__struct_config__.tag) for cls in TYPED_EVENT_CLASSES)
#: Envelope keys a typed or opaque record cannot do without or have of another type.
_ENVELOPE = ("type", "seq", "time")
_ROW_ENVELOPE = ("type", "seq0", "time0", "data")
_HEADER_REQUIRED = ("type", "version", "id", "createdAt", "delegationDepth")
_PEEKED = ("type", "seq", "seq0", "ignorable")


def examples(share: int) -> int:
    """How many examples a test with this CI ``share`` runs now."""
    total = os.environ.get(FUZZ_EXAMPLES_ENV)
    if not total:
        return share
    return max(share, int(total) * share // CI_EXAMPLES)


def fuzz_settings(share: int) -> settings:
    """The fuzz profile with this test's number of examples."""
    return settings(settings.get_profile(PROFILE), max_examples=examples(share))


class ExampleHung(AssertionError):
    """One example ran past :data:`TIME_BOUND_SECONDS`."""


@contextmanager
def time_bound(seconds: float = TIME_BOUND_SECONDS) -> Iterator[None]:
    """Fail the example (instead of hanging the suite) when the body runs too long."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise ExampleHung(f"the example ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- the text


@dataclass(frozen=True)
class Text:
    """An encoded valid log as lines (without ``\\n``) and the events each line holds."""

    lines: tuple[bytes, ...]
    counts: tuple[int, ...]
    session: bool
    events: tuple[Event, ...]

    @property
    def data(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines)

    @property
    def records(self) -> list[int]:
        """Indices of the lines holding events."""
        return [i for i, count in enumerate(self.counts) if count]

    @property
    def rows(self) -> list[int]:
        """Indices of the packed chunk rows."""
        return [i for i in self.records if _tag(self.lines[i]) in ROW_TAGS]

    def start(self, index: int) -> int:
        """Position of the first event of line ``index``."""
        return sum(self.counts[:index])

    def with_lines(self, lines: list[bytes]) -> bytes:
        return b"".join(line + b"\n" for line in lines)


def _tag(line: bytes) -> object:
    return json.loads(line).get("type")


def _events_in(line: bytes) -> int:
    record = json.loads(line)
    if record.get("type") not in ROW_TAGS:
        return 1
    data = record["data"]
    return len(data["args"] if record["type"] == "tool-call-chunks" else data["texts"])


_ids = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)


@st.composite
def headers(draw: DrawFn) -> SessionHeader:
    """Valid session headers, optional fields present or not."""
    optional: dict[str, Any] = {}
    if draw(st.booleans()):
        optional["cwd"] = "/work/" + draw(_ids)
    if draw(st.booleans()):
        optional["parent_session"] = draw(_ids)
        optional["seed_length"] = draw(st.integers(0, 500))
        optional["origin"] = "subagent"
    if draw(st.booleans()):
        optional["agent_preset"] = draw(_ids)
    return SessionHeader(id=draw(_ids), created_at=draw(st.integers(0, MAX_SAFE_INTEGER)),
                         delegation_depth=draw(st.integers(0, 4)), **optional)


@contextmanager
def _random_state_kept() -> Iterator[None]:
    """beartype checks a random element of each container it is passed, which moves the global
    ``random`` state; hypothesis refuses strategies that do that, so core calls made while
    drawing put the state back (what beartype picked has no bearing on the result)."""
    state = random.getstate()
    try:
        yield
    finally:
        random.setstate(state)


@st.composite
def texts(draw: DrawFn, *, session: bool | None = None, pack: bool | None = None) -> Text:
    """A valid generated log, encoded; sometimes with whitespace-only lines between records."""
    log = draw(session_logs(max_turns=3))
    pack = draw(st.booleans()) if pack is None else pack
    session = draw(st.booleans()) if session is None else session
    with _random_state_kept():
        lines = encode_log(log, pack_chunks=pack).split(b"\n")[:-1]
    counts = [_events_in(line) for line in lines]
    if session:
        header = draw(headers())
        with _random_state_kept():
            lines.insert(0, encode_header_line(header))
        counts.insert(0, 0)
    if draw(st.integers(0, 3)) == 0:  # whitespace lines must not shift any line number
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(1 if session else 0, len(lines)))
            lines.insert(at, draw(st.sampled_from([b"", b" ", b"\t", b"\r", b"  \r"])))
            counts.insert(at, 0)
    return Text(tuple(lines), tuple(counts), session, log)


# --------------------------------------------------------------------------- corruptions


@dataclass(frozen=True)
class Corrupted:
    """A damaged text and what a correct reader must say about it."""

    data: bytes
    session: bool
    corruption: str
    #: Lines a DecodeError may name; empty: decoding must succeed.
    lines: frozenset[int] = frozenset()
    #: Decoding must fail (naming one of ``lines``).
    must_fail: bool = False
    #: When set, the DecodeError must name this seq / this event type.
    seq: int | None = None
    event_type: str | None = None
    #: Decoding must succeed and the trace must break rule ``seq`` at this position.
    violation_at: int | None = None
    #: Decoding must succeed with exactly these events.
    events: tuple[Event, ...] | None = None
    #: When decoding succeeds, the events must encode to a text that decodes to them again.
    round_trips: bool = False
    #: 1-based lines the corruption touched, and the first record line before it (the CLI tells
    #: a DSH projected fixture by its first record, so a corruption there changes the reading).
    touched: frozenset[int] = frozenset()
    first_record_line: int | None = None

    def describe(self) -> str:
        preview = self.data[:300] + (b"..." if len(self.data) > 300 else b"")
        return f"{self.corruption} (session={self.session}): {preview!r}"

    def __repr__(self) -> str:
        expect = {name: getattr(self, name) for name in
                  ("lines", "must_fail", "seq", "event_type", "violation_at")}
        return f"<{self.describe()} {len(self.data)} bytes; expect {expect}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis prints a failing example with this: keep it short."""
        printer.text(repr(self))


def _case(text: Text, data: bytes, corruption: str, touched: set[int], **expect: Any,
          ) -> Corrupted:
    records = text.records
    return Corrupted(data=data, session=text.session, corruption=corruption,
                     touched=frozenset(touched),
                     first_record_line=records[0] + 1 if records else None, **expect)


def _fails(line: int) -> dict[str, Any]:
    return {"lines": frozenset({line}), "must_fail": True}


def _may_fail(line: int) -> dict[str, Any]:
    return {"lines": frozenset({line})}


def _named(text: Text, index: int) -> dict[str, Any]:
    """The seq and type a DecodeError about record line ``index`` must name."""
    record = json.loads(text.lines[index])
    seq = record.get("seq0" if record.get("type") in ROW_TAGS else "seq")
    return {"seq": seq, "event_type": record.get("type")}


def _non_blank(text: Text) -> list[int]:
    return [i for i, line in enumerate(text.lines) if line.strip()]


def _after_removal(text: Text, index: int) -> dict[str, Any]:
    """What removing line ``index``'s events means: a seq gap, or a shorter valid log."""
    start = text.start(index)
    if start + text.counts[index] < len(text.events):
        return {"violation_at": start}
    return {"events": text.events[:start]}


# -- truncation


def truncate_file(draw: DrawFn, text: Text) -> Corrupted:
    """The whole text cut at any byte (a crash mid-write without repair)."""
    data = text.data
    cut = draw(st.integers(0, len(data)))
    kept = data[:cut].split(b"\n")
    whole, partial = len(kept) - 1, kept[-1]
    if partial and partial != text.lines[whole] and partial.strip():
        return _case(text, data[:cut], "truncate-file", {whole + 1}, **_fails(whole + 1))
    complete = whole + (1 if partial else 0)
    if text.session and complete == 0:
        return _case(text, data[:cut], "truncate-file", {1}, **_fails(1))
    return _case(text, data[:cut], "truncate-file", set(),
                 events=text.events[:text.start(complete)])


def truncate_line(draw: DrawFn, text: Text) -> Corrupted:
    """One line cut short, its newline kept (a torn record in the middle)."""
    index = draw(st.sampled_from(_non_blank(text)))
    line = text.lines[index]
    keep = draw(st.integers(0, len(line) - 1))
    lines = list(text.lines)
    lines[index] = line[:keep]
    data = text.with_lines(lines)
    if keep or (text.session and index == 0):
        return _case(text, data, "truncate-line", {index + 1}, **_fails(index + 1))
    return _case(text, data, "truncate-line", {index + 1}, **_after_removal(text, index))


# -- bytes

INVALID_UTF8 = (b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc0\x80", b"\xc3", b"\xe2\x82",
                b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80")


def invalid_utf8(draw: DrawFn, text: Text) -> Corrupted:
    """Bytes that are not UTF-8 spliced into a line (inside a string or anywhere)."""
    index = draw(st.sampled_from(_non_blank(text)))
    line = text.lines[index]
    at = draw(st.integers(0, len(line)))
    lines = list(text.lines)
    lines[index] = line[:at] + draw(st.sampled_from(INVALID_UTF8)) + line[at:]
    return _case(text, text.with_lines(lines), "invalid-utf8", {index + 1}, **_fails(index + 1))


def byte_flip(draw: DrawFn, text: Text) -> Corrupted:
    """One byte of a line replaced by any other byte."""
    index = draw(st.sampled_from(_non_blank(text)))
    line = text.lines[index]
    at = draw(st.integers(0, len(line) - 1))
    value = draw(st.integers(0, 255).filter(lambda b: b != line[at]))
    lines = list(text.lines)
    lines[index] = line[:at] + bytes([value]) + line[at + 1:]
    data = text.with_lines(lines)
    if value != ord("\n"):
        return _case(text, data, "byte-flip", {index + 1}, **_may_fail(index + 1))
    # The line splits in two: a cut-short record, or an empty line and a record without "{".
    line_no = index + 2 if at == 0 and not (text.session and index == 0) else index + 1
    return _case(text, data, "byte-flip-newline", {index + 1, index + 2}, **_fails(line_no))


def garbage_line(draw: DrawFn, text: Text) -> Corrupted:
    """A line replaced, or a line inserted, holding arbitrary bytes or arbitrary JSON."""
    junk = draw(st.one_of(
        st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")),
        _json_values.map(lambda v: json.dumps(v).encode()),
    ))
    lines = list(text.lines)
    lowest = 1 if text.session else 0
    if draw(st.booleans()) and len(lines) > lowest:
        index = draw(st.integers(lowest, len(lines) - 1))
        lines[index] = junk
    else:
        index = draw(st.integers(lowest, len(lines)))
        lines.insert(index, junk)
    return _case(text, text.with_lines(lines), "garbage-line", {index + 1},
                 **_may_fail(index + 1))


# -- values inside a record

_json_leaves = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
_json_values = st.recursive(
    _json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=6)

JsonPath = tuple[str | int, ...]
_SENTINEL = "\x00fuzz-sentinel\x00"


def _paths(value: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _set(record: Any, path: JsonPath, value: Any) -> Any:
    if not path:
        return value
    target = record
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return record


def _render(record: Any, path: JsonPath, raw: bytes) -> bytes:
    """``record`` as compact JSON with the value at ``path`` written as the JSON text ``raw``."""
    placed = _set(record, path, _SENTINEL)
    text = json.dumps(placed, separators=(",", ":"), ensure_ascii=False).encode()
    marker = json.dumps(_SENTINEL).encode()
    assert text.count(marker) == 1
    return text.replace(marker, raw)


def _kind(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    return type(value).__name__


_WRONG_TYPES: tuple[Any, ...] = ("text", "", 7, 0, 1.5, True, False, None, [], [1, "a"], {},
                                 {"k": "v"})


def _target(draw: DrawFn, text: Text) -> tuple[int, Any, JsonPath, Any]:
    """A non-blank line, its parsed record, a path into it and the value there."""
    index = draw(st.sampled_from(_non_blank(text)))
    record = json.loads(text.lines[index])
    path, value = draw(st.sampled_from(list(_paths(record))))
    return index, record, path, value


def _strict_here(text: Text, index: int, record: Any, path: JsonPath) -> bool:
    """Whether any change of the value at ``path`` of line ``index`` must be refused."""
    if text.session and index == 0:
        return len(path) <= 1
    kind = record.get("type") if isinstance(record, dict) else None
    if len(path) == 0:
        return True
    if len(path) > 1:
        return False
    if kind in ROW_TAGS:
        return path[0] in _ROW_ENVELOPE
    opaque = kind not in TYPED_TAGS
    return path[0] in (*_ENVELOPE, "ignorable") or (path[0] == "data" and not opaque)


def _names_seq(text: Text, index: int, path: JsonPath) -> dict[str, Any]:
    """The seq/type a DecodeError must name when the value at ``path`` breaks the record (not
    when it stands where the reader looks for them: the envelope's type, seq, seq0, ignorable)."""
    if (text.session and index == 0) or not path or path[0] in _PEEKED:
        return {}
    return _named(text, index)


def wrong_type(draw: DrawFn, text: Text) -> Corrupted:
    """A value replaced by one of another JSON type (string for int, list for object…)."""
    index, record, path, value = _target(draw, text)
    new = draw(st.sampled_from([v for v in _WRONG_TYPES if _kind(v) != _kind(value)
                                and not (isinstance(value, float) and _kind(v) == "int")]))
    strict = _strict_here(text, index, record, path)
    data_line = _render(record, path, json.dumps(new).encode())
    lines = list(text.lines)
    lines[index] = data_line
    expect = (_fails(index + 1) | _names_seq(text, index, path)) if strict else _may_fail(index + 1)
    return _case(text, text.with_lines(lines), f"wrong-type {path!r}={new!r}", {index + 1},
                 **expect)


def missing_key(draw: DrawFn, text: Text) -> Corrupted:
    """A key removed from an object of a record or of the header."""
    index = draw(st.sampled_from(_non_blank(text)))
    record = json.loads(text.lines[index])
    objects = [(path, value) for path, value in _paths(record)
               if isinstance(value, dict) and value]
    path, value = draw(st.sampled_from(objects))
    key = draw(st.sampled_from(list(value)))
    del value[key]
    lines = list(text.lines)
    lines[index] = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
    header = text.session and index == 0
    if header:
        strict = key in _HEADER_REQUIRED
    elif path:
        strict = False
    elif record.get("type") in ROW_TAGS:
        strict = key in _ROW_ENVELOPE
    else:
        strict = key in _ENVELOPE
    expect = _may_fail(index + 1)
    if strict:
        expect = _fails(index + 1) | _names_seq(text, index, (key,))
    return _case(text, text.with_lines(lines), f"missing-key {(*path, key)!r}", {index + 1},
                 **expect)


def extra_key(draw: DrawFn, text: Text) -> Corrupted:
    """A key added to an object of a record or of the header."""
    index = draw(st.sampled_from(_non_blank(text)))
    record = json.loads(text.lines[index])
    objects = [(path, value) for path, value in _paths(record) if isinstance(value, dict)]
    path, value = draw(st.sampled_from(objects))
    key = "~" + draw(st.text(max_size=6))  # no field of the wire format starts with "~"
    value[key] = draw(_json_values)
    lines = list(text.lines)
    lines[index] = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
    expect = _may_fail(index + 1)
    if not path:
        expect = _fails(index + 1) | _names_seq(text, index, (key,))
    return _case(text, text.with_lines(lines), f"extra-key {(*path, key)!r}", {index + 1},
                 **expect)


NEGATIVE_ZEROS = (b"-0", b"-0.0", b"-0e0", b"-0E+3", b"-0.000e-2")
NOT_JSON = (b"NaN", b"Infinity", b"-Infinity", b"nan", b"inf")
BEYOND_DOUBLE = (b"1e999", b"-1e999", b"1E400", b"2e308", b"-12.5e+1000", b"0.1e310")
_huge = st.one_of(
    st.integers(min_value=MAX_SAFE_INTEGER + 1),
    st.integers(max_value=-MAX_SAFE_INTEGER - 1),
    st.sampled_from([2**53, -(2**53), 2**63, 2**64, 2**64 + 1, -(2**64) - 1, 10**30, 10**400]),
)


def _replace_value(draw: DrawFn, text: Text, raw: bytes, corruption: str, *,
                   strict: Callable[[Text, int, Any, JsonPath], bool], names: bool = True,
                   ) -> Corrupted:
    """``raw`` written in place of any value; ``names``: the line stays JSON, so a refusal can
    name its seq and type."""
    index, record, path, _ = _target(draw, text)
    lines = list(text.lines)
    lines[index] = _render(record, path, raw)
    expect = _may_fail(index + 1)
    if strict(text, index, record, path):
        expect = _fails(index + 1) | (_names_seq(text, index, path) if names else {})
    return _case(text, text.with_lines(lines), f"{corruption} at {path!r}", {index + 1},
                 **expect)


def _anywhere_refused(text: Text, index: int, record: Any, path: JsonPath) -> bool:
    return True


def _never(text: Text, index: int, record: Any, path: JsonPath) -> bool:
    return False


def negative_zero(draw: DrawFn, text: Text) -> Corrupted:
    """A value replaced by a negative zero (``-0``, ``-0.0``, ``-0e0``…), header included."""
    raw = draw(st.sampled_from(NEGATIVE_ZEROS))
    return _replace_value(draw, text, raw, f"negative-zero {raw!r}", strict=_anywhere_refused)


def non_finite(draw: DrawFn, text: Text) -> Corrupted:
    """A value replaced by NaN, Infinity or a number beyond the double range."""
    raw = draw(st.sampled_from(NOT_JSON + BEYOND_DOUBLE))
    return _replace_value(draw, text, raw, f"non-finite {raw!r}", strict=_anywhere_refused,
                          names=raw in BEYOND_DOUBLE)


def huge_integer(draw: DrawFn, text: Text) -> Corrupted:
    """A value replaced by an integer beyond ±(2^53-1), up to far beyond 2^64."""
    number = draw(_huge)
    return _replace_value(draw, text, str(number).encode(), "huge-integer",
                          strict=_anywhere_refused)


def deep_nesting(draw: DrawFn, text: Text) -> Corrupted:
    """A value replaced by hundreds to thousands of nested arrays or objects (closed or not).

    Closed nesting is refused exactly when the record then nests deeper than
    ``MAX_JSON_DEPTH`` (the value at ``path`` sits ``len(path)`` levels down), on every Python;
    unclosed nesting is never JSON. A refusal names the seq and type when the record starts
    as written (type, then seq)."""
    depth = draw(st.sampled_from([500, 510, 511, 512, 1_000, 3_000, 20_000, 100_000]))
    shape = draw(st.sampled_from(["array", "object", "unclosed"]))
    raw = (b"[" * depth + b"]" * depth if shape == "array"
           else b'{"a":' * depth + b"0" + b"}" * depth if shape == "object"
           else b"[" * depth)

    def too_deep(text: Text, index: int, record: Any, path: JsonPath) -> bool:
        return shape == "unclosed" or len(path) + depth > MAX_JSON_DEPTH

    return _replace_value(draw, text, raw, f"deep-nesting {shape} {depth}", names=False,
                          strict=too_deep)


LONE_SURROGATES = (b"\\ud800", b"\\udbff", b"\\udc00", b"\\udfff", b"\\ud83d", b"\\uDE00")


def lone_surrogate(draw: DrawFn, text: Text) -> Corrupted:
    """A lone-surrogate escape spliced into a string value, as ``JSON.parse`` reads and
    ``JSON.stringify`` writes it (a stream that splits an emoji yields one): the line reads,
    unless the string is one the format constrains (a tag, a literal), and writes back."""
    index = draw(st.sampled_from(_non_blank(text)))
    record = json.loads(text.lines[index])
    strings = [(path, value) for path, value in _paths(record) if isinstance(value, str)]
    path, value = draw(st.sampled_from(strings))
    at = draw(st.integers(0, len(value)))
    escape = draw(st.sampled_from(LONE_SURROGATES))
    raw = (json.dumps(value[:at], ensure_ascii=False).encode()[:-1] + escape
           + json.dumps(value[at:], ensure_ascii=False).encode()[1:])
    lines = list(text.lines)
    lines[index] = _render(record, path, raw)
    return _case(text, text.with_lines(lines), f"lone-surrogate {escape!r} at {path!r}",
                 {index + 1}, **_may_fail(index + 1), round_trips=True)


# -- lines


def records_joined(draw: DrawFn, text: Text) -> Corrupted:
    """Two neighbouring lines joined by a space: one line, two JSON values (DSH's
    ``JSON.parse`` of the line fails)."""
    candidates = [i for i in _non_blank(text)[:-1] if text.lines[i + 1].strip()]
    if not candidates:
        return truncate_file(draw, text)
    index = draw(st.sampled_from(candidates))
    lines = list(text.lines)
    lines[index:index + 2] = [lines[index] + draw(st.sampled_from([b" ", b"", b"\t"]))
                              + lines[index + 1]]
    return _case(text, text.with_lines(lines), "records-joined", {index + 1},
                 **_fails(index + 1))


def record_split(draw: DrawFn, text: Text) -> Corrupted:
    """One record broken over two lines between two of its tokens (still JSON as a stream,
    not as JSON lines): its first line is cut short."""
    index = draw(st.sampled_from(_non_blank(text)))
    line = text.lines[index]
    boundaries = [at + 1 for at, byte in enumerate(line[:-1]) if byte in b",:[{"]
    if not boundaries:
        return truncate_file(draw, text)
    at = draw(st.sampled_from(boundaries))
    lines = list(text.lines)
    lines[index:index + 1] = [line[:at], line[at:]]
    return _case(text, text.with_lines(lines), "record-split", {index + 1},
                 **_fails(index + 1))


# -- seqs


def duplicate_line(draw: DrawFn, text: Text) -> Corrupted:
    """A record written twice (a duplicate seq)."""
    index = draw(st.sampled_from(text.records))
    lines = list(text.lines)
    lines.insert(index + 1, text.lines[index])
    return _case(text, text.with_lines(lines), "duplicate-line", {index + 2},
                 violation_at=text.start(index) + text.counts[index])


def swap_lines(draw: DrawFn, text: Text) -> Corrupted:
    """Two neighbouring records written in the wrong order (out-of-order seqs)."""
    records = text.records
    at = draw(st.integers(0, len(records) - 2))
    first, second = records[at], records[at + 1]
    lines = list(text.lines)
    lines[first], lines[second] = lines[second], lines[first]
    return _case(text, text.with_lines(lines), "swap-lines", {first + 1, second + 1},
                 violation_at=text.start(first))


def shift_seq(draw: DrawFn, text: Text) -> Corrupted:
    """A record's seq (or a packed row's seq0) changed to another valid number."""
    index = draw(st.sampled_from(text.records))
    record = json.loads(text.lines[index])
    key = "seq0" if record["type"] in ROW_TAGS else "seq"
    record[key] = draw(st.one_of(st.integers(0, record[key] + 3),
                                 st.integers(0, MAX_SAFE_INTEGER)).filter(
                                     lambda s: s != record[key]))
    lines = list(text.lines)
    lines[index] = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
    return _case(text, text.with_lines(lines), f"shift-seq {key}={record[key]}", {index + 1},
                 violation_at=text.start(index))


# -- types

_unknown_names = st.one_of(
    st.sampled_from(["x-unknown/thing", "turn/Start", "session", "text-chunk", "tool/result ",
                     "x\ny", "a\u2028b", "\r", "😀/event", "turn/start\x00", ""]),
    st.text(max_size=16),
).filter(lambda name: name not in KNOWN_EVENT_TYPES and name not in TYPED_TAGS
         and name not in ROW_TAGS)


def unknown_type(draw: DrawFn, text: Text) -> Corrupted:
    """A record's type replaced by one DSH does not know, marked ignorable or not."""
    index = draw(st.sampled_from(text.records))
    record = json.loads(text.lines[index])
    row = record["type"] in ROW_TAGS
    name = draw(_unknown_names)
    record["type"] = name
    ignorable = draw(st.booleans())
    record.pop("ignorable", None)
    if ignorable:
        record["ignorable"] = True
    lines = list(text.lines)
    lines[index] = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
    corruption = f"unknown-type {name!r} ignorable={ignorable}"
    data = text.with_lines(lines)
    if not ignorable:
        return _case(text, data, corruption, {index + 1}, **_fails(index + 1),
                     seq=record["seq0" if row else "seq"], event_type=name)
    if row or not name:
        return _case(text, data, corruption, {index + 1}, **_fails(index + 1))
    # Kept as an opaque event, unless it carries envelope keys of its former type.
    return _case(text, data, corruption, {index + 1}, **_may_fail(index + 1))


# -- packed rows


def broken_row(draw: DrawFn, text: Text) -> Corrupted:
    """A packed chunk row broken: dt count wrong, no members, an extra key, a bad member."""
    index = draw(st.sampled_from(text.rows))
    record = json.loads(text.lines[index])
    data = record["data"]
    members = "args" if record["type"] == "tool-call-chunks" else "texts"
    how = draw(st.sampled_from(["dt-long", "dt-short", "empty", "extra-row-key",
                                "extra-data-key", "member-type", "missing-data-key"]))
    if how == "dt-long":
        data["dt"].append(draw(st.integers(-5, 5)))
    elif how == "dt-short":
        data["dt"].pop()
    elif how == "empty":
        data[members] = []
        data["dt"] = draw(st.sampled_from([[], data["dt"]]))
    elif how == "extra-row-key":
        record["~x"] = 1
    elif how == "extra-data-key":
        data[draw(st.sampled_from(["~x", "seq", "name" if members == "texts" else "texts"]))] = 1
    elif how == "member-type":
        data[members][draw(st.integers(0, len(data[members]) - 1))] = draw(
            st.sampled_from([1, None, [], {}]))
    else:
        del data[draw(st.sampled_from(["turn", "step", "index", "dt", members]))]
    lines = list(text.lines)
    lines[index] = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
    return _case(text, text.with_lines(lines), f"broken-row {how}", {index + 1},
                 **_fails(index + 1), **_named(text, index))


# -- header


def header_version(draw: DrawFn, text: Text) -> Corrupted:
    """The header line's version changed, or made of the wrong type."""
    record = json.loads(text.lines[0])
    record["version"] = draw(st.sampled_from([1, 2, -1, 99, 2**53, 2**64, "0", None, 0.5, True,
                                              [0], {}]))
    lines = list(text.lines)
    lines[0] = json.dumps(record, separators=(",", ":")).encode()
    return _case(text, text.with_lines(lines), f"header-version {record['version']!r}", {1},
                 **_fails(1))


def header_not_first(draw: DrawFn, text: Text) -> Corrupted:
    """The header line missing, moved below the first record, or written twice."""
    lines = list(text.lines)
    header = lines.pop(0)
    how = draw(st.sampled_from(["missing", "moved", "twice"]))
    if how == "twice":
        lines.insert(0, header)
        lines.insert(0, header)
        return _case(text, text.with_lines(lines), "header-twice", {1, 2}, **_fails(2))
    if how == "moved" and lines:
        lines.insert(1, header)
    # Line 1 is now a record, a blank line or nothing: no session header.
    return _case(text, text.with_lines(lines), f"header-{how}", {1}, **_fails(1))


# -- whitespace


def whitespace(draw: DrawFn, text: Text) -> Corrupted:
    """Whitespace-only lines and trailing carriage returns: the same events, same numbering."""
    lines = list(text.lines)
    lowest = 1 if text.session else 0
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            lines.insert(draw(st.integers(lowest, len(lines))),
                         draw(st.sampled_from([b"", b" ", b"\t\t", b"\r"])))
        elif len(lines) > lowest:
            at = draw(st.integers(lowest, len(lines) - 1))
            lines[at] += b"\r"
    return _case(text, text.with_lines(lines), "whitespace", set(), events=text.events)


Corruption = Callable[[DrawFn, Text], Corrupted]

TRUNCATIONS: tuple[Corruption, ...] = (truncate_file, truncate_line)
BYTES: tuple[Corruption, ...] = (invalid_utf8, byte_flip, garbage_line)
VALUES: tuple[Corruption, ...] = (wrong_type, missing_key, extra_key, negative_zero, non_finite,
                                  huge_integer, deep_nesting, lone_surrogate)
LINES: tuple[Corruption, ...] = (records_joined, record_split)
SEQS: tuple[Corruption, ...] = (duplicate_line, swap_lines, shift_seq)
TYPES: tuple[Corruption, ...] = (unknown_type,)
ROWS: tuple[Corruption, ...] = (broken_row,)
HEADERS: tuple[Corruption, ...] = (header_version, header_not_first)
WHITESPACE: tuple[Corruption, ...] = (whitespace,)
EVERY: tuple[Corruption, ...] = (*TRUNCATIONS, *BYTES, *VALUES, *LINES, *SEQS, *TYPES, *ROWS,
                                 *HEADERS, *WHITESPACE)


def _applicable(corruption: Corruption, text: Text) -> bool:
    if corruption in SEQS:
        return len(text.records) >= (2 if corruption is swap_lines else 1)
    if corruption in TYPES:
        return bool(text.records)
    if corruption in ROWS:
        return bool(text.rows)
    if corruption in HEADERS:
        return text.session
    return bool(_non_blank(text)) or corruption in (truncate_file, garbage_line, whitespace)


@st.composite
def _corrupted(draw: DrawFn, family: tuple[Corruption, ...], session: bool | None,
               pack: bool | None) -> Corrupted:
    text = draw(texts(session=session, pack=pack))
    usable = [c for c in family if _applicable(c, text)] or [truncate_file]
    return draw(st.sampled_from(usable))(draw, text)


def corrupted(family: tuple[Corruption, ...] = EVERY, *, session: bool | None = None,
              pack: bool | None = None) -> SearchStrategy[Corrupted]:
    """Valid generated logs given one corruption of ``family``."""
    return _corrupted(family, session, pack)


# --------------------------------------------------------------------------- checking


def line_count(data: bytes) -> int:
    """Lines of ``data`` as a reader numbers them (at least 1)."""
    return max(1, data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1))


def one_line(text: str) -> bool:
    """Non-empty and without anything a terminal or ``str.splitlines`` would break on."""
    return bool(text.strip()) and len(text.splitlines()) == 1 and "\n" not in text


@dataclass(frozen=True)
class Outcome:
    """What decoding (and, when it succeeded, tracing) said."""

    error: DecodeError | None
    events: tuple[Event, ...] | None
    violation: Violation | None


def decode_and_trace(case: Corrupted) -> Outcome:
    """Decode ``case`` and trace the events, checking what must hold for every input."""
    with time_bound():
        result: Any = (decode_session(case.data) if case.session else decode_log(case.data))
    if isinstance(result, Failure):
        error = result.failure()
        assert isinstance(error, DecodeError), error
        assert 1 <= error.line <= line_count(case.data), (error, case.describe())
        assert one_line(error.message), (error.message, case.describe())
        assert str(error) == error.message
        assert error.seq is None or isinstance(error.seq, int)
        assert error.event_type is None or isinstance(error.event_type, str)
        return Outcome(error, None, None)
    events: tuple[Event, ...] = result.unwrap()[1] if case.session else result.unwrap()
    with time_bound():
        traced = trace_log(events)
    violation = None
    if isinstance(traced, Failure):
        violation = traced.failure()
        assert isinstance(violation, Violation)
        assert isinstance(violation.seq, int) and 0 <= violation.seq < len(events), violation
        assert violation.problem
    return Outcome(None, events, violation)


def check_expectations(case: Corrupted, outcome: Outcome) -> None:
    """What the corruption itself says a correct reader must report."""
    where = case.describe()
    if outcome.error is not None:
        error = outcome.error
        assert case.lines, f"decoding failed but must succeed: {error} — {where}"
        assert error.line in case.lines, f"{error} names the wrong line — {where}"
        if case.seq is not None:
            assert error.seq == case.seq, f"{error} should name seq {case.seq} — {where}"
        if case.event_type is not None:
            assert error.event_type == case.event_type, f"{error} — {where}"
        return
    assert not case.must_fail, f"decoding succeeded but must fail — {where}"
    if case.violation_at is not None:
        assert outcome.violation is not None, f"no violation — {where}"
        assert (outcome.violation.seq, outcome.violation.rule) == (case.violation_at, "seq"), (
            f"{outcome.violation} (rule {outcome.violation.rule}) should be a seq fault at "
            f"{case.violation_at} — {where}")
    if case.events is not None:
        assert outcome.events == case.events, f"events differ — {where}"
        assert outcome.violation is None, f"{outcome.violation} — {where}"
    if case.round_trips and outcome.events is not None:
        again = decode_log(encode_log(outcome.events)).unwrap()
        assert again == outcome.events, f"does not read back as written — {where}"

