"""The verification kit (`turnfork.testing`) and its pytest plugin (`turnfork.pytest_plugin`):
the failure messages name the rule, the item and the call id; a runtime's seed is compared
with the completed-turn prefix; the plugin's fixture exists only with hypothesis, loads nothing
of turnfork, and this suite runs with it as it did."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings

from turnfork import pytest_plugin
from turnfork.core.formats import FORMAT_NAMES, FormatName, openai_chat
from turnfork.testing import (
    assert_balanced,
    assert_completed_turn_prefix,
    broken_histories,
    histories,
)

USER = {"role": "user", "content": "q"}
CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "ok"}
ANSWER = {"role": "assistant", "content": "a"}


def test_a_balanced_history_passes_and_comes_back_decoded() -> None:
    history = assert_balanced([USER, CALL, RESULT, ANSWER], "openai-chat")
    assert history.completed_prefix_length == 4
    assert assert_balanced(history).format == "openai-chat"


def test_the_message_names_the_rule_the_item_and_the_call_id() -> None:
    with pytest.raises(AssertionError) as orphan:
        assert_balanced([RESULT, USER, ANSWER], "openai-chat")
    assert str(orphan.value) == (
        "openai-chat history is not balanced: rule orphan-result, item 0, call id call_1: tool "
        "message for call_1 is not a response to a preceding message with 'tool_calls' that "
        "made that call\n"
        '  item 0: {"role": "tool", "tool_call_id": "call_1", "content": "ok"}')
    with pytest.raises(AssertionError, match=r"ends inside a turn .*rule unanswered-call, item 1, "
                                             r"call id call_1"):
        assert_balanced([USER, CALL], "openai-chat")


def test_strict_thinking_and_detection_are_passed_on() -> None:
    with pytest.raises(AssertionError, match="rule null-content, item 1"):
        assert_balanced([USER, {"role": "assistant", "content": None}, USER, ANSWER],
                        "openai-chat", strict=True)
    with pytest.raises(AssertionError, match="name the format"):
        assert_balanced([USER, ANSWER])
    assert assert_balanced([USER, CALL, RESULT, ANSWER]).format == "openai-chat"
    loop = [USER, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}]
    assert assert_balanced(loop, "anthropic", thinking=False)
    with pytest.raises(AssertionError, match="rule thinking-first"):
        assert_balanced(loop, "anthropic", thinking=True)
    with pytest.raises(AssertionError, match="can be checked: the request continues"):
        assert_balanced({"previous_response_id": "resp_1", "input": []})


def test_a_seed_is_compared_with_the_completed_turn_prefix() -> None:
    history = [USER, ANSWER, USER, CALL]
    assert_completed_turn_prefix(history[:2], history, "openai-chat")
    with pytest.raises(AssertionError) as naive:
        assert_completed_turn_prefix(history, history, "openai-chat")
    assert str(naive.value).startswith(
        "openai-chat seed is not the completed-turn prefix: 4 items where the prefix has 2 of "
        "the history's 4; they part at item 2\n")
    assert "prefix: (the prefix ends)" in str(naive.value)


@settings(max_examples=30, deadline=None)
@given(histories("openai-chat"))
def test_the_strategies_come_with_the_kit(sample: object) -> None:
    items, cut = sample.items, sample.cut  # type: ignore[attr-defined]
    assert_completed_turn_prefix(openai_chat.completed_turn_prefix(items), items, "openai-chat")
    assert openai_chat.completed_turn_cut(items) == cut


def test_the_fixture_runs_once_per_format(wire_format: FormatName) -> None:
    """`wire_format` comes from the plugin this repository's own run loads."""
    assert wire_format in FORMAT_NAMES
    assert broken_histories(wire_format) is not None


def test_the_plugin_names_every_format() -> None:
    assert pytest_plugin.WIRE_FORMATS == FORMAT_NAMES


#: hypothesis made unfindable: by a finder of its own, and by pytest's assertion-rewriting
#: finder (which claims the modules of every pytest plugin's distribution, hypothesis's too).
_HIDE_HYPOTHESIS = textwrap.dedent("""
    import sys
    import _pytest.assertion.rewrite as rewrite

    def hidden(name):
        return name == "hypothesis" or name.startswith("hypothesis.")

    class Hide:
        def find_spec(self, name, path=None, target=None):
            if hidden(name):
                raise ModuleNotFoundError(name)
            return None

    sys.meta_path.insert(0, Hide())
    _claim = rewrite.AssertionRewritingHook.find_spec

    def find_spec(self, name, path=None, target=None):
        if hidden(name):
            raise ModuleNotFoundError(name)
        return _claim(self, name, path, target)

    rewrite.AssertionRewritingHook.find_spec = find_spec
""")


def _pytest(tmp_path: Path, *, hide: bool) -> subprocess.CompletedProcess[str]:
    """pytest on another project's test that asks for `wire_format`."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_uses_it.py").write_text(
        "def test_formats(wire_format):\n    assert wire_format\n", encoding="utf-8")
    options = ["-q", "-p", "no:cacheprovider", *(["-p", "no:hypothesispytest"] if hide else [])]
    code = ((_HIDE_HYPOTHESIS if hide else "") + "import sys, pytest\n"
            f"sys.exit(pytest.main({[*options, str(project)]!r}))\n")
    return subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True,
                          text=True, timeout=120, check=False)


def test_another_project_gets_the_fixture_with_hypothesis(tmp_path: Path) -> None:
    done = _pytest(tmp_path, hide=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout


def test_without_hypothesis_the_plugin_defines_nothing(tmp_path: Path) -> None:
    """hypothesis hidden from the import system: pytest still starts, the plugin loads and adds
    no fixture (hypothesis's own plugin, which would need it, is turned off)."""
    done = _pytest(tmp_path, hide=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "fixture 'wire_format' not found" in done.stdout
    assert "Traceback" not in done.stderr


def test_loading_the_plugin_loads_nothing_else() -> None:
    """No turnfork module but the package and the plugin, and no hypothesis."""
    code = ("import sys, turnfork.pytest_plugin\n"
            "mine = sorted(m for m in sys.modules if m.startswith('turnfork'))\n"
            "assert mine == ['turnfork', 'turnfork.pytest_plugin'], mine\n"
            "assert 'hypothesis' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr


def test_the_kit_says_it_needs_hypothesis() -> None:
    code = _HIDE_HYPOTHESIS + textwrap.dedent("""
        try:
            import turnfork.testing
        except ImportError as exc:
            print(exc)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.stdout.strip() == ("turnfork.testing needs hypothesis: pip install "
                                   "'turnfork[hypothesis]'")
