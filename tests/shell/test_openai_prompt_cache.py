"""A fork child's first request as a provider's prompt cache sees it (issue 13.2), measured on
the wire through the real SDK; the provider's cache hits reach the child's logged usage."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _wire_prefix import ForkWire, fork_on_the_wire, prompt_share
from fake_openai_server import Recorded, cached_tokens, prompt_bytes, prompt_tokens

from benchmarks import bench_prompt_cache
from benchmarks.harness import Settings

SYSTEM = {"role": "system", "content": "You are terse."}
TOOLS = [{"type": "function", "function": {"name": n, "description": n, "parameters": {}}}
         for n in ("echo", "subagent")]
SEED = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]


def _recorded(messages: list[Any], tools: list[Any] = TOOLS) -> Recorded:
    body = {"model": "m", "stream": True, "messages": messages, "tools": tools}
    return Recorded(method="POST", path="/v1/chat/completions", headers={}, body=body,
                    raw=json.dumps(body, separators=(",", ":")).encode())


PARENT = _recorded([SYSTEM, *SEED, {"role": "user", "content": "now fork"}])


def test_an_exact_extension_measures_as_a_full_share() -> None:
    """Ensures that a child request extending the parent's prompt measures 1.0 and passes the
    message-wise checks."""
    child = _recorded([SYSTEM, *SEED, {"role": "user", "content": "the child's task"}])
    share = prompt_share(PARENT, child, seed_messages=2)
    assert share.share == 1.0 and share.is_prefix_extension
    assert share.inherited_bytes == len(prompt_bytes({"messages": [SYSTEM, *SEED],
                                                      "tools": TOOLS}))


@pytest.mark.parametrize(("change", "failed_check"), [
    ("system", "system_equal"), ("tool order", "tools_equal"), ("seed", "leading")])
def test_each_kind_of_divergence_is_measured(change: str, failed_check: str) -> None:
    """Ensures that a different system prompt, tool order or seed message lowers the share
    and fails its message-wise check."""
    system, tools, seed = SYSTEM, TOOLS, SEED
    if change == "system":
        system = {"role": "system", "content": "You are a delegated subagent."}
    elif change == "tool order":
        tools = TOOLS[::-1]
    else:
        seed = [SEED[0], {"role": "assistant", "content": "B"}]
    child = _recorded([system, *seed, {"role": "user", "content": "task"}], tools)
    share = prompt_share(PARENT, child, seed_messages=2)
    assert share.share < 1.0 and not share.is_prefix_extension
    checks = {"system_equal": share.system_equal, "tools_equal": share.tools_equal,
              "leading": share.leading_messages_equal == 2}
    assert [name for name, ok in checks.items() if not ok] == [failed_check]


def test_fake_prompt_cache_counts_the_longest_shared_prefix() -> None:
    """Ensures that the fake provider's cache bills floor(shared bytes / 4) tokens as hits,
    against the best of all earlier prompts."""
    first, second = b"x" * 40 + b"A" * 40, b"y" * 400
    assert cached_tokens(b"x" * 40 + b"B" * 40, [second, first]) == 10
    assert cached_tokens(first, []) == 0
    assert prompt_tokens(b"abcde") == 2


@pytest.fixture(scope="module")
def wire() -> ForkWire:
    return asyncio.run(fork_on_the_wire(4))


def test_the_child_inherits_the_parent_history_message_for_message(wire: ForkWire) -> None:
    """Ensures that the child's seed messages on the wire equal the parent's leading messages
    and the tool schemas are the same, in the same order."""
    share = wire.share()
    assert share.seed_messages == 4 * 4  # user, tool call, tool result, reply per turn
    assert share.leading_messages_equal == share.seed_messages
    assert share.tools_equal


def test_provider_cache_hits_reach_the_logged_usage(wire: ForkWire) -> None:
    """Ensures that the hits the provider reports for the child's and the parent's requests are
    the cacheReadTokens their assistant messages log, the misses their inputTokens."""
    for recorded, usage in ((wire.child, wire.child_usage),
                            (wire.parent_after, wire.parent_after_usage)):
        assert recorded.usage is not None and usage is not None
        assert usage.cache_read_tokens == recorded.usage["prompt_cache_hit_tokens"]
        assert usage.input_tokens == recorded.usage["prompt_cache_miss_tokens"]
    # the parent's request after the child's result extends its previous one: all of it hits
    assert wire.parent_after_usage is not None
    assert wire.parent_after_usage.cache_read_tokens == len(prompt_bytes(wire.parent.body)) // 4


def test_fork_child_first_request_is_a_prefix_cache_hit(wire: ForkWire) -> None:
    """Ensures that ≥ 99% of the child's system + tools + seed bytes are a prefix of the
    parent's request (same system, same tools in order, seed messages identical), and the
    provider bills them as cache hits."""
    share = wire.share()
    assert share.is_prefix_extension, share
    assert share.share >= 0.99, share
    assert wire.child_usage is not None
    assert wire.child_usage.cache_read_tokens >= 0.99 * (share.inherited_bytes // 4)


def test_benchmark_reports_the_instrument_figures(wire: ForkWire) -> None:
    """Ensures that the prompt-cache benchmark runs (quick) and reports, per K, the share, the
    body share and the inherited tokens split into hits and misses that add up; and, at
    K = 10, a persona's, a tool filter's and a structured-output fork and a report-tool child
    in both modes: mostly misses in DSH's, none in the cache-preserving one; and a continued
    child whose every request extends the one before, in both modes."""
    section = bench_prompt_cache.run(Settings(quick=True))
    assert section.unavailable is None
    rows = {row.label: row for row in section.rows}
    assert len(rows) == 8 + 3 * 2 * 3 + 2 * 3
    for detail in section.params["variants"]:
        variant, mode = detail["variant"], detail["mode"]
        misses = rows[f"K=10, {variant}, {mode}: inherited tokens billed as misses"].value
        assert misses == detail["inherited_tokens"] - detail["hit_tokens"]
        assert detail["inherited_tokens"] == -(-detail["inherited_bytes"] // 4)
        fraction = rows[f"K=10, {variant}, {mode}: misses / inherited tokens"]
        if mode == "DSH":
            assert fraction.value > 0.5 and fraction.target is None
        else:
            assert misses == 0 and fraction.status == "MET"
            assert detail["system_equal"] and detail["tools_equal"]
    for detail in section.params["continued"]:
        mode = detail["mode"]
        assert detail["every_request_extends_the_previous"]
        report = rows[f"K=10, report tool (continuable), {mode}: misses / inherited tokens"]
        assert (report.value == 0) == (mode == "cache-preserving")
        assert rows[f"K=10, continued child, {mode}: least share of a request its successor "
                    "repeats"].status == "MET"
    for k in (10, 100):
        per_k = section.params["per_k"][str(k)]
        share = rows[f"K={k}: prompt share (system+tools+seed)"]
        assert share.value == per_k["shared_bytes"] / per_k["inherited_bytes"]
        assert share.target is not None and share.target.bound == 0.99
        hits = rows[f"K={k}: inherited tokens billed as cache hits"].value
        misses = rows[f"K={k}: inherited tokens billed as misses"].value
        assert hits + misses == -(-per_k["inherited_bytes"] // 4)
        assert per_k["leading_messages_equal"] == per_k["seed_messages"] == 4 * k
