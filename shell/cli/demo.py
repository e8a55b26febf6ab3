"""``turnfork demo``: a parent agent delegates a review to a fork child in the middle of a turn.

The scenario, the same for the embedded scripted models and for a real model:

* a tiny project held in memory (:data:`PROJECT`) and three read-only, concurrency-safe tools
  over it (``list_files``, ``read_file``, ``grep``), plus the ``subagent`` tool bound to the
  ``fork`` provider;
* three user turns (:data:`USER_TURNS`): look at the project, find where the discount is
  applied, then review ``shop/cart.py``, delegating the review to a subagent;
* in turn 3 the parent reads the file (step 1) and calls ``subagent`` (step 2). The fork child
  is seeded with the parent's completed-turn prefix (turns 1 and 2; turn 3 is in flight),
  runs a turn of its own, and the parent's tool result is only the child's final text. The
  parent's turn 3 then completes with an answer that uses it.

On the embedded default two :class:`~shell.models.scripted.ScriptedModel` s play the parent
(provider ``demo-parent``) and the child (``demo-child``, routed by the tool's
``agent_options``); their last replies are computed from the request, so the child's findings
quote a project convention it can only know from its seed. Time and ids are injected
(:class:`~shell.clock.ManualClock`, :class:`~shell.clock.CountingIds`), so every run is the
same. With a real model (``model=``) both roles use it, with the system clock and uuid ids.

:func:`run_demo` runs the scenario and returns a :class:`DemoResult` (both logs, the fork
records, the checks); :func:`demo_summary` is its JSON form. Drawing it is
:mod:`shell.cli.demo_render`'s job.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import msgspec
from msgspec import UnsetType
from returns.result import Failure

from ...core import (
    DEFAULT_RETRY_POLICY,
    AgentOptions,
    AssistantMessageEvent,
    CancelHook,
    ContentBlock,
    Event,
    Message,
    RetryPolicy,
    SandboxModeData,
    SandboxModeEvent,
    SessionHeader,
    TextBlock,
    TokenUsage,
    ToolCallEvent,
    ToolRestriction,
    ToolResultBlock,
    ToolResultEvent,
    ToolResultMessage,
    TurnEndEvent,
    TurnError,
    UserMessageEvent,
    Violation,
    check_balance,
    final_assistant_output,
    output_text,
)
from ..agent import Agent, AgentLoopError
from ..clock import Clock, CountingIds, IdFactory, ManualClock
from ..host import Host
from ..jsonl_store import JsonlSessionStore
from ..models.base import Model, ModelRequest
from ..models.scripted import Reply, ScriptedModel, ScriptEntry
from ..subagents import ForkProvider, SubagentEnd, SubagentEvent, SubagentStart, SubagentTool
from ..tools import DEFAULT_SECTION_ORDER, Tool, ToolContext, ToolError
from .demo_cache import CacheShare, RequestLog
from .terminal import counted

__all__ = [
    "PROJECT",
    "USER_TURNS",
    "PROJECT_SECTION",
    "PARENT_PROVIDER",
    "CHILD_PROVIDER",
    "SCRIPTED_MODEL",
    "DEMO_START_MS",
    "DEFAULT_TURN_TIMEOUT",
    "PLAIN_FORK_SHARE",
    "ForkRecord",
    "DemoResult",
    "project_tools",
    "parent_script",
    "child_script",
    "run_demo",
    "run_demo_async",
    "demo_summary",
]

PARENT_PROVIDER = "demo-parent"
CHILD_PROVIDER = "demo-child"
SCRIPTED_MODEL = "scripted"
#: 2026-01-01T00:00:00Z: where the embedded demo's manual clock starts.
DEMO_START_MS = 1_767_225_600_000
#: Seconds one user turn may take (the child's run included) before it is cancelled.
DEFAULT_TURN_TIMEOUT = 300.0
#: The least share of its system, tools and seed a plain fork child's first request must
#: have in common with the parent's request.
PLAIN_FORK_SHARE = 0.99
#: Seconds allowed for closing down after a cancellation or at the end.
_CLOSE_TIMEOUT = 30.0

_README = """\
# tinyshop

A tiny shop backend: carts, prices and discounts.

Conventions:
- Money is always an int number of cents; never use float for money.
- Percentages are ints from 0 to 100; round with shop.money.percent_of.
"""

_MONEY = '''\
"""Money helpers. Amounts are ints."""


def percent_of(amount: int, percent: int) -> int:
    """percent% of amount, rounded half up to a whole unit."""
    return (amount * percent + 50) // 100
'''

_CART = '''\
"""A shopping cart: lines of (sku, unit price, quantity)."""

from shop.money import percent_of


class Cart:
    def __init__(self) -> None:
        self.lines: list[tuple[str, int, int]] = []

    def add(self, sku: str, unit_price: int, quantity: int = 1) -> None:
        self.lines.append((sku, unit_price, quantity))

    def subtotal(self) -> int:
        return sum(price * quantity for _, price, quantity in self.lines)

    def apply_discount(self, percent: float) -> float:
        total = self.subtotal() * (1 - percent / 100)
        return round(total, 2)
'''

_TEST_CART = '''\
from shop.cart import Cart


def test_subtotal() -> None:
    cart = Cart()
    cart.add("apple", 120, 3)
    assert cart.subtotal() == 360
'''

#: The project the demo's tools read: path → text. Read-only.
PROJECT: Mapping[str, str] = MappingProxyType({
    "README.md": _README,
    "shop/cart.py": _CART,
    "shop/money.py": _MONEY,
    "tests/test_cart.py": _TEST_CART,
})

#: The user's three turns; the third asks for the review to be delegated.
USER_TURNS: tuple[str, ...] = (
    "Take a look at this project: what is it, and what are its rules?",
    "Where is the discount applied, and is it tested?",
    "Please review shop/cart.py for money-handling bugs. Delegate the review itself to a "
    "subagent with the subagent tool (it starts from our conversation, so it knows the "
    "project's conventions), then summarise what it found.",
)

#: A host-level prompt section both agents see.
PROJECT_SECTION = "demo:project"
_PROJECT_TEXT = ("You are a careful coding assistant. The project \"tinyshop\" lives in memory: "
                 "you see its files only through the tools list_files, read_file and grep. "
                 "Keep answers short.")

_REVIEW_DESCRIPTION = "Review cart.py money handling"
_REVIEW_PROMPT = ("Review shop/cart.py for money-handling bugs against this project's "
                  "conventions. Reply with your findings only, one per line, citing line "
                  "numbers.")
_CONVENTION = re.compile(r"Money is always[^\n]*")
_NUMBERED = re.compile(r"^\s*(\d+)  (.*)$")
#: A finding's headline: ``- line 16: float money.`` → ``line 16: float money``.
_HEADLINE = re.compile(r"^- (line \d+: [^.]*)\.", re.MULTILINE)
#: Characters per streamed delta of the scripted replies (words, roughly).
_CHUNK = 16


# --------------------------------------------------------------------------- the tools


def _numbered(text: str) -> str:
    return "\n".join(f"{number:>3}  {line}"
                     for number, line in enumerate(text.splitlines(), start=1))


def project_tools(files: Mapping[str, str] = PROJECT) -> tuple[Tool, ...]:
    """``list_files``, ``read_file`` and ``grep`` over ``files`` (read-only, concurrency-safe).

    >>> [tool.name for tool in project_tools()]
    ['list_files', 'read_file', 'grep']
    """

    async def list_files(args: dict[str, Any], ctx: ToolContext) -> str:
        return "\n".join(f"{path} ({len(text.splitlines())} lines)"
                         for path, text in sorted(files.items()))

    async def read_file(args: dict[str, Any], ctx: ToolContext) -> str:
        path = args["path"]
        if path not in files:
            raise ToolError(f"no such file: {path}", name="FileNotFound", code="NOT_FOUND")
        return _numbered(files[path])

    async def grep(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            pattern = re.compile(args["pattern"])
        except re.error as error:
            raise ToolError(f"bad pattern: {error}", name="ToolArgsError",
                            code="INVALID_ARGS") from error
        prefix = args.get("path", "")
        hits = [f"{path}:{number}: {line.strip()}"
                for path, text in sorted(files.items()) if path.startswith(prefix)
                for number, line in enumerate(text.splitlines(), start=1)
                if pattern.search(line)]
        return "\n".join(hits[:50]) if hits else "no matches"

    path_schema = {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"], "additionalProperties": False}
    grep_schema = {"type": "object",
                   "properties": {"pattern": {"type": "string"},
                                  "path": {"type": "string"}},
                   "required": ["pattern"], "additionalProperties": False}
    return (
        Tool("list_files", "List the project's files with their line counts.",
             {"type": "object", "properties": {}, "additionalProperties": False},
             list_files, concurrency_safe=True),
        Tool("read_file", "Read one project file, with line numbers.", path_schema,
             read_file, concurrency_safe=True),
        Tool("grep", "Search the project's files for a regular expression (optionally only "
             "paths starting with `path`); prints path:line: text.", grep_schema, grep,
             concurrency_safe=True),
    )


# --------------------------------------------------------------------------- the scripts


def _text(reply: Reply) -> Reply:
    return replace(reply, chunk_size=_CHUNK)


def _block_text(blocks: Sequence[ContentBlock]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolResultBlock):
            parts.append(_block_text(block.content))
    return "\n".join(parts)


def _last_tool_result(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            return _block_text(message.content)
    return None


def _line_of(path: str, needle: str) -> int:
    for number, line in enumerate(PROJECT[path].splitlines(), start=1):
        if needle in line:
            return number
    raise ValueError(f"{needle!r} is not in {path}")  # pragma: no cover - fixed project


def parent_script() -> list[ScriptEntry]:
    """The parent's eight model calls over the three turns (the last reads the child's text)."""
    discount_line = _line_of("shop/cart.py", "def apply_discount")

    def summarise(request: ModelRequest) -> Reply:
        result = _last_tool_result(request.messages) or ""
        if result.startswith("Error:"):
            return _text(Reply.text(f"The review could not be delegated: {result}"))
        headlines = [match.group(1) for match in _HEADLINE.finditer(result)]
        return _text(Reply.text(
            f"The forked reviewer found {counted(len(headlines), 'problem')} in shop/cart.py:\n"
            f"{'; '.join(headlines)}.\n"
            "Suggested fix: take an int percent, return\n"
            "self.subtotal() - percent_of(self.subtotal(), percent),\n"
            "and add a test for apply_discount."))

    return [
        Reply.tool_call("list_files", {}),
        Reply.tool_call("read_file", {"path": "README.md"}),
        _text(Reply.text(
            "tinyshop is a tiny shop backend (carts, prices, discounts) in 4 files.\n"
            "Its rules: money is an int number of cents, never a float; percentages are\n"
            "ints, rounded with shop.money.percent_of.")),
        Reply.tool_call("grep", {"pattern": "discount"}),
        _text(Reply.text(
            f"In Cart.apply_discount (shop/cart.py:{discount_line}). It is not tested:\n"
            "tests/test_cart.py only covers subtotal().")),
        Reply.tool_call("read_file", {"path": "shop/cart.py"}),
        Reply.tool_call("subagent", {"description": _REVIEW_DESCRIPTION,
                                     "prompt": _REVIEW_PROMPT},
                        text="I'll hand the detailed review to a forked subagent."),
        summarise,
    ]


def _cart_lines(listing: str) -> dict[int, str]:
    lines: dict[int, str] = {}
    for raw in listing.splitlines():
        match = _NUMBERED.match(raw)
        if match:
            lines[int(match.group(1))] = match.group(2)
    return lines


def _review(request: ModelRequest) -> Reply:
    """The child's findings, computed from what it was sent: the convention from its seed
    (turn 1's README), the code from its own ``read_file``."""
    history = "\n".join(_block_text(message.content) for message in request.messages)
    convention = _CONVENTION.search(history)
    code = _cart_lines(_last_tool_result(request.messages) or "")
    findings: list[str] = []
    for number, line in sorted(code.items()):
        if "float" in line:
            rule = (f'breaks the rule "{convention.group(0)}"' if convention else
                    "(I know of no project conventions to check it against)")
            findings.append(f"- line {number}: float money. `{line.strip()}`\n  {rule}")
        if "round(" in line:
            findings.append(f"- line {number}: fractions of a cent. `{line.strip()}` keeps "
                            "them;\n  percent_of rounds half up to whole cents.")
    imports = [n for n, line in code.items() if "import percent_of" in line]
    uses = [n for n, line in code.items() if "percent_of(" in line]
    if imports and not uses:
        findings.append(f"- line {imports[0]}: unused helper. percent_of is imported but "
                        "never used.")
    body = "\n".join(findings) if findings else "- no money-handling problems found."
    return _text(Reply.text(f"Findings for shop/cart.py:\n{body}"))


def child_script() -> list[ScriptEntry]:
    """The fork child's two model calls: read the file, then report (computed)."""
    return [Reply.tool_call("read_file", {"path": "shop/cart.py"}), _review]


# --------------------------------------------------------------------------- the result


@dataclass(frozen=True)
class ForkRecord:
    """One delegation: the child's log and how it relates to its parent's."""

    child_id: str
    parent_id: str
    label: str | None
    #: The child's prompt, verbatim (its first own user message).
    prompt: str
    header: SessionHeader
    events: tuple[Event, ...]
    #: The child's ``seedLength``: events copied from the parent (0 for an unseeded fork).
    seed_length: int
    #: The parent's completed-turn prefix length when the child was published.
    prefix_length_at_fork: int
    #: The parent's whole log length then (the cut plus the in-flight part).
    parent_length_at_fork: int
    #: ``events[:seed_length]`` equals the parent's prefix at the fork.
    seed_matches_prefix: bool
    #: ...and they are the very same event objects (in memory: nothing was copied).
    seed_shared: bool
    stop_reason: str
    #: The text of the child's final assistant output.
    final_text: str
    #: The parent's ``subagent`` call that started the child, and its result.
    call_id: str | None
    call_seq: int | None
    result_seq: int | None
    tool_result_text: str | None
    violation: str | None
    saved_path: str | None
    #: The child's first model request against the parent's request at the fork, as the
    #: chat-completions bodies an ``OpenAIChatModel`` would send (:mod:`.demo_cache`);
    #: ``None`` when the child made no model request.
    cache: CacheShare | None = None
    #: The usage the provider reported for the child's first request (the scripted models
    #: report none).
    first_usage: TokenUsage | None = None

    @property
    def balanced(self) -> bool:
        return self.violation is None


@dataclass(frozen=True)
class DemoResult:
    """What :func:`run_demo` did: the parent's log, every fork, and the checks."""

    embedded: bool
    provider: str
    model: str
    prompts: tuple[str, ...]
    parent_header: SessionHeader
    parent_events: tuple[Event, ...]
    #: How each of the parent's turns ended (``completed``, ``error``, …).
    parent_turns: tuple[str, ...]
    parent_final_text: str | None
    parent_violation: str | None
    parent_saved_path: str | None
    forks: tuple[ForkRecord, ...]
    #: What went wrong, in words; empty when the scenario ran as intended.
    problems: tuple[str, ...] = field(default=())
    #: The children got no persona and no tool filter: their first request should extend
    #: the parent's (a persona changes the system prompt, a filter the tool schemas).
    plain_fork: bool = True

    @property
    def fork(self) -> ForkRecord | None:
        """The first delegation, if there was one."""
        return self.forks[0] if self.forks else None

    @property
    def balanced(self) -> bool:
        """Both (all) logs pass ``core.check_balance``."""
        return self.parent_violation is None and all(f.balanced for f in self.forks)

    @property
    def ok(self) -> bool:
        return not self.problems


# --------------------------------------------------------------------------- the run


@dataclass
class _Start:
    event: SubagentStart
    parent_length: int
    prefix_length: int
    prefix: Sequence[Event]
    #: Model calls made (by every agent) before the child was published.
    calls_before: int


def _violation_words(events: Sequence[Event]) -> str | None:
    checked = check_balance(events)
    if isinstance(checked, Failure):
        violation: Violation = checked.failure()
        return violation.message
    return None


def _reason_kind(event: TurnEndEvent) -> str:
    wire = msgspec.to_builtins(event.data.reason)
    assert isinstance(wire, dict)
    return str(wire["kind"])


def _reason_words(event: TurnEndEvent) -> str:
    reason = event.data.reason
    if isinstance(reason, TurnError):
        return f"error {reason.error.code}: {reason.error.message}"
    return _reason_kind(event)


def _last_turn_end(events: Sequence[Event]) -> TurnEndEvent | None:
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if isinstance(event, TurnEndEvent):
            return event
    return None


def _first_prompt(events: Sequence[Event]) -> str:
    for event in events:
        if isinstance(event, UserMessageEvent):
            return _block_text(event.data.content)
    return ""


def _call_matches(event: ToolCallEvent, tool_name: str, label: str | None, prompt: str) -> bool:
    if event.data.name != tool_name:
        return False
    try:
        args = json.loads(event.data.arguments)
    except ValueError:
        return False
    return isinstance(args, dict) and args.get("description") == label \
        and args.get("prompt") == prompt


def _result_of(events: Sequence[Event], call_id: str) -> ToolResultEvent | None:
    for event in events:
        if isinstance(event, ToolResultEvent) and event.data.message.source.call_id == call_id:
            return event
    return None


def _first_usage(events: Sequence[Event]) -> TokenUsage | None:
    for event in events:
        if isinstance(event, AssistantMessageEvent):
            usage = event.data.usage
            return usage if isinstance(usage, TokenUsage) else None
    return None


def _usage_json(usage: TokenUsage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    cached = usage.cache_read_tokens
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_tokens": None if isinstance(cached, UnsetType) else cached}


def _record(start: _Start, end: SubagentEnd | None, *,
            parent_logs: Mapping[str, tuple[Event, ...]], claimed: set[str], tool_name: str,
            store: JsonlSessionStore | None, requests: RequestLog) -> ForkRecord:
    event = start.event
    child = event.run.local_agent
    assert child is not None, "the demo's children run in process"
    events = tuple(child.session.events)
    seed_length = event.seed_length
    seed = events[:seed_length]
    prefix = start.prefix
    own = events[seed_length:]
    prompt = _first_prompt(own)
    if end is not None and end.last_assistant_message is not None:
        final = output_text(end.last_assistant_message)
    else:
        final = output_text(final_assistant_output(own) or ())
    parent_events = parent_logs.get(event.parent_id, ())
    call = next((e for e in parent_events if isinstance(e, ToolCallEvent)
                 and e.data.call_id not in claimed
                 and _call_matches(e, tool_name, event.label, prompt)), None)
    result = None
    if call is not None:
        claimed.add(call.data.call_id)
        result = _result_of(parent_events, call.data.call_id)
    return ForkRecord(
        child_id=event.child_id, parent_id=event.parent_id, label=event.label, prompt=prompt,
        header=child.session.header, events=events, seed_length=seed_length,
        prefix_length_at_fork=start.prefix_length, parent_length_at_fork=start.parent_length,
        seed_matches_prefix=len(seed) == len(prefix) and all(
            a == b for a, b in zip(seed, prefix, strict=True)),
        seed_shared=len(seed) == len(prefix) and all(
            a is b for a, b in zip(seed, prefix, strict=True)),
        stop_reason="error" if end is None else end.stop_reason, final_text=final,
        call_id=None if call is None else call.data.call_id,
        call_seq=None if call is None else call.seq,
        result_seq=None if result is None else result.seq,
        tool_result_text=None if result is None else _block_text(result.data.message.content),
        violation=_violation_words(events),
        saved_path=None if store is None else str(store.path_for(child.session.header)),
        cache=requests.share_at(start.calls_before, prompt), first_usage=_first_usage(own))


def _problems(result: DemoResult) -> list[str]:
    problems: list[str] = []
    if result.parent_violation is not None:
        problems.append(f"the parent's log breaks a rule: {result.parent_violation}")
    if len(result.parent_turns) < len(result.prompts):
        problems.append(f"the demo stopped after turn {len(result.parent_turns)} of "
                        f"{len(result.prompts)}")
    if not result.forks and len(result.parent_turns) == len(result.prompts):
        problems.append("the model never called the subagent tool: nothing was delegated")
    for fork in result.forks:
        who = f"child {fork.child_id}"
        if fork.violation is not None:
            problems.append(f"{who}'s log breaks a rule: {fork.violation}")
        if fork.stop_reason != "completed":
            problems.append(f"{who} stopped: {fork.stop_reason}")
        if not fork.seed_matches_prefix or fork.seed_length != fork.prefix_length_at_fork:
            problems.append(f"{who}'s seed ({fork.seed_length:,} events) is not the parent's "
                            f"completed-turn prefix ({fork.prefix_length_at_fork:,} events)")
        if fork.call_id is None:
            problems.append(f"{who}: no subagent call in the parent's log matches it")
        elif fork.stop_reason == "completed" and fork.tool_result_text != fork.final_text:
            problems.append(f"{who}: the parent's tool result is not the child's final text")
        cache = fork.cache
        if result.plain_fork and cache is not None and cache.share < PLAIN_FORK_SHARE:
            problems.append(f"{who}'s first request shares only {100 * cache.share:.1f}% of its "
                            "system, tools and seed with the parent's request (a plain fork "
                            f"should extend it: at least {100 * PLAIN_FORK_SHARE:g}%)")
    return problems


async def _settle(agent: Agent, timeout: float) -> str | None:
    """Wait for ``agent`` to be idle; on timeout cancel the turn. Returns what went wrong
    (a predicate for "the turn …") or ``None``."""
    try:
        await asyncio.wait_for(agent.when_idle(), timeout)
        return None
    except TimeoutError:
        # The log says why the turn ended: the demo's own deadline, not the user.
        agent.cancel(CancelHook(reason=f"timed out after {timeout:g} s (--timeout)"))
        with contextlib.suppress(TimeoutError, AgentLoopError):
            await asyncio.wait_for(agent.when_idle(), _CLOSE_TIMEOUT)
        return f"took longer than {timeout:g} s and was cancelled"
    except AgentLoopError as error:
        return f"failed: {error}"


def _progress_listener(progress: Callable[[str], None]) -> Callable[[Sequence[Event]], None]:
    def on_batch(batch: Sequence[Event]) -> None:
        for event in batch:
            if isinstance(event, ToolCallEvent):
                progress(f"turn {event.data.turn}: calling {event.data.name}")
            elif isinstance(event, AssistantMessageEvent):
                progress(f"turn {event.data.turn}: the model answered; continuing")
    return on_batch


async def run_demo_async(*, model: Model | None = None, provider: str = "model",
                         model_name: str = SCRIPTED_MODEL, store: JsonlSessionStore | None = None,
                         turn_timeout: float = DEFAULT_TURN_TIMEOUT,
                         progress: Callable[[str], None] | None = None,
                         clock: Clock | None = None, ids: IdFactory | None = None,
                         prompts: Sequence[str] = USER_TURNS, persona: str | None = None,
                         tool_filter: ToolRestriction | None = None,
                         retry: RetryPolicy | None = DEFAULT_RETRY_POLICY) -> DemoResult:
    """Run the demo scenario once (see the module docstring) and report what happened.

    Args:
        model: a model for both roles (e.g. an ``OpenAIChatModel``); ``None``: the embedded
            scripted parent and child (``provider``/``model_name`` then do not apply).
        provider: the provider name ``model`` is registered under.
        model_name: the model name sent in each call's config.
        store: persist both sessions there (DSH's layout); default: in memory only.
        turn_timeout: seconds one user turn may take before it is cancelled.
        progress: called with a short status text as the run moves on.
        clock, ids: time and id sources; default deterministic ones for the embedded
            models, the system clock and uuid4 ids for a real model.
        prompts: the user turns.
        persona, tool_filter: the ``subagent`` tool's persona and tool filter for its
            children (default none: a plain fork).
        retry: how the model route retries a failed request (default DSH's: five retries;
            ``None``: none).

    Raises:
        SessionExistsError: ``store`` already holds a session with the demo's id.
        OSError: ``store`` cannot be written.
    """
    embedded = model is None
    if embedded:
        clock = clock or ManualClock(DEMO_START_MS, step=1)
        ids = ids or CountingIds("demo-")
    host = Host(store=store, clock=clock, ids=ids)
    host.prompt_sections.set(PROJECT_SECTION, _PROJECT_TEXT, order=DEFAULT_SECTION_ORDER)
    for project_tool in project_tools():
        host.tools.register(project_tool)
    requests = RequestLog()
    if model is None:
        provider, model_name = PARENT_PROVIDER, SCRIPTED_MODEL
        host.models.register(PARENT_PROVIDER,
                             requests.wrap(ScriptedModel(parent_script()), model_name),
                             retry=retry)
        host.models.register(CHILD_PROVIDER,
                             requests.wrap(ScriptedModel(child_script()), model_name),
                             retry=retry)
        options = AgentOptions(provider=CHILD_PROVIDER)
    else:
        host.models.register(provider, requests.wrap(model, model_name), retry=retry)
        options = None
    runtime = host.subagents
    runtime.register_provider(ForkProvider())
    # A foreground fork, as DSH's subagent_fork (no background runs, no job registry).
    tool = SubagentTool(provider="fork", agent_options=options, persona=persona,
                        tool_filter=tool_filter, enable_run_in_background=False)
    tool.install(host)

    starts: list[_Start] = []
    ends: dict[str, SubagentEnd] = {}

    def observe(event: SubagentEvent) -> None:
        if isinstance(event, SubagentStart):
            parent = event.run.parent.session
            prefix, _ = parent.completed_prefix()
            starts.append(_Start(event, len(parent.events), len(prefix), prefix,
                                 len(requests.bodies)))
            if progress:
                progress(f"fork child {event.child_id} runs its own turn "
                         f"(seeded with {event.seed_length:,} events)")
        else:
            ends[event.child_id] = event
            if progress:
                progress(f"fork child {event.child_id} finished ({event.stop_reason}); "
                         "the parent continues")

    runtime.subscribe(observe)
    parent = host.create_agent(provider=provider, model=model_name, approval=True)
    if progress:
        parent.session.listeners.append(_progress_listener(progress))
    # An explicit sandbox override the child inherits (it copies it with source delegation).
    parent.session.append(SandboxModeEvent, SandboxModeData(mode="read-only"))
    extra: list[str] = []
    try:
        for number, prompt in enumerate(prompts, start=1):
            if progress:
                progress(f"turn {number} of {len(prompts)}: waiting for the model")
            parent.followup(prompt)
            problem = await _settle(parent, turn_timeout)
            end = _last_turn_end(parent.session.events)
            if problem is None and end is not None and _reason_kind(end) != "completed":
                problem = f"ended {_reason_words(end)}"
            if problem is not None:
                extra.append(f"the parent's turn {number} {problem}")
                break
    finally:
        await asyncio.wait_for(runtime.aclose(), _CLOSE_TIMEOUT)
        await asyncio.wait_for(host.aclose(), _CLOSE_TIMEOUT)
    parent_events = tuple(parent.session.events)
    logs = {parent.id: parent_events}
    for start in starts:  # a nested child's parent is another child
        child = start.event.run.local_agent
        assert child is not None, "the demo's children run in process"
        logs.setdefault(child.id, tuple(child.session.events))
    claimed: set[str] = set()
    forks = tuple(_record(start, ends.get(start.event.child_id), parent_logs=logs,
                          claimed=claimed, tool_name=tool.tool_name, store=store,
                          requests=requests)
                  for start in starts)
    final = final_assistant_output(parent_events)
    result = DemoResult(
        embedded=embedded, provider=provider, model=model_name, prompts=tuple(prompts),
        parent_header=parent.session.header, parent_events=parent_events,
        parent_turns=tuple(_reason_kind(e) for e in parent_events
                           if isinstance(e, TurnEndEvent)),
        parent_final_text=None if final is None else output_text(final),
        parent_violation=_violation_words(parent_events),
        parent_saved_path=None if store is None else str(store.path_for(parent.session.header)),
        forks=forks, plain_fork=persona is None and tool_filter is None)
    return replace(result, problems=tuple(extra + _problems(result)))


def run_demo(*, model: Model | None = None, provider: str = "model",
             model_name: str = SCRIPTED_MODEL, store: JsonlSessionStore | None = None,
             turn_timeout: float = DEFAULT_TURN_TIMEOUT,
             progress: Callable[[str], None] | None = None, clock: Clock | None = None,
             ids: IdFactory | None = None, prompts: Sequence[str] = USER_TURNS,
             persona: str | None = None,
             tool_filter: ToolRestriction | None = None,
             retry: RetryPolicy | None = DEFAULT_RETRY_POLICY) -> DemoResult:
    """:func:`run_demo_async` in a fresh event loop (the same arguments).

    >>> result = run_demo()
    >>> result.ok, result.fork.seed_length, result.fork.stop_reason
    (True, 75, 'completed')
    """
    return asyncio.run(run_demo_async(
        model=model, provider=provider, model_name=model_name, store=store,
        turn_timeout=turn_timeout, progress=progress, clock=clock, ids=ids, prompts=prompts,
        persona=persona, tool_filter=tool_filter, retry=retry))


# --------------------------------------------------------------------------- the summary


def demo_summary(result: DemoResult) -> dict[str, Any]:
    """The machine-readable summary ``turnfork demo --json`` prints (see docs/cli.md)."""
    fork = result.fork
    forks = [{
        "child_session_id": f.child_id, "parent_session_id": f.parent_id, "label": f.label,
        "prompt": f.prompt, "seed_length": f.seed_length,
        "prefix_length_at_fork": f.prefix_length_at_fork,
        "parent_length_at_fork": f.parent_length_at_fork,
        "seed_matches_prefix": f.seed_matches_prefix, "stop_reason": f.stop_reason,
        "final_text": f.final_text, "call_id": f.call_id, "call_seq": f.call_seq,
        "result_seq": f.result_seq, "tool_result_text": f.tool_result_text,
        "events": len(f.events), "balanced": f.balanced, "violation": f.violation,
        "saved": f.saved_path,
        "prompt_cache": None if f.cache is None else f.cache.as_json(),
        "first_request_usage": _usage_json(f.first_usage),
    } for f in result.forks]
    return {
        "ok": result.ok,
        "problems": list(result.problems),
        "model": {"embedded": result.embedded, "provider": result.provider,
                  "model": result.model},
        "parent_session_id": result.parent_header.id,
        "child_session_id": None if fork is None else fork.child_id,
        "seed_length": None if fork is None else fork.seed_length,
        "prefix_length_at_fork": None if fork is None else fork.prefix_length_at_fork,
        "seed_matches_prefix": None if fork is None else fork.seed_matches_prefix,
        "child_stop_reason": None if fork is None else fork.stop_reason,
        "child_final_text": None if fork is None else fork.final_text,
        "parent_tool_result_text": None if fork is None else fork.tool_result_text,
        "parent_final_text": result.parent_final_text,
        "parent_turns": list(result.parent_turns),
        "parent_events": len(result.parent_events),
        "child_events": None if fork is None else len(fork.events),
        "balanced": result.balanced,
        "parent_violation": result.parent_violation,
        "saved": None if result.parent_saved_path is None else {
            "parent": result.parent_saved_path,
            "child": None if fork is None else fork.saved_path,
        },
        "plain_fork": result.plain_fork,
        "prompt_cache": None if fork is None or fork.cache is None else fork.cache.as_json(),
        "forks": forks,
    }
