"""Fuzzing the decoders: corrupted logs end in a DecodeError naming the line, or decode and trace
to events or a Violation naming the seq; never an unhandled exception, never a hang (issue 8,
item 1)."""

from __future__ import annotations

import pytest
from _fuzzing import (
    BYTES,
    EVERY,
    HEADERS,
    LINES,
    ROWS,
    SEQS,
    TRUNCATIONS,
    TYPES,
    VALUES,
    WHITESPACE,
    Corrupted,
    check_expectations,
    corrupted,
    decode_and_trace,
    fuzz_settings,
)
from hypothesis import given

#: The crash, fuzz and load families run after the README command (`.ci/run`), not in it.
pytestmark = pytest.mark.slow


def _check(case: Corrupted) -> None:
    check_expectations(case, decode_and_trace(case))


@fuzz_settings(300)
@given(corrupted(TRUNCATIONS))
def test_truncated_text_fails_at_the_cut_line_or_decodes_the_prefix(case: Corrupted) -> None:
    """Cut at any byte, or one line cut short: the cut line is named, or the prefix decodes."""
    _check(case)


@fuzz_settings(300)
@given(corrupted(BYTES + LINES))
def test_invalid_utf8_flipped_bytes_and_garbage_name_their_line(case: Corrupted) -> None:
    """Invalid UTF-8, any flipped byte, a line of garbage, two records on one line, one record
    over two lines: refused at that line or readable."""
    _check(case)


@fuzz_settings(600)
@given(corrupted(VALUES))
def test_bad_values_are_refused_at_their_line(case: Corrupted) -> None:
    """Wrong types, missing/extra keys, -0, NaN/Infinity, huge integers, deep nesting, lone
    surrogates (readable, and written back as read)."""
    _check(case)


@fuzz_settings(250)
@given(corrupted(SEQS))
def test_duplicate_and_out_of_order_seqs_are_violations_at_their_seq(case: Corrupted) -> None:
    """Duplicated, swapped or renumbered records decode, and the trace names the first bad seq."""
    _check(case)


@fuzz_settings(200)
@given(corrupted(TYPES))
def test_unknown_types_without_ignorable_are_refused_by_name(case: Corrupted) -> None:
    """An unknown type not marked ignorable is refused naming line, seq and the type."""
    _check(case)


@fuzz_settings(200)
@given(corrupted(ROWS, pack=True))
def test_broken_packed_rows_are_refused_at_their_line(case: Corrupted) -> None:
    """Wrong dt count, no members, extra keys, bad members: refused naming line and seq0."""
    _check(case)


@fuzz_settings(200)
@given(corrupted(HEADERS + VALUES, session=True))
def test_broken_session_headers_are_refused_at_line_one(case: Corrupted) -> None:
    """Header version, missing/extra/mistyped fields, a header not first: line 1 (or the record)."""
    _check(case)


@fuzz_settings(100)
@given(corrupted(WHITESPACE))
def test_whitespace_lines_change_neither_events_nor_numbering(case: Corrupted) -> None:
    """Blank lines and carriage returns decode to exactly the original events."""
    _check(case)


@fuzz_settings(400)
@given(corrupted(EVERY))
def test_any_corruption_ends_in_an_error_or_a_trace(case: Corrupted) -> None:
    """Every family mixed, sessions and event logs, packed or not."""
    _check(case)
