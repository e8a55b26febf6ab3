"""`turnfork demo`'s prompt-cache section (issue 13.2): the fork child's first request against
the parent's request at the fork, computed from the run, in the picture, the JSON and the
checks; a persona or a tool filter shows a smaller share (DSH: they change the prompt)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from typing import Any

import pytest
from _cli_helpers import REPO, run_cli

from turnfork.core import ToolRestriction
from turnfork.shell.cli import demo
from turnfork.shell.cli.demo import DemoResult, demo_summary, run_demo, run_demo_async
from turnfork.shell.cli.demo_cache import TOKEN_BYTES, cache_share, provider_prompt
from turnfork.shell.models.openai_chat import OpenAIChatModel

sys.path.insert(0, str(REPO / "tests" / "shell"))
from fake_openai_server import FakeOpenAI, Recorded, Reply, chunk, prompt_bytes

_PERSONA = "You are a strict reviewer of money-handling code."


@pytest.fixture(scope="module")
def plain() -> DemoResult:
    return run_demo()


def _cache(result: DemoResult) -> Any:
    fork = result.fork
    assert fork is not None and fork.cache is not None
    return fork.cache


def test_a_plain_fork_extends_the_parents_request(plain: DemoResult) -> None:
    """The embedded fork child's first request repeats the parent's system prompt, tool
    schemas and leading messages: every inherited byte is a shared prefix, billed as hits."""
    cache = _cache(plain)
    assert cache.system_equal and cache.tools_equal and cache.tools == 4
    assert cache.seed_messages > 0 and cache.leading_messages_equal == cache.seed_messages
    assert cache.shared_bytes == cache.inherited_bytes > 0 and cache.share == 1.0
    assert cache.inherited_bytes < cache.child_prompt_bytes  # its own prompt comes after
    assert cache.hit_tokens == cache.inherited_tokens == cache.inherited_bytes // TOKEN_BYTES
    assert cache.miss_tokens == 0
    assert plain.ok and plain.plain_fork


@pytest.mark.parametrize(("options", "differs"), [
    ({"persona": _PERSONA}, "system_equal"),
    ({"tool_filter": ToolRestriction(deny=("grep",))}, "tools_equal")])
def test_a_persona_or_a_tool_filter_shows_a_smaller_share(plain: DemoResult,
                                                          options: dict[str, Any],
                                                          differs: str) -> None:
    """A child with a persona (its system prompt) or a tool filter (its tool schemas) shares
    only the bytes before the difference: misses appear; the seed messages still equal the
    parent's, and the demo is still ok (not a plain fork)."""
    result = run_demo(**options)
    cache, full = _cache(result), _cache(plain)
    assert not getattr(cache, differs)
    assert cache.leading_messages_equal == cache.seed_messages == full.seed_messages
    assert cache.share < 0.5 and cache.shared_bytes < full.shared_bytes
    assert cache.miss_tokens > 0
    assert cache.hit_tokens + cache.miss_tokens == cache.inherited_tokens
    assert result.ok and not result.plain_fork
    summary = demo_summary(result)
    assert summary["plain_fork"] is False and summary["prompt_cache"] == cache.as_json()
    page = " ".join((REPO / "docs" / "cli.md").read_text(encoding="utf-8").split())
    assert f"{cache.shared_bytes:,} of {cache.inherited_bytes:,}" in page  # its figures are real


def test_a_plain_fork_below_the_share_is_a_problem(plain: DemoResult) -> None:
    """A plain fork whose first request shares under 99% of its inherited bytes is reported
    (exit 1), naming the share."""
    fork = plain.fork
    assert fork is not None and fork.cache is not None
    worse = dataclasses.replace(fork.cache, shared_bytes=fork.cache.inherited_bytes // 2)
    broken = dataclasses.replace(plain, forks=(dataclasses.replace(fork, cache=worse),))
    problems = demo._problems(broken)
    assert len(problems) == 1 and problems[0].startswith(
        f"child {fork.child_id}'s first request shares only 50.0% of its system, tools and seed")


def test_the_section_and_the_checks_line_show_the_runs_figures(plain: DemoResult) -> None:
    """`turnfork demo` draws the section with the run's bytes, share and tokens, and the
    checks line says the child's first request extends the parent's; `--json` carries them."""
    cache = _cache(plain)
    run = run_cli("demo", columns=200)
    assert run.code == 0, run.stderr
    out = " ".join(run.stdout.split())  # the checks line wraps
    assert "■ The prompt cache · the child's first request against the parent's" in out
    assert f"parent, turn 3 step 2 (the request answered with the subagent call): " \
        f"{cache.parent_prompt_bytes:,} bytes" in out
    assert f"its first request: {cache.child_prompt_bytes:,} bytes, " \
        f"{cache.inherited_bytes:,} of them inherited" in out
    assert f"shared prefix: {cache.shared_bytes:,} of the {cache.inherited_bytes:,} " \
        "inherited bytes (100.0%)" in out
    assert f"{cache.inherited_tokens:,}, billed by a prefix-caching provider as " \
        f"{cache.hit_tokens:,} cache hits and 0 misses" in out
    assert "the child's first request extends the parent's: 100.0% of its system+tools+seed " \
        "bytes are a shared prefix" in out.split("✓ checks:")[1]
    summary = run_cli("demo", "--json").json()
    assert summary["prompt_cache"] == cache.as_json() == summary["forks"][0]["prompt_cache"]
    assert summary["forks"][0]["first_request_usage"] is None  # the scripted models report none


def _call(name: str, arguments: dict[str, Any], call_id: str) -> Reply:
    piece = {"index": 0, "id": call_id, "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}
    return Reply(events=(chunk({"tool_calls": [piece]}, finish="tool_calls"),))


def _text(text: str) -> Reply:
    return Reply(events=(chunk({"content": text}, finish="stop"),))


#: The embedded scenario's calls in order, as a provider would stream them: the parent's
#: seven, the child's two, the parent's last.
_WIRE_SCRIPT = [
    _call("list_files", {}, "c1"), _call("read_file", {"path": "README.md"}, "c2"),
    _text("tinyshop: a shop backend; money in int cents."),
    _call("grep", {"pattern": "discount"}, "c3"), _text("In Cart.apply_discount; untested."),
    _call("read_file", {"path": "shop/cart.py"}, "c4"),
    _call("subagent", {"description": "Review cart.py", "prompt": "Review shop/cart.py."}, "c5"),
    _call("read_file", {"path": "shop/cart.py"}, "c6"), _text("Findings: float money."),
    _text("The reviewer found float money."),
]
_AT_FORK, _CHILD_FIRST = 6, 7


def _on_the_wire() -> tuple[DemoResult, list[Recorded]]:
    async def scenario() -> tuple[DemoResult, list[Recorded]]:
        async with FakeOpenAI(list(_WIRE_SCRIPT), prefix_cache=True) as server, \
                OpenAIChatModel("m", base_url=server.base_url, api_key="",
                                timeout=60.0) as model:
            result = await run_demo_async(model=model, provider="openai-compatible",
                                          model_name="m")
            return result, list(server.requests)
    return asyncio.run(scenario())


def test_the_figures_are_those_of_the_sdks_wire_bodies() -> None:
    """Through the real OpenAI SDK against a loopback provider: the demo's share equals the
    share of the request bodies as they arrived (so its bodies are what the SDK sends), its
    rendering is the provider's, and the provider's cache hits reach the logged usage."""
    result, requests = _on_the_wire()
    assert result.ok, result.problems
    assert len(requests) == len(_WIRE_SCRIPT)
    cache = _cache(result)
    parent, child = requests[_AT_FORK].body, requests[_CHILD_FIRST].body
    assert cache_share(parent, child, cache.seed_messages) == cache
    assert cache.share == 1.0 and cache.leading_messages_equal == cache.seed_messages
    for recorded in requests:
        assert provider_prompt(recorded.body) == prompt_bytes(recorded.body)
    fork = result.fork
    assert fork is not None and fork.first_usage is not None
    billed = requests[_CHILD_FIRST].usage
    assert billed is not None
    assert fork.first_usage.cache_read_tokens == billed["prompt_cache_hit_tokens"]
    assert billed["prompt_cache_hit_tokens"] >= cache.hit_tokens
    assert demo_summary(result)["forks"][0]["first_request_usage"] == {
        "input_tokens": billed["prompt_cache_miss_tokens"], "output_tokens": 1,
        "cache_read_tokens": billed["prompt_cache_hit_tokens"]}
