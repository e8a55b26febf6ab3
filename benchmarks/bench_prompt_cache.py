"""A fork child and the provider's prompt cache, on the wire, at K = 10, 100, 1,000 (issues 13.2,
28).

A parent with K completed turns (DSH's K shape: a user message, one ``echo`` call, its result,
the reply ``ok``; scripted) forks in turn K+1 over the real ``openai`` SDK against the loopback
fake provider of the tests (``tests/shell/fake_openai_server.py``), which keeps every request
body and bills each prompt's longest byte prefix shared with any earlier prompt as cache hits
(tokens ≈ bytes / 4). The instrument is ``tests/shell/_wire_prefix.py``; the test
``tests/shell/test_openai_prompt_cache.py`` holds the requirement to it.

Figures per K:

* **prompt share**: of the child's first request's system + tools + seed messages (rendered as a
  provider renders a prompt: system, tools, messages), the byte prefix the parent's request
  before it shares. Target ≥ 99 %.
* **body share**: the byte prefix of the two HTTP bodies as the SDK sent them (``messages``
  come before ``tools`` there), over the child's body.
* **inherited tokens billed as hits / misses**: the child's inherited prompt (system + tools +
  seed) in the fake's tokens, split by what the fake provider billed as cache hits for the
  child's first request — the token cost of a fork.
* children that differ from their parent — a **persona**, a **tool filter**, a
  **structured output** schema, and a continuable child with the child-only **report tool**
  (with that persona and filter) — in DSH's mode (the cached prefix ends at the first
  difference: the system prompt or the tool list) and in the cache-preserving mode
  (``ForkProvider(cache_preserving=True)``: target ≤ 1 % of the inherited tokens billed as
  misses), side by side in one run, at every K (K = 10 only with ``--quick``);
* a **continued child** in both modes: the continuable child's later requests (after a tool
  call, a follow-up turn, a restart and cold resume), each against the one before: the least
  share of a request its successor repeats byte for byte (target 100 %).

Run: ``python -m benchmarks.bench_prompt_cache [--quick]`` (needs the ``openai`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from turnfork.core import ToolRestriction

from .harness import Row, Section, Settings, Target, report_section

__all__ = ["NAME", "TITLE", "run"]

NAME = "prompt-cache"
TITLE = "a fork child's first request against the parent's prompt cache (real SDK, loopback)"

_TESTS_SHELL = Path(__file__).resolve().parents[1] / "tests" / "shell"
#: The persona the subagent tool gives its children in the persona variant.
_CHILD_PERSONA = "You are a strict reviewer of money-handling code."
#: The output schema of the structured-output variant.
_SCHEMA = ('{"type":"object","required":["words"],"properties":{"words":{"type":"array",'
           '"items":{"type":"string"}}}}')


def _instrument(*, continued: bool = False) -> Any:
    if str(_TESTS_SHELL) not in sys.path:
        sys.path.insert(0, str(_TESTS_SHELL))
    if continued:
        import _continued_wire  # lives with the tests' fake provider

        return _continued_wire
    import _wire_prefix

    return _wire_prefix


def _billed(share: Any, usage: dict[str, Any]) -> tuple[int, int]:
    """The child's inherited tokens (the fake's count of its system + tools + seed), and how
    many of them the fake provider billed as cache hits."""
    inherited = -(-share.inherited_bytes // 4)
    return inherited, min(int(usage.get("prompt_cache_hit_tokens", 0)), inherited)


#: The variants: a child that differs from its parent, each in DSH's mode and ours.
_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("persona", {"child_persona": _CHILD_PERSONA}),
    ("tool filter", {"tool_filter": ToolRestriction(deny=("echo",))}),
    ("structured output", {"output_schema": _SCHEMA}),
)
_MODES = (("DSH", False), ("cache-preserving", True))


def _fork_rows(wire_prefix: Any, k: int, variant: str, options: dict[str, Any], *,
               mode: str, cached: bool) -> tuple[list[Row], dict[str, Any]]:
    wire = asyncio.run(wire_prefix.fork_on_the_wire(k, cache_preserving=cached, **options))
    share = wire.share()
    usage = wire.child.usage or {}
    inherited, hits = _billed(share, usage)
    target = Target("<=", 0.01, "(issue 28)") if cached else None
    rows: list[Row] = [
        Row(f"K={k}, {variant}, {mode}: prompt share", share.share, "%"),
        Row(f"K={k}, {variant}, {mode}: inherited tokens billed as misses",
            inherited - hits, "tokens"),
        Row(f"K={k}, {variant}, {mode}: misses / inherited tokens",
            (inherited - hits) / inherited, "%", target),
    ]
    return rows, {"k": k, "mode": mode, "inherited_bytes": share.inherited_bytes,
                  "shared_bytes": share.shared_bytes, "system_equal": share.system_equal,
                  "tools_equal": share.tools_equal, "inherited_tokens": inherited,
                  "hit_tokens": hits, "child_first_request_usage": usage}


def _continued_rows(k: int, mode: str, cached: bool, root: Path
                    ) -> tuple[list[Row], dict[str, Any]]:
    """A continuable fork child with a persona, a filter and the child-only report tool:
    its first request against its parent's, then each later request against the one before
    (the step after a tool call, a follow-up turn, a turn after a restart and cold resume)."""
    continued = _instrument(continued=True)
    wire = asyncio.run(continued.continued_fork_on_the_wire(
        root, "child", turns=k, cache_preserving=cached, persona=_CHILD_PERSONA,
        tool_filter=ToolRestriction(deny=("echo",))))
    wire_prefix = _instrument()
    share = wire_prefix.prompt_share(wire.parent, wire.child[0], wire.seed_messages)
    # The scenario serves parent and child from two fake servers (their replies must not
    # race), so the child's server never saw the parent's prompt: the hits are the ones one
    # provider would bill, floor(shared prefix bytes / 4), all of them when the whole
    # inherited prompt is shared (the request goes on past it, as the fake's accounting sees).
    inherited = -(-share.inherited_bytes // 4)
    hits = inherited if share.shared_bytes == share.inherited_bytes \
        else min(share.shared_bytes // 4, inherited)
    target = Target("<=", 0.01, "(issue 28)") if cached else None
    steps = list(zip(wire.child, wire.child[1:], strict=False))
    extended = [continued.extends(later, earlier) for earlier, later in steps]
    prompt_bytes = wire_prefix.prompt_bytes
    kept = min(wire_prefix.common_prefix(prompt_bytes(later.body), prompt_bytes(earlier.body))
               / len(prompt_bytes(earlier.body)) for earlier, later in steps)
    rows: list[Row] = [
        Row(f"K={k}, report tool (continuable), {mode}: prompt share", share.share, "%"),
        Row(f"K={k}, report tool (continuable), {mode}: misses / inherited tokens",
            (inherited - hits) / inherited, "%", target),
        Row(f"K={k}, continued child, {mode}: least share of a request its successor "
            "repeats", kept, "%", Target(">=", 1.0, "(issue 28)")),
    ]
    return rows, {"k": k, "mode": mode, "inherited_tokens": inherited, "hit_tokens": hits,
                  "system_equal": share.system_equal, "tools_equal": share.tools_equal,
                  "every_request_extends_the_previous": all(extended),
                  "least_share_kept": kept}


def run(settings: Settings) -> Section:
    try:
        import openai  # noqa: F401 - the SDK is an optional extra
    except ImportError:
        return Section(NAME, TITLE, (), (), unavailable="needs the openai extra")
    wire_prefix = _instrument()
    sizes = (10, 100) if settings.quick else (10, 100, 1000)
    rows: list[Row] = []
    params: dict[str, Any] = {"token_bytes": 4, "k": list(sizes), "per_k": {}}
    for k in sizes:
        wire = asyncio.run(wire_prefix.fork_on_the_wire(k))
        share = wire.share()
        usage = wire.child.usage or {}
        inherited, hits = _billed(share, usage)
        rows += [
            Row(f"K={k}: prompt share (system+tools+seed)", share.share, "%",
                Target(">=", 0.99, "(issue 13.2)")),
            Row(f"K={k}: body share (HTTP bytes as sent)", share.body_share, "%"),
            Row(f"K={k}: inherited tokens billed as cache hits", hits, "tokens"),
            Row(f"K={k}: inherited tokens billed as misses", inherited - hits, "tokens"),
        ]
        params["per_k"][str(k)] = {
            "inherited_bytes": share.inherited_bytes, "shared_bytes": share.shared_bytes,
            "body_bytes": share.body_bytes, "body_shared_bytes": share.body_shared_bytes,
            "system_equal": share.system_equal, "tools_equal": share.tools_equal,
            "seed_messages": share.seed_messages,
            "leading_messages_equal": share.leading_messages_equal,
            "child_first_request_usage": usage}
    # Children that differ from their parent, in DSH's mode and the cache-preserving one,
    # side by side in this run.
    varied = (10,) if settings.quick else sizes
    params["variants"] = []
    for k in varied:
        for variant, options in _VARIANTS:
            for mode, cached in _MODES:
                found, detail = _fork_rows(wire_prefix, k, variant, options, mode=mode,
                                           cached=cached)
                rows += found
                params["variants"].append({"variant": variant, **detail})
    params["continued"] = []
    with tempfile.TemporaryDirectory(prefix="turnfork-bench-") as scratch:
        for k in varied:
            for mode, cached in _MODES:
                found, detail = _continued_rows(k, mode, cached,
                                                Path(scratch) / f"{k}-{int(cached)}")
                rows += found
                params["continued"].append(detail)
    notes = ("tokens are the fake provider's: ceil(prompt bytes / 4); hits: floor(shared prefix "
             "bytes / 4)",
             f"persona: the subagent tool's persona {_CHILD_PERSONA!r}; tool filter: "
             f"deny=('echo',); structured output: the schema {_SCHEMA}",
             "report tool: a continuable fork child with that persona and filter and "
             "ReportTool(scope='child'); the continued child is the same child, continued "
             "three times (after a tool call, a follow-up, a restart and cold resume)")
    return Section(NAME, TITLE, notes, tuple(rows), params=params)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_prompt_cache")
    parser.add_argument("--quick", action="store_true", help="K = 10 and 100 only")
    return report_section(run, parser.parse_args(argv).quick)


if __name__ == "__main__":
    sys.exit(main())
