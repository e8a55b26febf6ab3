"""``core.formats`` on wire histories: one pass to read and check, the cut after it, strategies.

For each format (OpenAI Chat, OpenAI Responses, Anthropic) a balanced 10,000-item history (turns
of a prompt, two parallel tool calls, their results and an answer, the last turn in flight) is
read and checked by ``decode_history`` (the one O(n) pass), and its completed-turn prefix is
taken from the decoded history: a new list of the caller's items (one pointer per item), timed
beside the pass, as a share of it. A 1,000-item history gives the pass's scaling. The strategies'
cost is one drawn example of ``histories(fmt)``, timed over a batch of draws.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from hypothesis import HealthCheck, given, settings

from turnfork.core.formats import anthropic, openai_chat, openai_responses
from turnfork.core.formats.strategies import histories

from .harness import Contender, Row, Section, Settings, Timing, measure

__all__ = ["NAME", "TITLE", "history_of", "run"]

NAME = "formats"
TITLE = "core.formats: decode+check and the cut on 10k-item histories; strategies per example"

_MODULES = {"openai-chat": openai_chat, "openai-responses": openai_responses,
            "anthropic": anthropic}


def _chat_turn(n: int) -> list[dict[str, Any]]:
    a, b = f"call_{n}_a", f"call_{n}_b"
    return [{"role": "user", "content": f"Question {n}?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": a, "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": b, "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": b, "content": "two"},
            {"role": "tool", "tool_call_id": a, "content": "one"},
            {"role": "assistant", "content": f"Answer {n}."}]


def _responses_turn(n: int) -> list[dict[str, Any]]:
    a, b = f"call_{n}_a", f"call_{n}_b"
    return [{"role": "user", "content": f"Question {n}?"},
            {"type": "reasoning", "id": f"rs_{n}", "summary": []},
            {"type": "function_call", "id": f"fc_{n}_a", "call_id": a, "name": "f",
             "arguments": "{}"},
            {"type": "function_call", "id": f"fc_{n}_b", "call_id": b, "name": "g",
             "arguments": "{}"},
            {"type": "function_call_output", "call_id": b, "output": "two"},
            {"type": "function_call_output", "call_id": a, "output": "one"},
            {"type": "message", "role": "assistant", "id": f"msg_{n}",
             "content": [{"type": "output_text", "text": f"Answer {n}.", "annotations": []}]}]


def _anthropic_turn(n: int) -> list[dict[str, Any]]:
    a, b = f"toolu_{n}_a", f"toolu_{n}_b"
    return [{"role": "user", "content": f"Question {n}?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Two lookups.", "signature": "sig"},
                {"type": "tool_use", "id": a, "name": "f", "input": {}},
                {"type": "tool_use", "id": b, "name": "g", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b, "content": "two"},
                {"type": "tool_result", "tool_use_id": a, "content": "one"}]},
            {"role": "assistant", "content": [{"type": "text", "text": f"Answer {n}."}]}]


_TURNS = {"openai-chat": _chat_turn, "openai-responses": _responses_turn,
          "anthropic": _anthropic_turn}


def history_of(fmt: str, size: int) -> tuple[list[dict[str, Any]], int]:
    """About ``size`` items of whole turns, then an open turn (its prompt and its calls)."""
    turn = _TURNS[fmt]
    items: list[dict[str, Any]] = []
    n = 0
    while len(items) < size:
        items.extend(turn(n))
        n += 1
    cut = len(items)
    items.extend(turn(n)[:2])
    return items, cut


def _check(fmt: str, items: list[dict[str, Any]], cut: int) -> None:
    history = _MODULES[fmt].decode_history(items)
    assert history.violation is None and history.end_violation is not None
    assert history.completed_prefix_length == cut


def _decode(fmt: str, items: list[dict[str, Any]]) -> object:
    return _MODULES[fmt].decode_history(items)


def _draw(fmt: str, count: int) -> None:
    @settings(max_examples=count, database=None, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(histories(fmt))  # type: ignore[arg-type]
    def draw(sample: object) -> None:
        del sample

    draw()


def _per(timing: Timing, count: int) -> Timing:
    """The same samples divided by ``count``: per item, per example."""
    return Timing(name=timing.name, inner=timing.inner, gc=timing.gc,
                  samples_ns=tuple(s / count for s in timing.samples_ns),
                  cpu_samples_ns=tuple(s / count for s in timing.cpu_samples_ns))


def run(settings: Settings) -> Section:
    sizes = (500, 1_000) if settings.quick else (1_000, 10_000)
    rounds = settings.rounds(full=15, quick=2)
    draws = 10 if settings.quick else 200
    contenders: list[Contender] = []
    logs: dict[tuple[str, int], tuple[list[dict[str, Any]], int]] = {}
    for fmt, module in _MODULES.items():
        for size in sizes:
            items, cut = history_of(fmt, size)
            _check(fmt, items, cut)
            logs[(fmt, size)] = items, cut
            contenders.append(Contender(f"{fmt} decode {size}", partial(_decode, fmt, items)))
        items, cut = logs[(fmt, sizes[-1])]
        decoded = module.decode_history(items)
        contenders.append(Contender(f"{fmt} cut", partial(module.completed_turn_prefix, decoded),
                                    inner=20))
        contenders.append(Contender(f"{fmt} draws", partial(_draw, fmt, draws)))
    timed = measure(contenders, rounds=rounds, gc_mode="on")

    small, large = sizes
    rows: list[Row] = []
    for fmt in _MODULES:
        items, _ = logs[(fmt, large)]
        rows.append(Row.time(f"{fmt}: decode_history + check, {len(items):,} items",
                             timed[f"{fmt} decode {large}"]))
        rows.append(Row.time(f"{fmt}: per item", _per(timed[f"{fmt} decode {large}"],
                                                       len(items))))
        rows.append(Row.time(f"{fmt}: completed_turn_prefix of the decoded history (a list)",
                             timed[f"{fmt} cut"]))
        rows.append(Row.ratio(f"{fmt}: the seed list / the pass that read the history",
                              timed[f"{fmt} cut"], timed[f"{fmt} decode {large}"]))
        rows.append(Row.ratio(f"{fmt}: decode {large // 1000}k / {small // 1000}k "
                              f"(linear: {large / small:g})",
                              timed[f"{fmt} decode {large}"], timed[f"{fmt} decode {small}"]))
        rows.append(Row.time(f"{fmt}: histories() per example (derandomized batch of {draws})",
                             _per(timed[f"{fmt} draws"], draws)))
    notes = (f"{rounds} interleaved rounds; GC on; every history checked before timing",
             "examples/second = 1e9 / the per-example figure")
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows),
                   timings={"gc on": timed},
                   params={"sizes": list(sizes), "draws": draws, "rounds": rounds,
                           "items": {f"{fmt} {size}": len(logs[(fmt, size)][0])
                                     for fmt, size in logs}})
