"""The cheap scan that lets the codec skip decoding a payload to check its numbers
(``may_be_lossy``) misses nothing: whenever the payload holds an integer beyond the safe range
or a number beyond the double range, in any spelling JSON allows, the scan says it may."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from turnfork.core._json import lossless_problem, may_be_lossy

_DECODER = msgspec.json.Decoder()

#: Numbers as a writer may spell them: integers of any size, decimals, exponents of either
#: case and sign, and the finite floats Python writes.
_NUMBERS = st.one_of(
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.builds(lambda sign, whole, fraction, e, exponent_sign, exponent:
              f"{sign}{whole}{fraction}{e}{exponent_sign}{exponent}",
              st.sampled_from(["", "-"]), st.integers(0, 10**20).map(str),
              st.sampled_from(["", ".5", ".000", ".123456789"]), st.sampled_from(["e", "E"]),
              st.sampled_from(["", "+", "-"]), st.integers(0, 999).map(str)),
)


@given(st.lists(_NUMBERS, min_size=1, max_size=5),
       st.sampled_from(["[%s]", '{"a":[%s]}', '{"k":{"n":[%s]},"t":"x"}']))
def test_the_scan_misses_no_lossy_number(numbers: list[str], shape: str) -> None:
    text = (shape % ",".join(numbers)).encode()
    try:
        problem = lossless_problem(_DECODER.decode(text))
    except msgspec.ValidationError:  # beyond the double range
        problem = "not finite"
    if problem is not None:
        assert may_be_lossy(text), (text, problem)
