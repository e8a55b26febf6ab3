"""The picture ``turnfork demo`` draws from a :class:`~shell.cli.demo.DemoResult`.

Built from ``turnfork show``'s outline (:mod:`.outline`, drawn by :mod:`.render`), so the two
pictures agree:

1. the parent's turns as trees, with the completed-turn cut drawn where the first fork
   happened (the fork point) and a line under the ``subagent`` call saying where the child ran;
2. each fork child: its header, its seed in one line (the seed *is* the parent's events above),
   then its own events: ``session/end-seed``, the delegated policy, its turn with the
   descriptor before the first step;
3. the prompt cache: the child's first model request against the parent's request at the
   fork, as an ``OpenAIChatModel`` would send them (:mod:`.demo_cache`): the bytes of its
   system prompt, tools and seed that are a prefix of the parent's, and the inherited tokens
   a prefix-caching provider would bill as cache hits and as misses;
4. the exact tool result the parent received, in a panel, then the parent's final answer;
5. one line with the checks (both logs balanced, seed == prefix, result == final text, the
   child's first request extends the parent's).
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from ...core import Event, SessionHeader, ToolCallEvent, TurnEndEvent
from ..logfile import LoadedLog
from .assess import assess
from .demo import PROJECT, DemoResult, ForkRecord
from .demo_cache import TOKEN_BYTES, CacheShare
from .outline import Item, Outline, StepNode, TurnNode, build_outline
from .render import render_outline, visible
from .terminal import counted

__all__ = ["render_demo", "fork_point_words"]


def _ascii_only(console: Console) -> bool:
    return not console.encoding.lower().startswith("utf")


def _words(text: str, console: Console, *, lines: bool = False) -> str:
    """``text`` made inert (line breaks kept with ``lines``: a panel's body), ASCII if need be."""
    return visible(text, _ascii_only(console), lines=lines)


def _loaded(events: tuple[Event, ...], header: SessionHeader, where: str) -> LoadedLog:
    return LoadedLog(path=where, file=where, format="events-jsonl", projected=False,
                     header=header, header_file=None, events=events, text=b"")


def _items(entries: list[TurnNode | Item] | list[Item | StepNode] | list[Item],
           ) -> Iterator[Item]:
    for entry in entries:
        if isinstance(entry, TurnNode | StepNode):
            yield from _items(entry.entries)
        else:
            yield entry
            yield from _items(entry.children)


def fork_point_words(result: DemoResult, fork: ForkRecord) -> str:
    """The fork point in one sentence: what the child was seeded with and what was left out.

    >>> from turnfork.shell.cli.demo import run_demo
    >>> result = run_demo()
    >>> fork_point_words(result, result.forks[0])[:60]
    'fork point: child demo-23 is seeded with the 75 events above'
    """
    at_fork = result.parent_events[:fork.parent_length_at_fork]
    tail = assess(_loaded(at_fork, result.parent_header, "")).tail
    cut = fork.prefix_length_at_fork
    turns = sum(1 for event in at_fork[:cut] if isinstance(event, TurnEndEvent))
    if cut:
        seeded = (f"fork point: child {fork.child_id} is seeded with the {cut:,} events above, "
                  f"through turn {turns}'s turn/end (seq {cut - 1})")
    else:
        seeded = (f"fork point: no turn had completed, so child {fork.child_id} starts "
                  "with no history, like a spawn")
    left: list[str] = []
    if tail.open_turn is not None:
        left.append(f"turn {tail.open_turn} is in flight ({counted(tail.in_flight_events, 'event')}"
                    " so far, its subagent call waiting)")
    if tail.between_turn_events:
        left.append(counted(tail.between_turn_events, "between-turn event"))
    return seeded + ("; excluded: " + " and ".join(left) if left else "")


def _parent_outline(result: DemoResult) -> Outline:
    where = result.parent_saved_path or "in memory"
    log = _loaded(result.parent_events, result.parent_header, where)
    assessment = assess(log)
    first = result.fork
    if first is not None and assessment.valid:
        assessment = msgspec.structs.replace(assessment, cut=first.prefix_length_at_fork)
    outline = build_outline(log, assessment)
    outline.source = f"{result.provider}/{result.model}"
    for item in outline.entries:
        if isinstance(item, Item) and item.kind == "cut" and first is not None:
            item.text += " · fork point"
            item.note = fork_point_words(result, first)
    calls = {fork.call_seq: fork for fork in result.forks if fork.call_seq is not None}
    for item in _items(outline.entries):
        fork = calls.get(item.seq) if item.kind == "tool" else None
        if fork is None:
            continue
        seeded = (f"seeded with seq 0..{fork.seed_length - 1}" if fork.seed_length
                  else "no seed")
        item.children.insert(0, Item(seq=item.seq, kind="pending",
                                     text=f"fork child {fork.child_id} ran here ({seeded}); "
                                          "its own turn is drawn below"))
        for child in item.children:
            if child.kind == "result":
                child.text = child.text.replace("→ ", "→ the child's final text (in full "
                                                "below): ", 1)
    return outline


def _child_outline(fork: ForkRecord) -> Outline:
    where = fork.saved_path or "in memory"
    log = _loaded(fork.events, fork.header, where)
    outline = build_outline(log, assess(log))
    n = fork.seed_length
    if n:
        same = "the same event objects as" if fork.seed_shared else "equal to"
        outline.source = (f"seq 0..{n - 1}: the seed, {same} the parent's seq 0..{n - 1} "
                          "(not drawn again); its own events follow")
    else:
        outline.source = "no seed: it starts with its prompt only"
    outline.entries = [entry for entry in outline.entries
                       if isinstance(entry, TurnNode) or entry.kind not in ("seed", "cut")]
    return outline


def _heading(console: Console, title: str) -> None:
    mark = "# " if _ascii_only(console) else "■ "
    console.print()
    console.print(Text(_words(mark + title, console), style="bold"))


def _panel(console: Console, text: str, title: str) -> None:
    ascii_only = _ascii_only(console)
    console.print(Panel(Text(_words(text, console, lines=True)),
                        title=Text(_words(title, console), style="bold"), title_align="left",
                        box=box.ASCII if ascii_only else box.ROUNDED, border_style="cyan"))


def _percent(share: float) -> str:
    return f"{100 * share:.1f}%"


def _inherited_words(cache: CacheShare) -> str:
    system = "the parent's system prompt" if cache.system_equal else \
        "a system prompt not the parent's"
    tools = (f"the parent's {counted(cache.tools, 'tool schema')} in the same order"
             if cache.tools_equal else f"{counted(cache.tools, 'tool schema')} not the parent's")
    equal = cache.leading_messages_equal
    if equal >= cache.seed_messages:
        seed = f"equal to the parent's first {cache.seed_messages}"
    else:
        seed = f"the first {equal} equal to the parent's"
    return f"{system}, {tools}, and {counted(cache.seed_messages, 'seed message')} {seed}"


def _cache_lines(result: DemoResult, fork: ForkRecord) -> list[str]:
    cache = fork.cache
    if cache is None:
        return [f"child {fork.child_id} made no model request: nothing to compare"]
    call = next((e for e in result.parent_events if isinstance(e, ToolCallEvent)
                 and e.seq == fork.call_seq), None)
    at = f"turn {call.data.turn} step {call.data.step}" if call is not None else "at the fork"
    lines = [
        "Both requests as OpenAIChatModel would send them, rendered as a provider caches a "
        "prompt by prefix (system, tools, messages):",
        f"parent, {at} (the request answered with the subagent call): "
        f"{cache.parent_prompt_bytes:,} bytes",
        f"child {fork.child_id}, its first request: {cache.child_prompt_bytes:,} bytes, "
        f"{cache.inherited_bytes:,} of them inherited: {_inherited_words(cache)}",
        f"shared prefix: {cache.shared_bytes:,} of the {cache.inherited_bytes:,} inherited "
        f"bytes ({_percent(cache.share)})",
        f"inherited tokens (about {TOKEN_BYTES} bytes each): {cache.inherited_tokens:,}, "
        f"billed by a prefix-caching provider as {cache.hit_tokens:,} cache hits and "
        f"{cache.miss_tokens:,} misses",
    ]
    usage = fork.first_usage
    if usage is None:
        lines.append("the model reported no usage for the child's first request (the "
                     "scripted models report none): the tokens are estimated from the bytes")
    else:
        cached = usage.cache_read_tokens
        read = f"{cached:,}" if isinstance(cached, int) else "none"
        lines.append(f"the provider reported for the child's first request: "
                     f"{usage.input_tokens:,} input tokens not cached, {read} read from its "
                     "cache")
    if not result.plain_fork:
        lines.append("this child has a persona or a tool filter: its system prompt or its "
                     "tools differ from the parent's, and the shared prefix ends there")
    return lines


def _cache_check(result: DemoResult) -> str:
    shares = [fork.cache.share for fork in result.forks if fork.cache is not None]
    if not shares:
        return ""
    share = min(shares)
    if result.plain_fork:
        return (f"; the child's first request extends the parent's: {_percent(share)} of its "
                "system+tools+seed bytes are a shared prefix")
    return (f"; the child's first request shares {_percent(share)} of its system+tools+seed "
            "bytes with the parent's (persona or tool filter)")


def _checks_line(result: DemoResult) -> tuple[str, bool]:
    if not result.ok:
        return "checks failed: " + "; ".join(result.problems), False
    fork = result.fork
    assert fork is not None  # ok implies a delegation
    logs = "parent and child logs" if len(result.forks) == 1 else "all logs"
    return (f"checks: {logs} balanced (core.check_balance); child seed == the parent's "
            f"completed-turn prefix at the fork ({counted(fork.seed_length, 'event')}); "
            f"tool result == the child's final text{_cache_check(result)}"), True


def render_demo(console: Console, result: DemoResult) -> None:
    """Draw ``result`` on ``console`` (see the module docstring)."""
    if result.embedded:
        what = "embedded scripted models (no key, no network)"
    else:
        what = f"model {result.model} via {result.provider}"
    console.print(Text(_words(f"turnfork demo · {what}", console), style="bold"))
    console.print(Text(_words(
        f'A parent agent works on "tinyshop" ({counted(len(PROJECT), "file")} held in memory) '
        "with the tools list_files, read_file, grep and subagent (fork provider). In its "
        "third turn, mid-turn, it delegates a review to a fork child.", console)))

    _heading(console, "The parent")
    render_outline(console, _parent_outline(result))

    for fork in result.forks:
        _heading(console, f"The fork child · {fork.label or 'no label'}")
        render_outline(console, _child_outline(fork))

    for fork in result.forks:
        _heading(console, "The prompt cache · the child's first request against the parent's")
        for line in _cache_lines(result, fork):
            console.print(Text(_words(line, console)))

    for fork in result.forks:
        _heading(console, "What the parent received")
        if fork.tool_result_text is None:
            console.print(Text(_words(f"no tool/result for child {fork.child_id}'s call",
                                      console), style="bold red"))
            continue
        _panel(console, fork.tool_result_text,
               f"tool/result seq {fork.result_seq} for {fork.call_id}: the child's final "
               "text, nothing else")

    if result.parent_final_text is not None:
        _heading(console, "The parent's final answer")
        _panel(console, result.parent_final_text, f"turn {len(result.parent_turns)}")

    console.print()
    words, ok = _checks_line(result)
    mark = ("ok " if ok else "x ") if _ascii_only(console) else ("✓ " if ok else "✗ ")
    console.print(Text(_words(mark + words, console),
                       style="bold green" if ok else "bold red"))

