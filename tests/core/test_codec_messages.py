"""A codec error message is one printable line whatever the log quoted into it: every character
``str.splitlines`` breaks on, and every lone surrogate (no output encoding can print one), is
shown as its escape; every other character is kept as it is. Checked character by character
over the whole Basic Multilingual Plane's edges that matter, and as a property over any text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from turnfork.core.log import DecodeError, WireError


def _breaks_a_line(char: str) -> bool:
    return len(f"a{char}b".splitlines()) > 1


def _escaped(text: str) -> str:
    """The expected rendering, defined from ``str.splitlines`` itself rather than a table."""
    return "".join(repr(char)[1:-1] if _breaks_a_line(char) or 0xD800 <= ord(char) < 0xE000
                   else char for char in text)


#: Below 0x3000 (every line break but the surrogates' range lies there), and the edges of
#: the surrogates' range.
CODES = (*range(0x3000), 0xD7FF, 0xD800, 0xD801, 0xDBFF, 0xDC00, 0xDFFE, 0xDFFF, 0xE000,
         0xE001, 0xFFFF)


def test_each_character_is_escaped_exactly_when_it_breaks_a_line_or_is_a_surrogate() -> None:
    wrong = []
    for code in CODES:
        char = chr(code)
        for error, prefix in ((DecodeError(line=3, problem=f"<{char}>"), "line 3: "),
                              (WireError(problem=f"<{char}>", seq=2), "seq 2: ")):
            if error.message != f"{prefix}<{_escaped(char)}>":
                wrong.append((hex(code), type(error).__name__, error.message))
    assert not wrong, wrong[:10]


def test_the_escapes_are_the_ones_splitlines_needs() -> None:
    """The characters that break a line are exactly the ten ``str.splitlines`` documents."""
    breaking = [code for code in range(0x110000) if _breaks_a_line(chr(code))]
    assert breaking == [0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029]


_ANY_CHARACTER = st.one_of(
    st.characters(),
    st.sampled_from([chr(code) for code in (0xD7FF, 0xD800, 0xDFFF, 0xE000, 0x85, 0x2028)]))


#: Built from a list of characters: ``st.text`` leaves out the surrogates an alphabet offers.
_ANY_TEXT = st.lists(_ANY_CHARACTER).map("".join)


@given(problem=_ANY_TEXT, seq=st.none() | st.integers(0, 10**6),
       event_type=st.none() | st.lists(_ANY_CHARACTER, max_size=8).map("".join))
def test_a_message_is_one_line_that_keeps_everything_else(problem: str, seq: int | None,
                                                          event_type: str | None) -> None:
    for error in (DecodeError(line=1, problem=problem, seq=seq, event_type=event_type),
                  WireError(problem=problem, seq=seq, event_type=event_type)):
        message = error.message
        assert len(message.splitlines()) == 1
        assert message.endswith(": " + _escaped(problem))
        if event_type is not None:
            assert _escaped(event_type) in message
        assert str(error) == message
