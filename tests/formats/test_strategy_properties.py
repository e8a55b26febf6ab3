"""The checkers agree with what the strategies built: the cut, and each defect's index and rule."""

from __future__ import annotations

from types import ModuleType

import pytest
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from turnfork.core.formats import FORMAT_NAMES, anthropic, openai_chat, openai_responses
from turnfork.core.formats.strategies import (
    BrokenSample,
    Sample,
    broken_histories,
    closed_histories,
    histories,
    in_flight_histories,
)

MODULES: dict[str, ModuleType] = {"openai-chat": openai_chat,
                                  "openai-responses": openai_responses, "anthropic": anthropic}
EVERY = pytest.mark.parametrize("fmt", FORMAT_NAMES)


@EVERY
@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_closed_histories_are_balanced_and_end_at_their_cut(fmt: str, data: st.DataObject,
                                                            ) -> None:
    """A closed history: balanced, and its completed-turn prefix is all of it."""
    sample: Sample = data.draw(closed_histories(fmt))  # type: ignore[arg-type]
    history = MODULES[fmt].decode_history(sample.items)
    assert history.is_balanced, history
    assert history.completed_prefix_length == sample.cut == len(sample.items)


@EVERY
@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_in_flight_histories_are_cut_where_the_turn_before_ended(fmt: str,
                                                                 data: st.DataObject) -> None:
    """Stopped inside a turn: no rule broken, the cut is the previous turn's end, balanced."""
    sample: Sample = data.draw(in_flight_histories(fmt))  # type: ignore[arg-type]
    module = MODULES[fmt]
    history = module.decode_history(sample.items)
    assert history.violation is None, history
    assert history.completed_prefix_length == sample.cut < len(sample.items)
    prefix = module.completed_turn_prefix(history)
    assert list(prefix) == list(sample.items[:sample.cut])
    assert module.check_balance(prefix).unwrap().ends_at_completed_turn


@EVERY
@settings(max_examples=examples(400), deadline=None)
@given(data=st.data())
def test_broken_histories_are_flagged_at_their_defect(fmt: str, data: st.DataObject) -> None:
    """One defect: check_balance names its index and rule; the cut stays before it."""
    sample: BrokenSample = data.draw(broken_histories(fmt))  # type: ignore[arg-type]
    module = MODULES[fmt]
    violation = module.check_balance(sample.items).failure()
    assert (violation.index, violation.rule) == (sample.index, sample.rule), violation
    history = module.decode_history(sample.items)
    assert history.completed_prefix_length <= sample.index
    assert module.check_balance(module.completed_turn_prefix(history)).unwrap()


@EVERY
@settings(max_examples=examples(100), deadline=None)
@given(data=st.data())
def test_histories_read_from_their_json_text(fmt: str, data: st.DataObject) -> None:
    """Generated items are plain JSON: a round trip through text reads the same."""
    import json

    sample: Sample = data.draw(histories(fmt))  # type: ignore[arg-type]
    again = json.loads(json.dumps(list(sample.items)))
    assert MODULES[fmt].completed_turn_cut(again) == sample.cut


def test_an_unknown_format_is_refused() -> None:
    """A strategy for a format the module does not know is refused when it is asked for."""
    from beartype.roar import BeartypeCallHintViolation

    with pytest.raises(BeartypeCallHintViolation, match="gemini"):
        histories("gemini")  # type: ignore[arg-type]
