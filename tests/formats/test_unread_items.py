"""An item that does not read stops the pass with a `shape` violation, after the rules of the
items before it were checked: never an assert, and the same verdict under ``python -O``.

Regression for finding G05 (issue 25): on cb407df ``[{"role": "tool"}, {}]`` raised
``AssertionError`` from the Chat fold (the list did not convert, so the items before the bad one
skipped the format's own check), and the Responses and Anthropic folds likewise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest
from _budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from turnfork.core.formats import FormatName, anthropic, openai_chat, openai_responses
from turnfork.core.formats.strategies import broken_histories, histories

MODULES: dict[FormatName, ModuleType] = {"openai-chat": openai_chat,
                                         "openai-responses": openai_responses,
                                         "anthropic": anthropic}
#: (format, history, index of the shape violation): an item the format's check refuses, then
#: one that does not read at all; on cb407df each Chat and Anthropic case and the Responses
#: ``[function_call, 5]`` case reached an assert (the Responses output-first case was
#: already a ``shape`` violation there).
CASES: list[tuple[FormatName, list[Any], int]] = [
    ("openai-chat", [{"role": "tool"}, {}], 0),
    ("openai-chat", [{"role": "user", "content": "q"}, {"role": "tool", "content": "x"}, 7], 1),
    ("openai-responses", [{"type": "function_call_output"}, {}], 0),
    ("openai-responses", [{"type": "function_call", "name": "f"}, 5], 0),
    ("anthropic", [{"role": "assistant", "content": [{"type": "tool_use"}]}, {}], 0),
    ("anthropic", [{"role": "user", "content": "q"},
                   {"role": "assistant", "content": [{"type": "server_tool_use"}]}, 3], 1),
    ("anthropic", [{"role": "user", "content": [{"type": "tool_result"}]}, []], 0),
]


@pytest.mark.parametrize(("fmt", "items", "index"), CASES)
def test_an_unchecked_item_is_a_shape_violation(fmt: FormatName, items: list[Any],
                                                index: int) -> None:
    """The first item the format refuses is named, with rule `shape`; nothing raises."""
    module = MODULES[fmt]
    violation = module.check_balance(items).failure()
    assert (violation.index, violation.rule) == (index, "shape"), violation
    history = module.decode_history(items)
    assert history.end_violation is None and history.completed_prefix_length == 0


def test_the_verdicts_are_the_same_under_python_minus_O() -> None:
    """With asserts stripped (``python -O``) every case gives the same violation."""
    expected = [[fmt, index, "shape"] for fmt, _, index in CASES]
    code = ("import json, sys\n"
            "from turnfork.core.formats import anthropic, openai_chat, openai_responses\n"
            "modules = {'openai-chat': openai_chat, 'openai-responses': openai_responses,\n"
            "           'anthropic': anthropic}\n"
            "out = []\n"
            "for fmt, items, _ in json.loads(sys.stdin.read()):\n"
            "    v = modules[fmt].check_balance(items).failure()\n"
            "    out.append([fmt, v.index, v.rule])\n"
            "print(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-O", "-c", code], input=json.dumps(CASES),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected


_UNREADABLE = st.sampled_from([{}, 5, "text", [], {"role": 7}, None])


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(sorted(MODULES)), st.data())
def test_a_bad_item_anywhere_leaves_the_judgement_of_the_items_before_it(
        fmt: FormatName, data: st.DataObject) -> None:
    """Insert an item that does not read at position k of any history, valid or broken: the
    violation is the first one of items[:k], else `shape` at k, and the cut is that of
    items[:k]; nothing is said of the end."""
    sample = data.draw(st.one_of(histories(fmt), broken_histories(fmt)))
    items = list(sample.items)
    k = data.draw(st.integers(0, len(items)))
    bad = data.draw(_UNREADABLE)
    module = MODULES[fmt]
    before = module.decode_history(items[:k])
    whole = module.decode_history([*items[:k], bad, *items[k:]])
    expected = before.violation or whole.violation
    assert whole.violation == expected and whole.violation is not None
    if before.violation is None:
        assert (whole.violation.index, whole.violation.rule) == (k, "shape")
    assert whole.completed_prefix_length == before.completed_prefix_length
    assert whole.end_violation is None
