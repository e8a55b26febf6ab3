"""Hypothesis strategies that generate realistic DSH session logs, for property tests.

Rules of this module:

* It imports hypothesis, so ``core/__init__.py`` never imports it: the core itself runs
  without hypothesis, and importing this module without it says which extra to install.
  Relative imports of the core only, like every core module.
* A generated log is a tuple of core events with ``seq == index`` and plausible, mostly
  increasing epoch-millisecond times. Events appear in the order DSH's agent loop writes them
  (wire-format §6.4, :data:`.grammar.STEP_ORDER` inside a step): the prompt's inbox splice
  between turns, ``turn/start``, the claim splice, steps of ``step/start``, user messages,
  ``request/header``, the model call's ``assistant/chunk`` run, its ``assistant/message``
  citing the chunk seqs, ``tool/call`` / ``tool/result`` pairs (results cite ``[call seq]``;
  parallel calls start together), then ``step/end``; more steps while the model called tools.
  Now and then a step's model call is preceded by calls that failed and were retried: their
  chunks, ``llm/retry``, ``llm/retry-started`` (DSH's llm-retry, same turn and step), each log
  keeping :func:`.retry.check_retries`.
* Where an event may stand comes from the grammar (:mod:`.grammar`): the builder folds each
  event it writes over :func:`.grammar.phase_after`, and refuses one the table bars. Every
  turn is closed as the core closes one: a live ending by :func:`.closers.closing_events` —
  the grammar's walk back to idle, after answering the calls still pending — and a crash by
  :func:`.closers.repair_closers`.
* Every ending DSH writes occurs: completed, aborted (mid-stream, with an ``interrupted``
  assistant message, or during tools: the closers answer a started call ``ABORTED`` and one
  never dispatched with its ``tool/call`` and ``ABORTED_BEFORE_DISPATCH``), error (from the
  stream or before any step), max-tokens (the half-streamed tool call dropped from the
  message), blocked and empty turns without a step, and ``interrupted`` (a turn cut at any
  event and closed by DSH's crash repair, :func:`.closers.repair_closers`, §6.5).
* Surface replacements follow §1.1: a compaction checkpoint ``user/message`` replaces a range
  of the surface and cites every shadowed seq; a pruned ``tool/result`` replaces one earlier
  result, copies its turn and step and rewrites only its content.
* Broken logs take their placement defects from the grammar's tables (every type of
  ``PHASE_CHANGES`` and ``CONFINED``, put in a phase the table bars it from); the rules that
  are code in :mod:`.trace` (numbering, pairing, the surface, message shapes) have a breaker
  each.
* Generation never asks ``core.trace``: the phase, the open turn and step, the pending calls
  and the surface are the generator's own bookkeeping (handed to the closers as a
  :class:`.trace.Trace` it fills in itself), and the rule a broken log must be refused with is
  stated here, so the properties that compare the two are not circular. Builders live inside
  one draw and never escape it.
* Decisions come from a pool of random bits (``_Log.bits``), not a hypothesis draw each: a
  draw per decision would dominate generation time, and hypothesis's own draws made deep in a
  large example came out far from uniform (an in-flight turn's cut fell within its first five
  events seven times in ten). No ``st.text()``: its unicode tables take seconds to build on a
  project's first run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .._checking import checked, plain, unchecked
from . import closers, grammar

try:
    from hypothesis import strategies as st
    from hypothesis.strategies import DrawFn, SearchStrategy
except ImportError as missing:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        f"{__name__} needs hypothesis: install the turnfork[hypothesis] extra "
        "(pip install 'turnfork[hypothesis]')") from missing
from .events import (
    AdapterDefaults,
    ApprovalPolicyData,
    ApprovalPolicyEvent,
    AssistantChunkData,
    AssistantChunkEvent,
    AssistantMessage,
    AssistantMessageData,
    AssistantMessageEvent,
    BlockEnd,
    BlockStart,
    CancelCause,
    CancelDisposed,
    CancelHook,
    CancelLegacy,
    CancelParent,
    CancelUser,
    ContentBlock,
    EpochHeader,
    Event,
    FinishChunk,
    FinishError,
    FinishMaxTokens,
    FinishReason,
    FinishStop,
    FinishToolCalls,
    InboxSplicedData,
    InboxSplicedEvent,
    LlmCallConfig,
    LlmFailure,
    LlmRetryData,
    LlmRetryEvent,
    LlmRetryStartedData,
    LlmRetryStartedEvent,
    MessageSource,
    OpaqueEvent,
    ReasoningBlock,
    ReasoningDelta,
    RequestHeaderData,
    RequestHeaderEvent,
    SandboxModeData,
    SandboxModeEvent,
    SessionEndSeedEvent,
    StepData,
    StepEndEvent,
    StepStartEvent,
    StreamChunk,
    SubagentDescriptorData,
    SubagentDescriptorEvent,
    SurfaceOp,
    SurfaceReplace,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallData,
    ToolCallDelta,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResultBlock,
    ToolResultData,
    ToolResultEvent,
    ToolResultMessage,
    ToolSchema,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEndEvent,
    TurnEndReason,
    TurnError,
    TurnMaxTokens,
    TurnStartData,
    TurnStartEvent,
    UsageChunk,
    UserMessage,
    UserMessageEvent,
    event_type,
)
from .grammar import CONFINED, PHASE_CHANGES, STEP_END, STEP_START, TURN_END, TURN_START, Phase
from .retry import RetryPolicy, backoff_delay_ms, retry_policy_key
from .trace import PendingCall, Trace

__all__ = [
    "session_logs",
    "closed_logs",
    "in_flight_logs",
    "broken_logs",
    "events_without_turn_end",
    "renumber",
]

Log = tuple[Event, ...]
_E = TypeVar("_E", bound=Event)
_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])


# Plain forms inside draws: beartype's sampling of containers would use the global random
# module, which hypothesis forbids there, and a checked call per event would cost.
_closing_events = plain(closers.closing_events)
_repair_closers = plain(closers.repair_closers)
_phase_after = plain(grammar.phase_after)
_allowed_phases = plain(grammar.allowed_phases)

#: Turn endings. Cancellation and crash repair, the endings the closers write and a fork
#: cuts into, get twice the weight of the others, so that a hundred logs show every ending and
#: every way a pending call is answered.
_ENDINGS = (
    "completed", "completed-empty", "blocked", "error-early", "error", "max-tokens",
    "abort-stream", "abort-stream", "abort-tools", "abort-tools", "interrupted", "interrupted",
)
_WORDS = (
    "The", " user", " wants", " a", " list", " of", " files", ".", " Done", "ok", " -0",
    " naïve", " 😀", '"quoted"', "\\", "\n", " ", "{\"x\":1}", "\u2028", "",
)
_TOOLS = ("bash", "read_file", "write_file", "echo", "subagent", "subagent_fork")
_ARG_PIECES = ('{"command":', ' "ls -la"', ', "path": "src/', 'main.py"', "}", "", '{"n": -1}')
_PROVIDERS = (("deepseek-official", "deepseek-v4-flash"), ("openai", "gpt-5-mini"),
              ("mock", "echo-1"))
_PLUGIN_TYPES = ("acme-telemetry/span", "x-plugin/note", "vendor.io/metrics")
_CAUSES: tuple[CancelCause, ...] = (
    CancelUser(), CancelParent(), CancelHook(reason="pre-step hook said stop"),
    CancelDisposed(), CancelLegacy())
_FAILURES = (
    LlmFailure(message="simulated provider error (HTTP 401)", code="AUTH", status=401),
    LlmFailure(message="context window exceeded", code="CONTEXT_WINDOW_EXCEEDED"),
    LlmFailure(message="rate limited", code="RATE_LIMIT", status=429,
               provider_retry_after_ms=1500.0, request_id="req_123"),
    LlmFailure(message="Error: snapshot disk full", code="UNKNOWN"),
)
#: Failures DSH's default policy retries, and two policies a route may have (their keys are
#: what a retry names; an always policy's retries carry no maxRetries).
_RETRIED_FAILURES = (
    LlmFailure(message="model returned a completed response with no content",
               code="EMPTY_RESPONSE"),
    LlmFailure(message="rate limited", code="RATE_LIMIT", status=429,
               provider_retry_after_ms=1500.0),
    LlmFailure(message="upstream overloaded", code="SERVER", status=503, request_id="req_9"),
    LlmFailure(message="the provider stopped sending", code="TIMEOUT"),
    LlmFailure(message="the connection broke mid-response", code="TRANSPORT"),
)
_RETRY_POLICIES = (RetryPolicy(), RetryPolicy(mode="always", initial_delay_ms=1_000,
                                              max_delay_ms=30_000, jitter_ratio=0.2))
_TOOL_ERRORS = (None, None, ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS"),
                ToolErrorInfo(name="SubagentError", code="NOT_RESUMABLE"))
_HEADER_REASONS: tuple[Literal["change", "resume"] | None, ...] = (
    None, None, None, "change", "resume")
_TEMPERATURES: tuple[float | UnsetType, ...] = (UNSET, 0.0, 0.7, 1.0)
_MAX_TOKENS: tuple[int | UnsetType, ...] = (UNSET, 8192)
_CACHE_READS: tuple[int | UnsetType, ...] = (UNSET, 2816)
_SYSTEMS: tuple[str | UnsetType, ...] = (UNSET, "You are a coding agent.")
_SCHEMA = Raw(b'{"type":"object","properties":{"command":{"type":"string"}}}')

_PHRASES = (
    "List the files in src.", "Run the tests and report failures.", "ok", "Done.",
    "What is the project codeword?", "naïve café ✓ 😀", "line one\nline two", "-0 and 1e999",
    'He said "hi" \\ bye', "\u2028 separator", "",
)
#: Now and then a text piece is a run of characters that encoders get wrong: quotes and
#: backslash, line and paragraph separators JSON leaves raw, C0/C1 controls, a BOM, accents,
#: CJK, astral code points. An explicit alphabet, not ``st.text()``: hypothesis builds its
#: unicode tables on a first ``st.text()`` draw (seconds, cached in ``.hypothesis/``
#: afterwards), which fails a fresh project's first run on the ``too_slow`` health check.
_ODD_CHARACTERS = ('"', "'", "\\", "/", "\n", "\r", "\t", "\x00", "\x01", "\x1b", "\x1f",
                   "\x7f", "\x85", "\xa0", "\u2028", "\u2029", "\ufeff", "\ufffd", "é",
                   "e\u0301", "ß", "中", "😀", "\U0010ffff", "{", "}", ":", ",", " ", "0")
_POOL = st.binary(min_size=8, max_size=8)
_replace = msgspec.structs.replace
#: Most milliseconds between two events: ordinary events, stream chunks, repair closers.
_PACE, _CHUNK_PACE = 40, 3


@unchecked
def _raw(value: object) -> Raw:
    """Compact JSON, exactly as the decoder captures it (so generated logs round-trip)."""
    return Raw(msgspec.json.encode(value))


@unchecked
def _one_in(draw: DrawFn, n: int) -> bool:
    return draw(st.integers(0, n - 1)) == 0


@unchecked
class _Log:
    """Mutable builder of one generated log; created and discarded inside one draw."""

    def __init__(self, draw: DrawFn) -> None:
        self.draw = draw
        self.events: list[Event] = []
        self.time = draw(st.integers(1_700_000_000_000, 1_800_000_000_000))
        self.salt = draw(st.integers(0, 0xFFFF))
        self.ids = 0
        self.next_turn = 1
        #: Seqs on the model-visible surface, in surface order (§1.1).
        self.surface: list[int] = []
        self.has_header = False
        self.provider, self.model = draw(st.sampled_from(_PROVIDERS))
        self.child = False
        self.last_failure = _FAILURES[0]
        self.pool = 0
        self.pool_size = 0
        #: Where the log stands in the turn grammar.
        self.phase = Phase.IDLE

    # -- primitives ----------------------------------------------------------------------

    def append(self, event: Event) -> int:
        """Append a numbered event where the grammar lets it stand (a generator bug if not)."""
        after = _phase_after(self.phase, event_type(event))
        assert after is not None, f"{event_type(event)} cannot stand {self.phase.value}"
        self.phase = after
        self.events.append(event)
        op = getattr(event, "surface_op", None)
        if op is not None:
            _apply_surface(self.surface, event.seq, op)
        return event.seq

    def add(self, cls: type[_E], *, gap: int = _PACE, **fields: Any) -> int:
        seq = len(self.events)
        # Gaps vary with seq without a draw per event (draws dominate generation time).
        self.time += ((seq + 1) * 2_654_435_761 + self.salt) % (gap + 1)
        return self.append(cls(seq=seq, time=self.time, **fields))

    def add_surface(self, cls: type[_E], *, cited: tuple[int, ...] | UnsetType,
                    op: SurfaceOp = "append", gap: int = _PACE,
                    **fields: Any) -> int:
        return self.add(cls, gap=gap, source_event_seqs=cited, surface_op=op, **fields)

    def close(self, start: int, reason: TurnEndReason) -> None:
        """Close the turn that starts at ``start`` as the core does: the closers answer its
        pending calls and walk the grammar back to idle (``step/end`` if a step is open, then
        ``turn/end`` with ``reason``)."""
        for event in _closing_events(_open_state(self.events, start), reason, time=self.time):
            self.append(event)

    def opaque(self, kind: str, data: object, *, ignorable: bool = False) -> int:
        return self.add(OpaqueEvent, type=kind, data=_raw(data),
                        ignorable=True if ignorable else UNSET)

    def new_id(self) -> str:
        self.ids += 1
        return f"{self.salt:08x}-{self.ids:04x}-4{self.ids % 4096:03x}-8000-{self.ids:012x}"

    def new_call_id(self) -> str:
        self.ids += 1
        return f"call_{self.ids:02d}_{self.salt:04x}"

    # -- choices ---------------------------------------------------------------------------
    # Decisions come from a pool of random bits refilled by one 8-byte draw: a draw per
    # decision would dominate generation time. The bytes shrink towards zero, which makes
    # every chance() false, every pick() the first option and every between() the lowest:
    # failing logs shrink to the plainest log that still fails.

    def bits(self, count: int) -> int:
        if self.pool_size < count:
            self.pool = int.from_bytes(self.draw(_POOL), "big")
            self.pool_size = 64
        value = self.pool & ((1 << count) - 1)
        self.pool >>= count
        self.pool_size -= count
        return value

    def chance(self, log2: int) -> bool:
        """True with probability 1 / 2**log2 (false when the bits are zero)."""
        return self.bits(log2) == (1 << log2) - 1

    def between(self, lowest: int, highest: int) -> int:
        return lowest + self.bits(16) % (highest - lowest + 1)

    def pick(self, options: Sequence[_T]) -> _T:
        return options[self.bits(8) % len(options)]

    def words(self) -> str:
        return self.pick(_PHRASES)

    def pieces(self) -> list[str]:
        pieces = [self.pick(_WORDS) for _ in range(self.between(1, 5))]
        if self.chance(2):
            pieces.append("".join(self.pick(_ODD_CHARACTERS) for _ in range(self.between(0, 6))))
        return pieces

    def user_message(self, text: str | None = None) -> UserMessage:
        return UserMessage(content=(TextBlock(text=self.words() if text is None else text),),
                           source=MessageSource(kind="user"), id=self.new_id())

    def model_source(self, replay: Raw | None = None) -> MessageSource:
        if replay is None:
            return MessageSource(kind="model", provider=self.provider, model=self.model)
        return MessageSource(kind="model", provider=self.provider, model=self.model,
                             replay_state=replay)

    # -- between turns -------------------------------------------------------------------

    def splice_insert(self, message: UserMessage, target: str = "next-turn") -> int:
        return self.add(InboxSplicedEvent, data=InboxSplicedData(
            target=target, start=0, inserted=(message,)))  # type: ignore[arg-type]

    def splice_claim(self, target: str = "next-turn") -> int:
        return self.add(InboxSplicedEvent, data=InboxSplicedData(
            target=target, start=0, removed_count=1, inserted=()))  # type: ignore[arg-type]

    def between_turns(self) -> None:
        """Zero to three of the events DSH writes between turns."""
        for _ in range(self.between(0, 3)):
            kind = self.between(0, 7)
            if kind == 0:
                self.add(SandboxModeEvent, data=SandboxModeData(
                    mode=self.pick(
                        ("read-only", "workspace-write", "danger-full-access")),
                    source=self.pick(("delegation", UNSET))))
            elif kind == 1:
                self.add(ApprovalPolicyEvent, data=ApprovalPolicyData(
                    policy=self.pick(("ask", "never")),
                    source=self.pick(("delegation", UNSET))))
            elif kind == 2:
                self.add(SessionEndSeedEvent)
            elif kind == 3:
                self.opaque("goal/change", {"goal": self.words(), "status": "active"})
            elif kind == 4:
                self.opaque("session/title", {"title": self.words(), "messageSeqs": [],
                                              "source": {"kind": "fallback"}})
            elif kind == 5:
                self.add_surface(UserMessageEvent, cited=UNSET, data=UserMessage(
                    content=(TextBlock(text="subagent settled: " + self.words()),),
                    source=MessageSource(kind="subagent-settled", form="notice",
                                         summary="child finished",
                                         sender_session_id=self.new_id()),
                    id=self.new_id()))
            elif kind == 6:
                self.plugin_event()
            elif self.surface:
                self.compaction()

    def plugin_event(self) -> None:
        """An event of a type DSH does not know, which its writer marked ignorable."""
        self.opaque(self.pick(_PLUGIN_TYPES),
                    {"n": self.between(-5, 5), "text": self.words()}, ignorable=True)

    # -- surface replacements --------------------------------------------------------------

    def compaction(self) -> None:
        """compaction-basic: a checkpoint user/message replacing a surface range (§1.1)."""
        first = self.between(0, len(self.surface) - 1)
        last = self.between(first, len(self.surface) - 1)
        shadowed = self.surface[first:last + 1]
        start = self.opaque("compaction/start", {"reason": "threshold"})
        summary = self.opaque("compaction/summary", {"summary": self.words()})
        self.add_surface(
            UserMessageEvent, cited=tuple(sorted({start, summary, *shadowed})),
            op=SurfaceReplace(start=shadowed[0], end=shadowed[-1]),
            data=UserMessage(content=(TextBlock(text="Checkpoint summary: " + self.words()),),
                             source=MessageSource(kind="plugin",
                                                  plugin="@deepseek-ai/dsh-compaction-basic",
                                                  form="recall"),
                             id=self.new_id()))
        self.opaque("compaction/end", {})

    def prune_tool_result(self) -> None:
        """compaction-tool-result-pruner: rewrite one earlier tool/result's content."""
        candidates = [s for s in self.surface if isinstance(self.events[s], ToolResultEvent)]
        if not candidates:
            return
        original_seq = self.pick(candidates)
        original = self.events[original_seq]
        assert isinstance(original, ToolResultEvent)
        block = original.data.message.content[0]
        assert isinstance(block, ToolResultBlock)
        pruned = msgspec.structs.replace(
            block, content=(TextBlock(text="[tool result pruned]"),))
        message = msgspec.structs.replace(original.data.message, content=(pruned,))
        self.opaque("compaction/prune", {"seqs": [original_seq]})
        self.add_surface(ToolResultEvent, cited=(original_seq,),
                         op=SurfaceReplace(start=original_seq, end=original_seq),
                         data=msgspec.structs.replace(original.data, message=message))

    # -- one turn ------------------------------------------------------------------------

    def turn(self, ending: str) -> int:
        """Append one whole turn (with its queued prompt); returns the index of turn/start."""
        self.between_turns()
        prompt = self.user_message()
        self.splice_insert(prompt)
        turn = self.next_turn
        self.next_turn += 1
        surface_before = list(self.surface)
        start = self.add(TurnStartEvent, data=TurnStartData(turn=turn))
        self.splice_claim()
        if ending in ("completed-empty", "blocked", "error-early"):
            reason: TurnEndReason = (
                TurnCompleted() if ending == "completed-empty"
                else TurnBlocked() if ending == "blocked"
                else TurnError(error=self.pick(_FAILURES)))
            self.close(start, reason)
            return start
        if self.child and turn == 1:
            self.add(SubagentDescriptorEvent, data=SubagentDescriptorData(
                version=2, mode="one-shot", provider=self.pick(
                    ("fork", "spawn")), label=self.words()))
        # A turn cut for crash repair calls tools, so the cut can fall where calls are pending.
        tool_steps = self.between(1 if ending == "interrupted" else 0, 2)
        plans = ["tools"] * tool_steps + [_TERMINAL_PLAN.get(ending, "final")]
        claimed: list[UserMessage] = [prompt]
        reason = TurnCompleted()
        for step, plan in enumerate(plans, start=1):
            self.step(turn, step, plan, claimed)
            if plan == "max-tokens":
                reason = TurnMaxTokens()
            elif plan == "error":
                reason = TurnError(error=self.last_failure)
            elif plan in ("abort-stream", "abort-tools"):
                reason = TurnAborted(reason=self.pick(_CAUSES))
            claimed = []
            if step == len(plans):
                break  # the closers end the last step, and the turn
            self.add(StepEndEvent, data=StepData(turn=turn, step=step))
            if self.chance(2):
                follow_up = self.user_message()
                self.splice_insert(follow_up, "next-step")
                self.splice_claim("next-step")
                claimed = [follow_up]
        self.close(start, reason)
        if ending == "interrupted":
            self.interrupt(start, surface_before)
        return start

    def step(self, turn: int, step: int, plan: str, claimed: list[UserMessage]) -> None:
        """One step up to its last event before ``step/end`` (its tools answered or stopped)."""
        self.add(StepStartEvent, data=StepData(turn=turn, step=step))
        first_message = None
        for message in claimed:
            seq = self.add_surface(UserMessageEvent, cited=UNSET, data=message)
            first_message = seq if first_message is None else first_message
        if step == 1 and self.chance(1):
            self.add_surface(UserMessageEvent, cited=UNSET, data=UserMessage(
                content=(TextBlock(text="Current runtime context. This snapshot supersedes "
                                        "earlier runtime-context snapshots.\n\n"
                                   + self.words()),),
                source=MessageSource.from_wire({
                    "kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt",
                    "form": "snapshot", "sections": [{"name": "sandbox", "text": "policy"}]}),
                id=self.new_id()))
        if turn == 1 and step == 1 and first_message is not None and self.chance(1):
            self.opaque("session/title", {"title": self.words(), "messageSeqs": [first_message],
                                          "source": {"kind": "fallback"}})
        replacement = self.between(0, 9)
        if replacement == 0:
            self.prune_tool_result()
        elif replacement == 1 and self.surface:
            self.compaction()
        self.request_header()
        if self.chance(2):
            self.retried_calls(turn, step)
        if plan in ("tools", "abort-tools"):
            calls = self.model_call(turn, step, tool_calls=self.between(1, 3),
                                    finish="tool-calls")
            self.run_tools(turn, step, calls, aborted=plan == "abort-tools")
        else:
            self.model_call(turn, step, tool_calls=1 if plan == "max-tokens" else 0,
                            finish=plan)

    def request_header(self) -> None:
        reason: Literal["initial", "change", "resume"] | None = (
            "initial" if not self.has_header else self.pick(_HEADER_REASONS))
        if reason is None:
            return
        self.has_header = True
        effort = self.pick((None, "high"))
        config = LlmCallConfig(
            provider=self.provider, model=self.model,
            reasoning_effort=UNSET if effort is None else effort,
            temperature=self.pick(_TEMPERATURES),
            max_tokens=self.pick(_MAX_TOKENS))
        header = EpochHeader(
            config=config,
            adapter_defaults=UNSET if effort is None else AdapterDefaults(reasoning_effort=True),
            system=self.pick(_SYSTEMS),
            tools=(ToolSchema(name="bash", description="Run a shell command",
                              parameters=_SCHEMA),) if self.chance(1) else UNSET)
        self.add(RequestHeaderEvent, data=RequestHeaderData(header=header, reason=reason))
        # DSH names the route when it changes: on the log's first request, now and then later.
        if reason == "initial" or self.chance(2):
            self.opaque("request/context", {"provider": self.provider, "model": self.model})

    # -- the model call ------------------------------------------------------------------

    def model_call(self, turn: int, step: int, *, tool_calls: int,
                   finish: str) -> list[ToolCallBlock]:
        """Stream one model call; returns the tool calls its assistant message announces."""
        planned: list[tuple[str, list[str], str, str]] = []  # kind, pieces, call id, name
        if self.chance(1):
            planned.append(("reasoning", self.pieces(), "", ""))
        if finish in ("final", "abort-stream") or self.chance(1):
            planned.append(("text", self.pieces(), "", ""))
        for _ in range(tool_calls):
            arguments = [self.pick(_ARG_PIECES) for _ in range(self.between(1, 4))]
            planned.append(("tool-call", arguments, self.new_call_id(), self.pick(_TOOLS)))
        if finish == "error" and self.chance(1):
            planned = []  # the provider failed before streaming anything
        chunks, blocks = self.stream(planned, half_streamed_last=finish == "max-tokens")
        if finish == "abort-stream":
            self.abort_stream(turn, step, chunks)
            return []
        if finish != "error" or not self.chance(2):
            usage = TokenUsage(
                input_tokens=self.between(0, 5000),
                output_tokens=self.between(0, 500),
                cache_read_tokens=self.pick(_CACHE_READS))
            chunks.append(UsageChunk(usage=usage))
        else:
            usage = None
        replay = _raw({"response": {"kind": "pi-ai", "stopReason": "length"},
                       "blocks": [{"type": b[0]} for b in planned]})
        reason: FinishReason
        if finish == "error":
            self.last_failure = self.pick(_FAILURES)
            reason = FinishError(failure=self.last_failure)
        elif finish == "max-tokens":
            reason = FinishMaxTokens()
        elif finish == "tool-calls":
            reason = FinishToolCalls()
        else:
            reason = FinishStop()
        with_replay = finish == "max-tokens" and self.chance(1)
        chunks.append(FinishChunk(reason=reason, replay_state=replay if with_replay else UNSET))
        seqs = tuple(self.add(AssistantChunkEvent, gap=_CHUNK_PACE, data=AssistantChunkData(
            turn=turn, step=step, chunk=chunk)) for chunk in chunks)
        if finish == "error":
            return []  # a failed call gets no assistant/message (§2.6)
        if finish == "max-tokens":
            # Every tool-call block is dropped from a max-tokens message, complete or not.
            blocks = [b for b in blocks if not isinstance(b, ToolCallBlock)]
        self.add_surface(AssistantMessageEvent, cited=seqs, data=AssistantMessageData(
            turn=turn, step=step,
            message=AssistantMessage(content=tuple(blocks),
                                     source=self.model_source(replay if with_replay else None),
                                     id=self.new_id()),
            usage=UNSET if usage is None else usage))
        return [b for b in blocks if isinstance(b, ToolCallBlock)]

    def retried_calls(self, turn: int, step: int) -> None:
        """One or two model calls that failed and were retried (DSH's llm-retry): each call's
        chunks up to its error finish, the ``llm/retry`` scheduled for it, then the
        ``llm/retry-started`` after the wait, all in the step of the call."""
        policy = self.pick(_RETRY_POLICIES)
        retry_id = self.new_id()
        for retry in range(1, self.between(1, 2) + 1):
            planned: list[tuple[str, list[str], str, str]] = []
            if self.chance(1):
                planned.append(("text", self.pieces(), "", ""))
            if self.chance(2):
                planned.append(("tool-call", [self.pick(_ARG_PIECES)], self.new_call_id(),
                                self.pick(_TOOLS)))
            chunks, _ = self.stream(planned, half_streamed_last=self.chance(1))
            failure = self.pick(_RETRIED_FAILURES)
            chunks.append(FinishChunk(reason=FinishError(failure=failure)))
            for chunk in chunks:
                self.add(AssistantChunkEvent, gap=_CHUNK_PACE, data=AssistantChunkData(
                    turn=turn, step=step, chunk=chunk))
            delay = (failure.provider_retry_after_ms
                     if isinstance(failure.provider_retry_after_ms, float)
                     else backoff_delay_ms(policy, retry, self.bits(8) / 255))
            self.add(LlmRetryEvent, data=LlmRetryData(
                retry_id=retry_id, turn=turn, step=step, provider=self.provider,
                mode=policy.mode, policy_key=retry_policy_key(policy), retry=retry,
                max_retries=policy.max_retries if policy.mode == "normal" else UNSET,
                delay_ms=delay, failure=failure))
            self.add(LlmRetryStartedEvent, gap=int(delay), data=LlmRetryStartedData(
                retry_id=retry_id, turn=turn, step=step, retry=retry))

    def stream(self, planned: list[tuple[str, list[str], str, str]], *,
               half_streamed_last: bool) -> tuple[list[StreamChunk], list[ContentBlock]]:
        """The chunks of a model call (without usage/finish) and the blocks they assemble."""
        chunks: list[StreamChunk] = []
        blocks: list[ContentBlock] = []
        deferred_ends = self.chance(1)
        ends: list[StreamChunk] = []
        for index, (kind, pieces, call_id, name) in enumerate(planned):
            chunks.append(BlockStart(index=index, block_type=kind))  # type: ignore[arg-type]
            block: ContentBlock
            if kind == "tool-call":
                named_every = self.chance(1)
                for k, piece in enumerate(pieces):
                    chunks.append(ToolCallDelta(
                        index=index, id=call_id, name=name if named_every or k == 0 else UNSET,
                        arguments_delta=piece))
                block = ToolCallBlock(id=call_id, name=name, arguments="".join(pieces))
            elif kind == "reasoning":
                chunks.extend(ReasoningDelta(index=index, text=piece) for piece in pieces)
                block = ReasoningBlock(text="".join(pieces))
            else:
                chunks.extend(TextDelta(index=index, text=piece) for piece in pieces)
                block = TextBlock(text="".join(pieces))
            blocks.append(block)
            if half_streamed_last and index == len(planned) - 1:
                break  # cut off at the output limit: no block-end
            (ends if deferred_ends else chunks).append(BlockEnd(index=index, block=block))
        chunks.extend(ends)
        return chunks, blocks

    def abort_stream(self, turn: int, step: int, chunks: list[StreamChunk]) -> None:
        """Cancelled mid-stream: part of the stream, then maybe an ``interrupted`` message."""
        delivered = chunks[:self.between(0, len(chunks))]
        seqs = tuple(self.add(AssistantChunkEvent, gap=_CHUNK_PACE, data=AssistantChunkData(
            turn=turn, step=step, chunk=chunk)) for chunk in delivered)
        texts: dict[int, list[str]] = {}
        kinds: dict[int, str] = {}
        for chunk in delivered:
            if isinstance(chunk, TextDelta | ReasoningDelta):
                texts.setdefault(chunk.index, []).append(chunk.text)
                kinds[chunk.index] = "text" if isinstance(chunk, TextDelta) else "reasoning"
        kept: list[ContentBlock] = []
        for index in sorted(texts):
            text = "".join(texts[index])
            if text.strip():
                kept.append(TextBlock(text=text) if kinds[index] == "text"
                            else ReasoningBlock(text=text))
        if kept:
            self.add_surface(AssistantMessageEvent, cited=seqs, data=AssistantMessageData(
                turn=turn, step=step, interrupted=True,
                message=AssistantMessage(content=tuple(kept), source=self.model_source(),
                                         id=self.new_id())))

    # -- tools -----------------------------------------------------------------------------

    def run_tools(self, turn: int, step: int, calls: list[ToolCallBlock], *,
                  aborted: bool) -> None:
        """Start and answer the calls; concurrency-safe ones start together (§2.7).

        An aborted run stops before one of its actions (a group's start, or one result): the
        closers then answer what it left, a started call ``ABORTED`` and a call never
        dispatched with its ``tool/call`` and ``ABORTED_BEFORE_DISPATCH``, as DSH's scheduler.
        """
        groups: list[list[ToolCallBlock]] = []
        position = 0
        while position < len(calls):
            size = self.between(1, min(3, len(calls) - position))
            groups.append(calls[position:position + size])
            position += size
        actions = len(groups) + len(calls)
        stop = self.between(0, actions - 1) if aborted else actions
        done = 0
        for group in groups:
            if done == stop:
                return
            done += 1
            call_seqs = []
            for call in group:
                call_seqs.append(self.add(ToolCallEvent, data=ToolCallData(
                    turn=turn, step=step, call_id=call.id, name=call.name,
                    arguments=call.arguments)))
                if self.chance(1):  # a tool's own log-only event
                    self.opaque("todo/write", {"todos": [
                        {"content": self.words(), "status": "in_progress"}]})
            for call, call_seq in zip(group, call_seqs, strict=True):
                if done == stop:
                    return
                done += 1
                error = self.pick(_TOOL_ERRORS)
                is_error = error is not None or self.chance(2)
                text = ("Error: " + self.words()) if is_error else self.words()
                self.tool_result(turn, step, call.id, text, cited=(call_seq,), error=error,
                                 is_error=is_error)

    def tool_result(self, turn: int, step: int, call_id: str, text: str, *,
                    cited: tuple[int, ...], error: ToolErrorInfo | None,
                    is_error: bool) -> int:
        message = ToolResultMessage(
            source=MessageSource(kind="tool", call_id=call_id),
            content=(ToolResultBlock(tool_call_id=call_id, content=(TextBlock(text=text),),
                                     is_error=is_error),),
            id=self.new_id())
        meta = _raw({"exitCode": 0}) if not is_error and self.chance(2) else UNSET
        return self.add_surface(ToolResultEvent, cited=cited, data=ToolResultData(
            turn=turn, step=step, message=message, error=UNSET if error is None else error,
            meta=meta))

    # -- cuts and crash repair --------------------------------------------------------------

    def cut(self, lowest: int, highest: int) -> int:
        """A length to cut the log to, in ``lowest..highest``: anywhere, or just after an
        assistant message that calls tools or a ``tool/call``, where calls are pending (a
        fork's moment). From the bit pool, not a draw of its own (see the module's rules)."""
        mode = self.between(0, 2)
        if mode:
            at_moment = _announces_calls if mode == 1 else _is_tool_call
            after = [k + 1 for k in range(lowest - 1, highest) if at_moment(self.events[k])]
            if after:
                return self.pick(after)
        return self.between(lowest, highest)

    def interrupt(self, start: int, surface_before: list[int]) -> None:
        """Cut the turn that starts at ``start`` at any event and close it as DSH's crash
        repair does (§6.5, :func:`.closers.repair_closers`): outcomes for its pending calls,
        ``step/end`` if a step is open, ``turn/end`` ``interrupted``."""
        cut = self.cut(start + 1, len(self.events) - 1)
        del self.events[cut:]
        self.time = self.events[-1].time
        self.surface = surface_before
        for event in self.events[start:]:
            op = getattr(event, "surface_op", None)
            if op is not None:
                _apply_surface(self.surface, event.seq, op)
        self.has_header = any(isinstance(e, RequestHeaderEvent) for e in self.events)
        self.phase = _phases(self.events[start:])[-1][0]
        for event in _repair_closers(self.events):
            self.append(event)


_TERMINAL_PLAN = {"error": "error", "max-tokens": "max-tokens",
                  "abort-stream": "abort-stream", "abort-tools": "abort-tools"}


@unchecked
def _apply_surface(surface: list[int], seq: int, op: SurfaceOp) -> None:
    if isinstance(op, SurfaceReplace):
        first, last = surface.index(op.start), surface.index(op.end)
        surface[first:last + 1] = [seq]
    else:
        surface.append(seq)


@unchecked
def _announces_calls(event: Event) -> bool:
    return isinstance(event, AssistantMessageEvent) and any(
        isinstance(block, ToolCallBlock) for block in event.data.message.content)


@unchecked
def _is_tool_call(event: Event) -> bool:
    return isinstance(event, ToolCallEvent)


#: Where a log stands before one of its events: the phase, the open turn and the open step.
_Where = tuple[Phase, int | None, int | None]


@unchecked
def _phases(events: Sequence[Event]) -> list[_Where]:
    """Where the log stands before each event, and after the last (one more entry): the phase
    folded over the grammar's table, the turn and step numbers from the boundaries."""
    where: list[_Where] = []
    phase, turn, step = Phase.IDLE, None, None
    for event in events:
        where.append((phase, turn, step))
        after = _phase_after(phase, event_type(event))
        assert after is not None, f"seq {event.seq}: {event_type(event)} {phase.value}"
        phase = after
        if isinstance(event, TurnStartEvent):
            turn = event.data.turn
        elif isinstance(event, StepStartEvent):
            step = event.data.step
        turn = turn if phase is not Phase.IDLE else None
        step = step if phase is Phase.STEP else None
    where.append((phase, turn, step))
    return where


@unchecked
def _open_state(events: Sequence[Event], start: int) -> Trace:
    """What the closers need of a log whose turn starting at ``start`` may still be open, from
    the generator's own bookkeeping (never from ``core.trace``'s fold): the phase, the open
    turn and step, and the calls of the open step still waiting for a result, in order."""
    phase, turn, step = _phases(events[start:])[-1]
    pending: dict[str, PendingCall] = {}
    if step is not None:
        opened = max(k for k in range(start, len(events))
                     if isinstance(events[k], StepStartEvent))
        for event in events[opened:]:
            if isinstance(event, AssistantMessageEvent):
                for block in event.data.message.content:
                    if isinstance(block, ToolCallBlock):
                        pending[block.id] = PendingCall(
                            call_id=block.id, name=block.name, arguments=block.arguments,
                            step=step)
            elif isinstance(event, ToolCallEvent):
                data = event.data
                pending[data.call_id] = PendingCall(
                    call_id=data.call_id, name=data.name, arguments=data.arguments, step=step,
                    call_seq=event.seq)
            elif isinstance(event, ToolResultEvent) and event.surface_op == "append":
                pending.pop(event.data.message.source.call_id or "", None)
    assert (phase is Phase.IDLE) == (turn is None)
    return Trace(length=len(events), open_turn=turn, open_step=step,
                 pending_calls=tuple(pending.values()), last_time=events[-1].time)


@unchecked
def _build(draw: DrawFn, *, min_turns: int, max_turns: int, in_flight: bool) -> Log:
    log = _Log(draw)
    if _one_in(draw, 4):  # a delegated child: policy events before its first turn
        log.child = True
        log.add(ApprovalPolicyEvent, data=ApprovalPolicyData(policy="never",
                                                             source="delegation"))
    for _ in range(draw(st.integers(min_turns, max_turns))):
        log.turn(draw(st.sampled_from(_ENDINGS)))
    if not in_flight:
        log.between_turns()
        return tuple(log.events)
    start = log.turn(draw(st.sampled_from(_ENDINGS)))
    end = len(log.events) - 1  # the final turn/end, which an in-flight log never reaches
    return tuple(log.events[:log.cut(start + 1, end)])


@st.composite
def _closed(draw: DrawFn, min_turns: int, max_turns: int) -> Log:
    return _build(draw, min_turns=min_turns, max_turns=max_turns, in_flight=False)


@st.composite
def _in_flight(draw: DrawFn, max_turns: int) -> Log:
    return _build(draw, min_turns=0, max_turns=max_turns, in_flight=True)


@checked
def closed_logs(*, min_turns: int = 0, max_turns: int = 4) -> SearchStrategy[Log]:
    """Logs with no open turn: whole turns, each ending in any way DSH ends a turn, with
    between-turn events before, between and after them (a log may end between turns).

    Args:
        min_turns: fewest completed turns.
        max_turns: most completed turns.
    """
    return _closed(min_turns, max_turns)


@checked
def in_flight_logs(*, max_turns: int = 4) -> SearchStrategy[Log]:
    """Logs that end inside an open turn: up to ``max_turns`` whole turns, then a last turn
    generated whole and cut at an arbitrary event before its ``turn/end`` (right after its
    ``turn/start``, inside a chunk run, between a ``tool/call`` and its result, …)."""
    return _in_flight(max_turns)


@checked
def session_logs(*, max_turns: int = 4) -> SearchStrategy[Log]:
    """Closed or in-flight logs, about half each (see :func:`closed_logs` and
    :func:`in_flight_logs`): every log a live DSH session can have on disk."""
    return st.one_of(closed_logs(max_turns=max_turns), in_flight_logs(max_turns=max_turns))


@checked
def renumber(events: Sequence[Event], first_seq: int) -> Log:
    """The same events with seqs ``first_seq, first_seq + 1, …`` (nothing else changes).

    >>> [event.seq for event in renumber((SessionEndSeedEvent(seq=0, time=0),) * 2, 7)]
    [7, 8]
    """
    return _renumber(events, first_seq)


@unchecked
def _renumber(events: Sequence[Event], first_seq: int) -> Log:
    return tuple(_replace(event, seq=first_seq + k) for k, event in enumerate(events))


@st.composite
def _without_turn_end(draw: DrawFn, first_seq: int) -> Log:
    source = draw(st.one_of(_closed(0, 2), _in_flight(2)))
    start = draw(st.integers(0, len(source)))
    stop = draw(st.integers(start, min(len(source), start + 40)))
    kept = [e for e in source[start:stop] if not isinstance(e, TurnEndEvent)]
    return _renumber(kept, first_seq)


@checked
def events_without_turn_end(first_seq: int = 0) -> SearchStrategy[Log]:
    """Event runs containing no ``turn/end`` (possibly empty), numbered from ``first_seq``.

    They are slices of generated logs with every ``turn/end`` removed, so they hold turn and
    step starts, chunks, messages, calls, results and opaque events, but they are not meant
    to continue any particular log validly: appending them must not move a completed-turn
    cut whatever they hold. Pass ``first_seq=len(log)`` to number them after ``log``.
    """
    return _without_turn_end(first_seq)


# --------------------------------------------------------------------------- broken logs
#
# Two kinds of defect. Placement defects come from the grammar's tables: for every type the
# grammar places (PHASE_CHANGES and CONFINED) and every phase it bars that type from, an event
# of that type is put there, so a type the grammar confines is broken without code of its own
# here. The other rules (numbering, pairing, the surface, message shapes) are code in
# core.trace, not tables; each has a breaker below.

#: A breaker changes ``events`` at one index; it returns the seq where the defect shows.
_Breaker = Callable[[DrawFn, list[Event], int], int]


@unchecked
def _misplaced_rule(kind: str, phase: Phase) -> str:
    """The rule a checker names for a ``kind`` event where the grammar bars it: a turn or step
    boundary breaks its own rule, except a ``turn/end`` while a step is open (the step is what
    is left open) and a ``step/start`` with no turn open (nothing encloses it); any other type
    stands outside what must enclose it."""
    if kind == TURN_END and phase is Phase.STEP:
        return "step"
    if kind == STEP_START and phase is Phase.IDLE:
        return "enclosure"
    if kind in (TURN_START, TURN_END):
        return "turn"
    if kind in (STEP_START, STEP_END):
        return "step"
    return "enclosure"


#: Every type the grammar places, with the phases it bars that type from.
_BARRED: dict[str, tuple[Phase, ...]] = {
    kind: tuple(phase for phase in Phase if phase not in _allowed_phases(kind))
    for kind in (*PHASE_CHANGES, *CONFINED)}

#: A log-only event of a type the grammar lets stand anywhere, to stand in for a removed one.
_FILLER_TYPE = _PLUGIN_TYPES[0]
assert _allowed_phases(_FILLER_TYPE) == frozenset(Phase)


@unchecked
def _movable(event: Event) -> bool:
    # A pruning tool/result stands where the surface lets it, not the grammar: keep to appends.
    return getattr(event, "surface_op", "append") == "append"


@unchecked
def _placements(events: list[Event], where: list[_Where]) -> dict[str, dict[Phase, list[int]]]:
    """Type -> barred phase -> indices of the events standing in it, for the types the log
    holds (a misplaced event is a copy of one of them)."""
    standing: dict[Phase, list[int]] = {}
    for index in range(len(events)):
        standing.setdefault(where[index][0], []).append(index)
    held = {event_type(event) for event in events if _movable(event)}
    found: dict[str, dict[Phase, list[int]]] = {}
    for kind, barred in _BARRED.items():
        phases = {phase: standing[phase] for phase in barred if phase in standing}
        if kind in held and phases:
            found[kind] = phases
    return found


@unchecked
def _is_not_started_repair(event: ToolResultEvent) -> bool:
    return isinstance(event.data.error, ToolErrorInfo) and (
        event.data.error.code == "TOOL_NOT_STARTED")


#: The breakers of the rules in code that apply to every event of a type.
_BREAKABLE: dict[type, tuple[str, ...]] = {
    TurnStartEvent: ("turn-start-number",), TurnEndEvent: ("turn-end-number",),
    StepStartEvent: ("step-start-number", "step-start-other-turn"),
    StepEndEvent: ("step-end-number",), AssistantChunkEvent: ("chunk-outside-step",),
    ToolCallEvent: ("tool-call-outside-step",),
    UserMessageEvent: ("cite-nothing", "cite-self"),
    AssistantMessageEvent: ("assistant-source", "cite-self"),
    ToolResultEvent: ("result-block-mismatch", "cite-self"),
}


@unchecked
def _candidates(events: list[Event]) -> dict[str, list[int]]:
    """Where each breaker of the rules in code applies: name -> indices it can break."""
    found: dict[str, list[int]] = {}

    def add(name: str, index: int) -> None:
        found.setdefault(name, []).append(index)

    calls_in_step: list[int] = []
    for index, event in enumerate(events):
        add("seq", index)
        for name in _BREAKABLE.get(type(event), ()):
            add(name, index)
        if isinstance(event, StepStartEvent):
            calls_in_step = []
        elif isinstance(event, ToolCallEvent):
            if calls_in_step:
                add("duplicate-call", index)
            calls_in_step.append(index)
        elif isinstance(event, ToolResultEvent):
            if isinstance(event.surface_op, SurfaceReplace):
                add("replace-off-surface", index)
                add("rewrite-more-than-content", index)
            else:
                add("missing-result", index)
                add("cite-nothing", index)
                if not _is_not_started_repair(event):
                    add("result-without-call", index)
        elif isinstance(event, UserMessageEvent) and isinstance(event.surface_op, SurfaceReplace):
            add("replace-off-surface", index)
            add("replace-uncited", index)
        if (isinstance(event, UserMessageEvent | AssistantMessageEvent | ToolResultEvent)
                and not isinstance(event.source_event_seqs, UnsetType) and event.source_event_seqs):
            add("cite-twice", index)
    return found


@unchecked
def _break_seq(draw: DrawFn, events: list[Event], i: int) -> int:
    wrong = draw(st.sampled_from((i + 1, i + 7, i - 1) if i else (1, 7, 1_000_000)))
    events[i] = _replace(events[i], seq=wrong)
    return i


@unchecked
def _renumbered(cls: type[Event], field: Literal["turn", "step"], offsets: tuple[int, ...] = (1,),
                at_one: tuple[int, ...] = (2,)) -> _Breaker:
    """The breaker that gives a ``cls`` event's turn or step number (``field``) a wrong one:
    drawn from ``offsets`` away from it, or from ``at_one`` when it is 1 (one choice: no draw)."""
    @unchecked
    def breaker(draw: DrawFn, events: list[Event], i: int) -> int:
        event = events[i]
        assert isinstance(event, cls)
        data: Any = event.data
        number = getattr(data, field)
        choices = tuple(number + k for k in offsets) if number > 1 else at_one
        wrong = choices[0] if len(choices) == 1 else draw(st.sampled_from(choices))
        events[i] = _replace(event, data=_replace(data, **{field: wrong}))
        return i
    return breaker


@unchecked
def _break_duplicate_call(draw: DrawFn, events: list[Event], i: int) -> int:
    event = events[i]
    assert isinstance(event, ToolCallEvent)
    earlier = [e.data.call_id for e in events[:i] if isinstance(e, ToolCallEvent)
               and (e.data.turn, e.data.step) == (event.data.turn, event.data.step)]
    events[i] = _replace(event, data=_replace(event.data, call_id=draw(st.sampled_from(earlier))))
    return i


@unchecked
def _break_result_without_call(draw: DrawFn, events: list[Event], i: int) -> int:
    event = events[i]
    assert isinstance(event, ToolResultEvent)
    unknown = f"call_unknown_{i}"
    message = event.data.message
    block = message.content[0]
    assert isinstance(block, ToolResultBlock)
    events[i] = _replace(event, data=_replace(event.data, message=_replace(
        message, source=MessageSource(kind="tool", call_id=unknown),
        content=(_replace(block, tool_call_id=unknown),))))
    return i


@unchecked
def _break_missing_result(draw: DrawFn, events: list[Event], i: int) -> int:
    events[i] = OpaqueEvent(type=_FILLER_TYPE, seq=i, time=events[i].time,
                            data=_raw({"n": 0}), ignorable=True)
    # The step cannot end with the call unanswered.
    return next(k for k in range(i + 1, len(events)) if isinstance(events[k], StepEndEvent))


@unchecked
def _break_cite_self(draw: DrawFn, events: list[Event], i: int) -> int:
    event = events[i]
    assert isinstance(event, UserMessageEvent | AssistantMessageEvent | ToolResultEvent)
    cited = () if isinstance(event.source_event_seqs, UnsetType) else event.source_event_seqs
    later = draw(st.sampled_from((i, i + 1)))
    events[i] = _replace(event, source_event_seqs=(*cited, later))
    return i


@unchecked
def _break_cite_twice(draw: DrawFn, events: list[Event], i: int) -> int:
    event = events[i]
    assert isinstance(event, UserMessageEvent | AssistantMessageEvent | ToolResultEvent)
    cited = event.source_event_seqs
    assert not isinstance(cited, UnsetType)
    events[i] = _replace(event, source_event_seqs=(*cited, draw(st.sampled_from(cited))))
    return i


@unchecked
def _break_cite_nothing(draw: DrawFn, events: list[Event], i: int) -> int:
    events[i] = _replace(events[i], source_event_seqs=())
    return i


@unchecked
def _break_replace_off_surface(draw: DrawFn, events: list[Event], i: int) -> int:
    event = events[i]
    assert isinstance(event, UserMessageEvent | ToolResultEvent)
    op = event.surface_op
    assert isinstance(op, SurfaceReplace)
    if isinstance(event, ToolResultEvent):
        # The compaction/prune event just before it is not on the surface.
        off = SurfaceReplace(start=i - 1, end=i - 1)
    else:
        # Nor is the compaction/start event two before the checkpoint.
        off = SurfaceReplace(start=i - 2, end=op.end)
    events[i] = _replace(event, surface_op=off)
    return i


@unchecked
def _break_replace_uncited(draw: DrawFn, events: list[Event], i: int) -> int:
    event = events[i]
    assert isinstance(event, UserMessageEvent)
    op = event.surface_op
    cited = event.source_event_seqs
    assert isinstance(op, SurfaceReplace) and not isinstance(cited, UnsetType)
    events[i] = _replace(event, source_event_seqs=tuple(s for s in cited if s != op.start))
    return i


@unchecked
def _break_rewrite_more_than_content(draw: DrawFn, events: list[Event], i: int) -> int:
    event = events[i]
    assert isinstance(event, ToolResultEvent)
    events[i] = _replace(event, data=_replace(event.data, message=_replace(
        event.data.message, id="rewritten-" + event.data.message.id)))
    return i


@unchecked
def _break_assistant_source(draw: DrawFn, events: list[Event], i: int) -> int:
    event = events[i]
    assert isinstance(event, AssistantMessageEvent)
    # Drawn by index: hashing a MessageSource runs a checked core method, and beartype's
    # sampling would touch the global random module inside a draw.
    source = (MessageSource(kind="user"), MessageSource(kind="model", provider="p"))[
        draw(st.integers(0, 1))]
    events[i] = _replace(event, data=_replace(event.data, message=_replace(
        event.data.message, source=source)))
    return i


@unchecked
def _break_result_block_mismatch(draw: DrawFn, events: list[Event], i: int) -> int:
    event = events[i]
    assert isinstance(event, ToolResultEvent)
    block = event.data.message.content[0]
    assert isinstance(block, ToolResultBlock)
    events[i] = _replace(event, data=_replace(event.data, message=_replace(
        event.data.message,
        content=(_replace(block, tool_call_id=block.tool_call_id + "-other"),))))
    return i


#: The breakers of the rules in code: name -> (the rule it breaks, the breaker).
_BREAKERS: dict[str, tuple[str, _Breaker]] = {
    "seq": ("seq", _break_seq),
    "turn-start-number": ("turn", _renumbered(TurnStartEvent, "turn", (1, 2, -1), (2, 3))),
    "turn-end-number": ("turn", _renumbered(TurnEndEvent, "turn")),
    "step-start-number": ("step", _renumbered(StepStartEvent, "step", (1, -1), (2, 5))),
    "step-end-number": ("step", _renumbered(StepEndEvent, "step")),
    "step-start-other-turn": ("enclosure", _renumbered(StepStartEvent, "turn")),
    "chunk-outside-step": ("enclosure", _renumbered(AssistantChunkEvent, "step")),
    "tool-call-outside-step": ("enclosure", _renumbered(ToolCallEvent, "turn")),
    "duplicate-call": ("pairing", _break_duplicate_call),
    "result-without-call": ("pairing", _break_result_without_call),
    "missing-result": ("pairing", _break_missing_result),
    "cite-self": ("surface", _break_cite_self),
    "cite-twice": ("surface", _break_cite_twice),
    "cite-nothing": ("surface", _break_cite_nothing),
    "replace-off-surface": ("surface", _break_replace_off_surface),
    "replace-uncited": ("surface", _break_replace_uncited),
    "rewrite-more-than-content": ("surface", _break_rewrite_more_than_content),
    "assistant-source": ("shape", _break_assistant_source),
    "result-block-mismatch": ("shape", _break_result_block_mismatch),
}


@unchecked
def _nth(options: Sequence[_T], bits: int) -> _T:
    return options[bits % len(options)]


@st.composite
def _broken(draw: DrawFn, max_turns: int) -> tuple[Log, int, str]:
    events = list(draw(_closed(min(2, max_turns), max_turns)))
    placements = _placements(events, _phases(events))
    candidates = _candidates(events)
    # Every choice from one pool draw (see the module's rules). Two logs in three get a
    # placement defect: a type, then one of the phases barred to it; the others a rule in
    # code, then one of its breakers. Choosing the group first keeps every type and every rule
    # frequent, however many breakers it has.
    choice = int.from_bytes(draw(_POOL), "big")
    if placements and choice % 3:
        kind = _nth(sorted(placements), choice >> 2 & 0xFF)
        phase = _nth(sorted(placements[kind], key=list(Phase).index), choice >> 10 & 0xFF)
        index = _nth(placements[kind][phase], choice >> 18 & 0xFFFF)
        sources = [event for event in events if event_type(event) == kind and _movable(event)]
        source = _nth(sources, choice >> 34 & 0xFFFF)
        events[index] = _replace(source, seq=index, time=events[index].time)
        return tuple(events), index, _misplaced_rule(kind, phase)
    rule = _nth(sorted({_BREAKERS[name][0] for name in candidates}), choice >> 2 & 0xFF)
    name = _nth(sorted(name for name in candidates if _BREAKERS[name][0] == rule),
                choice >> 10 & 0xFF)
    broken_seq = _BREAKERS[name][1](draw, events, _nth(candidates[name], choice >> 18 & 0xFFFF))
    return tuple(events), broken_seq, rule


@checked
def broken_logs(*, max_turns: int = 3) -> SearchStrategy[tuple[Log, int, str]]:
    """``(events, broken_seq, rule)``: a valid closed log (of two to ``max_turns`` turns) with
    exactly one defect.

    One event is changed (or, for a missing result, replaced by a log-only event) so that a
    rule of ``core.trace`` breaks there; every event before ``broken_seq`` is untouched and
    valid. ``rule`` is the :class:`~core.trace.Violation` rule code expected (``seq``,
    ``turn``, ``step``, ``enclosure``, ``pairing``, ``surface`` or ``shape``), and
    ``broken_seq`` the position where a checker must report it. Defects: an event where the
    turn grammar bars its type (for every type of :data:`.grammar.PHASE_CHANGES` and
    :data:`.grammar.CONFINED`: nested or stray turn and step boundaries, chunks, messages,
    calls, results, headers outside their step or turn); a wrong ``seq``; misnumbered turn
    and step boundaries, chunks and calls naming another step or turn; a result without a
    call, a call started twice, a call left without a result; bad ``sourceEventSeqs``; an
    invalid surface ``replace``; a tool/result rewrite that changes more than content; a
    malformed assistant or tool-result message.
    """
    return _broken(max_turns)
