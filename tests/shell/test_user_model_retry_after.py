"""``Retry-After`` and ``retry-after-ms`` are read from ASCII digits (a fraction or an exponent
tolerated) or as an HTTP date; what only Python's ``float`` would also take (``1_000``, other
scripts' digits) is no instruction, so the policy's own backoff applies instead of a delay the
server never meant."""

from __future__ import annotations

import pytest

from turnfork.core.machine import retry_after_ms


@pytest.mark.parametrize(("headers", "expected"), [
    ({"retry-after": "2"}, 2000.0),
    ({"retry-after": " 1.5 "}, 1500.0),
    ({"retry-after-ms": "250"}, 250.0),
    ({"retry-after": "1_000"}, None),
    ({"retry-after": "\u0661\u0662"}, None),  # Arabic-Indic digits
    ({"retry-after": "1e1"}, 10_000.0),
    ({"retry-after-ms": "2_5", "retry-after": "3"}, 3000.0),
])
def test_a_delay_is_read_from_ascii_digits_only(headers: dict[str, str],
                                                expected: float | None) -> None:
    assert retry_after_ms(headers, 0.0) == expected
