"""A fork child and the provider's prompt cache, on the wire, at K = 10, 100, 1,000 (issue 13.2).

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
* the same at the largest K for a fork whose ``subagent`` tool gives its children a
  **persona** (the child's system prompt differs) or a **tool filter** (its tool schemas
  differ): what DSH documents those options to cost, the cached prefix ending at the first
  difference.

Run: ``python -m benchmarks.bench_prompt_cache [--quick]`` (needs the ``openai`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnfork.core import ToolRestriction

from .harness import Report, Row, Section, Settings, Target, machine, render

__all__ = ["NAME", "TITLE", "run"]

NAME = "prompt-cache"
TITLE = "a fork child's first request against the parent's prompt cache (real SDK, loopback)"

_TESTS_SHELL = Path(__file__).resolve().parents[1] / "tests" / "shell"
#: The persona the subagent tool gives its children in the persona variant.
_CHILD_PERSONA = "You are a strict reviewer of money-handling code."


@dataclass(frozen=True)
class ShareRow(Row):
    """A share of bytes, shown as a percentage (``"unit": "%"`` in the JSON)."""

    def shown(self, value: float | None = None) -> str:
        return f"{100 * (self.value if value is None else value):.2f} %"

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "unit": "%"}


@dataclass(frozen=True)
class TokenRow(Row):
    """A count of tokens (``"unit": "tokens"`` in the JSON)."""

    def shown(self, value: float | None = None) -> str:
        return f"{self.value if value is None else value:,.0f} tok"

    def as_json(self) -> dict[str, Any]:
        return {**super().as_json(), "unit": "tokens"}


def _instrument() -> Any:
    if str(_TESTS_SHELL) not in sys.path:
        sys.path.insert(0, str(_TESTS_SHELL))
    import _wire_prefix  # lives with the tests' fake provider

    return _wire_prefix


def _billed(share: Any, usage: dict[str, Any]) -> tuple[int, int]:
    """The child's inherited tokens (the fake's count of its system + tools + seed), and how
    many of them the fake provider billed as cache hits."""
    inherited = -(-share.inherited_bytes // 4)
    return inherited, min(int(usage.get("prompt_cache_hit_tokens", 0)), inherited)


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
            ShareRow(f"K={k}: prompt share (system+tools+seed)", share.share, "x",
                     Target(">=", 0.99, "(issue 13.2)")),
            ShareRow(f"K={k}: body share (HTTP bytes as sent)", share.body_share, "x"),
            TokenRow(f"K={k}: inherited tokens billed as cache hits", hits, "x"),
            TokenRow(f"K={k}: inherited tokens billed as misses", inherited - hits, "x"),
        ]
        params["per_k"][str(k)] = {
            "inherited_bytes": share.inherited_bytes, "shared_bytes": share.shared_bytes,
            "body_bytes": share.body_bytes, "body_shared_bytes": share.body_shared_bytes,
            "system_equal": share.system_equal, "tools_equal": share.tools_equal,
            "seed_messages": share.seed_messages,
            "leading_messages_equal": share.leading_messages_equal,
            "child_first_request_usage": usage}
    # What a persona or a tool filter on the subagent tool costs, at the largest K: the
    # child's system prompt or its tool schemas differ, and the cached prefix ends there.
    k = sizes[-1]
    params["variants"] = {}
    for variant, options in (("persona", {"child_persona": _CHILD_PERSONA}),
                             ("tool filter", {"tool_filter": ToolRestriction(deny=("echo",))})):
        wire = asyncio.run(wire_prefix.fork_on_the_wire(k, **options))
        share = wire.share()
        usage = wire.child.usage or {}
        inherited, hits = _billed(share, usage)
        rows += [
            ShareRow(f"K={k}, {variant}: prompt share (system+tools+seed)", share.share, "x"),
            TokenRow(f"K={k}, {variant}: inherited tokens billed as cache hits", hits, "x"),
            TokenRow(f"K={k}, {variant}: inherited tokens billed as misses", inherited - hits,
                     "x"),
        ]
        params["variants"][variant] = {
            "k": k, "inherited_bytes": share.inherited_bytes,
            "shared_bytes": share.shared_bytes, "system_equal": share.system_equal,
            "tools_equal": share.tools_equal, "child_first_request_usage": usage}
    notes = ("tokens are the fake provider's: ceil(prompt bytes / 4); hits: floor(shared prefix "
             "bytes / 4)",
             f"persona: the subagent tool's persona {_CHILD_PERSONA!r}; tool filter: "
             "deny=('echo',)")
    return Section(NAME, TITLE, notes, tuple(rows), params=params)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_prompt_cache")
    parser.add_argument("--quick", action="store_true", help="K = 10 and 100 only")
    args = parser.parse_args(argv)
    settings = Settings(quick=args.quick)
    report = Report(meta={**machine(), "mode": "quick" if args.quick else "full"},
                    sections=(run(settings),))
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
