"""Real-world broken histories: each is flagged where and as its issue reports, and cut to a
history the provider accepts.

Each fixture in tests/fixtures/broken_histories/ reproduces a shape reported in a public issue
of an agent framework, with the provider's error and the issue's address. "Accepts" is judged
twice: by our checker, and by the provider's rule restated below in a few plain lines per
format, independently of core.formats.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from turnfork.core.formats import anthropic, openai_chat, openai_responses

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "broken_histories"
FIXTURES = sorted(CORPUS.glob("*.json"))
MODULES = {"openai-chat": openai_chat, "openai-responses": openai_responses,
           "anthropic": anthropic}


def _chat_accepts(messages: list[dict[str, Any]]) -> bool:
    """Every tool_calls message is followed at once by exactly one tool message per call, and
    every tool message belongs to such a run."""
    i = 0
    while i < len(messages):
        message = messages[i]
        if message["role"] == "tool":
            return False
        calls = [c["id"] for c in message.get("tool_calls") or []]
        i += 1
        answered = []
        while i < len(messages) and messages[i]["role"] == "tool":
            answered.append(messages[i]["tool_call_id"])
            i += 1
        if sorted(answered) != sorted(calls):
            return False
    return True


def _responses_accepts(items: list[dict[str, Any]]) -> bool:
    """Each call has one output after it and each output a call before it; ids are unique; a
    reasoning item is followed by a non-reasoning model item."""
    ids = [item["id"] for item in items if item.get("id")]
    if len(ids) != len(set(ids)):
        return False
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind.endswith("_call") and "call_id" in item:
            outputs = [o for o in items[i + 1:] if o.get("call_id") == item["call_id"]
                       and o.get("type") == kind + "_output"]
            if len(outputs) != 1:
                return False
        if kind.endswith("_output") and not any(
                c.get("call_id") == item["call_id"] and c.get("type") + "_output" == kind
                for c in items[:i]):
            return False
        if kind == "reasoning":
            rest = [x for x in items[i + 1:] if x.get("type") != "reasoning"]
            follower = rest[0] if rest else None
            if follower is None or not (follower.get("role") == "assistant"
                                        or follower.get("type", "").endswith("_call")):
                return False
    return True


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [] if isinstance(content, str) else content


def _anthropic_accepts(messages: list[dict[str, Any]], thinking: bool) -> bool:
    """tool_use is answered by tool_results opening the next (user) message; results answer
    the previous message; server uses get results in their turn; an open tool loop's turn
    starts with thinking when thinking is on."""
    for i, message in enumerate(messages):
        blocks = _blocks(message)
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        if uses:
            if i + 1 >= len(messages):
                return False
            following = _blocks(messages[i + 1])
            head = following[:len(uses)]
            if (messages[i + 1]["role"] != "user" or len(head) != len(uses)
                    or any(b["type"] != "tool_result" for b in head)
                    or sorted(b["tool_use_id"] for b in head) != sorted(uses)):
                return False
        results = [b for b in blocks if b["type"] == "tool_result"]
        if results and len(results) != len(
                [b for b in (_blocks(messages[i - 1]) if i else []) if b["type"] == "tool_use"]):
            return False
        if message["role"] == "assistant":
            turn = [b for m in messages[i:] for b in _blocks(m)]
            for block in blocks:
                if block["type"] == "server_tool_use" and not any(
                        b.get("tool_use_id") == block["id"] for b in turn):
                    return False
                if (block["type"].endswith("_tool_result") and block["type"] != "tool_result"
                        and not any(b.get("id") == block["tool_use_id"]
                                    for m in messages[:i + 1] for b in _blocks(m))):
                    return False
    last = messages[-1] if messages else None
    if thinking and last is not None and any(b["type"] == "tool_result" for b in _blocks(last)):
        prompts = [k for k, m in enumerate(messages) if m["role"] == "user"
                   and not any(b["type"] == "tool_result" for b in _blocks(m))]
        opening = messages[prompts[-1] + 1] if prompts else messages[0]
        first = _blocks(opening)[:1]
        if not first or first[0]["type"] not in ("thinking", "redacted_thinking"):
            return False
    return True


def _accepts(fixture: dict[str, Any], items: list[dict[str, Any]]) -> bool:
    if fixture["format"] == "openai-chat":
        return _chat_accepts(items)
    if fixture["format"] == "openai-responses":
        return _responses_accepts(items)
    return _anthropic_accepts(items, bool(fixture.get("thinking")))


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_corpus_holds_twenty_real_shapes() -> None:
    """At least 20 fixtures, each citing a GitHub thread and stating the provider's error."""
    assert len(FIXTURES) >= 20
    for path in FIXTURES:
        fixture = _load(path)
        assert fixture["issue"].startswith("https://github.com/"), path.name
        assert fixture["provider_error"] and fixture["shape"], path.name
        assert fixture["format"] in MODULES, path.name
    formats = {_load(p)["format"] for p in FIXTURES}
    assert formats == set(MODULES)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_the_checker_names_the_reported_defect(path: Path) -> None:
    """check_balance fails at the fixture's index with the fixture's rule."""
    fixture = _load(path)
    module = MODULES[fixture["format"]]
    options = {"thinking": fixture["thinking"]} if "thinking" in fixture else {}
    violation = module.check_balance(fixture["history"], **options).failure()
    expected = fixture["expected"]
    assert (violation.index, violation.rule) == (expected["index"], expected["rule"]), violation
    assert not _accepts(fixture, fixture["history"]), "the restated rule must refuse it too"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_the_cut_is_a_history_the_provider_accepts(path: Path) -> None:
    """The completed-turn prefix has the fixture's length, passes our checker and the
    restated provider rule, and ends at a completed turn."""
    fixture = _load(path)
    module = MODULES[fixture["format"]]
    options = {"thinking": fixture["thinking"]} if "thinking" in fixture else {}
    prefix = list(module.completed_turn_prefix(fixture["history"]))
    assert len(prefix) == fixture["expected"]["cut"]
    assert prefix == fixture["history"][:len(prefix)]
    assert module.check_balance(prefix, **options).unwrap().ends_at_completed_turn
    assert _accepts(fixture, prefix)
