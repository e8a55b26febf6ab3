"""``OpenAIChatModel(timeout=…)`` is checked where it is given, as the caps and the deadline are:
a timeout that is not a positive number of seconds is a ValueError at construction, not a model
whose every call fails later (retried as TIMEOUT, or UNKNOWN) with no word of the argument."""

from __future__ import annotations

import pytest

from turnfork.shell.models.openai_chat import OpenAIChatModel


@pytest.mark.parametrize("timeout", [0, -5, float("nan"), float("-inf"), "60", True])
def test_a_timeout_that_is_no_positive_number_is_refused(timeout: object) -> None:
    with pytest.raises(ValueError, match=r"^timeout must be a positive number of seconds or "
                                         r"None, not "):
        OpenAIChatModel(base_url="http://127.0.0.1:9/v1",
                        timeout=timeout)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [0.5, 60, None, float("inf")])
def test_a_positive_timeout_or_none_is_taken(timeout: float | None) -> None:
    model = OpenAIChatModel(base_url="http://127.0.0.1:9/v1", timeout=timeout)
    assert model.timeout == timeout
